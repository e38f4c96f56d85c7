"""analysis/variants.py: the loss past the training context and the KV cache's memory, on tiny
seeded models, and the sentences the Architecture contrasts page prints about them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis import contrasts as ct
from viz_model.analysis import variants as vr

VAL = torch.randint(0, 23, (2_000,), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
def test_positions_inside_attention_are_read_past_the_context(pos):
    model = tiny_model(pos=pos)
    n = model.cfg.n_ctx
    profile = vr.extrapolation(model, VAL, 2 * n)
    assert profile.shape == (2 * n,) and np.isfinite(profile).all()
    # each position's value is the mean over the windows of that position's loss
    batch = vr.windows(VAL, 2 * n)
    one = np.mean([ct.position_losses(model, w.tolist())[5] for w in batch])
    assert profile[5] == pytest.approx(one, abs=1e-5)


def test_a_position_table_ends_at_the_context():
    model = tiny_model()
    n = model.cfg.n_ctx
    profile = vr.extrapolation(model, VAL, 2 * n)
    assert np.isfinite(profile[:n]).all() and np.isnan(profile[n:]).all()
    claim = vr.extrapolation_claim("learned", profile, n, "learned")
    assert not claim.made and f"no position vector past {n}" in claim.text


def test_the_claim_says_rises_only_beyond_the_margin():
    n = 8
    flat = np.r_[np.full(n, 2.0), np.full(n, 2.0 + vr.EXTRAPOLATION_MARGIN / 2)]
    rising = np.r_[np.full(n, 2.0), np.full(n, 2.0 + 3 * vr.EXTRAPOLATION_MARGIN)]
    held = vr.extrapolation_claim("a", flat, n, "alibi")
    rose = vr.extrapolation_claim("b", rising, n, "rope")
    assert "holds past" in held.text and "rises" not in held.text
    assert "rises" in rose.text and f"{rose.numbers['beyond']:.2f}" in rose.text
    assert rose.numbers["beyond"] - rose.numbers["inside"] > rose.numbers["margin"]


def test_windows_refuse_a_text_shorter_than_one_window():
    with pytest.raises(ValueError, match="fewer than"):
        vr.windows(VAL[:10], 64)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_kv_memory_per_token_is_keys_and_values_of_every_layer(n_kv):
    model = tiny_model(n_kv_heads=n_kv)
    cfg = model.cfg
    expected = 2 * cfg.n_layer * n_kv * cfg.d_head * 4  # k and v, float32
    assert vr.kv_bytes_per_token(model) == expected


def test_the_kv_claim_is_the_measured_ratio():
    mha, mqa = tiny_model(), tiny_model(n_kv_heads=1)
    named = [("mha", vr.kv_bytes_per_token(mha), 4), ("mqa", vr.kv_bytes_per_token(mqa), 1)]
    claim = vr.kv_claim(named)
    assert claim.made and claim.numbers["ratio"] == pytest.approx(4.0)
    assert "4.0 times less" in claim.text and "4 against 1" in claim.text
