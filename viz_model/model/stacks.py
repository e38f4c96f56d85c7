"""Stacks of residual-stream pieces from an ActivationCache, under TransformerLens's names.

A mixin for `ActivationCache`, so what a TransformerLens user reaches for first is there:

- `accumulated_resid`: the residual stream before each block and after the last (the logit lens).
- `decompose_resid`: what each component wrote into it: embeddings, each attention and MLP output.
- `stack_head_results`: what each attention head wrote.
- `apply_ln_to_stack`: a LayerNorm applied to such a stack as the linear map the model applied:
  centre each piece, divide by the sigma recorded for the whole residual, multiply by gamma.
- `logit_attrs`: each piece's push on the logit of some tokens (or on a logit difference).

A stack is (pieces, [B,] T, D), or (pieces, [B,] D) when `pos_slice` is an int; the batch dimension
is dropped for a single sequence, as `cache[name]` drops it.

Two differences from TransformerLens, whose models are usually loaded with the LayerNorms folded
into the next weights: `apply_ln_to_stack` multiplies by gamma itself, and leaves out beta, which is
a constant, not any piece's share. The final LayerNorm's beta adds `model.b_U` (beta . W_U) to every
logit, as a folded TransformerLens unembedding's b_U does. And post-LN models (which TransformerLens
does not have) end each block in a LayerNorm, so their outputs do not add up to the residual:
`decompose_resid` refuses them.

Not here: the cache itself (cache.py) and the page-level analyses (analysis/residual.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from viz_model.model.gpt import GPT

# None (every position), an int (one position; drops the axis), a slice or (start, stop[, step]),
# or a list / tensor of positions: the forms TransformerLens's Slice accepts.
PosSlice = int | slice | tuple | Sequence[int] | torch.Tensor | None


def take(x: torch.Tensor, pos_slice: PosSlice, dim: int) -> torch.Tensor:
    """The positions `pos_slice` of x along its token axis `dim` (negative, counted from the end)."""
    if pos_slice is None:
        return x
    if isinstance(pos_slice, int):
        return x.select(dim, pos_slice)
    if isinstance(pos_slice, tuple):
        pos_slice = slice(*pos_slice)
    if isinstance(pos_slice, slice):
        return x[(Ellipsis, pos_slice) + (slice(None),) * (-dim - 1)]
    idx = torch.as_tensor(pos_slice, dtype=torch.long, device=x.device) % x.shape[dim]
    return x.index_select(dim, idx)


class ResidStacks:
    """TransformerLens's residual-stream helpers; the host class provides __getitem__ and these."""

    n_layer: int
    model: GPT | None

    # ---- the residual stream at each layer ---------------------------------------------------

    def accumulated_resid(
        self,
        layer: int | None = None,
        incl_mid: bool = False,
        apply_ln: bool = False,
        pos_slice: PosSlice = None,
        mlp_input: bool = False,
        return_labels: bool = False,
    ):
        """The residual stream read by block 0..layer-1 and then by `layer` ('{l}_pre'), with
        'final_post' (what the unembedding reads) when layer is None, -1 or n_layer.

        incl_mid adds each block's resid_mid ('{l}_mid'; attention-only blocks have none); mlp_input
        ends at the input of block `layer`'s MLP. apply_ln reads every entry through the LayerNorm
        that reads the residual at `layer` (the final one by default), with that LN's recorded sigma.
        """
        layer = self._layer(layer)
        if mlp_input:
            self._check_block_ln(layer, mlp_input)
        parts, labels = [], []
        for i in range(layer + 1):
            if i == self.n_layer:
                parts.append(self._need(f"blocks.{i - 1}.hook_resid_post", "accumulated_resid"))
                labels.append("final_post")
                continue
            parts.append(self._need(f"blocks.{i}.hook_resid_pre", "accumulated_resid"))
            labels.append(f"{i}_pre")
            if (incl_mid and i < layer and not self._attn_only()) or (mlp_input and i == layer):
                parts.append(self._need(f"blocks.{i}.hook_resid_mid", "accumulated_resid"))
                labels.append(f"{i}_mid")
        stack = torch.stack([take(p, pos_slice, -2) for p in parts])  # (n, [B,] T, D)
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, mlp_input=mlp_input, pos_slice=pos_slice)
        return (stack, labels) if return_labels else stack

    def decompose_resid(
        self,
        layer: int | None = None,
        mlp_input: bool = False,
        mode: str = "all",
        apply_ln: bool = False,
        pos_slice: PosSlice = None,
        incl_embeds: bool = True,
        return_labels: bool = False,
    ):
        """What each component wrote into the residual read by `layer` (the unembedding by default):
        'embed', 'pos_embed', then '{l}_attn_out' and '{l}_mlp_out' per block. They sum to it.

        mode 'attn' or 'mlp' keeps only that kind of block output; mlp_input adds block `layer`'s
        attention output, so the pieces sum to what its MLP's LayerNorm reads.
        """
        if mode not in ("all", "attn", "mlp"):
            raise ValueError(f"mode must be 'all', 'attn' or 'mlp', got {mode!r}")
        cfg = self._model("decompose_resid").cfg
        if cfg.norm == "post" and cfg.norm_kind != "none":
            raise ValueError(
                "decompose_resid needs a pre-LN model: a post-LN block ends in a LayerNorm, so "
                "what the components wrote does not add up to the residual stream"
            )
        if not cfg.residual:
            raise ValueError(
                "decompose_resid needs residual connections: without them each block replaces "
                "the stream, so what the components wrote does not add up to it"
            )
        layer = self._layer(layer)
        if mlp_input:
            self._check_block_ln(layer, mlp_input)
        names, labels = [], []
        if incl_embeds:
            names.append("hook_embed")
            labels.append("embed")
            if self._model("decompose_resid").adds_positions:
                names.append("hook_pos_embed")
                labels.append("pos_embed")
        for i in range(layer + (1 if mlp_input else 0)):
            if mode != "mlp":
                names.append(f"blocks.{i}.hook_attn_out")
                labels.append(f"{i}_attn_out")
            if mode != "attn" and i < layer and not self._attn_only():
                names.append(f"blocks.{i}.hook_mlp_out")
                labels.append(f"{i}_mlp_out")
        if not names:
            raise ValueError("these options leave no component to stack")
        stack = torch.stack([take(self._need(n, "decompose_resid"), pos_slice, -2) for n in names])
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, mlp_input=mlp_input, pos_slice=pos_slice)
        return (stack, labels) if return_labels else stack

    def stack_head_results(
        self,
        layer: int | None = -1,
        return_labels: bool = False,
        incl_remainder: bool = False,
        pos_slice: PosSlice = None,
        apply_ln: bool = False,
    ):
        """What each head of blocks 0..layer-1 (all blocks for -1 / None) wrote: (L*H, [B,] T, D),
        labelled 'L{l}H{h}'. A layer's heads plus its output bias sum to its hook_attn_out.

        incl_remainder appends 'remainder', the rest of the residual read by `layer` (embeddings,
        MLPs, biases), so the stack sums to that residual. Needs blocks.{l}.attn.hook_result.
        """
        layer = self._layer(layer)
        parts, labels = [], []
        for i in range(layer):
            result = take(
                self._need(f"blocks.{i}.attn.hook_result", "stack_head_results"), pos_slice, -3
            )
            parts.append(result.movedim(-2, 0))  # ([B,] T, H, D) -> (H, [B,] T, D)
            labels += [f"L{i}H{h}" for h in range(result.shape[-2])]
        if incl_remainder:
            cfg = self._model("stack_head_results").cfg
            if (cfg.norm == "post" and cfg.norm_kind != "none") or not cfg.residual:
                raise ValueError(
                    "incl_remainder needs a pre-LN model with residual connections: otherwise "
                    "the blocks' outputs do not add up to the stream"
                )
            resid = self.accumulated_resid(layer, pos_slice=pos_slice)[-1]
            heads = torch.cat(parts).sum(0) if parts else torch.zeros_like(resid)
            parts.append((resid - heads)[None])
            labels.append("remainder")
        if not parts:
            raise ValueError("layer=0 stacks no heads; pass a later layer or incl_remainder=True")
        stack = torch.cat(parts)
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, pos_slice=pos_slice)
        return (stack, labels) if return_labels else stack

    # ---- through a LayerNorm and the unembedding ---------------------------------------------

    def apply_ln_to_stack(
        self,
        residual_stack: torch.Tensor,
        layer: int | None = None,
        mlp_input: bool = False,
        pos_slice: PosSlice = None,
    ) -> torch.Tensor:
        """Each piece through the LayerNorm that reads the residual at `layer` (None / -1 /
        n_layer: the final one; mlp_input: the block's second), as the model applied it:
        (x - mean(x)) / sigma * gamma with the sigma recorded for the whole residual (an RMSNorm
        takes no mean: x / rms * gamma).

        Linear, so the pieces' images sum to the image of their sum; that is the LayerNorm's output
        minus its beta. A post-LN model has no final LayerNorm, nor a model without
        normalization: the stack comes back unchanged.
        residual_stack: (n, [B,] T, D), already cut to `pos_slice`, which picks the matching sigma.
        """
        model = self._model("apply_ln_to_stack")
        layer = self._layer(layer)
        if layer == self.n_layer:
            if model.ln_final is None:
                return residual_stack
            ln, name = model.ln_final, "ln_final.hook_scale"
        else:
            self._check_block_ln(layer, mlp_input)
            ln_name = "ln2" if mlp_input else "ln1"
            ln, name = getattr(model.blocks[layer], ln_name), f"blocks.{layer}.{ln_name}.hook_scale"
            if ln is None:
                return residual_stack
        sigma = take(self._need(name, "apply_ln_to_stack"), pos_slice, -2)  # ([B,] T, 1)
        with torch.no_grad():
            if model.cfg.norm_kind == "rmsnorm":
                return residual_stack / sigma * ln.weight
            centred = residual_stack - residual_stack.mean(-1, keepdim=True)
            return centred / sigma * ln.weight

    def logit_attrs(
        self,
        residual_stack: torch.Tensor,
        tokens: int | Sequence[int] | torch.Tensor,
        incorrect_tokens: int | Sequence[int] | torch.Tensor | None = None,
        pos_slice: PosSlice = None,
    ) -> torch.Tensor:
        """Each piece's direct push on the logit of `tokens` (minus that of `incorrect_tokens`):
        apply_ln_to_stack(stack) . W_U[:, tokens]. Shape: the stack's without D.

        tokens broadcast against the stack's positions: one id for all, or one per position (T,).
        Over the pieces of decompose_resid() the sum plus model.b_U[tokens] is the logit.
        """
        directions = self._token_rows(tokens)  # (..., D)
        if incorrect_tokens is not None:
            directions = directions - self._token_rows(incorrect_tokens)
        scaled = self.apply_ln_to_stack(residual_stack, None, pos_slice=pos_slice)
        with torch.no_grad():
            return (scaled * directions.to(scaled.dtype)).sum(-1)

    # ---- checks ------------------------------------------------------------------------------

    def _token_rows(self, tokens) -> torch.Tensor:
        """W_U[:, tokens] with the token axes first: (..., D)."""
        w = self._model("logit_attrs").W_U.detach().T  # (V, D)
        ids = torch.as_tensor(tokens, dtype=torch.long, device=w.device)
        if ids.numel() and (ids.min() < 0 or ids.max() >= w.shape[0]):
            raise ValueError(f"token ids must be in 0..{w.shape[0] - 1}, got {ids.tolist()}")
        return w[ids]

    def _layer(self, layer: int | None) -> int:
        """None and -1 mean after the last block (n_layer), as in TransformerLens."""
        layer = self.n_layer if layer is None or layer == -1 else layer
        if not 0 <= layer <= self.n_layer:
            raise ValueError(f"layer must be in 0..{self.n_layer} (or -1 / None), got {layer}")
        return layer

    def _check_block_ln(self, layer: int, mlp_input: bool) -> None:
        """The LayerNorm of block `layer` reads the residual stream as it is (pre-LN only)."""
        cfg = self._model("a LayerNorm inside a block").cfg
        if layer == self.n_layer:
            raise ValueError("mlp_input needs a block's layer (0..n_layer-1), not the final one")
        if cfg.norm == "post":
            raise ValueError(
                "in a post-LN model a block's LayerNorm reads the residual plus the sublayer's "
                "output, not the residual stream itself; only the final readout is available"
            )
        if mlp_input and cfg.attn_only:
            raise ValueError("mlp_input: this attention-only model has no MLP")

    def _attn_only(self) -> bool:
        return self.model is not None and self.model.cfg.attn_only

    def _model(self, who: str) -> GPT:
        if self.model is None:
            raise ValueError(
                f"{who} needs the model's weights, and this cache was built without them; "
                "model.run_with_cache gives it the model (or pass ActivationCache(..., model=model))"
            )
        return self.model

    def _need(self, name: str, who: str) -> torch.Tensor:
        if name not in self:  # type: ignore[operator]
            raise KeyError(
                f"{who} needs {name}, which this cache did not record; run_with_cache(ids) "
                f"records every activation, or add {name!r} to its names="
            )
        return self[name]  # type: ignore[index]
