"""Log loss and accuracy along training (viz_model/analysis/loss_accuracy.py): the scores are
torch's cross-entropy and argmax agreement on the same windows, random weights score about ln V,
and a bundle's snapshots are each scored on the same tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import VOCAB, tiny_config, tiny_model
from viz_model.analysis import loss_accuracy as la
from viz_model.analysis.training import final_step, training_steps
from viz_model.analysis.untrained import fresh_model
from viz_model.bundles.load import load_bundle


def _tokens(n: int, seed: int = 0) -> np.ndarray:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).numpy()


def test_the_score_is_torchs_cross_entropy_and_argmax_agreement_over_the_windows():
    """41 tokens at context 16: windows of 16, 16 and 8 inputs, 40 positions scored."""
    model, tokens = tiny_model(seed=2), _tokens(41)
    loss, acc = la.score(model, tokens, 16)
    t = torch.as_tensor(tokens)
    with torch.no_grad():
        logits = torch.cat([model(t[s : min(s + 16, 40)][None])[0] for s in (0, 16, 32)])
    assert loss == pytest.approx(float(F.cross_entropy(logits, t[1:])), abs=1e-5)
    assert acc == pytest.approx(float((logits.argmax(-1) == t[1:]).float().mean()))
    assert 0.0 <= acc <= 1.0


def test_random_weights_score_about_ln_v_and_about_one_in_v():
    """A fresh GPT's logits are nearly flat: loss within 3% of ln V (0.09 nats on 23 tokens)."""
    loss, acc = la.score(fresh_model(tiny_config(), seed=7), _tokens(401, seed=1), 16)
    assert abs(loss - math.log(VOCAB)) < 0.03 * math.log(VOCAB)
    assert acc < 0.25  # near 1/23 = 4%; nowhere near what a trained model reaches


def test_each_snapshot_is_scored_on_the_same_tokens(models_dir):
    bundle = load_bundle(models_dir / "test-char")
    tokens = _tokens(200, seed=3) % bundle.tokenizer.vocab_size
    along = la.along_training(bundle, tokens)
    steps = training_steps(bundle.snapshot_steps(), final_step(bundle.history, bundle.meta))
    assert along is not None and along.steps.tolist() == steps and along.n_tokens == 199
    first = la.score(bundle.load_snapshot(steps[0]).eval(), tokens, bundle.config.n_ctx)
    last = la.score(bundle.model, tokens, bundle.config.n_ctx)
    assert (along.loss[0], along.accuracy[0]) == pytest.approx(first)
    assert (along.loss[-1], along.accuracy[-1]) == pytest.approx(last)


def test_a_bundle_that_names_no_text_has_no_validation_slice(models_dir):
    assert la.validation_slice(load_bundle(models_dir / "test-char")) is None
