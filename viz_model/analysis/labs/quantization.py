"""What quantising a model's weights changes, measured on its validation text (issue 27).

- `measure(model, val_ids, tokenizer, specs)`: for float32 and each precision, the bytes, bits per
  character on WINDOWS windows of validation text, the share of positions whose top-1 next token
  agrees with float32's, and the mean KL divergence from float32's distribution (bits per token).
- `cost_claim`, `compare_claim`, `smallest_claim`, `size_claim`: sentences computed from those
  numbers; a difference in bits per character is said only beyond NOISE_SE standard errors of the
  per-window differences (paired: the same windows under both), else a neutral sentence.
- `grid_levels`, `zero_share`, `row_error`: one matrix's values against its quantisation grid.

Not here: the quantisation itself (model/quantize.py), pages and charts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.analysis.variants import windows
from viz_model.model.gpt import GPT
from viz_model.model.quantize import (
    QuantSpec,
    SizeCount,
    all_specs,
    float32_size,
    outlier_mask,
    qmax,
    quantize_matrix,
    quantize_model,
    scales_for,
)
from viz_model.text.data import VAL_FRACTION, DataError, TokenData, load_corpus, load_text
from viz_model.text.tokenization import Tokenizer

WINDOWS = 32  # validation windows measured (the standard error below is over these)
MAX_LENGTH = 128  # tokens a window (a model's context, when shorter)
CHUNK = 8  # windows through the model at once (logits of a big vocabulary are large)
PARAM_TOKENS = 2e10  # parameters x tokens a precision is measured on, at most: GPT-2 small gets
MIN_LENGTH = 16  # 32 windows of 16 tokens, a bundled model its whole 32 x 128
NOISE_SE = 2.0  # a difference is said only beyond this many standard errors
MIN_DIFF = 0.001  # ... and beyond this many bits per character (finer is not printed)
LN2 = math.log(2.0)
FALLBACK_CORPUS = "shakespeare"


@dataclass(frozen=True)
class Precision:
    """One way of storing the model, measured. window_bpc: (n,) bits per character per window."""

    spec: QuantSpec
    size: SizeCount
    bits_per_char: float
    window_bpc: np.ndarray
    agree: float  # share of positions whose top-1 token equals float32's
    kl_bits: float  # mean KL(p_float32 || p_this) in bits per token

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def nbytes(self) -> int:
        return self.size.total


@dataclass(frozen=True)
class Measured:
    """float32 first, then each precision asked for; n_positions predicted per model."""

    rows: tuple[Precision, ...]
    n_windows: int
    length: int

    @property
    def reference(self) -> Precision:
        return self.rows[0]

    @property
    def n_positions(self) -> int:
        return self.n_windows * self.length

    def get(self, name: str) -> Precision | None:
        return next((r for r in self.rows if r.name == name), None)


def window_chars(tokenizer: Tokenizer, targets: torch.Tensor) -> np.ndarray:
    """(n,) the characters each window's predicted tokens stand for (1 a token for characters)."""
    return np.array([max(len(tokenizer.decode(row.tolist())), 1) for row in targets], float)


KEEP_REFERENCE = 50_000_000  # float32's log-probabilities kept between models up to this size


@torch.no_grad()
def _log_probs(model: GPT, xs: torch.Tensor) -> torch.Tensor:
    return F.log_softmax(model(xs).float(), -1)  # (c, T, V)


@torch.no_grad()
def _scores(model: GPT, copy: GPT, x: torch.Tensor, y: torch.Tensor, kept: list):
    """Per window (n,): summed loss in nats, positions agreeing at top-1, summed KL in nats.
    `kept` holds float32's log-probabilities per chunk once computed (when they fit)."""
    nll, agree, kl = [], [], []
    for j, i in enumerate(range(0, len(x), CHUNK)):
        xs, ys = x[i : i + CHUNK], y[i : i + CHUNK]
        ref = kept[j] if j < len(kept) else _log_probs(model, xs)
        if j == len(kept) and x.shape[1] * len(x) * ref.shape[-1] <= KEEP_REFERENCE:
            kept.append(ref)
        out = ref if copy is model else _log_probs(copy, xs)
        nll.append(-out.gather(-1, ys[..., None])[..., 0].sum(1))
        agree.append((out.argmax(-1) == ref.argmax(-1)).sum(1))
        kl.append((ref.exp() * (ref - out)).sum(-1).clamp_min(0).sum(1))
    return (torch.cat(t).double().numpy() for t in (nll, agree, kl))


BIG_PARAMS = 20_000_000  # past this, quantising all 17 ways takes minutes: the core schemes only
CORE = ("float16", "int8", "int8-tensor", "int4", "int4-outliers", "int4-tensor")
CORE += ("int4-tensor-outliers", "int2")  # every scheme the page's sentences name


def specs_for(n_params: int) -> list[QuantSpec]:
    """Every scheme, or for a model past BIG_PARAMS the CORE ones (GPT-2 small: ~7 s each)."""
    specs = all_specs()
    return specs if n_params <= BIG_PARAMS else [s for s in specs if s.name in CORE]


def window_length(n_ctx: int, n_params: int, n_windows: int = WINDOWS) -> int:
    """Tokens a window: the context up to MAX_LENGTH, fewer for a big model (PARAM_TOKENS), at
    least MIN_LENGTH (or the context, when shorter).

    >>> window_length(128, 830_000), window_length(1024, 124_000_000), window_length(8, 10**9)
    (128, 16, 8)
    """
    affordable = int(PARAM_TOKENS // (n_params * n_windows))
    return min(n_ctx, MAX_LENGTH, max(MIN_LENGTH, affordable))


def measure(
    model: GPT,
    val_ids: torch.Tensor,
    tokenizer: Tokenizer,
    specs: list[QuantSpec],
    n_windows: int = WINDOWS,
) -> Measured:
    """float32 and each spec on the same validation windows (analysis/variants.windows)."""
    length = window_length(model.cfg.n_ctx, model.n_params(), n_windows)
    batch = windows(val_ids, length, n_windows)  # (n, length + 1)
    x, y = batch[:, :-1], batch[:, 1:]
    chars = window_chars(tokenizer, y)
    rows, kept = [], []
    for spec in [QuantSpec(32), *specs]:
        copy, size = (
            (model, float32_size(model)) if spec.bits == 32 else quantize_model(model, spec)
        )
        nll, agree, kl = _scores(model, copy, x, y, kept)
        rows.append(
            Precision(
                spec,
                size,
                float(nll.sum() / LN2 / chars.sum()),
                nll / LN2 / chars,
                float(agree.sum() / y.numel()),
                float(kl.sum() / LN2 / y.numel()),
            )
        )
    return Measured(tuple(rows), len(x), length)


def validation_ids(meta: dict, tokenizer: Tokenizer) -> tuple[torch.Tensor, str]:
    """(the validation split of the text the model trained on, encoded as training did; a note
    saying what text it is). A model whose text cannot be read here (a Hugging Face folder, a run
    whose uploaded text is gone) is measured on the Shakespeare corpus's validation split."""
    source = meta.get("data") if isinstance(meta.get("data"), dict) else None
    if source is not None:
        try:
            fraction = float(source.get("val_fraction", VAL_FRACTION))
            data = TokenData.from_text(load_text(source), tokenizer, fraction)
            return data.val, "the validation split of its own training text"
        except (OSError, KeyError, TypeError, ValueError, DataError):
            pass
    data = TokenData.from_text(load_corpus(FALLBACK_CORPUS), tokenizer, VAL_FRACTION)
    return data.val, (
        f"the validation split of the {FALLBACK_CORPUS} corpus (this model's own training text "
        "is not at hand)"
    )


# ---- claims -----------------------------------------------------------------------------------


def paired_noise(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest difference in bits per character said to be one: NOISE_SE standard errors of
    the mean per-window difference a - b, and at least MIN_DIFF (what three decimals show)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0
    return max(NOISE_SE * se, MIN_DIFF)


def _threshold(noise: float, n: int) -> str:
    return (
        f"threshold {noise:.4f}: twice the standard error over {n} windows, at least {MIN_DIFF:g}"
    )


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%" if share >= 0.001 or share == 0 else f"{100 * share:.2f}%"


def cost_claim(measured: Measured, name: str) -> Claim:
    """What storing the model as `name` costs against float32: the top-1 changes and the bits per
    character, said as a cost only beyond noise."""
    ref, row = measured.reference, measured.get(name)
    if row is None:
        raise KeyError(name)
    diff = row.bits_per_char - ref.bits_per_char
    noise = paired_noise(row.window_bpc, ref.window_bpc)
    changed = 1.0 - row.agree
    numbers = {
        "diff": diff,
        "noise": noise,
        "changed": changed,
        "bpc": row.bits_per_char,
        "bpc_float32": ref.bits_per_char,
        "kl_bits": row.kl_bits,
    }
    head = f"**{row.spec.label}** changes the top token at {_pct(changed)} of positions"
    n = measured.n_windows
    if abs(diff) > noise:
        verb = "costs" if diff > 0 else "lowers the loss by"
        text = (
            f"{head} and {verb} {abs(diff):.3f} bits per character ({ref.bits_per_char:.3f} → "
            f"{row.bits_per_char:.3f}; {_threshold(noise, n)})."
        )
        return Claim(text, True, numbers)
    text = (
        f"{head}; its {row.bits_per_char:.3f} bits per character are within noise of float32's "
        f"{ref.bits_per_char:.3f} (difference {diff:+.4f}; {_threshold(noise, n)})."
    )
    return Claim(text, False, numbers)


def compare_claim(measured: Measured, without: str, with_: str, choice: str) -> Claim:
    """Two precisions that differ in one choice (`choice`: "keeping outliers aside", "one scale
    per row"): each one's bits per character against float32, and whether the choice helps,
    said only when the two differ beyond noise (paired over the same windows)."""
    ref, a, b = measured.reference, measured.get(without), measured.get(with_)
    if a is None or b is None:
        raise KeyError(without if a is None else with_)
    loss_a, loss_b = a.bits_per_char - ref.bits_per_char, b.bits_per_char - ref.bits_per_char
    gap = a.bits_per_char - b.bits_per_char
    noise = paired_noise(a.window_bpc, b.window_bpc)
    numbers = {"loss_without": loss_a, "loss_with": loss_b, "gap": gap, "noise": noise}
    head = (
        f"Against float32, **{a.spec.label}** changes bits per character by {loss_a:+.3f} and "
        f"**{b.spec.label}** by {loss_b:+.3f}"
    )
    if abs(gap) > noise:
        verdict = "helps" if gap > 0 else "hurts"
        text = (
            f"{head}: {choice} {verdict} here, by {abs(gap):.3f} bits per character "
            f"({_threshold(noise, measured.n_windows)})."
        )
        return Claim(text, True, numbers)
    text = (
        f"{head}: on this model {choice} makes no difference beyond noise (difference "
        f"{gap:+.4f}; {_threshold(noise, measured.n_windows)})."
    )
    return Claim(text, False, numbers)


def smallest_claim(measured: Measured) -> Claim:
    """The smallest precision whose bits per character are within noise of float32's (or better)."""
    ref = measured.reference
    fine = [
        r
        for r in measured.rows[1:]
        if r.bits_per_char - ref.bits_per_char <= paired_noise(r.window_bpc, ref.window_bpc)
    ]
    if not fine:
        text = (
            "Every precision measured here loses bits per character beyond noise against float32."
        )
        return Claim(text, False, {"float32_bytes": float(ref.nbytes)})
    best = min(fine, key=lambda r: r.nbytes)
    numbers = {
        "bytes": float(best.nbytes),
        "float32_bytes": float(ref.nbytes),
        "ratio": ref.nbytes / best.nbytes,
    }
    text = (
        f"The smallest copy whose bits per character are within noise of float32's (or better) is "
        f"**{best.spec.label}**: "
        f"{best.nbytes:,} bytes against {ref.nbytes:,}, {ref.nbytes / best.nbytes:.1f} times "
        f"smaller, with the top token changed at {_pct(1 - best.agree)} of positions."
    )
    return Claim(text, True, numbers)


def size_claim(measured: Measured, name: str) -> Claim:
    """Bytes of `name` against float32's, with what they are made of."""
    ref, row = measured.reference, measured.get(name)
    if row is None:
        raise KeyError(name)
    s = row.size
    parts = f"{s.matrices:,} for the matrices"
    parts += f", {s.scales:,} for the scales" if s.scales else ""
    parts += f", {s.outliers:,} for the outliers" if s.outliers else ""
    parts += f", {s.float32_parts:,} for the LayerNorms and biases kept in float32"
    text = (
        f"**{row.spec.label}** takes {row.nbytes:,} bytes ({parts}), "
        f"{ref.nbytes / row.nbytes:.1f} times fewer than float32's {ref.nbytes:,}."
    )
    return Claim(text, True, {"bytes": float(row.nbytes), "float32_bytes": float(ref.nbytes)})


# ---- one matrix against its grid --------------------------------------------------------------


def grid_levels(w: torch.Tensor, bits: int, per: str, outliers: bool, row: int = 0) -> np.ndarray:
    """The values a weight can take after quantisation (q * s for every code q): the one grid of
    the matrix (per="tensor") or row `row`'s grid (per="channel")."""
    w = w.detach().float()
    dense = torch.where(outlier_mask(w), torch.zeros_like(w), w) if outliers else w
    scales = scales_for(dense, bits, per)
    scale = float(scales[row] if per == "channel" else scales[0])
    top = qmax(bits)
    return np.arange(-top, top + 1, dtype=float) * scale


def zero_share(w: torch.Tensor, spec: QuantSpec) -> float:
    """The share of the matrix's weights (outliers aside) stored as code 0, i.e. rounded to zero."""
    q = quantize_matrix(w, spec)
    dense = ~q.outliers
    return float(((q.codes == 0) & dense).sum() / dense.sum())


def row_error(w: torch.Tensor, spec: QuantSpec) -> np.ndarray:
    """(rows,) root-mean-square error of each row after quantisation (same units as w)."""
    q = quantize_matrix(w, spec)
    return (q.values - w.detach().float()).pow(2).mean(1).sqrt().numpy()


GRIDS = {  # the histogram's grid choices: (per, outliers kept aside)
    "tensor": ("tensor", False),
    "tensor-outliers": ("tensor", True),
    "row": ("channel", False),
}


@dataclass(frozen=True)
class MatrixView:
    """One matrix against one grid: the weights drawn (all, or one row's), the grid's values,
    the weights kept aside in float16, and what share of the rest rounds to code 0."""

    weights: np.ndarray
    levels: np.ndarray
    kept_aside: np.ndarray
    zero_share: float
    spread: float  # max|w| over the standard deviation of w, for the weights drawn
    spec: QuantSpec


def matrix_view(w: torch.Tensor, bits: int, grid: str, row: int = 0) -> MatrixView:
    """`w` (rows, cols) against the b-bit grid `grid` (GRIDS): the whole matrix for one scale per
    matrix, row `row` for one scale per row."""
    per, outliers = GRIDS[grid]
    w = w.detach().float()
    spec = QuantSpec(bits, per, outliers)
    stored = quantize_matrix(w, spec)
    if per == "channel":
        drawn, codes, aside = w[row], stored.codes[row], torch.zeros(0)
    else:
        drawn, codes, aside = w.flatten(), stored.codes.flatten(), w[stored.outliers]
        codes = codes[~stored.outliers.flatten()]
    values = drawn.numpy().astype(float)
    return MatrixView(
        values,
        grid_levels(w, bits, per, outliers, row),
        aside.numpy().astype(float),
        float((codes == 0).float().mean()),
        float(np.abs(values).max() / max(values.std(), 1e-12)),
        spec,
    )


def row_errors(w: torch.Tensor, bits: int) -> dict[str, np.ndarray]:
    """(rows,) RMS error per row at `bits` for each of the four schemes, by the spec's label."""
    specs = [QuantSpec(bits, per, out) for per in ("channel", "tensor") for out in (False, True)]
    return {spec.label: row_error(w, spec) for spec in specs}


def spread(w: torch.Tensor) -> float:
    """max|w| over the standard deviation of w: how far the largest weight stands out."""
    w = w.detach().float()
    return float(w.abs().max() / w.std().clamp_min(1e-12))


def widest(weights: dict[str, torch.Tensor]) -> str:
    """The name of the matrix whose largest weight stands furthest out (the page's first view)."""
    return max(weights, key=lambda n: spread(weights[n]))


# ---- how the error adds up through the layers -------------------------------------------------

# The error "grows through the layers" when the last block's is this many times the embeddings'.
DRIFT_GROWTH = 2.0
DRIFT_COPIES = ("int8", "int4", "int4-outliers", "int4-tensor", "int4-tensor-outliers")


def drift_copies(n_params: int) -> tuple[str, ...]:
    """The copies compared through the layers; past BIG_PARAMS only the two the sentences name
    (each copy is a whole float32 model in memory)."""
    return DRIFT_COPIES if n_params <= BIG_PARAMS else DRIFT_COPIES[:2]


def stations(n_layer: int) -> list[str]:
    """The residual stream's hook names from the embeddings to after the last block."""
    return [f"blocks.{i}.hook_resid_pre" for i in range(n_layer)] + [
        f"blocks.{n_layer - 1}.hook_resid_post"
    ]


@torch.no_grad()
def drift(model: GPT, copy: GPT, ids: list[int]) -> np.ndarray:
    """(n_layer + 1,) the copy's residual stream against the model's at each station, as the mean
    over positions of ||x_copy - x|| / ||x||: 0.05 means 5% of the vector's length."""
    names = stations(model.cfg.n_layer)
    x = torch.tensor(list(ids), dtype=torch.long)
    _, a = model.run_with_cache(x, names=names)
    _, b = copy.run_with_cache(x, names=names)
    out = []
    for name in names:
        ref, got = a[name].float(), b[name].float()  # (T, D)
        out.append(float(((got - ref).norm(dim=-1) / ref.norm(dim=-1).clamp_min(1e-12)).mean()))
    return np.array(out)


def drift_claim(label: str, values: np.ndarray) -> Claim:
    """Whether the copy's error grows through the layers: the last station's relative difference
    against the first's (the embeddings), said to grow only beyond DRIFT_GROWTH times."""
    first, last = float(values[0]), float(values[-1])
    numbers = {"first": first, "last": last, "growth": DRIFT_GROWTH}
    head = (
        f"On your prompt the residual stream of **{label}** differs from float32's by "
        f"{100 * first:.1f}% after the embeddings and {100 * last:.1f}% after the last block"
    )
    if last > DRIFT_GROWTH * max(first, 1e-12):
        text = (
            f"{head}: the error grows through the layers (each block reads a stream that is "
            "already off, and adds its own rounding)."
        )
        return Claim(text, True, numbers)
    text = (
        f"{head}: not more than {DRIFT_GROWTH:g} times the first, so here it does not build up "
        "through the layers."
    )
    return Claim(text, False, numbers)
