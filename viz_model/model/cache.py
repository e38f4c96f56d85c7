"""ActivationCache: the activations of one forward pass, by hook name, plus small helpers.

Tensors are kept as recorded (detached, on the model's device). When the input had no batch
dimension (ids of shape (T,), or remove_batch_dim=True) none is given back, so
`cache["blocks.0.attn.hook_pattern"]` is H x T x T, as docs/ARCHITECTURE.md (Hook names) lists;
for ids (B, T), B = 1 included, it is kept (B, H, T, T), as TransformerLens keeps it. The same
rule holds for `values()`, `items()` and `dict(cache)`, and for the stacks below.

It reads like a dict (`keys()`, `values()`, `items()`, `dict(cache)`), and TransformerLens's
residual-stream helpers (`accumulated_resid`, `decompose_resid`, `stack_head_results`,
`apply_ln_to_stack`, `logit_attrs`) come from stacks.py. Those read the model's LayerNorm and
unembedding weights, so the cache keeps a reference to the model (never a hook).

Not here: analyses across layers (analysis/) and anything that runs the model.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from typing import TYPE_CHECKING

import numpy as np
import torch

from viz_model.model.stacks import ResidStacks

if TYPE_CHECKING:
    from viz_model.model.gpt import GPT


class ActivationCache(ResidStacks):
    """name -> tensor, in the order the forward pass produced them."""

    def __init__(
        self,
        store: dict[str, torch.Tensor],
        n_layer: int,
        batched: bool = False,
        str_tokens: list[str] | None = None,
        model: GPT | None = None,
    ) -> None:
        self._store = store  # as recorded, with the batch dimension; dropped on access if single
        self.n_layer = n_layer
        self.batched = batched
        self.str_tokens = str_tokens
        self.model = model  # for its LayerNorm and unembedding weights (stacks.py); may be None

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            tensor = self._store[name]
        except KeyError:
            raise KeyError(
                f"{name!r} is not in this cache; it holds {len(self._store)} names "
                f"(e.g. {', '.join(list(self._store)[:3])})"
            ) from None
        return tensor if self.batched else tensor[0]

    def __contains__(self, name: object) -> bool:
        return name in self._store

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    @property
    def names(self) -> list[str]:
        return list(self._store)

    def keys(self) -> KeysView[str]:
        return KeysView(self)  # type: ignore[arg-type]

    def values(self) -> ValuesView[torch.Tensor]:
        """The tensors as cache[name] gives them (no batch dimension for ids of shape (T,))."""
        return ValuesView(self)  # type: ignore[arg-type]

    def items(self) -> ItemsView[str, torch.Tensor]:
        return ItemsView(self)  # type: ignore[arg-type]

    def numpy(self, name: str) -> np.ndarray:
        """The activation as a float32 numpy array (for charts)."""
        return self[name].float().cpu().numpy()

    def resid_stack(self) -> torch.Tensor:
        """The residual stream before each block and after the last: (n_layer + 1, [B,] T, D)."""
        parts = [self[f"blocks.{i}.hook_resid_pre"] for i in range(self.n_layer)]
        parts.append(self[f"blocks.{self.n_layer - 1}.hook_resid_post"])
        return torch.stack(parts)

    def layer_outputs(self) -> list[tuple[str, torch.Tensor]]:
        """What each component wrote into the residual stream, in order: embed, pos, attn/mlp per layer."""
        out = [("embed", self["hook_embed"])]
        if "hook_pos_embed" in self:
            out.append(("pos", self["hook_pos_embed"]))
        for i in range(self.n_layer):
            out.append((f"attn {i}", self[f"blocks.{i}.hook_attn_out"]))
            if f"blocks.{i}.hook_mlp_out" in self:
                out.append((f"mlp {i}", self[f"blocks.{i}.hook_mlp_out"]))
        return out
