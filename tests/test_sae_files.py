"""analysis/labs/sae_files.py: a saved lab reads back equal (SAE, metrics, log, feature table,
windows), the file is safetensors (no pickle), and every kind of damage is one clear SAEFileError."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.conftest import tiny_model
from viz_model.analysis.labs.sae.lab import Lab
from viz_model.analysis.labs.sae.lab import lab as train_lab
from viz_model.analysis.labs.sae.training import SAEConfig
from viz_model.analysis.labs.sae_files import (
    FEATURES_FILE,
    METRICS_FILE,
    SAE_FILE,
    SAEFileError,
    load_lab,
    save_lab,
)
from viz_model.text.tokenization import Tokenizer

NAME = "blocks.0.hook_resid_post"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Lab, Path]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        text = "".join(f"line {i}: the cat sat on the mat, and the dog ran.\n" for i in range(200))
        tok = Tokenizer.train(text, "char")
        model = tiny_model(seed=3, vocab_size=tok.vocab_size)
        cfg = SAEConfig(n_features=40, k=0, l1_coeff=0.01, batch_size=128, resample_every=4)
        lab = train_lab(model, tok, text, NAME, cfg, n_tokens=2000)
    finally:
        torch.set_num_threads(threads)
    folder = tmp_path_factory.mktemp("lab")
    save_lab(lab, folder)
    return lab, folder


def test_a_saved_lab_reads_back_equal(saved):
    lab, folder = saved
    back = load_lab(folder, d_model=32)
    assert back.name == lab.name == NAME and back.sae.k == 0
    for name in ("W_enc", "W_dec", "b_enc", "b_dec", "scale"):
        assert torch.equal(getattr(back.sae, name), getattr(lab.sae, name))
    assert back.metrics == lab.metrics
    assert np.array_equal(back.log.dead, lab.log.dead) and back.log.resampled == lab.log.resampled
    assert np.allclose(back.log.mse, lab.log.mse) and back.log.tokens == lab.log.tokens
    for field in ("freq", "max_act", "top_values", "top_window", "top_position"):
        assert np.array_equal(getattr(back.table, field), getattr(lab.table, field)), field
    assert np.array_equal(back.browse.ids, lab.browse.ids) and back.browse.texts == lab.browse.texts
    x = torch.randn(5, 32)
    assert torch.equal(back.sae(x)[0], lab.sae(x)[0])


def test_the_sae_file_is_plain_safetensors(saved):
    tensors = load_file(saved[1] / SAE_FILE)
    assert set(tensors) == {"W_enc", "W_dec", "b_enc", "b_dec", "scale"}
    assert not list(saved[1].glob("*.pt")) and not list(saved[1].glob("*.pkl"))


def _damaged(saved, tmp_path, damage) -> Path:
    folder = tmp_path / "lab"
    shutil.copytree(saved[1], folder)
    damage(folder)
    return folder


def _set_tensor(name: str, value):
    def damage(folder: Path) -> None:
        tensors = load_file(folder / SAE_FILE)
        tensors[name] = value(tensors[name])
        save_file(tensors, folder / SAE_FILE, metadata={"k": "0", "hook": NAME})

    return damage


def _edit_json(file: str, edit):
    def damage(folder: Path) -> None:
        data = json.loads((folder / file).read_text())
        edit(data)
        (folder / file).write_text(json.dumps(data))

    return damage


def _truncate(folder: Path) -> None:
    raw = (folder / SAE_FILE).read_bytes()
    (folder / SAE_FILE).write_bytes(raw[: len(raw) // 2])


DAMAGE = {
    "truncated": (_truncate, "not a readable safetensors file"),
    "missing": (lambda f: (f / SAE_FILE).unlink(), "is missing"),
    "nan": (_set_tensor("W_dec", lambda t: t.fill_(float("nan"))), "NaN or infinite"),
    "shape": (_set_tensor("b_enc", lambda t: t[:-1].clone()), "b_enc has shape"),
    "scale": (_set_tensor("scale", lambda t: torch.tensor(0.0)), "scale s must be above 0"),
    "json": (lambda f: (f / METRICS_FILE).write_text("{not json"), "not valid JSON"),
    "metric": (_edit_json(METRICS_FILE, lambda d: d["metrics"].pop("fve")), "malformed"),
    "index": (
        _edit_json(FEATURES_FILE, lambda d: d["top_window"][0].__setitem__(0, 10**6)),
        "points outside the browsing windows",
    ),
    "texts": (_edit_json(FEATURES_FILE, lambda d: d["browse_texts"].pop()), "texts do not match"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_lab_is_one_clear_error(saved, tmp_path, kind):
    damage, words = DAMAGE[kind]
    with pytest.raises(SAEFileError, match=words):
        load_lab(_damaged(saved, tmp_path, damage), d_model=32)


def test_an_sae_for_another_width_is_refused(saved):
    with pytest.raises(SAEFileError, match="width 32; this model's are 64"):
        load_lab(saved[1], d_model=64)
