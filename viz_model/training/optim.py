"""The optimisers the loop can take a step with, written out: AdamW and SGD with momentum.

    opt = make_optimizer(model, TrainConfig(optimizer="sgd", lr=0.1, momentum=0.9))
    loss.backward(); opt.step(); opt.zero_grad()

Both keep weight decay off the biases and LayerNorm gains (the 1-D parameters), as GPT-2 and
nanoGPT do, and each does the same arithmetic, in the same order, as its torch.optim namesake on
the CPU (tests/test_train.py compares them step by step). They are written here so the formula the
Training page shows (analysis/training.update_rule) is this code, and because torch's optimisers
import torch._dynamo on first use, about 2 s of a job's start. Same interface as far as the loop
uses it: param_groups, zero_grad, step. Not here: the learning-rate schedule and the clipping
(loop.py), the gradient-health records (health.py).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from viz_model.model.config import TrainConfig

ADAM_EPS = 1e-8  # AdamW's epsilon (PyTorch's default; not a TrainConfig setting)


class _Optimizer:
    """What both optimisers share: parameter groups with their settings, and zero_grad."""

    def __init__(self, groups: list[dict[str, Any]], defaults: dict[str, Any]) -> None:
        self.param_groups = [
            {**defaults, "weight_decay": 0.0, **g, "params": list(g["params"])} for g in groups
        ]
        self.state: dict[torch.Tensor, dict[str, Any]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()


class AdamW(_Optimizer):
    """AdamW (Loshchilov & Hutter): Adam with decoupled weight decay.

    For each parameter theta with gradient g (after clipping), at its t-th update:

        theta <- theta * (1 - lr * weight_decay)          (decay; 0 for biases and LayerNorm gains)
        m <- beta1 * m + (1 - beta1) * g                  (running mean of the gradient)
        v <- beta2 * v + (1 - beta2) * g * g              (running mean of its square)
        theta <- theta - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

    torch.optim.AdamW's default CPU path, in the same order.
    """

    def __init__(
        self,
        groups: list[dict[str, Any]],
        lr: float,
        betas: tuple[float, float],
        eps: float = ADAM_EPS,
    ) -> None:
        super().__init__(groups, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state.get(p)
                if state is None:
                    state = self.state[p] = {
                        "step": 0,
                        "exp_avg": torch.zeros_like(p),
                        "exp_avg_sq": torch.zeros_like(p),
                    }
                state["step"] += 1
                t, m, v, g = state["step"], state["exp_avg"], state["exp_avg_sq"], p.grad
                p.mul_(1 - lr * wd)
                m.lerp_(g, 1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denom = (v.sqrt() / math.sqrt(1 - beta2**t)).add_(eps)
                p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))


class SGD(_Optimizer):
    """Stochastic gradient descent with momentum (heavy ball), as torch.optim.SGD computes it.

    For each parameter theta with gradient g (after clipping):

        g <- g + weight_decay * theta       (L2 decay, inside the gradient; 0 for biases and gains)
        b <- momentum * b + g               (b = g at the first update; no buffer when momentum 0)
        theta <- theta - lr * b

    With momentum 0 it is plain gradient descent, theta <- theta - lr * g. Each weight moves by
    lr times its (averaged) gradient, so, unlike AdamW, the step's size follows the gradient's:
    SGD usually needs a much larger learning rate.
    """

    def __init__(self, groups: list[dict[str, Any]], lr: float, momentum: float) -> None:
        super().__init__(groups, {"lr": lr, "momentum": momentum})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.add(p, alpha=wd) if wd != 0 else p.grad
                if mu != 0:
                    state = self.state.setdefault(p, {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = g.detach().clone()
                    else:
                        buf.mul_(mu).add_(g)
                    g = buf
                p.add_(g, alpha=-lr)


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> AdamW | SGD:
    """cfg.optimizer's optimiser, with weight decay on the 2-D weight matrices (and embeddings)
    and none on biases and LayerNorm gains, as in GPT-2 and nanoGPT."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    if cfg.optimizer == "sgd":
        return SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    return AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


def state_floats(cfg: TrainConfig) -> int:
    """Numbers the optimiser keeps per parameter: AdamW 2 (m and v), SGD 1 (its momentum buffer),
    plain SGD (momentum 0) none."""
    if cfg.optimizer == "sgd":
        return 1 if cfg.momentum != 0 else 0
    return 2
