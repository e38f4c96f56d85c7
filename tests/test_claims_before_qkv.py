"""Claims of the Attention page's "attention before Q, K and V" and "softmax that overflows",
checked on every GPT claim model (tests/claims_models.py) and its untrained twin: each sentence
states the counts it was decided on, says "training" only when the trained model's distance
between x·x and the head differs from its random weights', and never on a model that learned
nothing; the overflow sentence's NaN counts and tolerances are the row's own."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.claims_models import GPT_CLAIM_MODELS, claim_bundle
from ui.frame import DEFAULT_PROMPT
from viz_model.analysis.attention import attention_run
from viz_model.analysis.before_qkv import (
    MIN_ROWS,
    TV_MARGIN,
    Comparison,
    attention_inputs,
    before_qkv_claim,
    compare,
    xx_patterns,
)
from viz_model.analysis.softmax import DTYPES, FACTORS, max_difference, overflow_claim, softmax_row
from viz_model.analysis.untrained import fresh_model, untrained_twin


def _comparison(model, ids) -> Comparison:
    causal = model.cfg.causal
    xx = xx_patterns(attention_inputs(model, ids), causal)
    return compare(xx, attention_run(model, ids).pattern, causal)


def _ids(bundle) -> list[int]:
    return bundle.tokenizer.encode(DEFAULT_PROMPT)[: bundle.config.n_ctx]


def _check(claim, trained: Comparison, twin: Comparison, layer: int, head: int) -> None:
    n = trained.n_rows
    a, b = trained.self_xx[layer], trained.self_head[layer, head]
    assert f"in **{a} of {n}** query rows" in claim.text and f"in **{b} of {n}**" in claim.text
    a0, b0 = twin.self_xx[layer], twin.self_head[layer, head]
    assert f"x·x does so in {a0} of {n} rows and the same head in {b0} of {n}" in claim.text
    tv, tv0 = round(trained.tv[layer, head], 2), round(twin.tv[layer, head], 2)
    assert f"**{tv:.2f}**" in claim.text and f"{tv0:.2f}" in claim.text
    assert claim.made == (round(abs(tv - tv0), 2) >= TV_MARGIN)
    assert ("training put" in claim.text) == claim.made
    assert ("does not tell this head from a random one" in claim.text) == (not claim.made)
    assert ("with random weights too" in claim.text) == (min(a, a0) >= n / 2)


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_x_dot_x_claim_states_its_counts_and_says_training_only_beyond_random(
    name, claim_bundles
):
    bundle = claim_bundle(claim_bundles, name)
    ids = _ids(bundle)
    trained = _comparison(bundle.model, ids)
    twin = _comparison(untrained_twin(bundle).model, ids)
    assert trained.n_rows >= MIN_ROWS
    for layer in range(bundle.config.n_layer):
        for head in range(bundle.config.n_head):
            claim = before_qkv_claim(trained, twin, layer, head, f"L{layer} H{head}")
            _check(claim, trained, twin, layer, head)


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_a_model_that_learned_nothing_is_never_said_to_have_been_trained(name, claim_bundles):
    """Random weights (another seed) against the twin: x·x and the heads sit as far apart, and
    the sentence says that is not training's doing."""
    bundle = claim_bundle(claim_bundles, name)
    ids = _ids(bundle)
    random = _comparison(fresh_model(bundle.config, seed=123), ids)
    twin = _comparison(untrained_twin(bundle).model, ids)
    for layer in range(bundle.config.n_layer):
        for head in range(bundle.config.n_head):
            claim = before_qkv_claim(random, twin, layer, head, f"L{layer} H{head}")
            assert not claim.made and "does not tell this head from a random one" in claim.text, (
                claim.text
            )


def test_a_short_prompt_compares_nothing():
    one = Comparison(np.array([1]), np.array([[0]]), np.array([[0.5]]), 2, 0.8)
    claim = before_qkv_claim(one, one, 0, 0, "L0 H0")
    assert not claim.made and "type a longer prompt" in claim.text and "training" not in claim.text


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_overflow_sentence_counts_the_nans_of_its_own_row(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    run = attention_run(bundle.model, _ids(bundle))
    scores = run.scores[-1, 0, -1]
    scores = scores[np.isfinite(scores)]
    for factor in FACTORS:
        row = softmax_row(scores, factor)
        claim = overflow_claim(row)
        assert claim.text.startswith(f"At ×{factor}, ")
        n = scores.size
        for dtype in DTYPES:
            nan = int(np.isnan(row.naive[dtype]).sum())
            said = re.search(
                rf"naive {dtype} gives \*\*NaN for (\d+) of the {n} weights", claim.text
            )
            assert (int(said.group(1)) if said else 0) == nan
        err32 = max_difference(row.stable["float32"], row.exact)
        assert ("the same weights as float64 to 1e-06" in claim.text) == (err32 <= 1e-6)
        sums = [row.naive[d].sum() for d in DTYPES]
        assert claim.made == any(not abs(s - 1) <= 0.01 for s in sums)
