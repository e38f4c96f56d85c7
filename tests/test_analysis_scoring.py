"""Scoring candidate continuations (viz_model/analysis/scoring.py): the chain rule on a seeded
tiny model, the two rankings, and the claim that says when they disagree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis import scoring
from viz_model.analysis.scoring import Score, ranking_claim, rankings

PROMPT = [3, 7, 1, 3]


@torch.no_grad()
def _sequential_logps(model, prompt, candidate) -> list[float]:
    """Each candidate token's log p from its own forward pass over the prefix before it."""
    out = []
    for i, token in enumerate(candidate):
        prefix = torch.tensor(prompt + candidate[:i])
        out.append(float(torch.log_softmax(model(prefix)[-1].double(), -1)[token]))
    return out


@pytest.mark.parametrize("candidate", [[5], [5, 2], [9, 9, 4, 0]])
def test_the_total_is_the_chain_rule_sum_of_per_token_log_probs(candidate):
    model = tiny_model(seed=4)
    logps = scoring.candidate_logps(model, PROMPT, candidate)
    np.testing.assert_allclose(logps, _sequential_logps(model, PROMPT, candidate), atol=1e-5)
    score = Score("c", logps)
    assert score.total == pytest.approx(sum(logps))
    assert score.per_token == pytest.approx(sum(logps) / len(candidate))
    assert (logps < 0).all()


def test_a_long_prompt_is_cut_on_the_left_and_a_too_long_candidate_refused():
    model = tiny_model()  # n_ctx 16
    long_prompt = list(range(10)) * 3
    logps = scoring.candidate_logps(model, long_prompt, [4, 5])
    np.testing.assert_allclose(
        logps, _sequential_logps(model, long_prompt[-14:], [4, 5]), atol=1e-5
    )
    with pytest.raises(ValueError):
        scoring.candidate_logps(model, PROMPT, list(range(16)))
    with pytest.raises(ValueError):
        scoring.candidate_logps(model, [], [1])


def test_the_rankings_and_the_claim_follow_total_and_per_token_scores():
    short = Score("short", np.array([-2.0]))  # total -2, per token -2
    long = Score("long one", np.array([-0.5, -0.5, -0.5, -0.5, -0.5]))  # total -2.5, -0.5
    by_total, by_token = rankings([short, long])
    assert by_total == [0, 1] and by_token == [1, 0]
    claim = ranking_claim([short, long])
    assert claim.made and "disagree" in claim.text and "shorter" in claim.text
    agree = ranking_claim([Score("a", np.array([-0.1])), Score("b", np.array([-3.0, -3.0]))])
    assert not agree.made and "agree" in agree.text
    assert not ranking_claim([short]).made


def test_candidate_text_is_escaped_in_the_claim():
    claim = ranking_claim([Score("*x*", np.array([-1.0])), Score("y", np.array([-5.0]))])
    assert "\\*x\\*" in claim.text


def test_rankings_that_share_a_winner_but_not_the_rest_are_said_to_differ():
    best = Score(" a", np.array([-0.1]))
    short = Score(" b", np.array([-2.0]))  # total -2: second by total, third per token
    long = Score(" c d e", np.array([-1.0, -1.0, -1.0]))  # total -3, -1 a token
    claim = ranking_claim([best, short, long])
    assert claim.made and "first" in claim.text and "differently" in claim.text
    assert "“c d e” (3 tokens) is number 2 per token and number 3 by total" in claim.text


def test_a_model_that_reads_ahead_is_scored_one_pass_a_token_as_generated():
    model = tiny_model(seed=4, causal=False)
    candidate = [9, 9, 4]
    logps = scoring.candidate_logps(model, PROMPT, candidate)
    np.testing.assert_allclose(logps, _sequential_logps(model, PROMPT, candidate), atol=1e-5)
