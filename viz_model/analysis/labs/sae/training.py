"""Training an SAE on activations (N, D): the loss (L1 or top-k), the unit decoder kept unit, and
dead features resampled. Apart from the model (model.py) so that the training loop reads top to
bottom like the project's other loops.

Dead features (never firing over the last `resample_every` steps) are resampled as "Towards
Monosemanticity" (Bricken et al. 2023) describes: inputs are drawn with probability proportional to
their squared reconstruction loss; a dead feature's decoder column becomes one such input (minus the
decoder bias, scaled to unit length), its encoder row the same direction at 0.2 times the mean
length of the alive features' encoder rows, its encoder bias 0, and Adam's moments for them reset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.labs.sae.model import SparseAutoencoder

RESAMPLE_SCALE = 0.2  # a resampled encoder row's length, relative to the alive rows' mean length
RESAMPLE_UNTIL = 0.7  # no resampling in the last 30% of training, so revived features settle
RESAMPLE_POOL = 16_384  # inputs scored for their loss when choosing where to resample


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
