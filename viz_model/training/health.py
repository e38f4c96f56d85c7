"""Gradient health, measured while training: each layer's gradient norm and how far a step moved
its weights, so vanishing, exploding and clipped gradients can be seen rather than told.

    probe = HealthProbe(model)
    loss.backward()
    grads = probe.grad_norms()        # {"embed": 0.41, "blocks.0": 0.22, ..., "unembed": 0.9}
    before = probe.weights()          # a copy, before the step
    opt.step()
    moved = probe.update_ratios(before)   # {"embed": 1.1e-3, "blocks.0": 2.3e-3, ...}

A layer is a group of parameters: `embed` (token and position embeddings), `blocks.{l}` (one
block: its attention, MLP and LayerNorms), and `unembed` (the final LayerNorm and the
unembedding; with tied embeddings the unembedding is the embedding matrix, counted in `embed`).
A group's gradient norm is the length of all its gradients as one vector, before clipping;
its update ratio is ||w_after - w_before|| / ||w_before||, the relative size of one step (the
classic health check: about 1e-3 is the rule of thumb of Stanford's CS231n notes).

The loop (loop.py) asks for these every TrainConfig.health_every steps and writes them into the
step's record (grad_layers, update_layers); the total gradient norm before clipping (grad_norm)
it records at every step, since clipping computes it anyway. Not here: reading them back and
what may be said about them (analysis/grad_health.py).
"""

from __future__ import annotations

import torch

EMBED, UNEMBED = "embed", "unembed"
_EMBED_PREFIXES = ("embed.", "pos_embed.")


def group_of(name: str) -> str:
    """The layer a parameter belongs to, by its name: "blocks.3.attn.qkv.weight" -> "blocks.3",
    "pos_embed.weight" -> "embed", "ln_final.weight" -> "unembed"."""
    if name.startswith("blocks."):
        return ".".join(name.split(".")[:2])
    if name.startswith(_EMBED_PREFIXES):
        return EMBED
    return UNEMBED


def layer_groups(model: torch.nn.Module) -> dict[str, list[torch.nn.Parameter]]:
    """{layer: its trainable parameters}, input to output: embed, blocks.0, ..., unembed (a layer
    without trainable parameters is left out)."""
    groups: dict[str, list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():  # each shared (tied) parameter once
        if p.requires_grad:
            groups.setdefault(group_of(name), []).append(p)
    order = [EMBED, *(g for g in groups if g not in (EMBED, UNEMBED)), UNEMBED]
    return {g: groups[g] for g in order if g in groups}


def _norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The length of the tensors as one vector (a 0-d tensor)."""
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors]))


def _short(x: float) -> float:
    """4 significant digits: enough to draw on a log axis, and a short history.json."""
    return float(f"{x:.4g}")


def _read(norms: dict[str, torch.Tensor]) -> dict[str, float]:
    """0-d tensors to floats in one transfer: on a GPU each float() would wait for the device."""
    if not norms:
        return {}
    values = torch.stack(list(norms.values())).tolist()
    return dict(zip(norms, values, strict=True))


class HealthProbe:
    """Measures one model's layers; built once per run (the groups do not change)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.groups = layer_groups(model)

    @torch.no_grad()
    def grad_norms(self) -> dict[str, float]:
        """Each layer's gradient norm as it is now (call it before clipping); a layer whose
        parameters have no gradient yet is left out."""
        norms = {}
        for name, params in self.groups.items():
            grads = [p.grad for p in params if p.grad is not None]
            if grads:
                norms[name] = _norm(grads)
        return {name: _short(x) for name, x in _read(norms).items()}

    @torch.no_grad()
    def weights(self) -> dict[str, list[torch.Tensor]]:
        """A copy of every layer's weights (take it just before the optimiser's step)."""
        return {name: [p.detach().clone() for p in params] for name, params in self.groups.items()}

    @torch.no_grad()
    def update_ratios(self, before: dict[str, list[torch.Tensor]]) -> dict[str, float]:
        """||w - w_before|| / ||w_before|| for each layer (a layer of zero weights is left out)."""
        sizes, moved = {}, {}
        for name, params in self.groups.items():
            sizes[name] = _norm(before[name])
            moved[name] = _norm([p - b for p, b in zip(params, before[name], strict=True)])
        sizes, moved = _read(sizes), _read(moved)
        return {name: _short(moved[name] / size) for name, size in sizes.items() if size > 0}
