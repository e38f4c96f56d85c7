"""The Training page's fine-tune set-up in AppTest: the trainable count shown is the engine's,
and a rank that is not low, no matrix, text the base cannot encode and empty text each give a
plain message with Start disabled."""

from __future__ import annotations

from tests.test_page_training_setup import errors, page, runs, start_button  # noqa: F401
from ui.state import widget_key
from viz_model.bundles.load import load_bundle
from viz_model.model.lora import attach_lora
from viz_model.training.finetune import trainable_count

BASE = "assets/models/shakespeare-tiny"
FT = {"t_from": "finetune", "t_base": "shakespeare-tiny", "t_data": "task", "t_task": "repeat"}


def infos(at) -> str:
    return " | ".join(i.value for i in at.info)


def test_the_lora_count_shown_is_the_engines(runs):  # noqa: F811
    at = page({**FT, "t_rank": "4", "t_lora_mlp_out": "1"})
    assert not at.exception and not at.error, errors(at)
    model = load_bundle(BASE).model
    lora = attach_lora(model, 4, ("qkv", "out", "mlp_out"))
    total = load_bundle(BASE).model.n_params()
    expected = f"{lora.n_trainable():,} trainable numbers (A and B) beside the model's {total:,}"
    assert f"LoRA r = 4 on qkv, out, mlp_out: {expected} frozen weights" in infos(at)
    assert trainable_count(BASE, 4, ("qkv", "out", "mlp_out")) == (lora.n_trainable(), total)
    assert next(m.value for m in at.metric if m.label == "Parameters") == f"{total:,}"
    assert not start_button(at).disabled
    # the cost is the run's own: the base's batch (16) at its context (128)
    assert "batch × context = 16 × 128" in " ".join(c.value for c in at.caption)
    at.radio(key=widget_key("t_ft")).set_value("full").run()
    assert f"Full fine-tuning: every one of the model's {total:,} weights trains." in infos(at)


def test_bad_fine_tune_choices_are_explained_and_start_is_disabled(runs):  # noqa: F811
    at = page({**FT, "t_rank": "32"})  # 32 x (64 + 64) numbers for a 64 x 64 matrix
    assert "r = 32 is not a low rank for blocks.0.attn.out (64 x 64)" in errors(at)
    assert start_button(at).disabled
    at = page({**FT, "t_lora_qkv": "0", "t_lora_out": "0"})
    assert "Choose at least one matrix" in " ".join(w.value for w in at.warning)
    assert start_button(at).disabled
    at = page({**FT, "t_task": "count"})
    assert "are not in shakespeare-tiny's vocabulary" in errors(at) and "'9'" in errors(at)
    assert start_button(at).disabled
    at = page({**FT, "t_data": "own", "t_own": "paste"})
    assert "Give at least" in infos(at) and start_button(at).disabled
    at.text_area(key="t_paste").set_value("Ünïcödé ßtrangé ❤ " * 200).run()
    assert "vocabulary" in errors(at) and start_button(at).disabled
    assert not at.exception
