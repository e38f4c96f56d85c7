"""Suggesting a patching experiment that shows something: where to cut the prompt and which
token to change so that the change flips the model's prediction, scored as the patching scores it.

Shapes: K candidate changes, T tokens, V vocab.
Not here: the patching itself (activation_patching.py), the candidate tokens (texts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model.analysis.labs.interventions.activation_patching import corrupt
from viz_model.model.gpt import GPT

SUGGEST_POSITIONS = 16  # the suggestion tries this many positions before the token it cuts at
MIN_SPAN = 1.0  # nats: a change that moves LD less than this leaves the patching scores noisy
SUGGEST_ENDS = 8  # the suggestion tries cutting the prompt after each of its last this many tokens


@torch.no_grad()
def _spans(model: GPT, ids: list[int], options: list[tuple[int, int]]) -> torch.Tensor:
    """LD_clean - LD_corrupted of each one-token change (K,), with the answer and the wrong token
    chosen as `patching` chooses them (pick_answers). The changes run as one batch (K, T)."""
    clean = model(torch.tensor(ids))[-1]  # (V,)
    last = model(torch.tensor([corrupt(ids, p, c) for p, c in options]))[:, -1]  # (K, V)
    answer = int(clean.argmax())
    wrong = last.argmax(-1)
    wrong = torch.where(wrong == answer, clean.topk(2).indices[1], wrong)
    return (clean[answer] - clean[wrong]) - (last[:, answer] - last.gather(1, wrong[:, None])[:, 0])


def _best_change(
    model: GPT, ids: list[int], options: list[tuple[int, int]]
) -> tuple[float, tuple[int, int]] | None:
    if not options:
        return None
    spans = _spans(model, ids, options)
    k = int(spans.argmax())
    return float(spans[k]), options[k]


def _earlier_options(ids: list[int], candidates: list[int]) -> list[tuple[int, int]]:
    first = max(0, len(ids) - 1 - SUGGEST_POSITIONS)
    return [(p, c) for p in range(first, len(ids) - 1) for c in candidates if c != ids[p]]


def suggest_corruption(model: GPT, ids: list[int], candidates: list[int]) -> tuple[int, int]:
    """(position, token): among the changes before the last token that flip the last prediction
    (moving LD by MIN_SPAN), the one that moves LD most. When none flips, the change that moves
    LD most, before the last token; the last token itself only when no earlier change moves LD
    by MIN_SPAN (its map is then one column)."""
    T = len(ids)
    flips = [
        s for s in _suggestions(model, ids, candidates, [T - 1]) if s.flips and s.span >= MIN_SPAN
    ]
    if flips:
        best = max(flips, key=lambda s: s.span)
        return best.position, best.token
    best = _best_change(model, ids, _earlier_options(ids, candidates))
    if best is None or best[0] < MIN_SPAN:
        last = _best_change(model, ids, [(T - 1, c) for c in candidates if c != ids[-1]])
        if last is not None and (best is None or last[0] > best[0]):
            best = last
    return best[1] if best else (T - 1, ids[-1])


@dataclass(frozen=True)
class Suggestion:
    """One candidate patching experiment: cut after `end`, change `position` to `token`."""

    end: int
    position: int
    token: int
    flips: bool  # the corrupted run's favourite differs from the clean run's
    span: float  # LD_clean - LD_corrupted, as patching scores it
    correct: bool  # the clean run's favourite is the prompt's own next token


@torch.no_grad()
def _suggestions(model: GPT, ids: list[int], candidates: list[int], ends: list[int]):
    """Every one-token change (SUGGEST_POSITIONS before each end) scored at each end.

    A causal model's prediction after token e reads only tokens 0..e, so one batch of whole
    corrupted prompts gives every end at once; a model without the mask runs each cut alone."""
    T = len(ids)
    first = max(0, min(ends) - SUGGEST_POSITIONS)
    options = [(p, c) for p in range(first, max(ends)) for c in candidates if c != ids[p]]
    if not options:
        return []
    if model.cfg.causal:
        clean_all = model(torch.tensor(ids))  # (T, V)
        bad_all = model(torch.tensor([corrupt(ids, p, c) for p, c in options]))  # (K, T, V)
        at = {e: (clean_all[e], bad_all[:, e]) for e in ends}
    else:
        at = {}
        for e in ends:
            cut = ids[: e + 1]
            bad = model(torch.tensor([corrupt(cut, p, c) if p <= e else cut for p, c in options]))
            at[e] = (model(torch.tensor(cut))[-1], bad[:, -1])
    out = []
    for e in ends:
        clean, bad = at[e]
        answer = int(clean.argmax())
        top = bad.argmax(-1)
        wrong = torch.where(top == answer, clean.topk(2).indices[1], top)
        span = (clean[answer] - clean[wrong]) - (
            bad[:, answer] - bad.gather(1, wrong[:, None])[:, 0]
        )
        correct = e + 1 < T and ids[e + 1] == answer
        for k, (p, c) in enumerate(options):
            if e - SUGGEST_POSITIONS <= p < e:
                out.append(Suggestion(e, p, c, int(top[k]) != answer, float(span[k]), correct))
    return out


def suggest_experiment(
    model: GPT, ids: list[int], candidates: list[int], max_ends: int = SUGGEST_ENDS
) -> tuple[int, int, int]:
    """(end, position, token): a patching experiment that shows something. Among the last
    max_ends tokens, the prompt is cut after the latest token whose prediction the model gets
    right (the prompt's own next token) and some earlier one-token change flips (the corrupted
    run's favourite differs, LD moving by MIN_SPAN at least); the change is the one that moves
    LD most there. Failing that, the latest end where a change flips the prediction; failing
    that, the whole prompt and its largest change (the page then says nothing flipped)."""
    T = len(ids)
    ends = list(range(max(1, T - max_ends), T))
    found = [
        s for s in _suggestions(model, ids, candidates, ends) if s.flips and s.span >= MIN_SPAN
    ]
    for pick in ([s for s in found if s.correct], found):
        if pick:
            last = max(s.end for s in pick)
            best = max((s for s in pick if s.end == last), key=lambda s: s.span)
            return best.end, best.position, best.token
    return (T - 1, *suggest_corruption(model, ids, candidates))
