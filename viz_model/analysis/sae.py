"""Sparse autoencoders (dictionary learning) on one hook of the model: training and reading features.

An SAE rewrites each activation x (D,) as a sparse sum of F > D learned directions:

    f = ReLU(W_enc (x - b_dec) / s + b_enc)        (F,) feature activations, most of them 0
    x_hat = s * W_dec f + b_dec                     (D,) the reconstruction

W_dec's columns are kept at unit length (so a feature's size lives in f, not in its direction), and
s is a fixed scale, measured once, that makes the centred activations about 1 per dimension (so one
learning rate and one L1 coefficient suit every model). Sparsity comes from an L1 penalty on f or
from top-k (only the k largest pre-activations of each token are kept, the rest set to 0).

Dead features (never firing over the last `resample_every` steps) are resampled as "Towards
Monosemanticity" (Bricken et al. 2023) describes: inputs are drawn with probability proportional to
their squared reconstruction loss; a dead feature's decoder column becomes one such input (minus the
decoder bias, scaled to unit length), its encoder row the same direction at 0.2 times the mean
length of the alive features' encoder rows, its encoder bias 0, and Adam's moments for them reset.

Activations come from the model's own training text through a hook (`blocks.{l}.hook_resid_post`
or `blocks.{l}.hook_mlp_out`); splicing the reconstruction back in goes through `model.intervene`,
so the shared model is never changed.

Not here: the page and its charts; saving and loading a trained lab (`sae_files.py`); the job
that trains one in the background (`serving/sae_jobs.py`, `serving/sae_worker.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from viz_model.analysis.claims import Claim, as_printed
from viz_model.analysis.neurons import Windows, corpus_windows
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, custom
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.data import VAL_FRACTION, TokenData
from viz_model.text.tokenization import Tokenizer

SITES = {"resid_post": "the residual stream after block", "mlp_out": "the MLP output of block"}
RESAMPLE_SCALE = 0.2  # a resampled encoder row's length, relative to the alive rows' mean length
RESAMPLE_UNTIL = 0.7  # no resampling in the last 30% of training, so revived features settle
RESAMPLE_POOL = 16_384  # inputs scored for their loss when choosing where to resample


def hook_name(layer: int, site: str = "resid_post") -> str:
    """The hook an SAE reads: `blocks.{layer}.hook_resid_post` or `blocks.{layer}.hook_mlp_out`."""
    if site not in SITES:
        raise ValueError(f"site must be one of {sorted(SITES)}, got {site!r}")
    return f"blocks.{layer}.hook_{site}"


@dataclass(frozen=True)
class SAEConfig:
    """How to train: F features; k > 0 for top-k sparsity, else an L1 penalty of l1_coeff."""

    n_features: int = 1024
    k: int = 16
    l1_coeff: float = 3e-2
    lr: float = 2e-3
    batch_size: int = 512
    epochs: int = 1
    resample_every: int = 250  # steps; also the window over which "dead" is judged
    seed: int = 0


class SparseAutoencoder(nn.Module):
    """x (N, D) -> feature activations f (N, F) -> reconstruction x_hat (N, D); see the module doc."""

    def __init__(self, d_in: int, n_features: int, k: int = 0, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        w = torch.randn(d_in, n_features, generator=gen)
        w = w / w.norm(dim=0, keepdim=True)
        self.W_dec = nn.Parameter(w)  # (D, F), unit columns
        self.W_enc = nn.Parameter(w.T.clone())  # (F, D), tied at the start
        self.b_enc = nn.Parameter(torch.zeros(n_features))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.register_buffer("scale", torch.tensor(1.0))
        self.k = k

    @property
    def n_features(self) -> int:
        return self.W_dec.shape[1]

    def fit_input(self, x: torch.Tensor) -> None:
        """Start b_dec at the activations' mean and set the scale s: centred, |x - b_dec| ~ sqrt(D)."""
        with torch.no_grad():
            mean = x.mean(0)
            self.b_dec.copy_(mean)
            spread = ((x - mean) ** 2).sum(-1).mean() / x.shape[-1]
            self.scale.fill_(float(spread.sqrt().clamp_min(1e-8)))

    def pre(self, x: torch.Tensor) -> torch.Tensor:
        """Pre-activations W_enc (x - b_dec) / s + b_enc: (N, F)."""
        return ((x - self.b_dec) / self.scale) @ self.W_enc.T + self.b_enc

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Feature activations (N, F): ReLU of the pre-activations, only the k largest kept if k."""
        pre = self.pre(x)
        if not self.k:
            return F.relu(pre)
        top = pre.topk(min(self.k, pre.shape[-1]), dim=-1)
        return torch.zeros_like(pre).scatter(-1, top.indices, F.relu(top.values))

    def decode(self, f: torch.Tensor) -> torch.Tensor:
        """s * W_dec f + b_dec: (N, D)."""
        return self.scale * (f @ self.W_dec.T) + self.b_dec

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.encode(x)
        return self.decode(f), f

    def direction(self, feature: int) -> torch.Tensor:
        """What one unit of the feature adds to the activation: s * W_dec[:, feature] (D,)."""
        return (self.scale * self.W_dec[:, feature]).detach()

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        self.W_dec.div_(self.W_dec.norm(dim=0, keepdim=True).clamp_min(1e-8))


def reconstruct(sae: SparseAutoencoder, x: torch.Tensor) -> torch.Tensor:
    """x_hat for activations of any leading shape (..., D)."""
    with torch.no_grad():
        return sae(x.reshape(-1, x.shape[-1]))[0].reshape(x.shape)


# ---- activations -------------------------------------------------------------------------------


class _Enough(Exception):
    """Raised by the recording hook: the later blocks' work is not needed."""


@torch.no_grad()
def collect(
    model: GPT,
    windows: torch.Tensor,
    name: str,
    batch_size: int = 64,
    progress: Callable[[float], None] | None = None,
) -> torch.Tensor:
    """The activation at hook `name` for every token of windows (N, T): (N * T, D) float32. The
    forward pass stops at the hook, so blocks after it cost nothing. `progress(share)` is called
    after each batch (a job's worker reports it, and may raise there to stop)."""
    model.check_names([name])
    out: list[torch.Tensor] = []

    def grab(x: torch.Tensor, hook) -> None:
        out.append(x.reshape(-1, x.shape[-1]).float().clone())
        raise _Enough

    for i in range(0, len(windows), batch_size):
        try:
            with model.intervene(custom(name, grab)):
                model(windows[i : i + batch_size])
        except _Enough:
            pass
        if progress is not None:
            progress(min(1.0, (i + batch_size) / len(windows)))
    return torch.cat(out)


def random_windows(stream: torch.Tensor, n_tokens: int, n_ctx: int, seed: int) -> torch.Tensor:
    """About n_tokens tokens of `stream` (1-D ids) as seeded random windows (N, n_ctx + 1): the
    inputs and the next tokens, as TokenData.batch cuts them."""
    width = min(n_ctx, stream.numel() - 1)
    n = max(1, math.ceil(n_tokens / width))
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, stream.numel() - width, (n,), generator=gen)
    return stream[starts[:, None] + torch.arange(width + 1)]


# ---- training ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainLog:
    """What training did: per step the reconstruction loss (mean squared error per dimension, in
    units of s^2) and L0; the steps where features were resampled and how many; the tokens seen."""

    mse: np.ndarray
    l0: np.ndarray
    resampled: list[tuple[int, int]]
    tokens: int
    dead_window_tokens: int  # "dead" means: did not fire on the last this many training tokens
    dead: np.ndarray  # (F,) bool, at the end of training
    checks: int = 0  # how many times training looked for dead features to resample
    resample_every: int = 0  # steps between those looks


def _loss(sae: SparseAutoencoder, x: torch.Tensor, l1: float) -> tuple[torch.Tensor, ...]:
    x_hat, f = sae(x)
    mse = (((x_hat - x) / sae.scale) ** 2).mean()
    total = mse + (l1 * f.sum(-1).mean() if not sae.k else 0.0)
    return total, mse, f


def _drop_parallel_grad(sae: SparseAutoencoder) -> None:
    """Remove the part of W_dec's gradient along its own columns: the norm is fixed anyway."""
    g, w = sae.W_dec.grad, sae.W_dec.data
    if g is not None:
        g.sub_((g * w).sum(0, keepdim=True) * w)


def train_sae(
    acts: torch.Tensor,
    cfg: SAEConfig,
    progress: Callable[[float], None] | None = None,
) -> tuple[SparseAutoencoder, TrainLog]:
    """Train an SAE on activations (N, D), `cfg.epochs` passes in seeded random order."""
    gen = torch.Generator().manual_seed(cfg.seed)
    sae = SparseAutoencoder(acts.shape[1], cfg.n_features, cfg.k, cfg.seed)
    sae.fit_input(acts)
    opt = torch.optim.Adam(sae.parameters(), lr=cfg.lr, betas=(0.9, 0.999))
    per_epoch = max(1, acts.shape[0] // cfg.batch_size)
    steps = per_epoch * cfg.epochs
    last_fired = torch.full((cfg.n_features,), -1)  # the last step each one fired, -1 never
    mse_log, l0_log, resampled, checks = [], [], [], 0
    order = torch.randperm(acts.shape[0], generator=gen)
    for step in range(steps):
        if step and step % per_epoch == 0:
            order = torch.randperm(acts.shape[0], generator=gen)
        i = step % per_epoch
        x = acts[order[i * cfg.batch_size : (i + 1) * cfg.batch_size]]
        total, mse, f = _loss(sae, x, cfg.l1_coeff)
        opt.zero_grad(set_to_none=True)
        total.backward()
        _drop_parallel_grad(sae)
        opt.step()
        sae.normalize_decoder()
        fired = (f > 0).any(0)
        last_fired[fired] = step
        mse_log.append(float(mse.detach()))
        l0_log.append(float((f > 0).sum(-1).float().mean()))
        due = step and step % cfg.resample_every == 0 and step < RESAMPLE_UNTIL * steps
        if due:
            checks += 1
            dead = last_fired <= step - cfg.resample_every
            if dead.any():
                pool = acts[torch.randint(0, acts.shape[0], (RESAMPLE_POOL,), generator=gen)]
                resample_dead(sae, pool, dead, opt, gen)
                last_fired[dead] = step  # give them a full window before judging them again
                resampled.append((step, int(dead.sum())))
        if progress is not None and step % 20 == 0:
            progress(step / steps)
    window = min(cfg.resample_every, steps)
    log = TrainLog(
        mse=np.array(mse_log),
        l0=np.array(l0_log),
        resampled=resampled,
        tokens=steps * cfg.batch_size,
        dead_window_tokens=window * cfg.batch_size,
        dead=(last_fired < steps - window).numpy(),
        checks=checks,
        resample_every=cfg.resample_every,
    )
    return sae.eval(), log


@torch.no_grad()
def resample_dead(
    sae: SparseAutoencoder,
    pool: torch.Tensor,
    dead: torch.Tensor,
    opt: torch.optim.Optimizer | None = None,
    gen: torch.Generator | None = None,
) -> None:
    """Re-initialise the dead features (bool (F,)) toward inputs of `pool` (N, D) the SAE
    reconstructs badly, drawn with probability proportional to the squared loss (module doc)."""
    idx = dead.nonzero()[:, 0]
    if idx.numel() == 0:
        return
    x_hat, _ = sae(pool)
    loss = (((x_hat - pool) / sae.scale) ** 2).sum(-1)  # (N,)
    weights = loss**2
    if float(weights.sum()) <= 0:
        weights = torch.ones_like(weights)
    chosen = pool[torch.multinomial(weights, idx.numel(), replacement=True, generator=gen)]
    v = chosen - sae.b_dec
    v = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-8)  # (n_dead, D), unit
    alive = ~dead
    enc_norm = sae.W_enc[alive].norm(dim=-1).mean() if alive.any() else torch.tensor(1.0)
    sae.W_dec[:, idx] = v.T
    sae.W_enc[idx] = v * enc_norm * RESAMPLE_SCALE
    sae.b_enc[idx] = 0.0
    if opt is not None:
        _reset_adam(opt, sae, idx)


def _reset_adam(opt: torch.optim.Optimizer, sae: SparseAutoencoder, idx: torch.Tensor) -> None:
    """Zero Adam's moments for the resampled features' rows and columns."""
    for p, where in ((sae.W_dec, (slice(None), idx)), (sae.W_enc, idx), (sae.b_enc, idx)):
        state = opt.state.get(p, {})
        for key in ("exp_avg", "exp_avg_sq"):
            if key in state:
                state[key][where] = 0.0


# ---- measuring ---------------------------------------------------------------------------------


def fve(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """Fraction of variance explained: 1 - sum |x - x_hat|^2 / sum |x - mean(x)|^2 over tokens
    (N, D). 1 is perfect; 0 is no better than the mean activation."""
    x, x_hat = x.double(), x_hat.double()
    return float(1 - ((x - x_hat) ** 2).sum() / ((x - x.mean(0)) ** 2).sum())


def splice_hooks(sae: SparseAutoencoder, name: str) -> list[tuple[str, HookFn]]:
    """Replace the activation at `name` by the SAE's reconstruction, at every position."""
    return custom(name, lambda x, hook: reconstruct(sae, x).to(x))


def mean_ablation_hooks(name: str, mean: torch.Tensor) -> list[tuple[str, HookFn]]:
    """Replace the activation at `name` by a fixed mean activation (D,), at every position."""
    return custom(name, lambda x, hook: mean.to(x).expand_as(x).clone())


@torch.no_grad()
def next_token_loss(
    model: GPT, windows: torch.Tensor, hooks: list[tuple[str, HookFn]] = ()
) -> float:
    """Mean cross-entropy (nats per token) of each next token in windows (N, T + 1)."""
    total, count = 0.0, 0
    for i in range(0, len(windows), 32):
        w = windows[i : i + 32]
        with model.intervene(hooks):
            logits = model(w[:, :-1])
        ce = F.cross_entropy(logits.flatten(0, 1).float(), w[:, 1:].flatten(), reduction="sum")
        total, count = total + float(ce), count + w[:, 1:].numel()
    return total / count


@dataclass(frozen=True)
class SAEMetrics:
    """Measured on held-out windows: fve and l0 (mean active features per token) of the
    reconstruction; the next-token loss clean, with the reconstruction spliced in, and with the
    hook mean-ablated (its mean activation over the training tokens at every position)."""

    fve: float
    l0: float
    n_dead: int
    n_features: int
    clean_loss: float
    spliced_loss: float
    ablated_loss: float
    tokens: int

    @property
    def n_alive(self) -> int:
        return self.n_features - self.n_dead

    @property
    def loss_recovered(self) -> float:
        """(ablated - spliced) / (ablated - clean): 1 when splicing costs nothing, 0 when the SAE
        is worth no more than the mean. NaN when ablating costs nothing."""
        worth = self.ablated_loss - self.clean_loss
        return (self.ablated_loss - self.spliced_loss) / worth if worth > 0 else float("nan")


def evaluate(
    model: GPT,
    sae: SparseAutoencoder,
    name: str,
    windows: torch.Tensor,
    mean: torch.Tensor,
    dead: np.ndarray,
) -> SAEMetrics:
    """The SAE's metrics on held-out windows (N, T + 1); `mean` the training mean at `name`."""
    acts = collect(model, windows[:, :-1], name)
    with torch.no_grad():
        x_hat, f = sae(acts)
    return SAEMetrics(
        fve=fve(acts, x_hat),
        l0=float((f > 0).sum(-1).float().mean()),
        n_dead=int(np.asarray(dead).sum()),
        n_features=sae.n_features,
        clean_loss=next_token_loss(model, windows),
        spliced_loss=next_token_loss(model, windows, splice_hooks(sae, name)),
        ablated_loss=next_token_loss(model, windows, mean_ablation_hooks(name, mean)),
        tokens=int(acts.shape[0]),
    )


# ---- reading features --------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureTable:
    """Over browsing windows (N, T): each feature's firing frequency (F,) (share of tokens where it
    is > 0), its largest activation (F,), and its top activations: values, window and position
    (F, k), largest first (these two past each window's first MIN_LEFT tokens)."""

    freq: np.ndarray
    max_act: np.ndarray
    top_values: np.ndarray
    top_window: np.ndarray
    top_position: np.ndarray


MIN_LEFT = 8  # a top snippet has at least this many tokens before its token (when windows allow)


@torch.no_grad()
def feature_table(
    model: GPT,
    sae: SparseAutoencoder,
    name: str,
    windows: torch.Tensor,
    k: int = 8,
    min_left: int = MIN_LEFT,
) -> FeatureTable:
    """Run the browsing windows (N, T) through the model and the SAE, keeping per feature only
    its count and its k largest activations (never the whole (N * T, F) table at once). The top
    activations skip each window's first min_left positions: a window starts mid-text, so its
    first tokens are read without their context, and a snippet there would show none."""
    N, T = windows.shape
    left = min(min_left, T - 1)
    counts = torch.zeros(sae.n_features)
    best_v = torch.full((k, sae.n_features), -1.0)
    best_i = torch.zeros((k, sae.n_features), dtype=torch.long)
    for i in range(0, N, 16):
        f = sae.encode(collect(model, windows[i : i + 16], name))  # (n * T, F)
        counts += (f > 0).sum(0)
        early = torch.arange(f.shape[0]) % T < left
        v = torch.cat([best_v, f.masked_fill(early[:, None], -1.0)])
        at = torch.cat([best_i, torch.arange(i * T, i * T + f.shape[0])[:, None].expand_as(f)])
        top = v.topk(k, dim=0)
        best_v, best_i = top.values, at.gather(0, top.indices)
    flat = best_i.T.numpy()
    return FeatureTable(
        freq=(counts / (N * T)).numpy(),
        max_act=best_v[0].clamp_min(0).numpy(),
        top_values=best_v.T.clamp_min(0).numpy(),
        top_window=flat // T,
        top_position=flat % T,
    )


def top_snippets(table: FeatureTable, feature: int, n: int) -> list[tuple[int, int]]:
    """Up to n (window, position) pairs of the feature's top activations, one per window (its
    strongest token there), strongest first: a window where it fires on five tokens shows once."""
    seen: dict[int, int] = {}
    for w, p, v in zip(
        table.top_window[feature],
        table.top_position[feature],
        table.top_values[feature],
        strict=True,
    ):
        if v > 0 and int(w) not in seen:
            seen[int(w)] = int(p)
    return list(seen.items())[:n]


def alive_by_frequency(table: FeatureTable) -> list[int]:
    """The features that fired on the browsing windows, most frequent first."""
    order = np.argsort(-table.freq, kind="stable")
    return [int(i) for i in order if table.freq[i] > 0]


DENSE = 0.2  # a feature firing on more than this share of tokens is rarely one concept
TYPICAL = 0.05  # the feature a page opens on fires on at most this share of tokens


def is_dense(table: FeatureTable, feature: int) -> bool:
    return bool(table.freq[feature] > DENSE)


def default_feature(table: FeatureTable) -> int | None:
    """The feature to open on: the most frequent one firing on at most TYPICAL of tokens. The
    most frequent features overall are often dense (a third of all tokens, promoting "]" and
    "1"), which reads as no concept; the rarest fire in one or two snippets. A feature just under
    5% is sparse enough to mean one thing and frequent enough to fill the snippets. When every
    alive feature fires more often, the rarest of them; None when none fired."""
    alive = alive_by_frequency(table)
    typical = [f for f in alive if table.freq[f] <= TYPICAL]
    return typical[0] if typical else (alive[-1] if alive else None)


def promoted_tokens(model: GPT, sae: SparseAutoencoder, feature: int, k: int = 10):
    """The tokens the feature's direction raises and lowers most, read through the final norm's
    centring and gain and the unembedding (the logit lens without the division by the stream's
    length, which scales every token alike): (raised, lowered), lists of (id, logit change)."""
    d = sae.direction(feature)
    ln = model.ln_final
    with torch.no_grad():
        if ln is not None:
            if hasattr(ln, "hook_mean"):  # LayerNorm centres; RMSNorm does not
                d = d - d.mean()
            d = d * ln.weight
        logits = (d @ model.W_U).numpy()
    order = np.argsort(-logits, kind="stable")
    pairs = [(int(i), float(logits[i])) for i in order]
    return pairs[:k], pairs[::-1][:k]


def readout_path(model: GPT) -> str:
    """What `promoted_tokens` reads a direction through, in words, for this model's final norm."""
    ln = model.ln_final
    if ln is None:
        return "the unembedding W_U (this model has no final norm)"
    if hasattr(ln, "hook_mean"):
        return "the final LayerNorm's centring and gain, then the unembedding W_U"
    return "the final RMSNorm's gain, then the unembedding W_U"


@torch.no_grad()
def activations_along(model: GPT, sae: SparseAutoencoder, name: str, ids: list[int]) -> np.ndarray:
    """Every feature's activation at every token of a prompt: (T, F)."""
    ids = ids[-model.cfg.n_ctx :]
    return sae.encode(collect(model, torch.tensor([ids]), name)).numpy()


def steering_hooks(name: str, vector: torch.Tensor) -> list[tuple[str, HookFn]]:
    """Add `vector` (D,) to the activation at `name`, at every position."""
    return custom(name, lambda x, hook: x + vector.to(x))


def steered(
    model: GPT,
    ids: list[int],
    name: str,
    vector: torch.Tensor,
    n_tokens: int,
    seed: int,
    settings: SamplingSettings | None = None,
) -> tuple[list[int], list[int]]:
    """(new tokens without steering, with `vector` added at `name`), same seed: the difference is
    the push."""
    settings = settings or SamplingSettings()
    plain = generate(model, ids, n_tokens, settings, seed)
    with model.intervene(steering_hooks(name, vector)):
        pushed = generate(model, ids, n_tokens, settings, seed)
    return plain, pushed


@torch.no_grad()
def feature_in_windows(
    model: GPT, sae: SparseAutoencoder, name: str, windows: torch.Tensor | np.ndarray, feature: int
) -> np.ndarray:
    """One feature's activation at every token of some windows (n, T), ids as a tensor or an
    array: (n, T)."""
    windows = torch.tensor(np.asarray(windows))  # a copy: a cached array is read-only
    f = sae.encode(collect(model, windows, name))[:, feature]
    return f.view(windows.shape).numpy()


# ---- the lab: everything the page shows, in one call ------------------------------------------

TOP_KEPT = 24  # top activations kept per feature: enough for 6 distinct windows, mostly
BROWSE_WINDOWS = 256  # windows of the training text searched for each feature's top snippets
EVAL_TOKENS = 8192  # held-out tokens the metrics are measured on


@dataclass(frozen=True)
class Lab:
    """A trained SAE on hook `name` and what was measured: training log, held-out metrics, the
    feature table over browsing windows of the training text (ids (N, T) and each token's text)."""

    name: str
    sae: SparseAutoencoder
    log: TrainLog
    metrics: SAEMetrics
    table: FeatureTable
    browse: Windows


def lab(
    model: GPT,
    tokenizer: Tokenizer,
    text: str,
    name: str,
    cfg: SAEConfig,
    n_tokens: int,
    progress: Callable[[str, float], None] | None = None,
    val_fraction: float = VAL_FRACTION,
) -> Lab:
    """Train an SAE on about n_tokens activations at `name` from random windows of the training
    split of `text`, measure it on held-out windows of its validation split, and tabulate its
    features over windows spread evenly through `text`. val_fraction: the share of the text the
    model held out in training (its bundle's meta["data"]), so "held out" means the same here.
    progress(stage, share): stage "collect" (reading activations), then "train", then "measure"."""

    def report(stage: str) -> Callable[[float], None] | None:
        return None if progress is None else lambda share: progress(stage, share)

    data = TokenData.from_text(text, tokenizer, val_fraction)
    n_ctx = model.cfg.n_ctx
    windows = random_windows(data.train, n_tokens, n_ctx, cfg.seed)[:, :-1]
    acts = collect(model, windows, name, progress=report("collect"))
    sae, log = train_sae(acts, cfg, report("train"))
    if progress is not None:
        progress("measure", 0.0)
    held_out = random_windows(data.val, EVAL_TOKENS, n_ctx, cfg.seed + 1)
    metrics = evaluate(model, sae, name, held_out, acts.mean(0), log.dead)
    browse = corpus_windows(text, tokenizer, BROWSE_WINDOWS, min(64, n_ctx))
    table = feature_table(model, sae, name, torch.as_tensor(browse.ids), k=TOP_KEPT)
    return Lab(name, sae, log, metrics, table, browse)


# ---- across training snapshots ----------------------------------------------------------------

MATCH_CORR = 0.7  # two features "are the same" when their activations correlate at least this much
MATCH_WINDOWS = 64  # browsing windows the two SAEs' activations are correlated over


@torch.no_grad()
def feature_acts(
    model: GPT, sae: SparseAutoencoder, name: str, windows: torch.Tensor
) -> torch.Tensor:
    """Every feature's activation at every token of windows (N, T): (N * T, F)."""
    return torch.cat(
        [sae.encode(collect(model, windows[i : i + 16], name)) for i in range(0, len(windows), 16)]
    )


def _standardise(a: torch.Tensor) -> torch.Tensor:
    """Columns centred and scaled to unit length (a silent column stays 0)."""
    a = a - a.mean(0)
    return a / a.norm(dim=0).clamp_min(1e-12)


def best_matches(acts_a: torch.Tensor, acts_b: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """For each feature of A (columns of (n, F_a)), the feature of B ((n, F_b), the same tokens)
    whose activations correlate most with it, and that correlation: ((F_a,) ids, (F_a,) r).
    Correlation over tokens does not care how each model's residual basis is turned, which a
    cosine between decoder directions of two different models would."""
    corr = _standardise(acts_a).T @ _standardise(acts_b)  # (F_a, F_b)
    r, idx = corr.max(1)
    return idx.numpy(), r.numpy()


def chance_matches(acts_a: torch.Tensor, acts_b: torch.Tensor, seed: int = 0) -> np.ndarray:
    """best_matches' correlations when B's tokens are shuffled: what matching finds by chance."""
    perm = torch.randperm(acts_b.shape[0], generator=torch.Generator().manual_seed(seed))
    return best_matches(acts_a, acts_b[perm])[1]


@dataclass(frozen=True)
class Matches:
    """Each feature of lab A's SAE against lab B's: its best match in B (F_a,), their correlation
    (F_a,), the same with B's tokens shuffled (F_a,), which of A's features fired at all, and
    its best correlation with an SAE trained the same way on a model of the same shape with
    random weights (F_a,), a model that learned nothing (None when none was given)."""

    best: np.ndarray
    r: np.ndarray
    chance: np.ndarray
    alive: np.ndarray
    tokens: int = 0  # how many tokens the activations were correlated over
    untrained: np.ndarray | None = None


def match_labs(
    model_a: GPT,
    lab_a: Lab,
    model_b: GPT,
    lab_b: Lab,
    untrained: tuple[GPT, Lab] | None = None,
) -> Matches:
    """Match two SAEs on one hook (say, of two training snapshots of a model) by how their
    features' activations correlate over lab A's first MATCH_WINDOWS browsing windows; with
    `untrained` (a model of the same shape with random weights, analysis/untrained.py, and an SAE
    trained on it the same way), A's features are matched against that one too."""
    windows = torch.tensor(
        lab_a.browse.ids[:MATCH_WINDOWS]
    )  # a copy: the cached array is read-only
    acts_a = feature_acts(model_a, lab_a.sae, lab_a.name, windows)
    acts_b = feature_acts(model_b, lab_b.sae, lab_b.name, windows)
    best, r = best_matches(acts_a, acts_b)
    alive = (acts_a > 0).any(0).numpy()
    blank = None
    if untrained is not None:
        model_c, lab_c = untrained
        blank = best_matches(acts_a, feature_acts(model_c, lab_c.sae, lab_c.name, windows))[1]
    return Matches(best, r, chance_matches(acts_a, acts_b), alive, int(windows.numel()), blank)


def same_weights(a: nn.Module, b: nn.Module) -> bool:
    """Whether two models hold the very same weights (a snapshot and the untrained twin read
    from it): matching an SAE against one trained the same way on the same weights says nothing."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(
        sa[k].shape == sb[k].shape and torch.equal(sa[k], sb[k]) for k in sa
    )


def feature_match_claim(feature: int, m: Matches, step: int) -> Claim:
    """Whether one feature of the SAE on screen has a counterpart in the other SAE, decided on
    the correlation as printed; with `m.untrained`, also said against the SAE on random weights
    of the same shape: a feature that one has too is what any model of this shape has (such as
    which token is here), not something learned."""
    j, r = int(m.best[feature]), float(m.r[feature])
    numbers = {"feature": feature, "match": j, "r": r, "threshold": MATCH_CORR}
    said = (
        f"Feature {feature} here is closest to feature {j} of the step-{step:,} SAE "
        f"(correlation {r:.2f})"
    )
    if as_printed(r) < MATCH_CORR:
        return Claim(f"{said}: below {MATCH_CORR}, so it has no counterpart there.", False, numbers)
    if m.untrained is None:
        return Claim(f"{said}: at or above {MATCH_CORR}, the same feature.", True, numbers)
    blank = float(m.untrained[feature])
    numbers["untrained"] = blank
    if as_printed(blank) < MATCH_CORR:
        return Claim(
            f"{said}: at or above {MATCH_CORR}, the same feature; the SAE on random weights of "
            f"the same shape has none that close ({blank:.2f}).",
            True,
            numbers,
        )
    return Claim(
        f"{said}: at or above {MATCH_CORR}, but the SAE on random weights of the same shape, a "
        f"model that learned nothing, also has one at or above {MATCH_CORR} ({blank:.2f}): a "
        "feature any model of this shape has (such as which token is here), not one this model "
        "learned.",
        False,
        numbers,
    )


def _do(n: int) -> str:
    return "does" if n == 1 else "do"


def match_claim(
    r: np.ndarray,
    chance: np.ndarray,
    alive: np.ndarray,
    step: int,
    tokens: int = 0,
    *,
    untrained: np.ndarray,
    later: bool = False,
) -> Claim:
    """How many alive features of the SAE on screen have a counterpart in the SAE of the snapshot
    at `step` (correlation >= MATCH_CORR), against two controls: the same count with the tokens
    shuffled, and with an SAE trained the same way on random weights of the same shape (a model
    that learned nothing: token-identity features exist in any embedding). "Already there" only
    beyond both. `tokens`: how many tokens `alive` was measured on (said, so that "fire here" is
    not read as the SAE's alive count, measured on its training tokens). `later`: the snapshot
    at `step` comes after the model on screen, so shared features are still there, not already."""
    alive = np.asarray(alive, bool)
    n, found, by_chance, blank = (
        int(alive.sum()),
        int((r[alive] >= MATCH_CORR).sum()),
        int((chance[alive] >= MATCH_CORR).sum()),
        int((np.asarray(untrained)[alive] >= MATCH_CORR).sum()),
    )
    numbers = {
        "alive": n,
        "matched": found,
        "chance": by_chance,
        "untrained": blank,
        "threshold": MATCH_CORR,
    }
    where = f"on these {tokens:,} tokens" if tokens else "here"
    measured = (
        f"{found:,} of the {n:,} features that fire {where} have a counterpart in the SAE trained on "
        f"the model at step {step:,} (activations correlated at {MATCH_CORR} or more over the same "
        f"tokens); with the tokens shuffled, {by_chance:,} {_do(by_chance)}; in an SAE trained the "
        f"same way on the same shape with random weights, a model that learned nothing, "
        f"{blank:,} {_do(blank)}"
    )
    if found > by_chance and found > blank:
        when = "are still there" if later else "were already there"
        return Claim(
            f"{measured}: those {found:,} {when} at step {step:,}, {found - blank:,} "
            "more than a model that learned nothing gives.",
            True,
            numbers,
        )
    if found > by_chance:
        return Claim(
            f"{measured}: no more than random weights give, so what the two share is what any "
            "model of this shape has (such as which token is here), not something "
            + ("this model learned." if later else f"learned by step {step:,}."),
            False,
            numbers,
        )
    return Claim(
        f"{measured}: no more than chance, so the two dictionaries share no features this test "
        "can see.",
        False,
        numbers,
    )


# ---- claims ------------------------------------------------------------------------------------

GOOD_RECOVERY = 0.8  # a reconstruction "keeps most of what the layer is worth" above this


def resampling_note(log: TrainLog) -> str:
    """What resampling did, in words (a fact about this run, not a finding about the model)."""
    if log.resampled:
        return "Resampled: " + ", ".join(f"{n} at step {s}" for s, n in log.resampled) + "."
    if not log.checks:
        return (
            f"Resampling never ran: it looks for dead features every {log.resample_every} steps "
            f"in the first {RESAMPLE_UNTIL:.0%} of training, and this run had {len(log.mse)}."
        )
    return f"Resampling looked {log.checks} time{'s' * (log.checks > 1)} and found no dead feature."


def _moved(what: str, before: float, after: float) -> str:
    """'raises the loss from 4.358 to 4.401': the verb as the change reads printed to 3 decimals
    (on a model that learned nothing a splice can lower the loss, or leave it)."""
    shown = float(f"{after:.3f}") - float(f"{before:.3f}")
    if shown == 0:
        return f"leaves {what} at {after:.3f}"
    verb = "raises" if shown > 0 else "lowers"
    start = f" from {before:.3f}" if what == "the loss" else ""
    return f"{verb} {what}{start} to {after:.3f}"


def splice_claim(m: SAEMetrics, l1: bool = False) -> Claim:
    """What splicing the reconstruction in costs, against what mean-ablating the hook costs;
    l1: the SAE's sparsity is an L1 penalty (the remedy then is a smaller coefficient)."""
    cost, worth = m.spliced_loss - m.clean_loss, m.ablated_loss - m.clean_loss
    # the differences the sentence states are those of the losses it prints (3 decimals)
    clean, spliced, ablated = (
        as_printed(x, 3) for x in (m.clean_loss, m.spliced_loss, m.ablated_loss)
    )
    cost_shown, worth_shown = round(spliced - clean, 3) + 0.0, round(ablated - clean, 3) + 0.0
    numbers = {
        "cost": cost,
        "worth": worth,
        "recovered": m.loss_recovered,
        "threshold": GOOD_RECOVERY,
    }
    measured = (
        f"Splicing the SAE's reconstruction in {_moved('the loss', m.clean_loss, m.spliced_loss)} "
        "nats per "
        f"token ({cost_shown:+.3f}); replacing the activation by its mean "
        f"{_moved('it', m.clean_loss, m.ablated_loss)} ({worth_shown:+.3f})"
    )
    if worth <= 0:
        return Claim(
            f"{measured}: this hook carries nothing the loss can see, so the comparison says "
            "nothing about the SAE.",
            False,
            numbers,
        )
    remedy = "a smaller L1 coefficient" if l1 else "a larger k"
    if m.spliced_loss > m.ablated_loss:
        return Claim(
            f"{measured}. The reconstruction does worse than the mean activation: it keeps none "
            f"of what this activation is worth; train on more tokens or with {remedy}.",
            False,
            numbers,
        )
    share = f"{m.loss_recovered:.0%}"
    if m.loss_recovered >= GOOD_RECOVERY:
        return Claim(
            f"{measured}. The reconstruction keeps {share} of what this activation is worth to "
            f"the loss: it costs {cost_shown:.3f} of the {worth_shown:.3f} nats the activation is "
            "worth.",
            True,
            numbers,
        )
    return Claim(
        f"{measured}. The reconstruction keeps only {share} of what this activation is worth "
        f"(below {GOOD_RECOVERY:.0%}): too rough to stand in for it; train on more tokens or "
        f"with {remedy}.",
        False,
        numbers,
    )


def dead_claim(m: SAEMetrics, window_tokens: int) -> Claim:
    """How many features are dead, and what that means for the dictionary's real size."""
    numbers = {"dead": m.n_dead, "features": m.n_features, "window": window_tokens}
    if m.n_dead == 0:
        return Claim(
            f"All {m.n_features:,} features fired during the last {window_tokens:,} training "
            "tokens: none is dead.",
            False,
            numbers,
        )
    return Claim(
        f"{m.n_dead:,} of {m.n_features:,} features did not fire once on the last "
        f"{window_tokens:,} training tokens (dead): the dictionary in use has "
        f"{m.n_alive:,} directions.",
        True,
        numbers,
    )


def steering_claim(plain: list[int], pushed: list[int], alpha: float) -> Claim:
    """Where the steered text first leaves the plain one (same seed, so only the push differs)."""
    n = min(len(plain), len(pushed))
    first = next((i for i in range(n) if plain[i] != pushed[i]), None)
    numbers = {"alpha": alpha, "first_difference": -1 if first is None else first, "tokens": n}
    if first is None:
        return Claim(
            f"With strength {alpha:g} the {n} generated tokens are the same with and without "
            "the push: at this strength the feature does not change what is sampled.",
            False,
            numbers,
        )
    shared = (
        "differ from the first generated token"
        if first == 0
        else f"share their first {first} generated token{'' if first == 1 else 's'} and then part"
    )
    return Claim(
        f"With strength {alpha:g} the two texts {shared}: from there on, every difference comes "
        "from the added feature direction (the sampling seed is the same).",
        True,
        numbers,
    )
