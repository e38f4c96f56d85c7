"""The Training page on a fine-tuned model (shakespeare-tiny tuned a few steps, LoRA and full, on
the brackets task): what trained, the loss claims as analysis/labs/finetune.py makes them from the
history, samples before and after, and both fine-tunes on one singular-value chart."""

from __future__ import annotations

import json
import math

import pytest

from tests.apptest_util import open_link
from tests.test_analysis_finetune import BASE
from ui.training import finetune_view
from viz_model.analysis import grad_health as gh
from viz_model.analysis.labs import finetune as ft
from viz_model.bundles.load import load_bundle
from viz_model.training.settings import RunSettings, new_run

TRAIN = {"max_steps": 4, "eval_every": 2, "eval_batches": 2, "sample_tokens": 8, "threads": 1}


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    for name, rank in (("tuned-lora", 2), ("tuned-full", 0)):
        settings = RunSettings(
            task="brackets", task_examples=500, base=str(BASE), lora_rank=rank, train=TRAIN
        )
        run = new_run(settings, folder / name, "test")
        for _ in run.steps():
            pass
    return folder


def test_the_view_of_a_lora_run_says_what_its_numbers_say(models_dir):
    at = open_link(models_dir, "pages/09_training.py", {"model": "tuned-lora"})
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    bundle = load_bundle(models_dir / "tuned-lora")
    info, last = bundle.meta["finetune"], bundle.history[-1]
    before = info["before"]
    assert "Started from **shakespeare\\-tiny**" in text
    assert any(i.value == gh.ADAPTERS_NOTE for i in at.info)  # its health is the adapters'
    assert "the adapters by" in text and "steps this **large**" not in text
    assert (
        f"**{info['trainable']:,}** numbers trained (A and B) beside the model's {info['total']:,}"
        in text
    )
    old = ft.loss_change_claim(
        "old text \\(Shakespeare\\)",
        before["old_val_loss"],
        last["old_val_loss"],
        before["old_val_sd"],
        2,
        math.log(bundle.tokenizer.vocab_size),
    )
    assert old.text in text
    codes = [c.value for c in at.code]
    assert (
        before["sample"] in codes
        and next(r["sample"] for r in reversed(bundle.history) if r.get("sample")) in codes
    )
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    names = {t.get("name") for c in charts for t in c["data"]}
    assert {"LoRA r = 2 (tuned-lora)", "full fine-tune (tuned-full)"} <= names
    full = ft.change_spectra(
        models_dir / "tuned-full", load_bundle(models_dir / "tuned-full").meta["finetune"]
    )
    matrix = sorted(ft.change_spectra(models_dir / "tuned-lora", info))[0]
    assert ft.low_rank_claim(matrix, full[matrix], 2).text in text


def test_runs_on_the_same_pasted_text_pair_by_its_hash_and_it_is_called_your_text(tmp_path):
    runs = {}
    for name, text in (("lora", "To be, or not"), ("full", "To be, or not"), ("other", "Not")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "text.txt").write_text(text, encoding="utf-8")
        runs[name] = {"text_file": str(tmp_path / name / "text.txt"), "val_fraction": 0.1}
    key = finetune_view.text_key
    assert runs["lora"] != runs["full"] and key(runs["lora"]) == key(runs["full"])
    assert key(runs["lora"]) != key(runs["other"])
    assert key({**runs["full"], "val_fraction": 0.2}) != key(runs["lora"])
    assert key({"corpus": "shakespeare"}) == {"corpus": "shakespeare"}
    assert finetune_view._text_label(runs["lora"]) == "your text (13 characters)"
    assert finetune_view._text_label({"text_file": "/x/notes.txt"}) == "notes.txt"
