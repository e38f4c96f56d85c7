"""One gradient step on one prompt: the loss, the gradient of each parameter group, one plain SGD
step, and what it did to the probability of each next token; plus the chain rule for one weight.

    L = -(1/N) sum_t log p_t[y_t]       (y_t = the token after position t, N = T - 1 targets)
    w <- w - lr * dL/dw                 (plain SGD, one step)
    L(w - lr g) ~ L(w) - lr |g|^2       (first order: how much the step should lower the loss)

The first-order estimate holds only for a small enough step: the loss curves along the gradient,
and a step of lr beyond about 2 / (the curvature along g) overshoots, so the loss rises. How small
is small depends on the model (|g|^2 is ~10 on shakespeare-char and ~500 on shakespeare-tiny), so
the learning rates offered are chosen from the measured gradient (`loss_along_gradient`): the
default is the largest round lr whose first-order fall is at most DEFAULT_SHARE of the loss and at
which the measured fall agrees with that estimate; `step_claim` says what one step did.

The step is taken on a deep copy of the model: a served model is shared by every session and is
never changed. The copy runs in eval mode (no dropout), so the step is the same every time.

The chain-rule example follows one unembedding weight W_U[d, j] (D x V) through the logits:

    z_t[j] = u_t . W_U[:, j]                 u_t: the final LayerNorm's output at t (D,)
    dL/dz_t[j] = (p_t[j] - [j == y_t]) / N   softmax with cross-entropy
    dz_t[j]/dW_U[d, j] = u_t[d]
    dL/dW_U[d, j] = sum_t (p_t[j] - [j == y_t]) u_t[d] / N

With tied embeddings W_U is W_E^T, which also receives a gradient through the input: the sum then
gives only the unembedding's share of autograd's number.

Not here: training loops (viz_model/training/loop.py); the page's part (ui/inside_block/gradient.py)
and its charts (ui/charts/block/gradient.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.model.gpt import GPT

MAX_STEP_PARAMS = 20_000_000  # a step copies the model and its gradients: 3x its memory per student


def prompt_loss(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of predicting ids[1:] from ids[:-1] on one prompt (needs 2+ tokens)."""
    logits = model(ids[:-1])  # (T-1, V)
    return F.cross_entropy(logits, ids[1:])


TOP_GROUPS = {
    "embed": "token embedding",
    "pos_embed": "position embedding",
    "ln_final": "final LayerNorm",
    "unembed": "unembedding",
}
BLOCK_PARTS = {"attn": "attention", "mlp": "MLP"}


def group_of(name: str) -> str:
    """A parameter's group, for people: 'token embedding', 'block 0 attention', 'block 0 MLP',
    'block 0 LayerNorms', 'final LayerNorm', 'unembedding'."""
    parts = name.split(".")
    if parts[0] == "blocks":
        return f"block {parts[1]} {BLOCK_PARTS.get(parts[2], 'LayerNorms')}"
    return TOP_GROUPS.get(parts[0], parts[0])


def grad_norms(grads: GPT, weights: GPT) -> list[tuple[str, float, float, int]]:
    """(group, gradient norm, weight norm, parameters) per group, in forward order: gradients
    from `grads`, weights from `weights` (the same architecture); a group's norm is the square
    root of the sum of squares over all its parameters."""
    sums: dict[str, list[float]] = {}
    own = dict(weights.named_parameters())
    for name, p in grads.named_parameters():
        g = sums.setdefault(group_of(name), [0.0, 0.0, 0])
        if p.grad is not None:
            g[0] += float((p.grad.double() ** 2).sum())
        g[1] += float((own[name].detach().double() ** 2).sum())
        g[2] += p.numel()
    return [(k, v[0] ** 0.5, v[1] ** 0.5, int(v[2])) for k, v in sums.items()]


def train_copy(model: GPT) -> GPT:
    """A private copy of the model that can take gradients, in eval mode (no dropout)."""
    twin = copy.deepcopy(model).eval()
    for p in twin.parameters():
        p.requires_grad_(True)
        p.grad = None
    return twin


def sgd_step(model: GPT, ids: torch.Tensor, lr: float) -> tuple[GPT, float]:
    """(a stepped copy of the model, the loss before): backpropagate the prompt's loss on a copy
    and move every weight by -lr times its gradient. The copy keeps its gradients."""
    twin = train_copy(model)
    with torch.enable_grad():
        loss = prompt_loss(twin, ids)
        loss.backward()
    with torch.no_grad():
        for p in twin.parameters():
            if p.grad is not None:
                p.sub_(lr * p.grad)
    return twin, float(loss.detach())


def grad_sq(twin: GPT) -> float:
    """|g|^2: the squared length of the whole gradient (every parameter once, tied ones too)."""
    return sum(float((p.grad.double() ** 2).sum()) for p in twin.parameters() if p.grad is not None)


def target_probs(model: GPT, ids: torch.Tensor) -> np.ndarray:
    """(T-1,): the probability the model gives each actual next token."""
    with torch.no_grad():
        probs = torch.softmax(model(ids[:-1]).double(), -1)
    return probs[torch.arange(len(ids) - 1), ids[1:]].numpy()


@dataclass(frozen=True)
class ChainRule:
    """dL/dW_U[d, j] for one weight, term by term over the N target positions.

    u (N,): u_t[d]; p (N,): p_t[j]; y (N,): 1 where the target is j; terms (N,):
    (p - y) * u / N; by_hand = terms.sum(); autograd: the gradient PyTorch computed.
    """

    d: int
    j: int
    weight: float
    u: np.ndarray
    p: np.ndarray
    y: np.ndarray
    terms: np.ndarray
    by_hand: float
    autograd: float
    tied: bool


@dataclass(frozen=True)
class GradientStep:
    """One SGD step on a prompt: losses, groups (see grad_norms, before the step), each target's
    probability before and after (N,), and the chain rule for one unembedding weight; grad_sq is
    |g|^2, so the first-order estimate of the change is -lr * grad_sq."""

    lr: float
    loss_before: float
    loss_after: float
    grad_sq: float
    groups: list[tuple[str, float, float, int]]
    targets: np.ndarray
    p_before: np.ndarray
    p_after: np.ndarray
    chain: ChainRule


def final_vectors(model: GPT, ids: torch.Tensor) -> np.ndarray:
    """(T, D): what the unembedding reads, the final LayerNorm's output (the last block's output
    in a post-LN model)."""
    name = f"blocks.{model.cfg.n_layer - 1}.hook_resid_post"
    _, cache = model.run_with_cache(ids, names=[name])
    with torch.no_grad():
        return model.final_norm(cache[name]).double().numpy()


def chain_rule(model: GPT, twin: GPT, ids: torch.Tensor, position: int) -> ChainRule:
    """The chain rule for W_U[d, j]: j is the target after `position`, d the dimension where that
    weight's gradient is largest. `twin` holds the gradients (from sgd_step), `model` the weights."""
    j = int(ids[position + 1])
    tied = model.cfg.tie_embeddings
    grad = (twin.embed.weight if tied else twin.unembed.weight).grad.T  # (V, D) -> (D, V)
    d = int(torch.argmax(grad[:, j].abs()))
    u = final_vectors(model, ids[:-1])[:, d]
    with torch.no_grad():
        p = torch.softmax(model(ids[:-1]).double(), -1)[:, j].numpy()
    y = (ids[1:] == j).double().numpy()
    terms = (p - y) * u / len(u)
    return ChainRule(
        d=d,
        j=j,
        weight=float(model.W_U[d, j].detach()),
        u=u,
        p=p,
        y=y,
        terms=terms,
        by_hand=float(terms.sum()),
        autograd=float(grad[d, j]),
        tied=tied,
    )


def steppable(model: GPT, ids: list[int] | torch.Tensor) -> torch.Tensor:
    """ids as a tensor, or ValueError with the reason when no step is offered (one token, or a
    model too large to copy for one student)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if len(ids) < 2:
        raise ValueError("a gradient step needs a prompt of at least 2 tokens (one target)")
    if model.n_params() > MAX_STEP_PARAMS:
        raise ValueError(
            f"this model has {model.n_params():,} parameters; a step here copies the model, so it "
            f"is offered up to {MAX_STEP_PARAMS:,}"
        )
    return ids


def gradient_step(
    model: GPT, ids: list[int] | torch.Tensor, lr: float, position: int
) -> GradientStep:
    """Everything the page shows about one SGD step with learning rate lr on a prompt; the chain
    rule follows the target after `position` (0 .. T-2)."""
    ids = steppable(model, ids)
    twin, loss_before = sgd_step(model, ids, lr)
    with torch.no_grad():
        loss_after = float(prompt_loss(twin, ids))
    return GradientStep(
        lr=lr,
        loss_before=loss_before,
        loss_after=loss_after,
        grad_sq=grad_sq(twin),
        groups=grad_norms(twin, model),
        targets=ids[1:].numpy(),
        p_before=target_probs(model, ids),
        p_after=target_probs(twin, ids),
        chain=chain_rule(model, twin, ids, position),
    )


# ---- how far to step: the loss along the gradient ------------------------------------------------

LADDER = (1, 2, 5)  # learning rates offered: 1, 2, 5 times a power of ten
DEFAULT_SHARE = 0.05  # the default lr: first order predicts a fall of at most 5% of the loss
AGREEMENT = 0.25  # the measured change "agrees" with first order within 25% of the estimate
BELOW, ABOVE = 6, 6  # rungs offered below and above the first-order choice
FALLBACK_LR = 1e-3  # where the ladder starts when the gradient is zero


def rung(i: int) -> float:
    """The i-th learning rate of the 1-2-5 ladder: rung(0) = 1, rung(1) = 2, rung(-1) = 0.5."""
    return float(f"{LADDER[i % 3]}e{i // 3}")


def rung_below(x: float) -> int:
    """The index of the largest rung <= x (x > 0): rung_below(0.0042) is the rung 0.002."""
    i = 3 * int(np.floor(np.log10(x)))
    while rung(i + 1) <= x * (1 + 1e-9):
        i += 1
    while rung(i) > x * (1 + 1e-9):
        i -= 1
    return i


def first_order_agrees(change: float, predicted: float, tolerance: float = AGREEMENT) -> bool:
    """The loss fell, by the first-order estimate `predicted` (< 0) within `tolerance` of it."""
    return change < 0 and predicted < 0 and abs(change - predicted) <= tolerance * abs(predicted)


@dataclass(frozen=True)
class LossAlongGradient:
    """The loss after one step of each learning rate offered, from one gradient.

    loss: before the step; grad_sq: |g|^2; etas (K,): the rungs offered, ascending; losses (K,):
    the loss after one step of each; default: the index of the default lr in etas; first_order:
    the rung whose first-order fall is DEFAULT_SHARE of the loss (the default unless the measured
    loss disagreed there and a smaller rung was taken)."""

    loss: float
    grad_sq: float
    etas: np.ndarray
    losses: np.ndarray
    default: int
    first_order: int

    @property
    def predicted(self) -> np.ndarray:
        """(K,): the first-order estimate of each step's change, -lr |g|^2."""
        return -self.etas * self.grad_sq

    @property
    def default_lr(self) -> float:
        return float(self.etas[self.default])


def loss_along_gradient(
    model: GPT, ids: list[int] | torch.Tensor, below: int = BELOW, above: int = ABOVE
) -> LossAlongGradient:
    """Step a copy of the model along -g by every rung from `below` under to `above` over the
    first-order choice (lr |g|^2 = DEFAULT_SHARE * L, rounded down to a rung) and measure the loss
    after each; the default is the largest rung up to that choice where the measured fall agrees
    with first order (the smallest rung if none does)."""
    ids = steppable(model, ids)
    twin, loss = sgd_step(model, ids, 0.0)
    g2 = grad_sq(twin)
    top = rung_below(DEFAULT_SHARE * loss / g2 if g2 > 0 else FALLBACK_LR)
    etas = np.array([rung(i) for i in range(top - below, top + above + 1)])
    start = [p.detach().clone() for p in twin.parameters()]
    losses = []
    with torch.no_grad():
        for lr in etas:
            for p, w in zip(twin.parameters(), start, strict=True):
                p.copy_(w if p.grad is None else w - float(lr) * p.grad)  # as sgd_step does
            losses.append(float(prompt_loss(twin, ids)))
    losses = np.array(losses)
    agree = [i for i in range(below + 1) if first_order_agrees(losses[i] - loss, -etas[i] * g2)]
    return LossAlongGradient(loss, g2, etas, losses, max(agree, default=0), below)


def _fmt_change(x: float) -> str:
    return f"{x:+.3g}".replace("-", "−")


def step_claim(loss_before: float, loss_after: float, lr: float, g2: float) -> Claim:
    """What one step did, against the first-order estimate -lr |g|^2. Made ("the loss fell as
    first order predicted") when the loss fell by the estimate within AGREEMENT; otherwise the
    sentence says whether it overshot (rose) or fell by less or more than the estimate."""
    change, predicted = loss_after - loss_before, -lr * g2
    numbers = {
        "loss_before": loss_before,
        "loss_after": loss_after,
        "change": change,
        "predicted": predicted,
        "lr": lr,
        "grad_sq": g2,
        "tolerance": AGREEMENT,
    }
    a, b = f"{loss_before:.4f}", f"{loss_after:.4f}"
    estimate = f"−η‖g‖² = −{lr:g} × {g2:.4g} = {_fmt_change(predicted)}"
    if g2 == 0:
        text = f"The gradient is zero on this prompt: no step changes the loss ({a})."
        return Claim(text, False, numbers)
    if first_order_agrees(change, predicted):
        text = (
            f"The loss fell from {a} to {b} ({_fmt_change(change)} nats), as the first-order "
            f"estimate {estimate} predicted (within {AGREEMENT:.0%})."
        )
        return Claim(text, True, numbers)
    if change >= 0:
        text = (
            f"At this η the step overshoots: the loss rose from {a} to {b} "
            f"({_fmt_change(change)} nats), though the first-order estimate {estimate} "
            "predicted a fall. That estimate holds only near the current weights; along the "
            "gradient the loss curves up, and a step this long goes past the bottom. A smaller η "
            "follows the estimate."
        )
    elif change > predicted:
        text = (
            f"The loss fell from {a} to {b} ({_fmt_change(change)} nats), less than the "
            f"first-order estimate {estimate}: at this η the loss already curves up along the "
            "gradient, so the straight-line estimate is too hopeful."
        )
    else:
        text = (
            f"The loss fell from {a} to {b} ({_fmt_change(change)} nats), more than the "
            f"first-order estimate {estimate}: along the gradient the loss curves down here."
        )
    return Claim(text, False, numbers)


def overshoot_claim(scan: LossAlongGradient) -> Claim:
    """Where on the slider the step starts to overshoot (the smallest lr whose step raises the
    loss); made when some lr on the slider does."""
    rose = np.flatnonzero(~(scan.losses < scan.loss))  # a step to inf or nan overshoots too
    numbers = {"loss_before": scan.loss, "largest_lr": float(scan.etas[-1])}
    if rose.size == 0:
        numbers["loss_after_largest"] = float(scan.losses[-1])
        text = (
            f"On this prompt no η on the slider overshoots: even η = {scan.etas[-1]:g} lowers "
            f"the loss (to {scan.losses[-1]:.4f})."
        )
        return Claim(text, False, numbers)
    i = int(rose[0])
    numbers |= {"overshoot_lr": float(scan.etas[i]), "loss_after_overshoot": float(scan.losses[i])}
    text = (
        f"The smallest η on the slider that overshoots is {scan.etas[i]:g}: one step of it "
        f"raises the loss from {scan.loss:.4f} to {scan.losses[i]:.4f}."
    )
    return Claim(text, True, numbers)


# ---- the chain rule as printed: numbers that reproduce by hand -----------------------------------

SIG = 5  # significant digits of each factor shown


def _shown(x: float, sig: int = SIG) -> Decimal:
    """x rounded to `sig` significant digits, as the page prints it."""
    return Decimal(f"{x:.{sig}g}")


def _places(largest: float, sig: int = SIG) -> int:
    """Decimal places that give `largest` (the biggest magnitude in a column) `sig` digits."""
    if largest == 0 or not np.isfinite(largest):
        return sig
    return max(0, sig - 1 - int(np.floor(np.log10(abs(largest)))))


def _fixed(x: Decimal | float, places: int) -> Decimal:
    return Decimal(str(x)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True)
class ChainFigures:
    """The chain rule's numbers exactly as printed, each result computed from the rounded numbers
    printed before it, so that a student with a calculator gets the same digits.

    u, p (N,): u_t[d] and p_t[j] to SIG significant digits; y (N,): 0 or 1; terms (N,):
    (p - y) / N * u from the printed u and p, to `places` decimal places; total: the sum of the
    printed terms (exact); autograd: PyTorch's gradient to the same places; weight, lr, delta =
    lr * autograd (exact), new = weight - delta (exact): the update of W_U[d, j]."""

    n: int
    u: list[Decimal]
    p: list[Decimal]
    y: list[int]
    terms: list[Decimal]
    places: int
    total: Decimal
    autograd: Decimal
    weight: Decimal
    lr: Decimal
    delta: Decimal
    new: Decimal


def chain_figures(c: ChainRule, lr: float) -> ChainFigures:
    """The printed chain rule for `c` and one step of `lr` (see ChainFigures)."""
    n = len(c.u)
    u = [_shown(x) for x in c.u]
    p = [_shown(x) for x in c.p]
    y = [int(v) for v in c.y]
    exact = [(pi - yi) / n * ui for pi, yi, ui in zip(p, y, u, strict=True)]
    places = _places(max(max(abs(float(t)) for t in exact), abs(c.autograd)))
    terms = [_fixed(t, places) for t in exact]
    autograd = _fixed(c.autograd, places)
    lr_d = Decimal(f"{lr:g}")
    delta = (lr_d * autograd).normalize()
    weight = _fixed(c.weight, max(4, -delta.as_tuple().exponent))
    return ChainFigures(
        n,
        u,
        p,
        y,
        terms,
        places,
        sum(terms, Decimal(0)),
        autograd,
        weight,
        lr_d,
        delta,
        weight - delta,
    )
