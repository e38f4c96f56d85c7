"""LoRA (Hu et al. 2021): train a low-rank update B A beside a frozen weight W.

    lora = attach_lora(model, rank=8, targets=("qkv", "out"), alpha=8.0, seed=0)
    ...train: only the A and B of each chosen Linear get gradients...
    model.state_dict()      # the merged weights W + (alpha / r) B A, under the GPT's own names
    lora.tensors()          # {"blocks.0.attn.qkv.lora_A": (r, in), "...lora_B": (out, r), ...}

Each chosen `nn.Linear` (out x in weight W) computes W x + b + (alpha / r) B (A x) with A (r x in)
small and random and B (out x r) zero, so a model with LoRA attached gives exactly the base's
logits until the first step. W, its bias, the LayerNorms and the embeddings are frozen
(requires_grad False): only A and B train, so the trainable count is r (in + out) per matrix.

Why hooks rather than new modules: A and B are parameters of the Linear (`...qkv.lora_A`), so the
optimiser, the gradient clipping and the health probe find them as they find any weight, but the
state dict is the plain GPT's: a state-dict hook writes W + (alpha / r) B A under `...qkv.weight`
and leaves A and B out. A bundle saved during or after a LoRA run is therefore an ordinary bundle
with merged weights, which every page opens unchanged; A and B are kept apart (`lora.safetensors`,
training/finetune.py). Loading a plain state dict into a LoRA model takes the loaded merged
weights as the new W and zeroes B: the same function. (The loop, restoring its last good weights
after a NaN, copies W, A and B themselves, so the update it saves is the one that was trained.)
The hook points stay where they were: the forward hook adds the update after the Linear's own
output, and `effective_weight` gives W + (alpha / r) B A to the code that reads a weight directly
(attention's per-head `hook_result`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

# The matrices LoRA may go on, as the Training page names them, and the module each one is in a
# GPT block (a gated MLP's W_gate goes with mlp_in: both read the residual stream).
TARGETS: dict[str, tuple[str, ...]] = {
    "qkv": ("attn.qkv",),
    "out": ("attn.out",),
    "mlp_in": ("mlp.fc_in", "mlp.fc_gate"),
    "mlp_out": ("mlp.fc_out",),
}
TARGET_LABELS = {
    "qkv": "attention q, k, v",
    "out": "attention output",
    "mlp_in": "MLP in",
    "mlp_out": "MLP out",
}
DEFAULT_TARGETS = ("qkv", "out")
MAX_RANK = 256


@dataclass
class LoRA:
    """The adapters attached to one model: {module name: its Linear}, rank and scale."""

    modules: dict[str, nn.Linear]
    rank: int
    alpha: float

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    def n_trainable(self) -> int:
        return sum(m.lora_A.numel() + m.lora_B.numel() for m in self.modules.values())

    def tensors(self) -> dict[str, torch.Tensor]:
        """A and B of every chosen matrix, detached, for lora.safetensors."""
        out: dict[str, torch.Tensor] = {}
        for name, m in self.modules.items():
            out[f"{name}.lora_A"] = m.lora_A.detach().cpu().contiguous()
            out[f"{name}.lora_B"] = m.lora_B.detach().cpu().contiguous()
        return out

    def load(self, tensors: dict[str, torch.Tensor]) -> None:
        """Put back A and B saved by tensors() (a resumed run), keeping the merged function:
        W becomes the loaded merged weight minus (alpha / r) B A."""
        with torch.no_grad():
            for name, m in self.modules.items():
                m.lora_A.copy_(tensors[f"{name}.lora_A"])
                m.lora_B.copy_(tensors[f"{name}.lora_B"])
                m.weight.sub_(_delta(m))


def target_modules(model: nn.Module, targets: Iterable[str]) -> dict[str, nn.Linear]:
    """{"blocks.0.attn.qkv": Linear, ...} for the chosen target names (ValueError for a name that
    is not one of TARGETS, or a model with no such matrix, e.g. mlp_in on an attention-only GPT)."""
    targets = list(targets)
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        raise ValueError(
            f"unknown LoRA matrices: {', '.join(unknown)} (choose from {', '.join(TARGETS)})"
        )
    if not targets:
        raise ValueError("choose at least one matrix for LoRA")
    suffixes = tuple(s for t in targets for s in TARGETS[t])
    found = {
        name: m
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and name.startswith("blocks.") and name.endswith(suffixes)
    }
    if not found:
        raise ValueError(f"this model has none of the matrices {', '.join(targets)}")
    return found


def lora_count(model: nn.Module, rank: int, targets: Iterable[str]) -> int:
    """Trainable parameters of LoRA with rank r on `targets`: r (in + out) per chosen matrix
    (ValueError for a rank that is not low for them: check_rank_fits)."""
    modules = target_modules(model, targets)
    check_rank(rank)
    check_rank_fits(modules, rank)
    return sum(rank * (m.in_features + m.out_features) for m in modules.values())


def check_rank_fits(modules: dict[str, nn.Linear], rank: int) -> None:
    """Refuse a rank whose A and B would hold as many numbers as the matrix they adapt, or more:
    r (in + out) >= in x out (a 64 x 64 matrix: r >= 32). That is no longer a low-rank update."""
    for name, m in modules.items():
        if rank * (m.in_features + m.out_features) >= m.in_features * m.out_features:
            raise ValueError(
                f"r = {rank} is not a low rank for {name} ({m.out_features} x {m.in_features}): "
                f"A and B would hold {rank * (m.in_features + m.out_features):,} numbers, the "
                f"matrix itself {m.in_features * m.out_features:,}. Choose a smaller r."
            )


def check_rank(rank: int) -> None:
    if not isinstance(rank, int) or not 1 <= rank <= MAX_RANK:
        raise ValueError(f"the LoRA rank r must be a whole number from 1 to {MAX_RANK}")


def attach_lora(
    model: nn.Module, rank: int, targets: Iterable[str], alpha: float | None = None, seed: int = 0
) -> LoRA:
    """Freeze every parameter of `model` and add trainable A (r x in) and B (out x r, zero) to
    each chosen Linear. alpha defaults to r (scale alpha / r = 1)."""
    check_rank(rank)
    modules = target_modules(model, targets)
    check_rank_fits(modules, rank)
    alpha = float(rank if alpha is None else alpha)
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    for m in modules.values():
        device = m.weight.device
        # A as nn.Linear's own init (Kaiming uniform, bound 1/sqrt(in)), as the LoRA paper's code
        bound = 1.0 / math.sqrt(m.in_features)
        a = (torch.rand(rank, m.in_features, generator=gen) * 2 - 1) * bound
        m.lora_A = nn.Parameter(a.to(device))  # (r, in)
        m.lora_B = nn.Parameter(torch.zeros(m.out_features, rank, device=device))  # (out, r)
        m.lora_scale = alpha / rank
        m.register_forward_hook(_add_update)
        m.register_state_dict_post_hook(_merged_state)
        m.register_load_state_dict_pre_hook(_rebase_on_load)
    return LoRA(modules, rank, alpha)


def _delta(m: nn.Module) -> torch.Tensor:
    """(alpha / r) B A: (out, r) @ (r, in) -> (out, in)."""
    return m.lora_scale * (m.lora_B @ m.lora_A)


def effective_weight(m: nn.Linear) -> torch.Tensor:
    """The weight a Linear applies: W, or W + (alpha / r) B A with LoRA attached."""
    if getattr(m, "lora_A", None) is None:
        return m.weight
    return m.weight + _delta(m)


def _add_update(m: nn.Module, inputs: tuple[torch.Tensor, ...], out: torch.Tensor) -> torch.Tensor:
    # x (..., in) -> s A x (..., r) -> out + B (s A x) (..., out), never forming the (out, in)
    # product; the scale goes on the small (..., r) tensor and the add into one addmm (about 15%
    # of a LoRA step on all four matrices, benchmarks/bench_finetune.py)
    low = F.linear(inputs[0], m.lora_A) * m.lora_scale  # (..., r)
    flat = torch.addmm(out.reshape(-1, out.shape[-1]), low.reshape(-1, low.shape[-1]), m.lora_B.t())
    return flat.view(out.shape)


def _merged_state(m: nn.Module, state: dict, prefix: str, local_metadata) -> None:
    state[prefix + "weight"] = (m.weight + _delta(m)).detach()
    state.pop(prefix + "lora_A", None)
    state.pop(prefix + "lora_B", None)


def _rebase_on_load(m: nn.Module, state: dict, prefix: str, *args) -> None:
    # a plain (merged) state dict: its weight becomes W, and B = 0 keeps the function it loaded
    if prefix + "lora_A" not in state:
        state[prefix + "lora_A"] = m.lora_A.detach().clone()
        state[prefix + "lora_B"] = torch.zeros_like(m.lora_B)


def update_rank(lora: LoRA, tol: float = 1e-6) -> dict[str, int]:
    """The numerical rank of each (alpha / r) B A (at most r): for tests and the page."""
    with torch.no_grad():
        return {
            name: int(torch.linalg.matrix_rank(_delta(m), atol=tol).item())
            for name, m in lora.modules.items()
        }


def deltas(tensors: dict[str, torch.Tensor], scale: float) -> dict[str, torch.Tensor]:
    """{module name: (alpha / r) B A} from lora.safetensors' tensors."""
    names = sorted({k.rsplit(".lora_", 1)[0] for k in tensors if ".lora_" in k})
    return {n: scale * (tensors[f"{n}.lora_B"] @ tensors[f"{n}.lora_A"]) for n in names}
