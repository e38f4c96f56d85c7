"""The pre-trained bundles in assets/models: each loads, generates, and says how it was made."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from viz_model.checkpoint import load_bundle
from viz_model.data import TokenData, example_prompts, load_corpus
from viz_model.run_settings import load_text
from viz_model.sampling import SamplingSettings, generate
from viz_model.train import evaluate

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
ASSETS = MODELS.parent
EXPECTED = ("induction-2l", "shakespeare-bpe", "shakespeare-char")
BUNDLES = sorted(p.name for p in MODELS.iterdir() if p.is_dir()) if MODELS.is_dir() else []


def test_the_three_bundles_are_there():
    assert set(EXPECTED) <= set(BUNDLES)


def test_assets_fit_the_size_budget():
    total = sum(f.stat().st_size for f in ASSETS.rglob("*") if f.is_file())
    assert total < 25 * 2**20, f"assets/ holds {total / 2**20:.1f} MB"


@pytest.mark.parametrize("name", BUNDLES)
def test_bundle_loads_and_generates(name):
    bundle = load_bundle(MODELS / name)
    prompt = bundle.tokenizer.encode("\n")
    ids = generate(bundle.model, prompt, 30, SamplingSettings(temperature=0.8), seed=0)
    assert len(ids) == 30 and all(0 <= i < bundle.config.vocab_size for i in ids)
    assert isinstance(bundle.tokenizer.decode(ids), str)
    assert bundle.meta["command"].startswith("python -m viz_model.train ")
    assert bundle.history and bundle.history[-1]["step"] == bundle.meta["step"]
    steps = bundle.snapshot_steps()
    assert steps[0] == 0 and steps[-1] == bundle.meta["step"]
    assert bundle.load_snapshot(steps[-1]).cfg == bundle.config


@pytest.mark.parametrize("name", EXPECTED)
def test_bundle_carries_example_prompts_it_knows(name):
    bundle = load_bundle(MODELS / name)
    examples = bundle.meta["example_prompts"]
    source = bundle.meta["data"]
    # what the training command writes today, had it trained this bundle
    assert examples == example_prompts(load_text(source), source.get("task"))
    for text in examples:
        ids = bundle.tokenizer.encode(text)
        assert 0 < len(ids) <= bundle.config.n_ctx
        assert bundle.tokenizer.unk_id not in ids


def test_shakespeare_char_reaches_the_target_validation_loss():
    """The stored loss is the one the corpus's validation split gives today, and it is <= 1.6."""
    bundle = load_bundle(MODELS / "shakespeare-char")
    assert bundle.tokenizer.kind == "char" and bundle.meta["corpus"] == "shakespeare"
    vals = [r["val_loss"] for r in bundle.history if "val_loss" in r]
    assert vals[-1] == bundle.meta["val_loss"]
    data = TokenData.from_text(load_corpus("shakespeare"), bundle.tokenizer)
    train_cfg = bundle.train_config
    remeasured = evaluate(bundle.model, data, train_cfg["batch_size"], train_cfg["eval_batches"])
    assert remeasured == pytest.approx(bundle.meta["val_loss"], abs=1e-3)
    assert remeasured <= 1.6


def test_shakespeare_bpe_uses_a_bpe_vocabulary():
    bundle = load_bundle(MODELS / "shakespeare-bpe")
    assert bundle.tokenizer.kind == "bpe" and 256 < bundle.config.vocab_size <= 4096


@torch.no_grad()
def test_induction_model_copies_the_second_half():
    bundle = load_bundle(MODELS / "induction-2l")
    assert bundle.config.attn_only and bundle.config.n_layer == 2
    rng, h = random.Random(777), 12
    texts = ["\n" + 2 * "".join(rng.choices(string.ascii_lowercase, k=h)) for _ in range(50)]
    ids = torch.tensor([bundle.tokenizer.encode(t) for t in texts])  # "\n", 1..h, h+1..2h
    logits = bundle.model(ids)
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    assert losses[:, h + 1 : 2 * h].mean() < 0.5  # copying from the first half: near zero
    assert losses[:, 1:h].mean() > 2.5  # the random first half stays unpredictable
