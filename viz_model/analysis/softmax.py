"""Softmax that overflows: one row of a head's real scores, scaled up, through the naive softmax
exp(s) / Σ exp(s) in float32 and float16, beside the max-subtracted one exp(s − max) / Σ, which
gives the same weights and stays finite.

exp(s) is larger than the largest number a float can hold once s > log(max): about 88.72 in
float32 and 11.09 in float16 (`overflow_threshold`). Then exp gives inf, and inf / inf is NaN.
Below about −103 (float32) or −17 (float16) exp gives 0; a row whose every exp is 0 divides
0 by 0, NaN again. Subtracting the row's largest score first makes the largest exp exactly 1,
so nothing overflows and the sum is at least 1; the weights are unchanged, since
exp(s − m) / Σ exp(s − m) = exp(s) / Σ exp(s).

Every number here is computed by torch in the named dtype: the overflow is real, not simulated.

    row = softmax_row(scores, factor=100)     # scores: (n,) the keys a query reads
    row.naive["float16"]                      # NaN where exp overflowed, 0 elsewhere
    row.stable["float16"], row.exact          # finite, and float64's weights

Not here: where the scores come from (analysis/attention.py's attention_run), anything streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim

DTYPES = {"float32": torch.float32, "float16": torch.float16}
FACTORS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)  # the scale-ups a student may pick
SAME_TO = 1e-6  # "the same weights as float64" in float32 means within this


def overflow_threshold(dtype: torch.dtype) -> float:
    """The score above which exp(score) is inf in `dtype`: log of its largest finite number
    (88.72 for float32, 11.09 for float16)."""
    return math.log(torch.finfo(dtype).max)


def naive_softmax(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(exp(s), exp(s) / Σ exp(s)), computed in s's own dtype, infs and NaNs as they come."""
    e = torch.exp(s)
    return e, e / e.sum()


def stable_softmax(s: torch.Tensor) -> torch.Tensor:
    """exp(s − max) / Σ exp(s − max), in s's own dtype: the same weights, and no exp above 1."""
    e = torch.exp(s - s.max())
    return e / e.sum()


@dataclass(frozen=True)
class SoftmaxRow:
    """One row of scores scaled by `factor`, through each softmax (n keys; dtype names of DTYPES).

    scores: (n,) float64, the scores times factor; rounded: dtype -> those scores as the dtype
    holds them (a score past its range is ±inf); exp: dtype -> the naive exp(s); naive: dtype ->
    exp(s) / Σ exp(s); stable: dtype -> exp(s − max) / Σ; exact: float64's softmax; all as float64
    arrays holding the dtype's infs and NaNs.
    """

    factor: float
    scores: np.ndarray
    rounded: dict[str, np.ndarray]
    exp: dict[str, np.ndarray]
    naive: dict[str, np.ndarray]
    stable: dict[str, np.ndarray]
    exact: np.ndarray


def softmax_row(scores: np.ndarray, factor: float) -> SoftmaxRow:
    """`scores` (the keys one query reads, finite) times `factor`, through each softmax."""
    s64 = torch.as_tensor(np.asarray(scores, dtype=np.float64) * factor)
    rounded, exp, naive, stable = {}, {}, {}, {}
    for name, dtype in DTYPES.items():
        s = s64.to(dtype)
        e, w = naive_softmax(s)
        rounded[name], exp[name], naive[name] = (
            s.double().numpy(),
            e.double().numpy(),
            w.double().numpy(),
        )
        stable[name] = stable_softmax(s).double().numpy()
    exact = torch.softmax(s64, dim=-1).numpy()
    return SoftmaxRow(float(factor), s64.numpy(), rounded, exp, naive, stable, exact)


def max_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |a − b|; inf where either holds a NaN or an inf (no finite bound holds)."""
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.inf
    return float(np.abs(a - b).max()) if a.size else 0.0


def small(x: float) -> str:
    """A difference as the sentence prints it: 3e-08, or 0 when there is none."""
    return "0" if x == 0 else f"{x:.0e}"


def _naive_words(row: SoftmaxRow, name: str) -> tuple[str, dict[str, float]]:
    """What the naive softmax in dtype `name` gave, in words, and the counts behind them."""
    n = row.scores.size
    exp, w = row.exp[name], row.naive[name]
    over, nan = int(np.isinf(exp).sum()), int(np.isnan(w).sum())
    err = max_difference(w, row.exact)
    total = float(w.sum())  # NaN when a weight is NaN; 0 when the sum overflowed
    counts = {
        f"{name} exp inf": over,
        f"{name} nan": nan,
        f"{name} naive error": err,
        f"{name} naive sum": total,
    }
    limit = overflow_threshold(DTYPES[name])
    if over:
        zeros = int((w == 0).sum())
        rest = f"; the other {zeros} {'is' if zeros == 1 else 'are'} 0" if zeros else ""
        what = (
            f"naive {name} gives **NaN for {nan} of the {n} weights** (exp overflows to inf for "
            f"{over} score{'s' * (over != 1)} above {limit:.2f}, and inf / inf is NaN){rest}"
        )
    elif nan:  # no exp overflowed, yet NaN: every exp underflowed to 0, and 0 / 0 is NaN
        what = (
            f"naive {name} gives **NaN for {nan} of the {n} weights**: every exp underflows to 0, "
            "and 0 / 0 is NaN"
        )
    elif np.isinf(exp.sum()):
        what = f"naive {name} gives 0 for every weight: no exp overflows, but their sum does"
    else:
        top = float(row.rounded[name].max())
        d = 2 if f"{top:.2f}" != f"{limit:.2f}" else 4  # 11.0859 is not "11.09, under 11.09"
        what = (
            f"naive {name} stays finite (largest score {top:.{d}f}, under {limit:.{d}f}) and "
            + (
                "gives exactly float64's weights"
                if err == 0
                else f"is off float64 by at most {small(err)}"
            )
        )
    return what, counts


def overflow_claim(row: SoftmaxRow) -> Claim:
    """The sentence under the table: at ×factor, what each naive softmax gave (NaN counts from
    the numbers themselves) and how close max-subtraction came to float64. made: a naive softmax
    broke (a NaN, or weights that do not sum to 1)."""
    n = row.scores.size
    numbers: dict[str, float] = {"factor": row.factor, "keys": n, "same_to": SAME_TO}
    parts = []
    for name in DTYPES:
        what, counts = _naive_words(row, name)
        parts.append(what)
        numbers |= counts
    err32 = max_difference(row.stable["float32"], row.exact)
    err16 = max_difference(row.stable["float16"], row.exact)
    numbers |= {"float32 stable error": err32, "float16 stable error": err16}
    if math.isfinite(err32) and math.isfinite(err16):
        same = (
            f"the same weights as float64 to {SAME_TO:.0e} in float32 (largest difference "
            f"{small(err32)})"
            if err32 <= SAME_TO
            else f"float64's weights to within {small(err32)} in float32"
        )
        stable = f"Max-subtraction, exp(s − max) / Σ, stays finite and gives {same}, and " + (
            "exactly float64's weights in float16."
            if err16 == 0
            else f"to within {small(err16)} in float16, which keeps about 3 significant "
            "digits (of the scores too)."
        )
    elif np.isinf(row.rounded["float16"]).any():
        stable = (
            "Even max-subtraction fails in float16 here: the scaled scores themselves pass its "
            f"largest number ({torch.finfo(torch.float16).max:,.0f}) and become inf, and "
            "inf − inf is NaN."
        )
    else:
        stable = "Max-subtraction gives a weight that is not finite here."
    # broke: a NaN, or weights whose sum is not 1 (0 when the sum overflowed)
    broke = any(not abs(numbers[f"{name} naive sum"] - 1) <= 0.01 for name in DTYPES)
    text = f"At ×{row.factor:g}, " + "; ".join(parts) + ". " + stable
    return Claim(text, broke, numbers)
