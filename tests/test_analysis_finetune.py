"""What a fine-tune changed, on the bundled shakespeare-tiny fine-tuned for a few steps (full and
LoRA) and on the chart functions: the spectra are the singular values of the weights on disk, and
every claim's decision and numbers are recomputed from them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ui.charts.finetune import forgetting_figure, spectrum_figure
from viz_model.analysis.labs import finetune as ft
from viz_model.bundles.load import load_bundle
from viz_model.training.finetune import read_lora
from viz_model.training.settings import RunSettings, new_run

BASE = Path(__file__).resolve().parent.parent / "assets" / "models" / "shakespeare-tiny"
TRAIN = {"max_steps": 4, "eval_every": 2, "eval_batches": 2, "sample_tokens": 0, "threads": 1}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """{"full": folder, "lora": folder}: shakespeare-tiny tuned 4 steps on the brackets task."""
    out = {}
    for mode, rank in (("full", 0), ("lora", 4)):
        folder = tmp_path_factory.mktemp(mode)
        settings = RunSettings(
            task="brackets", task_examples=500, base=str(BASE), lora_rank=rank, train=TRAIN
        )
        run = new_run(settings, folder, "test")
        for _ in run.steps():  # loop.train with the run's old_data and on_save
            pass
        out[mode] = folder
    return out


def test_the_spectra_are_the_singular_values_of_the_saved_change(tuned):
    base = load_bundle(BASE).model.state_dict()
    full = load_bundle(tuned["full"])
    spectra = ft.change_spectra(tuned["full"], full.meta["finetune"])
    assert set(spectra) == {
        f"blocks.{i}.{m}"
        for i in range(2)
        for m in ("attn.qkv", "attn.out", "mlp.fc_in", "mlp.fc_out")
    }
    delta = full.model.state_dict()["blocks.1.mlp.fc_in.weight"] - base["blocks.1.mlp.fc_in.weight"]
    expected = torch.linalg.svdvals(delta.double())
    assert spectra["blocks.1.mlp.fc_in"] == pytest.approx(expected.tolist(), rel=1e-6)
    lora = load_bundle(tuned["lora"])
    lspectra = ft.change_spectra(tuned["lora"], lora.meta["finetune"])
    tensors, rank, alpha = read_lora(tuned["lora"])
    assert rank == 4 and set(lspectra) == {
        "blocks.0.attn.qkv",
        "blocks.0.attn.out",
        "blocks.1.attn.qkv",
        "blocks.1.attn.out",
    }
    assert all(sum(v > 1e-6 * max(s) for v in s) <= rank for s in lspectra.values())


def test_claims_on_the_bundled_model_follow_their_numbers(tuned):
    full = load_bundle(tuned["full"])
    info = full.meta["finetune"]
    spectra = ft.change_spectra(tuned["full"], info)
    for name, values in spectra.items():
        claim = ft.low_rank_claim(name, values, 4)
        share = sum(v * v for v in values[:4]) / sum(v * v for v in values)
        assert claim.numbers["share"] == pytest.approx(share)
        chance = ft.chance_share(len(values), 4)
        assert claim.numbers["chance"] == chance
        assert claim.made == (share > ft.SHARE_MOST and share >= chance + ft.CHANCE_MARGIN)
        assert f"{share:.0%}" in claim.text and f"puts {chance:.0%} there" in claim.text
    before, last = info["before"], full.history[-1]
    claim = ft.loss_change_claim(
        "old text", before["old_val_loss"], last["old_val_loss"], before["old_val_sd"], 2
    )
    change = last["old_val_loss"] - before["old_val_loss"]
    assert claim.made == (abs(change) > 2 * 2**0.5 * before["old_val_sd"] / 2**0.5)
    assert (
        f"{before['old_val_loss']:.2f}" in claim.text
        and f"{last['old_val_loss']:.2f}" in claim.text
    )


def test_the_charts_draw_step_zero_and_leave_out_loras_zeros():
    history = [{"step": 2, "val_loss": 3.0, "old_val_loss": 2.0}, {"step": 3, "train_loss": 1.0}]
    fig = forgetting_figure(history, {"val_loss": 5.0, "old_val_loss": 1.5}, "old", "new")
    assert [list(t.x) for t in fig.data] == [[0, 2], [0, 2]]
    assert [list(t.y) for t in fig.data] == [[1.5, 2.0], [5.0, 3.0]]
    spec = spectrum_figure(
        {"LoRA r = 2 (x)": [3.0, 1.0, 1e-8], "full (y)": [2.0, 1.0, 0.5]}, "blocks.0.attn.qkv", 2
    )
    assert [len(t.y) for t in spec.data] == [2, 3]
