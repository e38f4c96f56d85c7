"""The output lesson (assets/lessons/4_output.toml): every stop's answer, measured on the model it
names, agrees with a computation of its own (plain softmax, prefix-by-prefix surprisal, a greedy
loop, the KV cache's own tensors), and each kind says so when the lecture's observation does not
hold (a model without the causal mask, random weights, a near-certain prediction)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.lesson_util import bundle, measured, snapshot, stops
from viz_model.analysis.tokens import token_text
from viz_model.lessons import answers_output as out
from viz_model.lessons.kinds import subject_for


def logits_of(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor(ids, dtype=torch.long)).double()


def prefix_surprisals(model, ids: list[int]) -> list[float]:
    """-ln p(ids[t] | ids[:t]) for t >= 1, each from its own forward pass on the prefix alone."""
    return [
        -float(torch.log_softmax(logits_of(model, ids[:t])[-1], -1)[ids[t]])
        for t in range(1, len(ids))
    ]


# ---- independent answers -------------------------------------------------------------------------


def _top_next_token(subject, args, truth):
    probs = torch.softmax(logits_of(subject.bundle.model, list(subject.ids))[-1], -1)
    assert truth.value == token_text(subject.bundle.tokenizer, int(probs.argmax()))
    return True


def _top_prob_at_temperature(subject, args, truth):
    z = logits_of(subject.bundle.model, list(subject.ids))[-1]
    t = args["temperature"]
    top = int(z.argmax())
    change = float(torch.softmax(z / t, -1)[top] - torch.softmax(z, -1)[top])
    expected = "rises" if change > 0.005 else "falls" if change < -0.005 else None
    assert truth.value == (expected or "stays about the same")
    return expected == ("rises" if t < 1 else "falls")


def _top_p_kept(subject, args, truth):
    z = logits_of(subject.bundle.model, list(subject.ids))[-1] / args.get("temperature", 1.0)
    p = np.sort(torch.softmax(z, -1).numpy())[::-1]
    if args.get("top_k"):
        p = p[: args["top_k"]] / p[: args["top_k"]].sum()
    n = 1
    while p[:n].sum() < args["top_p"] - 1e-9:
        n += 1
    assert truth.value == n
    return n <= len(z) / 2


def _most_surprising_token(subject, args, truth):
    ids = list(subject.ids)
    s = prefix_surprisals(subject.bundle.model, ids)
    assert truth.value == token_text(subject.bundle.tokenizer, ids[1 + int(np.argmax(s))])
    assert truth.numbers["surprisal"] == pytest.approx(max(s), rel=1e-3)
    return subject.bundle.config.causal


def _prompt_perplexity(subject, args, truth):
    ppl = math.exp(np.mean(prefix_surprisals(subject.bundle.model, list(subject.ids))))
    assert truth.value == pytest.approx(ppl, rel=1e-3)
    assert truth.check(ppl * 1.15) and not truth.check(ppl * 1.3)
    return subject.bundle.config.causal and ppl < 0.9 * subject.bundle.tokenizer.vocab_size


def _greedy_continuation(subject, args, truth):
    seq = list(subject.ids)
    for _ in range(args["n"]):
        seq.append(int(logits_of(subject.bundle.model, seq)[-1].argmax()))
    new = seq[len(subject.ids) :]
    assert truth.value == "".join(token_text(subject.bundle.tokenizer, t) for t in new)
    return True


def _kv_cache_keys(subject, args, truth):
    cfg = subject.bundle.config
    assert truth.value == (cfg.n_layer * cfg.n_head * len(subject.ids) if cfg.causal else 0)
    return cfg.causal


CHECKS = {
    "top_next_token": _top_next_token,
    "top_prob_at_temperature": _top_prob_at_temperature,
    "top_p_kept": _top_p_kept,
    "most_surprising_token": _most_surprising_token,
    "prompt_perplexity": _prompt_perplexity,
    "greedy_continuation": _greedy_continuation,
    "kv_cache_keys": _kv_cache_keys,
}


@pytest.mark.parametrize(("n", "stop"), stops("4_output"), ids=lambda x: str(x)[:20])
def test_each_stop_is_answered_by_its_model_as_an_independent_computation_says(n, stop):
    subject, truth = measured("4_output", stop)
    holds = CHECKS[stop.answer](subject, stop.args, truth)
    assert truth.holds == holds
    assert truth.holds, f"stop {n}: the bundled model should show what the lesson teaches"
    assert truth.why.strip()


def test_every_kind_of_the_lesson_is_checked_here():
    used = {stop.answer for _, stop in stops("4_output")}
    assert used <= set(CHECKS) and len(stops("4_output")) >= 6


def test_the_stops_views_hold_the_settings_their_questions_ask_about():
    for _, stop in stops("4_output"):
        for key in ("temperature", "top_k", "top_p"):
            if key in stop.args and stop.page == "Next_token":
                assert stop.view[key] == stop.args[key]


# ---- when the lesson's observation does not hold --------------------------------------------------

PROMPT = "ROMEO:\nBut soft, what light through yonder window br"


def test_a_near_certain_token_barely_moves_with_temperature():
    subject = subject_for(bundle("shakespeare-char"), "To be, or not to be, that is the q")
    truth = out.top_prob_at_temperature(subject, temperature=0.5)
    assert truth.numbers["p_t1"] > 0.99
    assert truth.value == "stays about the same" and not truth.holds
    assert _top_prob_at_temperature(subject, {"temperature": 0.5}, truth) is False


def test_random_weights_spread_the_nucleus_over_most_of_the_vocabulary():
    subject = subject_for(snapshot("shakespeare-char", 0), PROMPT)
    truth = out.top_p_kept(subject, top_p=0.9)
    assert truth.value > subject.bundle.tokenizer.vocab_size / 2 and not truth.holds
    assert _top_p_kept(subject, {"top_p": 0.9}, truth) is False
    ppl = out.prompt_perplexity(subject)
    assert ppl.value > 0.9 * 77 and not ppl.holds  # about a blind guess


def test_a_model_without_the_causal_mask_is_not_read_as_predicting():
    subject = subject_for(bundle("shakespeare-nomask"), PROMPT)
    for kind in (out.most_surprising_token, out.prompt_perplexity, out.kv_cache_keys):
        truth = kind(subject)
        assert not truth.holds, kind.__name__
        assert "causal mask" in truth.why
    assert out.kv_cache_keys(subject).value == 0
    assert out.prompt_perplexity(subject).value < 2  # it sees the token it is scored on


def test_one_token_has_no_surprisal_and_no_perplexity():
    subject = subject_for(bundle("shakespeare-char"), "R")
    assert not out.most_surprising_token(subject).holds
    assert not out.prompt_perplexity(subject).holds


def test_the_kv_cache_fills_one_key_per_token_head_and_layer():
    subject = subject_for(bundle("shakespeare-tiny"), PROMPT)
    cfg = subject.bundle.config
    truth = out.kv_cache_keys(subject)
    assert truth.value == cfg.n_layer * cfg.n_head * len(subject.ids) and truth.holds
