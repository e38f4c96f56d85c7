"""viz_model/analysis/softmax.py: the naive softmax overflows exactly where exp passes the dtype's
largest number (the thresholds from torch.finfo), computed by torch in that dtype, and the
max-subtracted softmax gives float64's weights on a real head's scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.attention import attention_run
from viz_model.analysis.softmax import (
    DTYPES,
    FACTORS,
    max_difference,
    naive_softmax,
    overflow_threshold,
    softmax_row,
    stable_softmax,
)

IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]


def test_the_thresholds_are_log_of_the_largest_float():
    assert math.isclose(overflow_threshold(torch.float16), math.log(65504), rel_tol=1e-9)
    assert math.isclose(overflow_threshold(torch.float32), 88.7228, abs_tol=1e-4)


def test_every_float16_score_overflows_exactly_above_the_threshold():
    # every float16 value from 10 to 12: exp is inf exactly when s > log(float16 max)
    s = torch.arange(10, 12, 2**-7, dtype=torch.float64).to(torch.float16).unique()
    limit = overflow_threshold(torch.float16)
    for score in s:
        e, _ = naive_softmax(score.reshape(1))
        assert bool(torch.isinf(e).any()) == (float(score) > limit), float(score)


@pytest.mark.parametrize("name", list(DTYPES))
def test_naive_gives_nan_where_exp_overflowed_and_zero_elsewhere(name):
    limit = overflow_threshold(DTYPES[name])
    rng = np.random.default_rng(1)
    for factor in (1, 3, 10, 30, 100):
        scores = rng.normal(scale=2.0, size=12) * factor
        scores = scores[np.abs(scores - limit) > 1e-3]  # away from the edge, where rounding decides
        row = softmax_row(scores, 1)
        over = np.isinf(row.exp[name])
        assert over.any() == (row.rounded[name].max() > limit)
        if over.any():
            assert np.isnan(row.naive[name][over]).all()
            assert (row.naive[name][~over] == 0).all()
        assert row.exp[name].dtype == np.float64  # stored wide, computed narrow:
    assert torch.exp(torch.tensor(12.0, dtype=torch.float16)).isinf()
    assert not torch.exp(torch.tensor(12.0, dtype=torch.float32)).isinf()


def test_a_row_whose_every_exp_underflows_is_nan_naively_and_fine_stably():
    s = torch.tensor([-200.0, -201.0, -205.0])
    e, w = naive_softmax(s)
    assert (e == 0).all() and torch.isnan(w).all()
    assert torch.allclose(stable_softmax(s).double(), torch.softmax(s.double(), -1), atol=1e-7)


def test_max_subtraction_gives_float64s_weights_on_a_real_heads_scores():
    run = attention_run(tiny_model(), IDS)
    for layer, head, query in [(0, 0, 9), (1, 3, 5), (1, 1, 9)]:
        scores = run.scores[layer, head, query]
        scores = scores[np.isfinite(scores)]
        for factor in FACTORS:
            row = softmax_row(scores, factor)
            assert np.allclose(row.exact.sum(), 1)
            assert max_difference(row.stable["float32"], row.exact) <= 1e-6
            # float16 first rounds the scores themselves (at 50, to 1/32): against float64's
            # softmax of those rounded scores, only float16's own 3 digits are left
            rounded = torch.softmax(torch.from_numpy(row.rounded["float16"]), -1).numpy()
            assert max_difference(row.stable["float16"], rounded) <= 2e-3
            if factor == 1:  # these scores are small: the naive softmax is fine too
                assert max_difference(row.naive["float32"], row.exact) <= 1e-6


def test_max_difference_is_inf_when_a_value_is_not_finite():
    assert max_difference(np.array([np.nan, 1.0]), np.array([0.0, 1.0])) == math.inf
    assert max_difference(np.array([0.25, 0.75]), np.array([0.5, 0.5])) == 0.25
