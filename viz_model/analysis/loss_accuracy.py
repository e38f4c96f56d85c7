"""The log loss and the 0/1 loss (accuracy) of one model along its training: each saved snapshot
scored on the same fixed slice of its validation text, so the two curves differ only by what
they measure.

    tokens = validation_slice(bundle)          # the first EVAL_TOKENS + 1 validation tokens
    along = along_training(bundle, tokens)     # steps, log loss, accuracy, one per snapshot
    accuracy_claim(along, vocab)               # what the two curves did, in words

log loss  = mean over positions of -ln p(next)                   (what training minimised)
accuracy  = share of positions whose most likely token is next   (what it never saw)

Not here: the loss recorded while the run trained (analysis/training.py, which reads
history.json), the per-prompt loss on the Next token page (analysis/next_token.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.analysis.training import final_step, training_data, training_steps
from viz_model.bundles.checkpoint import Bundle

EVAL_TOKENS = 4096  # scored positions: a few thousand, so a snapshot scores in a blink on a CPU
ACCURACY_CHANGE = 0.02  # a smaller change of accuracy (2 points) is not called a rise or a fall
LOSS_CHANGE = 0.02  # nats, as analysis/training.py's


def validation_slice(bundle: Bundle, n_tokens: int = EVAL_TOKENS) -> np.ndarray | None:
    """The first n_tokens + 1 tokens of the bundle's validation split (the same for every
    snapshot); None when the bundle does not say what it was trained on or the text is gone."""
    data = training_data(bundle)
    if data is None:
        return None
    val = data.val.numpy()[: n_tokens + 1]
    return val if val.size >= 2 else None


@torch.no_grad()
def score(model: torch.nn.Module, tokens: np.ndarray, n_ctx: int) -> tuple[float, float]:
    """(mean -ln p(next), accuracy) over every position of `tokens`, read as windows of n_ctx
    inputs (each window's targets are its inputs shifted by one; the windows do not overlap)."""
    t = torch.as_tensor(np.asarray(tokens), dtype=torch.long)
    n = len(t) - 1
    device = next(model.parameters()).device
    total, right = 0.0, 0
    for start in range(0, n, n_ctx):
        x = t[start : min(start + n_ctx, n)].to(device)
        y = t[start + 1 : start + 1 + len(x)].to(device)
        logits = model(x[None]).float()[0]  # (T, V)
        total += float(F.cross_entropy(logits, y, reduction="sum"))
        right += int((logits.argmax(-1) == y).sum())
    return total / n, right / n


@dataclass(frozen=True)
class AlongTraining:
    """Log loss and accuracy at each scored step, on the same validation tokens."""

    steps: np.ndarray  # (S,) int
    loss: np.ndarray  # (S,) nats per token
    accuracy: np.ndarray  # (S,) in [0, 1]
    n_tokens: int  # positions scored at each step


def along_training(bundle: Bundle, tokens: np.ndarray) -> AlongTraining | None:
    """Each saved snapshot and the final weights scored on `tokens`; None when the bundle kept no
    snapshot before its final step (tr.training_steps)."""
    final = final_step(bundle.history, bundle.meta)
    steps = training_steps(bundle.snapshot_steps(), final)
    if not steps:
        return None
    scores = []
    for step in steps:
        model = bundle.model if step == final else bundle.load_snapshot(step).eval()
        scores.append(score(model, tokens, bundle.config.n_ctx))
    loss, acc = (np.array(s, dtype=float) for s in zip(*scores, strict=True))
    return AlongTraining(np.array(steps), loss, acc, len(tokens) - 1)


def _moved(first: float, last: float, change: float, up: str, down: str) -> str:
    if last - first >= change:
        return up
    return down if first - last >= change else "stayed about the same"


def accuracy_claim(along: AlongTraining, vocab: int, finetune: bool = False) -> Claim:
    """How the log loss and the accuracy moved from the first scored step to the last (made: the
    loss fell and accuracy rose), with the chance accuracy of a blind guess (1/V)."""
    l0, l1 = float(along.loss[0]), float(along.loss[-1])
    a0, a1 = float(along.accuracy[0]), float(along.accuracy[-1])
    s0, s1 = int(along.steps[0]), int(along.steps[-1])
    numbers = {"loss_first": l0, "loss_last": l1, "acc_first": a0, "acc_last": a1}
    numbers |= {"chance": 1 / vocab, "loss_change": LOSS_CHANGE, "acc_change": ACCURACY_CHANGE}
    loss_went = _moved(l0, l1, LOSS_CHANGE, "rose", "fell")
    acc_went = _moved(a0, a1, ACCURACY_CHANGE, "rose", "fell")
    start = "the base model" if finetune and s0 == 0 else f"step {s0:,}"
    text = (
        f"On the same {along.n_tokens:,} validation tokens, from {start} to step {s1:,} the log "
        f"loss {loss_went} ({l0:.2f} → {l1:.2f} nats) and accuracy {acc_went} "
        f"({a0:.1%} → {a1:.1%}; a blind guess is right 1 time in {vocab:,}, {1 / vocab:.1%})."
    )
    return Claim(text, loss_went == "fell" and acc_went == "rose", numbers)
