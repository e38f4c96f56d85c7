"""Lesson 2, attention (assets/lessons/2_attention.toml): every stop's answer, measured on the
model the stop names, against plain torch on the recorded activations (the pattern's diagonals,
q·k by hand, induction targets found by position, ablations by our own hook on hook_z); and each
kind's holds=False path on a model where the lesson's observation does not hold."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from tests.conftest import tiny_model
from tests.lesson_util import answer_on, bundle
from tests.lesson_util import at_stop as at_stop_of
from tests.lesson_util import lesson as lesson_of
from tests.lesson_util import subject as subject_of
from viz_model.analysis import attention as at
from viz_model.analysis.labs import interventions as iv
from viz_model.analysis.tokens import token_text
from viz_model.bundles.checkpoint import Bundle
from viz_model.lessons.answers_attention import page_windows
from viz_model.lessons.kinds import Subject, subject_for
from viz_model.lessons.registry import ANSWERS
from viz_model.model.scale import view_tokens

LESSON = "2_attention"


lesson = partial(lesson_of, LESSON)
subject = partial(subject_of, LESSON)
at_stop = partial(at_stop_of, LESSON)
other = answer_on


def record(b: Bundle, ids, name: str) -> np.ndarray:
    with torch.no_grad():
        _, cache_ = b.model.run_with_cache(torch.as_tensor(list(ids)), names=[name])
    return cache_.numpy(name)


def pattern(b: Bundle, ids, layer: int) -> np.ndarray:
    """(H, T, T) the recorded attention pattern of one layer."""
    return record(b, ids, f"blocks.{layer}.attn.hook_pattern")


def text(b: Bundle, ids, position: int) -> str:
    return token_text(b.tokenizer, list(ids)[position])


def test_the_lesson_reads_with_the_real_pages_and_models_and_has_6_to_12_stops():
    stops = lesson().stops
    assert 6 <= len(stops) <= 12
    assert [s.answer for s in stops] == [
        "top_key",
        "attention_score",
        "future_share",
        "future_share",
        "head_offset",
        "previous_token_head",
        "induction_head",
        "ablation_raises_loss",
        "most_needed_head",
        "induction_head",
    ]


def test_stop_1_the_last_token_looks_two_back_in_L0_H2():
    stop, s, truth = at_stop(1, "top_key")
    b = bundle(stop.model)
    row = pattern(b, s.ids, 0)[2, -1]  # (T,)
    assert text(b, s.ids, -1) == "n"  # the token the question names
    assert truth.value == text(b, s.ids, int(row.argmax())) == "i"
    assert int(row.argmax()) == len(s.ids) - 3
    assert truth.holds and row.max() > 0.9


def test_top_key_does_not_hold_on_a_spread_row():
    # shakespeare-nomask's layer 1 spreads its attention over the whole prompt
    truth = other("shakespeare-nomask", lesson().stops[0].prompt, "top_key", layer=1, head=0)
    assert truth.numbers["weight"] - truth.numbers["even"] < 0.2 and not truth.holds


def test_stop_2_the_score_is_q_dot_k_over_the_root_of_d_head():
    stop, s, truth = at_stop(2, "attention_score")
    b = bundle(stop.model)
    T = len(s.ids)
    assert stop.view["query"] == T - 1 and text(b, s.ids, -3) == "i" and b.config.d_head == 32
    q = record(b, s.ids, "blocks.0.attn.hook_q")[-1, 2]  # (E,)
    k = record(b, s.ids, "blocks.0.attn.hook_k")[-3, 2]
    by_hand = float(np.dot(q, k) / math.sqrt(32))
    assert abs(truth.value - by_hand) < 1e-3
    recorded = record(b, s.ids, "blocks.0.attn.hook_attn_scores")[2, -1, -3]
    assert abs(truth.value - recorded) < 1e-3
    assert truth.check(round(by_hand, 2)) and not truth.check(by_hand + 0.05)
    assert truth.holds


def test_attention_score_of_a_masked_key_does_not_hold():
    truth = other("shakespeare-char", "To be", "attention_score", layer=0, head=0, query=1, key=3)
    assert not truth.holds


def test_stop_3_the_causal_mask_gives_later_tokens_exactly_zero():
    stop, s, truth = at_stop(3, "future_share")
    b = bundle(stop.model)
    q = stop.args["query"]
    assert stop.view["query"] == q and text(b, s.ids, q) == "b"
    row = pattern(b, s.ids, 0)[1, q]
    assert float(row[q + 1 :].sum()) == 0.0
    assert truth.value == "none: exactly 0" and truth.holds


def test_stop_4_without_the_mask_most_attention_goes_to_later_tokens():
    stop, s, truth = at_stop(4, "future_share")
    b = bundle(stop.model)
    assert not b.config.causal
    q = stop.args["query"]
    row = pattern(b, s.ids, 0)[1, q]
    assert float(row[q + 1 :].sum()) >= 0.5
    assert truth.value == "half or more" and truth.holds


def test_future_share_does_not_hold_when_no_token_comes_after():
    assert not other("shakespeare-nomask", "To be", "future_share", layer=0, head=1, query=-1).holds


def _offset_scores(p: np.ndarray) -> list[float]:
    """Mean attention from query t to key t - k, for k = 0 .. T // 2 (p: (T, T))."""
    T = p.shape[0]
    return [float(np.mean([p[t, t - k] for t in range(max(k, 1), T)])) for k in range(T // 2)]


def test_stop_5_L0_H3_looks_three_back():
    stop, s, truth = at_stop(5, "head_offset")
    scores = _offset_scores(pattern(bundle(stop.model), s.ids, 0)[3])
    assert truth.value == int(np.argmax(scores)) == 3
    assert truth.holds and scores[3] > 0.4


def test_head_offset_does_not_hold_for_a_spread_head():
    truth = other("shakespeare-char", lesson().stops[0].prompt, "head_offset", layer=1, head=0)
    assert not truth.holds


def test_stop_6_L0_H1_is_the_strongest_previous_token_head():
    stop, s, truth = at_stop(6, "previous_token_head")
    p = pattern(bundle(stop.model), s.ids, 0)  # (H, T, T)
    prev = [float(np.mean([p[h, t, t - 1] for t in range(1, p.shape[1])])) for h in range(4)]
    assert truth.value == f"L0 H{int(np.argmax(prev))}" == "L0 H1"
    assert truth.holds and max(prev) > 0.9


def test_previous_token_head_says_none_of_them_without_the_mask():
    truth = other("shakespeare-nomask", lesson().stops[0].prompt, "previous_token_head", layer=0)
    assert truth.value == "none of them" and not truth.holds


def _repeated(b: Bundle, seed: int) -> np.ndarray:
    """The Attention page's repeated random sequence (its induction test input), seed `seed`."""
    test = at.induction_test(b.tokenizer, b.meta, view_tokens(b.config))
    return at.repeated_random_tokens(test.token_ids, test.default_length, seed=seed)


def _induction_by_position(b: Bundle, layer: int) -> np.ndarray:
    """(H,) each head's attention, in the second copy, to the token after the first copy of the
    current one: key t - k + 1 for a copy of length k (found by position, not by token)."""
    ids = _repeated(b, 0)
    k = len(ids) // 2
    p = pattern(b, ids, layer)
    return np.array(
        [np.mean([p[h, t, t - k + 1] for t in range(k, 2 * k)]) for h in range(p.shape[0])]
    )


def _second_copy_loss(b: Bundle, layer: int, head: int | None, seeds: int = 32) -> np.ndarray:
    """(seeds,) mean loss on each sequence's second copy (tokens k+1..2k-1), with one head's z
    zeroed by our own hook (or none)."""
    seqs = torch.as_tensor(np.stack([_repeated(b, s) for s in range(seeds)]))
    k = seqs.shape[1] // 2

    def zero(z, hook):
        z = z.clone()
        z[..., head, :] = 0.0
        return z

    hooks = [] if head is None else [(f"blocks.{layer}.attn.hook_z", zero)]
    with torch.no_grad():
        logits = b.model.run_with_hooks(seqs[:, :-1], hooks)
    loss = F.cross_entropy(logits.transpose(1, 2), seqs[:, 1:], reduction="none")  # (N, 2k-1)
    return loss[:, k : 2 * k - 1].mean(1).numpy()


def test_stop_7_L1_H2_is_the_induction_head_and_ablating_it_breaks_copying():
    stop, s, truth = at_stop(7, "induction_head")
    b = bundle(stop.model)
    scores = _induction_by_position(b, 1)
    assert truth.value == f"L1 H{int(np.argmax(scores))}" == "L1 H2"
    assert scores.max() > 0.4
    rise = _second_copy_loss(b, 1, 2) - _second_copy_loss(b, 1, None)
    assert abs(truth.numbers["rise"] - rise.mean()) < 1e-3
    assert rise.mean() > 2 * rise.std(ddof=1) / math.sqrt(len(rise))
    assert truth.holds
    assert stop.view["head"] != 2  # the page's sentence about the chosen head does not tell


def _page_loss(b: Bundle, ids, heads: list[tuple[int, int]]) -> float:
    """The loss on the Interventions page's windows with these heads' z zeroed by our own hook."""
    windows = page_windows(b, tuple(ids))

    def zero(z, hook, layer_heads):
        z = z.clone()
        z[..., layer_heads, :] = 0.0
        return z

    hooks = [
        (f"blocks.{layer}.attn.hook_z", lambda z, hook, hs=[h]: zero(z, hook, hs))
        for layer, h in heads
    ]
    with torch.no_grad():
        logits = b.model.run_with_hooks(windows[:, :-1], hooks)
    return float(F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()))


def test_stop_8_ablating_the_induction_head_raises_the_held_out_loss():
    stop, s, truth = at_stop(8, "ablation_raises_loss")
    b = bundle(stop.model)
    layer, head = stop.args["layer"], stop.args["head"]
    assert stop.view["heads"] == iv.heads_to_url([(layer, head)])
    assert lesson().stops[6].model == stop.model
    seven = at_stop(7, "induction_head")[2]
    assert seven.value == f"L{layer} H{head}"  # the head the previous stop found
    change = _page_loss(b, s.ids, [(layer, head)]) - _page_loss(b, s.ids, [])
    assert abs(change - truth.numbers["change"]) < 1e-4
    assert change > 1.0 and truth.value == "yes" and truth.holds


def test_ablation_raises_loss_does_not_hold_for_a_missing_head():
    assert not other("induction-1l", "abcabc", "ablation_raises_loss", layer=1, head=2).holds


def test_stop_9_the_sweep_names_the_induction_head():
    stop, s, truth = at_stop(9, "most_needed_head")
    b = bundle(stop.model)
    base = _page_loss(b, s.ids, [])
    rise = {
        f"L{layer} H{h}": _page_loss(b, s.ids, [(layer, h)]) - base
        for layer in range(b.config.n_layer)
        for h in range(b.config.n_head)
    }
    assert truth.value == max(rise, key=rise.get) == "L1 H2"
    assert truth.holds


def test_most_needed_head_names_none_when_the_text_is_too_short_to_tell_from_noise():
    # a model that does not say what it was trained on is measured on the prompt: 12 tokens
    # make one stretch of text, too few to estimate the noise, so no head may be named
    model = tiny_model()
    b = Bundle(bundle("induction-2l").path, model, bundle("induction-2l").tokenizer, model.cfg)
    truth = ANSWERS["most_needed_head"](Subject(b, tuple(range(1, 13)), "x"), {})
    assert truth.value == "none of them" and not truth.holds


def test_stop_10_a_one_layer_model_has_no_induction_head():
    stop, s, truth = at_stop(10, "induction_head")
    b = bundle(stop.model)
    assert b.config.n_layer == 1
    scores = _induction_by_position(b, 0)
    assert scores.max() < 0.4
    assert truth.value == "none of them" and truth.holds  # the lesson expects none here
    expecting_one = ANSWERS["induction_head"](s, {"layer": 0})
    assert expecting_one.value == "none of them" and not expecting_one.holds


def test_induction_head_does_not_hold_when_none_is_expected_but_one_is_found():
    truth = other("induction-2l", "abcabc", "induction_head", layer=1, present=False)
    assert truth.value == "L1 H2" and not truth.holds


def test_every_kind_that_reads_the_prompt_answers_an_empty_one_without_claiming_anything():
    empty = subject_for(bundle("shakespeare-char"), "")
    kinds = [k for k, v in ANSWERS.items() if v.measure.__module__.endswith("answers_attention")]
    # the sweep measures the held-out text, not the prompt
    reads_prompt = [k for k in kinds if k != "most_needed_head"]
    assert len(reads_prompt) == 7
    assert not any(ANSWERS[k](empty, {}).holds for k in reads_prompt)
