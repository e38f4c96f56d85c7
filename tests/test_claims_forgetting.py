"""What instruction tuning cost the base model's own text (viz_model/analysis/labs/forgetting.py):
the claim recomputed from its numbers on the bundled tuned model and its base, and neutral when
"tuning" changed nothing (a model against itself)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.claims_models import ASSETS
from viz_model.analysis.labs import forgetting, quantization
from viz_model.bundles.load import load_bundle

TUNED = "shakespeare-instruct"


def test_the_bundled_tune_forgot_shakespeare_and_the_claim_says_its_numbers():
    tuned = load_bundle(ASSETS / TUNED)
    base = load_bundle(ASSETS / tuned.meta["base"])
    assert forgetting.same_ids(base.tokenizer, tuned.tokenizer)
    val, note = quantization.validation_ids(base.meta, base.tokenizer)
    assert note == "the validation split of its own training text"
    f = forgetting.measure_forgetting(base.model, tuned.model, val, base.tokenizer, n_windows=16)
    assert f.n_windows == 16 and f.window_base.shape == (16,)
    claim = forgetting.forgetting_claim(f, "shakespeare-char")
    n = claim.numbers
    d = f.window_tuned - f.window_base
    noise = max(2 * d.std(ddof=1) / math.sqrt(d.size), quantization.MIN_DIFF)
    assert n["noise"] == pytest.approx(noise)
    assert claim.made == (f.tuned_bpc - f.base_bpc > noise)
    assert n["times"] == pytest.approx(2 ** (f.tuned_bpc - f.base_bpc))
    assert f"from {f.base_bpc:.2f} to {f.tuned_bpc:.2f} bits per character" in claim.text
    # the bundled pair: the base reads its own text near its logged loss, the tune far worse
    assert f.base_bpc == pytest.approx(base.meta["val_loss"] / math.log(2), abs=0.25)
    assert claim.made and f.tuned_bpc > 2 * f.base_bpc


def test_no_change_is_said_as_none(models_dir):
    b = load_bundle(models_dir / "test-char")
    val, _ = quantization.validation_ids(b.meta, b.tokenizer)
    f = forgetting.measure_forgetting(b.model, b.model, val, b.tokenizer, n_windows=8)
    assert np.allclose(f.window_base, f.window_tuned)
    claim = forgetting.forgetting_claim(f, "test-char")
    assert not claim.made and claim.text.startswith("No clear forgetting")
    assert not forgetting.same_ids(load_bundle(ASSETS / TUNED).tokenizer, b.tokenizer)
