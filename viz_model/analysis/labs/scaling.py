"""Scaling: validation loss against model size and training compute, on log-log axes.

- `count_params(cfg)`: (total, non-embedding) parameters of a GPTConfig, exactly, without building
  the model; `rule_of_thumb(L, d)` = 12 L d^2, the lecture's estimate of the non-embedding part.
- `PUBLISHED`: GPT-2's and GPT-3's shapes and parameter counts as their papers give them, and
  `counted(p)`, the same shapes counted exactly (GPT-2 small: published 117 M, counted 124,439,808).
- `PUBLISHED_LAWS`: published scaling results with their own numbers and units (Kaplan et al.
  2020, Hoffmann et al. 2022), to be shown beside ours, never on our axes.
- `ScalingPoint`, `sweep_points(results)`, `bundle_point(...)`: one trained model each: non-embedding
  parameters N, tokens seen D, compute C = 6 N D (forward and backward, Kaplan et al. 2020), and
  its validation loss.
- `load_sweep(path)`, `bundle_points(found, bundled_dir)`: the points the Scaling page plots: a
  sweep's results file, and every bundle trained on the same text with the same tokenizer.
- `fit_power_law(x, y)`: loss = a x^-b by least squares on the logs; `fit_report(x, y)` with its
  uncertainty (a 95% interval on b, and b's range over leave-one-out fits).
- `compute_frontier(results)`: the lowest validation loss reached at each compute budget, from
  every run's curve, and `frontier_report(results)`, compute's own fit (not the parameters' one).
- `chinchilla_rows(results)`: tokens per parameter each run saw, beside Hoffmann et al.'s ~20, and
  the compute-optimal size that rule gives for the same compute.
- `size_claim`, `compute_claim`, `tokens_claim`: the sentences the Scaling page prints about the
  fits (docs/ARCHITECTURE.md, Claims): "loss falls with size" only when b > 0 beyond the fit's uncertainty.

Not here: training the sweep (scripts/scaling_sweep.py), charts (charts/scaling.py), streamlit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from viz_model.analysis.claims import Claim
from viz_model.bundles.checkpoint import read_config
from viz_model.bundles.files import CheckpointError
from viz_model.model.config import GPTConfig
from viz_model.text.data import ASSETS_DIR

SWEEP_FILE = ASSETS_DIR / "scaling" / "shakespeare-char.json"  # scripts/scaling_sweep.py

FLOPS_PER_PARAM_TOKEN = 6  # 2 for the forward pass, 4 for the backward: C = 6 N D


def count_params(cfg: GPTConfig) -> tuple[int, int]:
    """(total, non-embedding) parameters; non-embedding = the blocks and the final LayerNorm.

    Per block: attention 4 d^2 (+ 4 d biases), MLP 2 d d_mlp (+ d_mlp + d), one LayerNorm per
    sublayer (d gains, + d biases); with d_mlp = 4 d that is 12 d^2 + 13 d. Grouped-query
    attention makes fewer keys and values, a gated MLP has a third matrix, an RMSNorm no bias."""
    return count_shape(
        cfg.n_layer,
        cfg.d_model,
        cfg.d_mlp,
        cfg.vocab_size,
        cfg.n_ctx,
        bias=cfg.bias,
        tied=cfg.tie_embeddings,
        learned_pos=cfg.pos == "learned",
        final_ln=cfg.norm == "pre",
        attn_only=cfg.attn_only,
        norm=cfg.norm_kind,
        gated=cfg.mlp == "gated",
        d_kv=cfg.n_kv_heads * cfg.d_head,
    )


def count_shape(
    n_layer: int,
    d: int,
    m: int,
    vocab: int,
    n_ctx: int,
    *,
    bias: bool = True,
    tied: bool = False,
    learned_pos: bool = True,
    final_ln: bool = True,
    attn_only: bool = False,
    norm: str = "layernorm",
    gated: bool = False,
    d_kv: int | None = None,
) -> tuple[int, int]:
    """`count_params` from plain numbers, for shapes larger than a GPTConfig allows (GPT-3).
    d_kv: the width of the keys (and of the values), n_kv_heads * d_head; d when left out."""
    b = int(bias)
    d_kv = d if d_kv is None else d_kv
    ln = {"layernorm": d + b * d, "rmsnorm": d, "none": 0}[norm]
    attn = 2 * d * d + 2 * d * d_kv + b * (2 * d + 2 * d_kv)  # q and out, k and v
    n_in = 2 if gated else 1  # W_in, and W_gate when gated
    mlp = 0 if attn_only else (n_in + 1) * d * m + b * (n_in * m + d)
    block = attn + mlp + (1 if attn_only else 2) * ln
    non_embedding = n_layer * block + (ln if final_ln else 0)
    embed = vocab * d * (1 if tied else 2) + (n_ctx * d if learned_pos else 0)
    return non_embedding + embed, non_embedding


def rule_of_thumb(n_layer: int, d_model: int) -> int:
    """12 L d^2: attention's 4 d^2 and the MLP's 8 d^2 per block, biases and embeddings left out."""
    return 12 * n_layer * d_model**2


@dataclass(frozen=True)
class Published:
    """A published model: its paper's name, shape and parameter count (as the paper states it);
    its context length; tokens it trained on (0: not published)."""

    name: str
    n_layer: int
    d_model: int
    params: int
    n_ctx: int
    tokens: float = 0.0


GPT2_VOCAB = 50_257  # GPT-2's and GPT-3's byte-level BPE vocabulary

# Radford et al. 2019, table 2; Brown et al. 2020, table 2.1 (every GPT-3 size saw 300 B tokens).
# GPT-2's paper gives 117 M for its smallest model; counted from its released shape (tied
# embeddings) it has 124,439,808 parameters: `counted` gives those counts.
PUBLISHED = (
    Published("GPT-2 small", 12, 768, 117_000_000, 1024),
    Published("GPT-2 medium", 24, 1024, 345_000_000, 1024),
    Published("GPT-2 large", 36, 1280, 762_000_000, 1024),
    Published("GPT-2 XL", 48, 1600, 1_542_000_000, 1024),
    Published("GPT-3 Small", 12, 768, 125_000_000, 2048, 300e9),
    Published("GPT-3 Medium", 24, 1024, 350_000_000, 2048, 300e9),
    Published("GPT-3 Large", 24, 1536, 760_000_000, 2048, 300e9),
    Published("GPT-3 XL", 24, 2048, 1_300_000_000, 2048, 300e9),
    Published("GPT-3 2.7B", 32, 2560, 2_700_000_000, 2048, 300e9),
    Published("GPT-3 6.7B", 32, 4096, 6_700_000_000, 2048, 300e9),
    Published("GPT-3 13B", 40, 5140, 13_000_000_000, 2048, 300e9),
    Published("GPT-3 175B", 96, 12288, 175_000_000_000, 2048, 300e9),
)


def counted(p: Published) -> int:
    """All parameters of a published shape, counted exactly: d_mlp = 4 d, biases, learned
    positions, tied embeddings, vocabulary 50,257 (GPT-2 small: 124,439,808)."""
    return count_shape(p.n_layer, p.d_model, 4 * p.d_model, GPT2_VOCAB, p.n_ctx, tied=True)[0]


@dataclass(frozen=True)
class PublishedLaw:
    """One published scaling result in its own words, numbers and units."""

    source: str
    finding: str
    numbers: str
    measured_on: str


CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022: compute-optimal D is about 20 N

PUBLISHED_LAWS = (
    PublishedLaw(
        "Kaplan et al. 2020",
        "L(N) = (N_c / N)^α_N, models trained to convergence",
        "α_N ≈ 0.076, N_c ≈ 8.8 × 10¹³ non-embedding parameters",
        "loss in nats per token on WebText2 (byte-level BPE); 768 to 1.5 B non-embedding "
        "parameters",
    ),
    PublishedLaw(
        "Kaplan et al. 2020",
        "L(C_min) = (C_c / C_min)^α_C, on the compute-efficient frontier",
        "α_C ≈ 0.050, C_c ≈ 3.1 × 10⁸ PF-days",
        "the same runs; compute in PF-days (1 PF-day ≈ 8.64 × 10¹⁹ FLOPs)",
    ),
    PublishedLaw(
        "Hoffmann et al. 2022 (Chinchilla)",
        "compute-optimal training: parameters and tokens grow in equal proportion",
        "About 20 tokens per parameter (Chinchilla: 70 B parameters, 1.4 T tokens)",
        "over 400 models of 70 M to over 16 B parameters on 5 to 500 B tokens of MassiveText",
    ),
    PublishedLaw(
        "Hoffmann et al. 2022 (Chinchilla)",
        "L(N, D) = E + A / N^α + B / D^β",
        "E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28",
        "loss in nats per token on MassiveText; N all parameters, D training tokens",
    ),
)


@dataclass(frozen=True)
class ScalingPoint:
    """One trained model: N non-embedding parameters, D tokens seen, its validation loss."""

    name: str
    source: str  # "sweep", "bundled" or "class run"
    n_params: int
    tokens: float
    val_loss: float

    @property
    def compute(self) -> float:
        """Training FLOPs, C = 6 N D."""
        return FLOPS_PER_PARAM_TOKEN * self.n_params * self.tokens


def sweep_points(results: dict) -> list[ScalingPoint]:
    """The points of a sweep results file (scripts/scaling_sweep.py writes it)."""
    points = []
    for run in results["runs"]:
        _, n = count_params(GPTConfig.from_dict(run["model"]))
        points.append(ScalingPoint(run["name"], "sweep", n, run["tokens_seen"], run["val_loss"]))
    return points


def bundle_point(name: str, source: str, cfg: GPTConfig, meta: dict) -> ScalingPoint | None:
    """A bundle's point, or None when it cannot be placed: no validation loss or tokens, or no
    causal mask (its validation loss reads the answer)."""
    loss, tokens = meta.get("val_loss"), meta.get("tokens_seen")
    if not cfg.causal or not isinstance(loss, int | float) or not isinstance(tokens, int | float):
        return None
    return ScalingPoint(name, source, count_params(cfg)[1], float(tokens), float(loss))


def load_sweep(path: Path = SWEEP_FILE) -> dict:
    """The sweep's results ({"corpus", "tokenizer", "runs": [...]}); ValueError saying what is
    wrong with a missing or damaged file."""
    try:
        results = json.loads(Path(path).read_text(encoding="utf-8"))
        runs = results["runs"]
        for run in runs:
            GPTConfig.from_dict(run["model"])
            float(run["tokens_seen"]), float(run["val_loss"]), str(run["name"])
    except OSError as exc:
        raise ValueError(f"cannot read the sweep results {Path(path).name}: {exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the sweep results {Path(path).name} are damaged: {exc!r}") from exc
    return results


def bundle_points(
    found: Mapping[str, Path], bundled_dir: Path, corpus: str, tokenizer: str
) -> list[ScalingPoint]:
    """A point for every bundle trained on `corpus` with a `tokenizer` tokenizer (from config.json
    alone), "bundled" when it sits in bundled_dir, else a "class run"; unreadable bundles skipped,
    and models of other families (an LSTM's weights are not a GPT's N: the law is the GPT's), and
    bundles fine-tuned from another (meta "base": their tokens and loss are the tuning's, e.g.
    shakespeare-tiny-hyperfit, tuned to recite 4,000 characters, is no point on a law of size)."""
    points = []
    for name, path in found.items():
        try:
            cfg, raw = read_config(path)
        except (CheckpointError, OSError):
            continue
        if not isinstance(cfg, GPTConfig):
            continue
        meta = raw.get("meta") if isinstance(raw.get("meta"), dict) else {}
        if meta.get("corpus") != corpus or meta.get("tokenizer") != tokenizer or meta.get("base"):
            continue
        source = "bundled" if Path(path).parent == Path(bundled_dir) else "class run"
        if (point := bundle_point(name, source, cfg, meta)) is not None:
            points.append(point)
    return points


@dataclass(frozen=True)
class PowerLaw:
    """y = a x^-b."""

    a: float
    b: float

    def __call__(self, x: np.ndarray | float) -> np.ndarray:
        return self.a * np.asarray(x, dtype=float) ** -self.b


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> PowerLaw:
    """Least squares of log y = log a - b log x (at least two distinct positive x)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if lx.size < 2 or np.ptp(lx) == 0:
        raise ValueError("a power law needs at least two different sizes")
    slope, intercept = np.polyfit(lx, ly, 1)
    return PowerLaw(float(np.exp(intercept)), float(-slope))


# ---- the fit's uncertainty --------------------------------------------------------------------
# Student's t, two-sided 95%, by degrees of freedom (n - 2 for a line through n points).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}
T95_LARGE = 2.262  # 9 degrees of freedom; used for more (a slightly wider, safe interval)


@dataclass(frozen=True)
class FitReport:
    """A power law y = a x^-b fitted to n points, with what the points allow us to say about b.

    b_low, b_high: the 95% interval on b from the least-squares standard error (Student's t with
    n - 2 degrees of freedom; infinite with 2 points). loo_low, loo_high: the smallest and largest
    b over the fits that leave one point out (each point's weight on the answer); equal to b with
    fewer than 3 points. x_low, x_high: the range the fit covers (and may be drawn over)."""

    law: PowerLaw
    n: int
    b_low: float
    b_high: float
    loo_low: float
    loo_high: float
    x_low: float
    x_high: float

    @property
    def b(self) -> float:
        return self.law.b

    def falls(self) -> bool:
        """b > 0 beyond the uncertainty: the interval and every leave-one-out fit above 0."""
        return self.b_low > 0 and self.loo_low > 0

    def rises(self) -> bool:
        """b < 0 beyond the uncertainty."""
        return self.b_high < 0 and self.loo_high < 0


def fit_report(x: Sequence[float], y: Sequence[float]) -> FitReport:
    """`fit_power_law` with a 95% interval on b and the leave-one-out range of b."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    law = fit_power_law(x, y)
    lx, ly = np.log(x), np.log(y)
    n = lx.size
    if n > 2:
        resid = ly - (np.log(law.a) - law.b * lx)
        se = float(np.sqrt(resid @ resid / (n - 2) / ((lx - lx.mean()) ** 2).sum()))
        half = T95.get(n - 2, T95_LARGE) * se
    else:
        half = float("inf")
    loo = [law.b]
    if n > 2:
        for i in range(n):
            keep = np.arange(n) != i
            if np.ptp(lx[keep]) > 0:
                loo.append(fit_power_law(x[keep], y[keep]).b)
    return FitReport(
        law, n, law.b - half, law.b + half, min(loo), max(loo), float(x.min()), float(x.max())
    )


def _interval(r: FitReport) -> str:
    if r.n < 3:
        return f"with only {r.n} points the fit has no uncertainty to measure"
    return (
        f"95% interval {r.b_low:.3f} to {r.b_high:.3f} were the points independent; leaving out one point at a time, "
        f"{r.loo_low:.3f} to {r.loo_high:.3f}"
    )


def size_claim(r: FitReport, what: str = "non-embedding parameters") -> Claim:
    """ "The loss falls with size" only when b > 0 beyond the fit's uncertainty (`falls`)."""
    span = f"over {r.n} models of {r.x_low:,.0f} to {r.x_high:,.0f} {what}"
    numbers = dict(b=r.b, b_low=r.b_low, b_high=r.b_high, loo_low=r.loo_low, loo_high=r.loo_high)
    numbers |= dict(n=r.n, x_low=r.x_low, x_high=r.x_high)
    if r.falls():
        return Claim(
            f"The validation loss falls with size {span}: L ∝ N^-b with b = {r.b:.3f} "
            f"({_interval(r)}).",
            True,
            numbers,
        )
    trend = "rises" if r.rises() else "does not clearly fall or rise"
    return Claim(
        f"The validation loss {trend} with size {span} beyond the fit's uncertainty: "
        f"b = {r.b:.3f} ({_interval(r)}).",
        False,
        numbers,
    )


# ---- compute: its own fit, on the frontier of every run's curve ---------------------------------
@dataclass(frozen=True)
class CurvePoint:
    """One evaluation of one sweep run: compute used so far C = 6 N (tokens so far), its loss."""

    run: str
    step: int
    compute: float
    val_loss: float


def curve_points(results: dict) -> list[CurvePoint]:
    """Every evaluation on every sweep run's validation curve (step 0 left out: nothing spent)."""
    points = []
    for run in results["runs"]:
        _, n = count_params(GPTConfig.from_dict(run["model"]))
        per_step = float(run.get("tokens_per_step") or run["tokens_seen"] / run["curve"][-1][0])
        for step, loss in run.get("curve", []):
            if step > 0:
                c = FLOPS_PER_PARAM_TOKEN * n * per_step * step
                points.append(CurvePoint(run["name"], int(step), c, float(loss)))
    return points


def compute_frontier(points: Sequence[CurvePoint]) -> list[CurvePoint]:
    """The lowest loss reached for each compute budget: the points no cheaper point beats, in
    order of compute (Kaplan et al.'s compute-efficient frontier, on our few runs)."""
    frontier, best = [], float("inf")
    for p in sorted(points, key=lambda p: (p.compute, p.val_loss)):
        if p.val_loss < best:
            frontier.append(p)
            best = p.val_loss
    return frontier


def frontier_report(points: Sequence[CurvePoint]) -> FitReport:
    """The power law of loss against compute on the frontier, with its own uncertainty: the
    95% interval over the frontier's points, and the range of b when one run is left out of the
    frontier (the runs, not the points, are independent)."""
    frontier = compute_frontier(points)
    base = fit_report([p.compute for p in frontier], [p.val_loss for p in frontier])
    loo = [base.b]
    for run in dict.fromkeys(p.run for p in points):
        rest = compute_frontier([p for p in points if p.run != run])
        if len({p.compute for p in rest}) > 1:
            loo.append(fit_power_law([p.compute for p in rest], [p.val_loss for p in rest]).b)
    return FitReport(
        base.law, base.n, base.b_low, base.b_high, min(loo), max(loo), base.x_low, base.x_high
    )


def compute_claim(r: FitReport) -> Claim:
    """ "The frontier's loss falls with compute" only when its b > 0 beyond the uncertainty."""
    span = f"over {r.x_low:.2g} to {r.x_high:.2g} FLOPs ({r.n} points on the frontier)"
    numbers = dict(b=r.b, b_low=r.b_low, b_high=r.b_high, loo_low=r.loo_low, loo_high=r.loo_high)
    numbers |= dict(n=r.n, x_low=r.x_low, x_high=r.x_high)
    interval = (
        f"95% interval {r.b_low:.3f} to {r.b_high:.3f} were the points independent; leaving out one run at a time, "
        f"{r.loo_low:.3f} to {r.loo_high:.3f}"
    )
    if r.falls():
        return Claim(
            f"The best loss reached for a given compute falls with compute {span}: L ∝ C^-b "
            f"with b = {r.b:.3f} ({interval}), an exponent fitted on compute, not on size.",
            True,
            numbers,
        )
    return Claim(
        f"The best loss reached for a given compute does not clearly fall with compute {span}: "
        f"b = {r.b:.3f} ({interval}).",
        False,
        numbers,
    )


# ---- tokens per parameter, against Chinchilla's ~20 --------------------------------------------
@dataclass(frozen=True)
class TokensRow:
    """One run: all its parameters N, tokens seen D, D / N, and for the same compute C = 6 N D the
    size and tokens Hoffmann et al.'s ~20 tokens per parameter would choose (C = 6 N (20 N))."""

    name: str
    params: int
    tokens: float
    per_param: float
    compute: float
    optimal_params: float
    optimal_tokens: float


def chinchilla_rows(results: dict) -> list[TokensRow]:
    """Each sweep run's tokens per parameter (all parameters, as Hoffmann et al. count them)."""
    rows = []
    for run in results["runs"]:
        total, _ = count_params(GPTConfig.from_dict(run["model"]))
        d = float(run["tokens_seen"])
        c = FLOPS_PER_PARAM_TOKEN * total * d
        n_opt = float(np.sqrt(c / (FLOPS_PER_PARAM_TOKEN * CHINCHILLA_TOKENS_PER_PARAM)))
        rows.append(
            TokensRow(
                run["name"], total, d, d / total, c, n_opt, CHINCHILLA_TOKENS_PER_PARAM * n_opt
            )
        )
    return rows


def tokens_claim(rows: Sequence[TokensRow]) -> Claim:
    """Which runs saw more, and which fewer, tokens per parameter than Chinchilla's ~20."""
    k = CHINCHILLA_TOKENS_PER_PARAM
    more = [r.name for r in rows if r.per_param > k]
    fewer = [r.name for r in rows if r.per_param < k]
    lo = min((r.per_param for r in rows), default=0.0)
    hi = max((r.per_param for r in rows), default=0.0)
    numbers = dict(chinchilla=k, low=lo, high=hi, more=len(more), fewer=len(fewer))
    parts = []
    if more:
        parts.append(
            f"{', '.join(more)} saw more than {k} tokens per parameter: for the same compute "
            "Hoffmann et al.'s rule would have made them larger and trained them on fewer tokens"
        )
    if fewer:
        parts.append(
            f"{', '.join(fewer)} saw fewer than {k}: the rule would have made them smaller and "
            "trained them longer"
        )
    text = (
        f"The runs saw {lo:,.1f} to {hi:,.1f} tokens per parameter. " + "; ".join(parts) + "."
        if parts
        else f"Every run saw about {k} tokens per parameter."
    )
    return Claim(text, bool(more or fewer), numbers)
