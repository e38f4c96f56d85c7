"""One gradient step on one prompt: the loss, the gradient of each parameter group, one plain SGD
step, and what it did to the probability of each next token; plus the chain rule for one weight.

    L = -(1/N) sum_t log p_t[y_t]       (y_t = the token after position t, N = T - 1 targets)
    w <- w - lr * dL/dw                 (plain SGD, one step)

The step is taken on a deep copy of the model: a served model is shared by every session and is
never changed. The copy runs in eval mode (no dropout), so the step is the same every time.

The chain-rule example follows one unembedding weight W_U[d, j] (D x V) through the logits:

    z_t[j] = u_t . W_U[:, j]                 u_t: the final LayerNorm's output at t (D,)
    dL/dz_t[j] = (p_t[j] - [j == y_t]) / N   softmax with cross-entropy
    dz_t[j]/dW_U[d, j] = u_t[d]
    dL/dW_U[d, j] = sum_t (p_t[j] - [j == y_t]) u_t[d] / N

With tied embeddings W_U is W_E^T, which also receives a gradient through the input: the sum then
gives only the unembedding's share of autograd's number.

Not here: training loops (train.py); charts (charts/gradient.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.model import GPT

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
    probability before and after (N,), and the chain rule for one unembedding weight."""

    lr: float
    loss_before: float
    loss_after: float
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


def gradient_step(
    model: GPT, ids: list[int] | torch.Tensor, lr: float, position: int
) -> GradientStep:
    """Everything the page shows about one SGD step with learning rate lr on a prompt; the chain
    rule follows the target after `position` (0 .. T-2)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if len(ids) < 2:
        raise ValueError("a gradient step needs a prompt of at least 2 tokens (one target)")
    if model.n_params() > MAX_STEP_PARAMS:
        raise ValueError(
            f"this model has {model.n_params():,} parameters; a step here copies the model, so it "
            f"is offered up to {MAX_STEP_PARAMS:,}"
        )
    twin, loss_before = sgd_step(model, ids, lr)
    with torch.no_grad():
        loss_after = float(prompt_loss(twin, ids))
    return GradientStep(
        lr=lr,
        loss_before=loss_before,
        loss_after=loss_after,
        groups=grad_norms(twin, model),
        targets=ids[1:].numpy(),
        p_before=target_probs(model, ids),
        p_after=target_probs(twin, ids),
        chain=chain_rule(model, twin, ids, position),
    )
