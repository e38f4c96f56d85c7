"""Linear probes: can a straight line through the residual stream read a property of the token?

For each station of the stream (the embeddings, then after each block) a logistic-regression probe
is trained to tell a simple yes/no property of the current token from its residual vector, on
two of every three corpus windows, and scored on the third (passages it never saw). Its accuracy is
set against the majority baseline: always answering the more common label. A station "holds" a
property only when the held-out accuracy beats that baseline by more than the held-out noise:
NOISE_SE binomial standard errors sqrt(b (1 - b) / n) of n held-out tokens (`probe_claim`); a
gain of a point or two over a 95% baseline is within it. And only a property the model learned
counts: the same probes on the same tokens through its shape with random weights (a random
embedding already tells tokens apart, so "vowel" reads at 99% from a model that learned nothing)
must be beaten by the same margin.

    p(yes | x) = sigmoid(w . (x - mean) / std + b),  trained by L-BFGS on the cross-entropy + L2

Properties (`properties(texts, kind)`), from the text each token shows:
  vowel          the token's first letter is a vowel (a e i o u): the token alone tells it
  line start     the token is a line break or the first of a line: the break alone tells its
                 part, the first token of a line needs the token before it
  speaker name   the token is inside a speaker's name line ("Ham.", "LADY MACBETH."): needs context
  second copy    (repeat task) the token is in the copied half of its line
  deep bracket   (brackets task) the token leaves the bracket depth at 2 or more

Not here: the windows and the residual vectors (analysis/labs/contextual.py); charts
(charts/block/probes.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim

SPEAKER = re.compile(r"[A-Z][A-Za-z' ]{0,24}\.")  # a whole line: "Ham.", "LADY MACBETH."
VOWELS = set("aeiou")
TEST_EVERY = 3  # every third window (a passage the probe never trained on) is held out
L2 = 1e-2
FIRST_POSITION = 1  # position 0 has no context at all; leave it out
NOISE_SE = 3  # standard errors a probe must beat the baseline by (tokens of a snippet are related)


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of text, end excluding the newline."""
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def _window_labels(pieces: list[str], kind: str) -> dict[str, np.ndarray]:
    """Each property's label (W,) and a validity mask for one window; pieces join to its text."""
    text = "".join(pieces)
    ends = np.cumsum([len(p) for p in pieces])
    starts = ends - np.array([len(p) for p in pieces])
    spans = _line_spans(text)
    line_of = np.searchsorted([s for s, _ in spans], starts, side="right") - 1
    stripped = [p.strip().lower() for p in pieces]
    out = {
        "vowel": np.array([s[:1] in VOWELS for s in stripped]),
        "line start": np.array(
            [
                st == 0 or text[st - 1] == "\n" or "\n" in p
                for st, p in zip(starts, pieces, strict=True)
            ]
        ),
    }
    if kind == "shakespeare":
        lines = [text[s:e] for s, e in spans]
        after_blank = [i > 0 and lines[i - 1] == "" for i in range(len(lines))]
        speaker = [
            bool(SPEAKER.fullmatch(li)) and b for li, b in zip(lines, after_blank, strict=True)
        ]
        out["speaker name"] = np.array(
            [speaker[i] and p.strip() != "" for i, p in zip(line_of, pieces, strict=True)]
        )
    elif kind == "repeat":
        out["second copy"] = np.array(
            [
                "\n" not in p and (st - spans[i][0]) * 2 >= spans[i][1] - spans[i][0]
                for st, i, p in zip(starts, line_of, pieces, strict=True)
            ]
        )
    elif kind == "brackets":
        depth, depths = 0, []
        for p in pieces:
            for ch in p:
                depth = 0 if ch == "\n" else depth + (ch in "([{") - (ch in ")]}")
            depths.append(depth)
        out["deep bracket"] = np.array(depths) >= 2
    return out


def properties(texts: list[list[str]], kind: str) -> dict[str, np.ndarray]:
    """Property name -> labels (N, W) bool, for windows given as the text of each token; a
    property that is always yes or always no in these windows (vowels among digits) is left out."""
    rows = [_window_labels(pieces, kind) for pieces in texts]
    stacked = {name: np.stack([r[name] for r in rows]) for name in rows[0]}
    return {name: y for name, y in stacked.items() if 0 < y[:, FIRST_POSITION:].mean() < 1}


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of the probe at each station (S,) on held-out windows (and on its training
    windows), the majority baseline on the held-out windows, and how many tokens each side had."""

    test_accuracy: np.ndarray
    train_accuracy: np.ndarray
    baseline: float
    share_yes: float
    n_train: int
    n_test: int


def fit_logistic(
    x: torch.Tensor, y: torch.Tensor, steps: int = 60
) -> tuple[torch.Tensor, torch.Tensor]:
    """(w (D,), b ()) of an L2-regularised logistic regression on standardised x (n, D), y (n,)."""
    w = torch.zeros(x.shape[1], dtype=x.dtype, requires_grad=True)
    b = torch.zeros((), dtype=x.dtype, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(x @ w + b, y) + L2 * (w @ w)
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return w.detach(), b.detach()


def probe_by_station(resid: np.ndarray, labels: np.ndarray) -> ProbeResult:
    """Train and score one probe per station; resid (S, N, W, D), labels (N, W) bool."""
    S, N, W, _ = resid.shape
    test = np.arange(N) % TEST_EVERY == TEST_EVERY - 1
    y = torch.as_tensor(labels[:, FIRST_POSITION:], dtype=torch.float64)
    y_train, y_test = y[~test].reshape(-1), y[test].reshape(-1)
    majority = float(y_train.mean() >= 0.5)
    baseline = float((y_test == majority).double().mean())
    test_acc, train_acc = [], []
    for s in range(S):
        # a copy (resid may be shared read-only)
        x = torch.tensor(resid[s, :, FIRST_POSITION:], dtype=torch.float64)
        x_train, x_test = x[~test].reshape(-1, x.shape[-1]), x[test].reshape(-1, x.shape[-1])
        mean, std = x_train.mean(0), x_train.std(0).clamp_min(1e-6)
        w, b = fit_logistic((x_train - mean) / std, y_train)
        for xs, ys, acc in ((x_train, y_train, train_acc), (x_test, y_test, test_acc)):
            guess = (((xs - mean) / std) @ w + b) > 0
            acc.append(float((guess == ys.bool()).double().mean()))
    return ProbeResult(
        np.array(test_acc),
        np.array(train_acc),
        baseline,
        float(y.mean()),
        len(y_train),
        len(y_test),
    )


def noise_margin(result: ProbeResult, n_se: float = NOISE_SE) -> float:
    """How far above the majority baseline a held-out accuracy must be to count: n_se binomial
    standard errors of the baseline's accuracy on the n_test held-out tokens."""
    b = result.baseline
    return n_se * float(np.sqrt(b * (1 - b) / max(result.n_test, 1)))


def at(station: str) -> str:
    """A station in a sentence: 'embed' -> 'at the embeddings'; 'after block 2' stays."""
    return "at the embeddings" if station == "embed" else station


def probe_claim(
    name: str, stations: list[str], result: ProbeResult, untrained: ProbeResult | None = None
) -> Claim:
    """Which stations hold `name` in a form the model learned: made when some station's held-out
    accuracy beats the majority baseline by more than noise_margin and, where `untrained` (the
    same probes on the same tokens through the model's shape with random weights,
    analysis/untrained.py) is given, beats that as well by the same margin. A random embedding
    already tells tokens apart, so a property the token alone decides is read from a model that
    learned nothing: such a reading is said, with the random weights' number, and not claimed.
    The neutral sentences give the best accuracy against the baselines and the margin."""
    acc, b, margin = result.test_accuracy, result.baseline, noise_margin(result)
    over_base = acc - b > margin
    over_blank = acc - untrained.test_accuracy > margin if untrained is not None else over_base
    learned = [at(s) for s, a, u in zip(stations, over_base, over_blank, strict=True) if a and u]
    best = int(np.argmax(acc))
    numbers = {
        "baseline": b,
        "margin": margin,
        "n_se": NOISE_SE,
        "n_test": result.n_test,
        "best_accuracy": float(acc[best]),
        "best_station": best,
        "stations_beyond": len(learned),
        "stations_beyond_baseline": int(over_base.sum()),
    }
    noise = (
        f"noise margin {100 * margin:.1f} points: {NOISE_SE} standard errors on "
        f"{result.n_test:,} held-out tokens"
    )
    blank = ""  # said beside a reading; with none, there is nothing to compare
    if untrained is not None:
        u_best = int(np.argmax(untrained.test_accuracy))
        u_acc = float(untrained.test_accuracy[u_best])
        numbers |= {"untrained_best_accuracy": u_acc, "untrained_best_station": u_best}
        blank = f"; random weights of this shape: best {u_acc:.1%} {at(stations[u_best])}"
    if learned:
        where = _listed(learned)
        beyond = "the majority baseline" + (" and random weights" if untrained else "")
        text = (
            f"**{name}**: read beyond {beyond} ({b:.1%}{blank}) {where}; best {acc[best]:.1%} "
            f"{at(stations[best])} (+{100 * (acc[best] - b):.1f} points; {noise})."
        )
        return Claim(text, True, numbers)
    if over_base.any():  # readable, but no better than in a model that learned nothing
        where = _listed([at(s) for s, a in zip(stations, over_base, strict=True) if a])
        text = (
            f"**{name}**: read beyond the majority baseline ({b:.1%}) {where}, but no better than "
            f"from the same shape with random weights{blank}: a model that learned nothing gives "
            f"it too, so it is not something this model learned; best {acc[best]:.1%} "
            f"{at(stations[best])} ({noise})."
        )
        return Claim(text, False, numbers)
    text = (
        f"**{name}**: no station reads it beyond the majority baseline ({b:.1%}) by more than "
        f"the noise; the best is {acc[best]:.1%} {at(stations[best])} "
        f"({100 * (acc[best] - b):+.1f} points; {noise})."
    )
    return Claim(text, False, numbers)


def _listed(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
