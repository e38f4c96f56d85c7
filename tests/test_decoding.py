"""Decoding past one token (viz_model/model/decoding.py): the KV-cache stream against full
forwards, CTRL's repetition penalty, and beam search's invariants (width 1 is greedy; a width
that keeps every prefix finds the most likely continuation exactly)."""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.conftest import VOCAB, tiny_model
from viz_model.model.decoding import LogitStream, beam_search, decode, penalize_repeats

PROMPT = [3, 7, 1, 3, 7]


def test_the_kv_stream_gives_the_logits_of_a_full_forward_even_past_the_context():
    model = tiny_model()  # n_ctx 16: 20 pushes slide the window
    cached, plain = LogitStream(model, PROMPT), LogitStream(model, PROMPT, use_kv_cache=False)
    for token in [5, 2, 9] * 7:
        a, b = cached.push(token), plain.push(token)
        window = torch.tensor(plain.seq[-16:])
        torch.testing.assert_close(b, model(window)[-1], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    assert cached.passes == plain.passes == 22  # one pass a token, whichever way


def test_the_penalty_divides_positive_and_multiplies_negative_logits_of_seen_tokens_only():
    z = torch.tensor([2.0, -1.0, 3.0, -4.0])
    out = penalize_repeats(z, {0, 1}, 2.0)
    assert out.tolist() == [1.0, -2.0, 3.0, -4.0]
    assert torch.equal(penalize_repeats(z, {0, 1, 2}, 1.0), z)
    with pytest.raises(ValueError):
        penalize_repeats(z, {0}, 0.0)


def test_the_penalty_lowers_the_probability_of_every_seen_token_and_leaves_step_one_greedy():
    model = tiny_model()
    z = LogitStream(model, PROMPT).logits
    seen = {int(i) for i in torch.topk(z, 5).indices}
    before, after = torch.softmax(z, -1), torch.softmax(penalize_repeats(z, seen, 1.5), -1)
    assert all(after[i] < before[i] for i in seen)
    assert all(after[i] > before[i] for i in range(VOCAB) if i not in seen)
    assert decode(model, PROMPT, 1, penalty=3.0) == decode(model, PROMPT, 1)


def test_beam_width_one_is_greedy():
    model = tiny_model()
    greedy = decode(model, PROMPT, 8, use_kv_cache=False)
    assert list(beam_search(model, PROMPT, 1, 8)[-1][0].tokens) == greedy


@torch.no_grad()
def _logprob(model, prompt, tokens) -> float:
    seq = torch.tensor(prompt + list(tokens))
    logp = torch.log_softmax(model(seq).double(), -1)
    return float(sum(logp[len(prompt) - 1 + i, t] for i, t in enumerate(tokens)))


def test_an_exhaustive_beam_finds_the_most_likely_continuation_and_scores_it_right():
    model, n = tiny_model(seed=3), 2
    steps = beam_search(model, PROMPT, VOCAB**n, n)
    best = steps[-1][0]
    every = {c: _logprob(model, PROMPT, c) for c in itertools.product(range(VOCAB), repeat=n)}
    truth = max(every, key=every.get)
    assert best.tokens == truth
    assert best.logprob == pytest.approx(every[truth], abs=1e-6)
    assert len(steps[-1]) == VOCAB**n  # every continuation kept, best first
    assert [b.logprob for b in steps[-1]] == sorted((b.logprob for b in steps[-1]), reverse=True)


@pytest.mark.parametrize("width", [2, 3, 5])
def test_beams_are_distinct_sorted_and_their_scores_are_the_chain_rule_sums(width):
    model = tiny_model(seed=1)
    for beams in beam_search(model, PROMPT, width, 4):
        assert len({b.tokens for b in beams}) == len(beams) == width
        for b in beams:
            assert b.logprob == pytest.approx(_logprob(model, PROMPT, b.tokens), abs=1e-5)
        assert [b.logprob for b in beams] == sorted((b.logprob for b in beams), reverse=True)


def test_a_wider_beam_of_every_prefix_is_never_worse_than_greedy():
    model = tiny_model(seed=2)
    greedy = decode(model, PROMPT, 2, use_kv_cache=False)
    wide = beam_search(model, PROMPT, VOCAB, 2)[-1][0]  # keeps every 1-token prefix: exact
    assert wide.logprob >= _logprob(model, PROMPT, greedy) - 1e-9


def test_bad_beam_arguments_are_refused():
    with pytest.raises(ValueError):
        beam_search(tiny_model(), PROMPT, 0, 3)
    with pytest.raises(ValueError):
        beam_search(tiny_model(), [], 2, 3)


def test_a_penalised_tokens_probability_can_rise():
    """The penalty never raises a logit, yet after the softmax a penalised token can gain: here
    token 0 (logit 0.1) gains ten times over because penalised token 1 (logit 5) falls further."""
    z = torch.tensor([0.1, 5.0, 0.0])
    out = penalize_repeats(z, {0, 1}, 2.0)
    assert (out <= z).all()
    before, after = torch.softmax(z, -1)[0], torch.softmax(out, -1)[0]
    assert after > 5 * before
