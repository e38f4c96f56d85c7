"""A small GPT in plain PyTorch with a named hook point on every interesting tensor.

Shapes in comments: B batch, T tokens, D d_model, H heads, E d_head (D / H), M d_mlp, V vocab.
Hook names are attribute paths and match TransformerLens (docs/ARCHITECTURE.md, Hook names), so
`blocks.0.attn.hook_pattern` is `model.blocks[0].attn.hook_pattern`. The variants of config.py
keep them: a model without normalization has no ln hooks, RMSNorm no hook_mean, grouped-query
attention records K and V per key-value head (B, T, H_kv, E), RoPE adds `attn.hook_rot_q` and
`attn.hook_rot_k` (q and k after rotation), a gated MLP adds `mlp.hook_pre_linear` (W_in x).

When nothing records or changes the attention scores or pattern, attention takes the fused path
(`F.scaled_dot_product_attention`); otherwise it computes the pattern explicitly. LayerNorm likewise
uses `F.layer_norm` unless its mean/scale/normalized hooks are wanted. So a model that is only being
trained pays for nothing it does not use.

Not here: recording machinery (hooks.py), sampling and generation (sampling.py), saving (checkpoint.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.model.cache import ActivationCache
from viz_model.model.config import GPTConfig
from viz_model.model.hooks import (
    HookFn,
    HookPoint,
    NameOrFilter,
    active_context,
    expand,
    group,
    hook_context,
    select,
)
from viz_model.model.lora import effective_weight
from viz_model.model.mask import attention_mask
from viz_model.model.norms import LayerNorm, RMSNorm, apply_norm, make_norm
from viz_model.model.positions import alibi_bias, rotate, sinusoidal_positions

__all__ = ["GPT", "KVCache", "LayerNorm", "RMSNorm", "sinusoidal_positions"]


class KVCache:
    """Keys and values of the tokens seen so far, one (B, T_past, H_kv, E) pair per layer: with
    grouped-query attention H_kv < H, which is all it saves."""

    def __init__(self, n_layer: int) -> None:
        self.k: list[torch.Tensor | None] = [None] * n_layer
        self.v: list[torch.Tensor | None] = [None] * n_layer

    @property
    def length(self) -> int:
        return 0 if self.k[0] is None else self.k[0].shape[1]

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        if self.k[layer] is not None:
            k = torch.cat([self.k[layer], k], dim=1)
            v = torch.cat([self.v[layer], v], dim=1)
        self.k[layer], self.v[layer] = k, v
        return k, v


class Attention(nn.Module):
    """Multi-head causal self-attention: pattern = softmax(q k^T / sqrt(E) + mask).

    With n_kv_heads < n_head (grouped-query attention) each group of H / H_kv query heads reads
    one key and value head; RoPE turns q and k by position first; ALiBi adds its distance
    penalty to the scores (positions.py)."""

    def __init__(self, cfg: GPTConfig, layer: int) -> None:
        super().__init__()
        self.layer, self.n_head, self.d_head = layer, cfg.n_head, cfg.d_head
        self.n_kv, self.pos = cfg.n_kv_heads, cfg.pos
        self.dropout = cfg.dropout
        self.causal = cfg.causal  # False: no mask, each query sees the whole window (one lesson)
        # q for every head, then k and v for each key-value head: (H + 2 H_kv) E outputs.
        n_out = (cfg.n_head + 2 * cfg.n_kv_heads) * cfg.d_head
        self.qkv = nn.Linear(cfg.d_model, n_out, bias=cfg.bias)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        self.hook_q = HookPoint()  # (B, T, H, E)
        self.hook_k = HookPoint()  # (B, T, H_kv, E)
        self.hook_v = HookPoint()  # (B, T, H_kv, E)
        if cfg.pos == "rope":
            self.hook_rot_q = HookPoint()  # (B, T, H, E), q turned by its position
            self.hook_rot_k = HookPoint()  # (B, T, H_kv, E)
        self.hook_attn_scores = HookPoint()  # (B, H, T, T), masked, before softmax
        self.hook_pattern = HookPoint()  # (B, H, T, T)
        self.hook_z = HookPoint()  # (B, T, H, E), the pattern-weighted sum of v
        self.hook_result = HookPoint()  # (B, T, H, D), each head's write into the residual

    def forward(self, x: torch.Tensor, kv: KVCache | None = None, past: int = 0) -> torch.Tensor:
        B, T, D = x.shape
        H, G, E = self.n_head, self.n_kv, self.d_head
        qkv = self.qkv(x)
        # Slicing, not split: a hook may edit q, k or v in place, which split's views refuse.
        q = self.hook_q(qkv[..., : H * E].view(B, T, H, E))
        k = self.hook_k(qkv[..., H * E : (H + G) * E].view(B, T, G, E))
        v = self.hook_v(qkv[..., (H + G) * E :].view(B, T, G, E))
        if self.pos == "rope":
            q, k = self.hook_rot_q(rotate(q, past)), self.hook_rot_k(rotate(k, past))
        if kv is not None:
            k, v = kv.update(self.layer, k, v)  # (B, past + T, H_kv, E)
        if G != H:  # each key-value head serves H / H_kv query heads, in order
            k, v = k.repeat_interleave(H // G, dim=2), v.repeat_interleave(H // G, dim=2)
        ctx = active_context()
        explicit = ctx is not None and (
            ctx.wants(self.hook_attn_scores.name) or ctx.wants(self.hook_pattern.name)
        )
        z = self._explicit(q, k, v, past) if explicit else self._fused(q, k, v, past)
        z = self.hook_z(z)  # (B, T, H, E)
        if ctx is not None and ctx.wants(self.hook_result.name):
            # the weight applied (with LoRA attached: W + (alpha / r) B A, lora.py)
            w = effective_weight(self.out).view(D, H, E).permute(1, 2, 0)  # (H, E, D)
            result = (z.transpose(1, 2) @ w).transpose(1, 2)  # (B, H, T, E) @ (H, E, D)
            result = self.hook_result(result)  # (B, T, H, D)
            out = result.sum(dim=2)
            if self.out.bias is not None:
                out = out + self.out.bias
        else:
            out = self.out(z.reshape(B, T, D))
        return self.drop(out)

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def _causal_mask(T: int, past: int, device: torch.device) -> torch.Tensor:
        """(T, past + T) bool, True where query i (at position past + i) may see key j.

        Cached per shape: it is built once, never written to, and saves ops on every call."""
        with torch.inference_mode(False):  # a normal tensor, usable later by autograd too
            return torch.from_numpy(attention_mask(True, T, past)).to(device)

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def _hidden(T: int, past: int, device: torch.device) -> torch.Tensor:
        """The complement of _causal_mask: True where a key is in the query's future."""
        with torch.inference_mode(False):
            return ~Attention._causal_mask(T, past, device)

    def _bias(self, T: int, past: int, device: torch.device) -> torch.Tensor | None:
        """ALiBi's (H, T, past + T) addition to the scores; None for every other scheme."""
        if self.pos != "alibi":
            return None
        return alibi_bias(self.n_head, T, past, self.causal).to(device)

    def _explicit(self, q, k, v, past: int) -> torch.Tensor:
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, E)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.d_head))  # (B, H, T, past + T)
        bias = self._bias(q.shape[2], past, q.device)
        if bias is not None:
            scores = scores + bias
        if self.causal:
            scores = scores.masked_fill(self._hidden(q.shape[2], past, q.device), float("-inf"))
        scores = self.hook_attn_scores(scores)
        pattern = self.hook_pattern(torch.softmax(scores, dim=-1))  # (B, H, T, past + T)
        return (self.drop(pattern) @ v).transpose(1, 2)  # (B, T, H, E)

    def _fused(self, q, k, v, past: int) -> torch.Tensor:
        T = q.shape[1]
        causal = self.causal and T > 1
        mask = self._causal_mask(T, past, q.device) if causal and past > 0 else None
        bias = self._bias(T, past, q.device)
        if bias is not None:  # a float mask: the penalty, and -inf where the future is hidden
            hidden = self._hidden(T, past, q.device) if causal else None
            mask = bias if hidden is None else bias.masked_fill(hidden, float("-inf"))
            causal = False
        z = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=causal and past == 0,
        )  # (B, H, T, E)
        return z.transpose(1, 2)


# config.ACTS -> the function; GPT-2's weights were trained with the tanh approximation.
ACTIVATIONS = {
    "gelu": F.gelu,
    "relu": F.relu,
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
    "silu": F.silu,
}


class MLP(nn.Module):
    """Two linear maps with a nonlinearity between: out = W_out act(W_in x + b_in) + b_out.

    Gated (config.mlp = "gated"; SwiGLU with act = "silu", as Llama): a third map W_gate decides
    how much of each neuron passes, out = W_out (act(W_gate x) * (W_in x)). hook_pre is then the
    gate's input W_gate x (what the nonlinearity reads, as TransformerLens names it) and
    hook_pre_linear is W_in x."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.gated = cfg.mlp == "gated"
        if self.gated:
            self.fc_gate = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.bias)
            self.hook_pre_linear = HookPoint()  # (B, T, M)
        self.fc_in = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.bias)
        self.hook_pre = HookPoint()  # (B, T, M)
        self.hook_post = HookPoint()  # (B, T, M)
        self.fc_out = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.bias)
        self.act = ACTIVATIONS[cfg.act]
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:
            gate = self.act(self.hook_pre(self.fc_gate(x)))
            post = self.hook_post(gate * self.hook_pre_linear(self.fc_in(x)))
        else:
            post = self.hook_post(self.act(self.hook_pre(self.fc_in(x))))
        return self.drop(self.fc_out(post))


class Block(nn.Module):
    """One transformer block. Pre-LN: x + attn(ln1(x)), then + mlp(ln2(.)).
    Post-LN (the 2017 original): ln1(x + attn(x)), then ln2(. + mlp(.)).
    ln1 and ln2 are LayerNorms, RMSNorms, or absent (config.norm_kind). Without residual
    connections (config.residual = False) each sublayer's output replaces the stream: attn(ln1(x)),
    then mlp(ln2(.)), and nothing carries x past them."""

    def __init__(self, cfg: GPTConfig, layer: int) -> None:
        super().__init__()
        self.pre_norm, self.attn_only = cfg.norm == "pre", cfg.attn_only
        self.residual = cfg.residual
        self.hook_resid_pre = HookPoint()  # (B, T, D)
        self.ln1 = make_norm(cfg.norm_kind, cfg.d_model, cfg.bias)
        self.attn = Attention(cfg, layer)
        self.hook_attn_out = HookPoint()  # (B, T, D)
        if not cfg.attn_only:
            self.hook_resid_mid = HookPoint()  # (B, T, D)
            self.ln2 = make_norm(cfg.norm_kind, cfg.d_model, cfg.bias)
            self.mlp = MLP(cfg)
            self.hook_mlp_out = HookPoint()  # (B, T, D)
        self.hook_resid_post = HookPoint()  # (B, T, D)

    def _add(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """The residual connection: x + out, or out alone when the model has none."""
        return x + out if self.residual else out

    def forward(self, x: torch.Tensor, kv: KVCache | None = None, past: int = 0) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        if self.pre_norm:
            x = self._add(x, self.hook_attn_out(self.attn(apply_norm(self.ln1, x), kv, past)))
            if self.attn_only:
                return self.hook_resid_post(x)
            x = self.hook_resid_mid(x)
            out = self.hook_mlp_out(self.mlp(apply_norm(self.ln2, x)))
            return self.hook_resid_post(self._add(x, out))
        x = apply_norm(self.ln1, self._add(x, self.hook_attn_out(self.attn(x, kv, past))))
        if self.attn_only:
            return self.hook_resid_post(x)
        x = self.hook_resid_mid(x)
        out = self.hook_mlp_out(self.mlp(x))
        return self.hook_resid_post(apply_norm(self.ln2, self._add(x, out)))


class Unembed(nn.Module):
    """Logits = x W_U. With tied embeddings W_U is the token embedding matrix transposed."""

    def __init__(self, cfg: GPTConfig, embed: nn.Embedding) -> None:
        super().__init__()
        # A list hides the shared embedding from state_dict, so tied weights are stored once.
        self._tied = [embed] if cfg.tie_embeddings else []
        if not cfg.tie_embeddings:
            self.weight = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))  # (V, D)
        self.hook_out = HookPoint()  # (B, T, V)

    @property
    def W_U(self) -> torch.Tensor:
        """(D, V)"""
        return (self._tied[0].weight if self._tied else self.weight).T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self._tied[0].weight if self._tied else self.weight
        return self.hook_out(F.linear(x, w))


class GPT(nn.Module):
    """Token (+ position) embeddings, n_layer blocks, a final norm (pre-LN only), unembedding."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.hook_embed = HookPoint()  # (B, T, D)
        if cfg.pos == "learned":
            self.pos_embed = nn.Embedding(cfg.n_ctx, cfg.d_model)
        elif cfg.pos == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_positions(cfg.n_ctx, cfg.d_model), False)
        if self.adds_positions:
            self.hook_pos_embed = HookPoint()  # (B, T, D)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        # Post-LN blocks already end in a LayerNorm, so only pre-LN needs a final one.
        final = cfg.norm_kind if cfg.norm == "pre" else "none"
        self.ln_final = make_norm(final, cfg.d_model, cfg.bias)
        self.unembed = Unembed(cfg, self.embed)
        for name, module in self.named_modules():
            if isinstance(module, HookPoint):
                module.name = name
        self._hook_names = [n for n, m in self.named_modules() if isinstance(m, HookPoint)]
        self.apply(self._init_weights)
        if not cfg.tie_embeddings:
            nn.init.normal_(self.unembed.weight, std=0.02)
        for name, p in self.named_parameters():  # GPT-2: scale the residual projections
            if name.endswith(("attn.out.weight", "mlp.fc_out.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    # ---- the forward pass ---------------------------------------------------------------------

    def forward(self, ids: torch.Tensor, kv_cache: KVCache | None = None) -> torch.Tensor:
        """Logits for every position: ids (B, T) -> (B, T, V), or (T,) -> (T, V)."""
        if ids.dim() == 1:
            return self.forward(ids[None], kv_cache)[0]
        B, T = ids.shape
        past = 0 if kv_cache is None else kv_cache.length
        if past + T > self.cfg.max_len:
            raise ValueError(
                f"{past + T} tokens do not fit the model's context of {self.cfg.max_len}; "
                "crop the input first"
            )
        x = self.hook_embed(self.embed(ids))  # (B, T, D)
        if self.adds_positions:
            x = x + self.hook_pos_embed(self.position_embeddings(past, T).expand(B, T, -1))
        x = self.drop(x)
        for block in self.blocks:
            x = block(x, kv_cache, past)
        return self.unembed(self.final_norm(x))  # (B, T, V)

    @property
    def adds_positions(self) -> bool:
        """Whether positions are added to the embeddings (learned, sinusoidal), rather than
        given inside attention (RoPE, ALiBi) or not at all."""
        return self.cfg.adds_positions

    def position_embeddings(self, start: int, T: int) -> torch.Tensor:
        """Rows start..start+T of the position table, (1, T, D)."""
        if self.cfg.pos == "learned":
            idx = torch.arange(start, start + T, device=self.embed.weight.device)
            return self.pos_embed(idx)[None]
        return self.pos_table[start : start + T][None].clone()  # a hook may edit it in place

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The final LayerNorm or RMSNorm (pre-LN models); the identity for post-LN models and
        models without normalization."""
        return apply_norm(self.ln_final, x)

    # ---- hooks --------------------------------------------------------------------------------

    def hook_names(self) -> list[str]:
        """Every hook point's name, in the order the forward pass reaches them."""
        return list(self._hook_names)

    def check_names(self, names: NameOrFilter | Iterable[str] | None) -> list[str]:
        """The hook names `names` picks (all for None, one for a string, those a predicate
        accepts), or a KeyError naming the first one this model does not have."""
        return select(self._hook_names, names)

    def run_with_cache(
        self,
        ids: torch.Tensor,
        names: NameOrFilter | Iterable[str] | None = None,
        hooks: Iterable[tuple[NameOrFilter, HookFn]] = (),
        *,
        names_filter: NameOrFilter | Iterable[str] | None = None,
        remove_batch_dim: bool = False,
    ) -> tuple[torch.Tensor, ActivationCache]:
        """Run once, recording the named activations (all when names is None), without grad.

        `names` is a list of hook names, one name, or a predicate on names; `names_filter` is
        TransformerLens's name for it. `hooks` are (name or predicate, fn) pairs applied first.
        Returns the logits (shaped like forward's) and an ActivationCache whose tensors have a
        batch dimension exactly when ids has one, as TransformerLens's: ids (B, T) give
        (B, T, ...), B = 1 included; ids (T,) give (T, ...). remove_batch_dim=True
        (TransformerLens's flag) drops it from a run of one sequence, (1, T).
        """
        if names is not None and names_filter is not None:
            raise TypeError("give names or names_filter (TransformerLens's name), not both")
        if remove_batch_dim and ids.dim() == 2 and ids.shape[0] != 1:
            raise ValueError(f"remove_batch_dim needs one sequence, got a batch of {ids.shape[0]}")
        record = self.check_names(names if names_filter is None else names_filter)
        single = ids.dim() == 1 or remove_batch_dim
        pairs = expand(hooks, self._hook_names)
        with torch.no_grad(), hook_context(group(pairs), record) as ctx:
            logits = self(ids)
        store = {n: ctx.store[n] for n in record if n in ctx.store}
        return logits, ActivationCache(store, self.cfg.n_layer, batched=not single, model=self)

    def run_with_hooks(
        self, ids: torch.Tensor, fwd_hooks: Iterable[tuple[NameOrFilter, HookFn]] = ()
    ) -> torch.Tensor:
        """Forward with hooks for this call only, as TransformerLens's run_with_hooks: each pair
        is (hook name or predicate on names, fn), fn(activation, hook) returns a replacement or
        None. Gradients flow as in forward (wrap it in torch.no_grad() when none are needed)."""
        with self.intervene(fwd_hooks):
            return self(ids)

    @contextmanager
    def intervene(self, *interventions: Iterable[tuple[NameOrFilter, HookFn]]) -> Iterator[None]:
        """Apply interventions (hooks.ablate_heads, hooks.patch, hooks.custom, or any
        (name or predicate, fn) pairs) to every call in this block, in this thread only:

            with model.intervene(ablate_heads(0, [1]), patch("hook_embed", x)):
                logits = model(ids)
        """
        pairs = expand((pair for group_ in interventions for pair in group_), self._hook_names)
        with hook_context(group(pairs)):
            yield

    # ---- weights by name, for the pages -------------------------------------------------------

    @property
    def W_E(self) -> torch.Tensor:
        """(V, D)"""
        return self.embed.weight

    @property
    def W_U(self) -> torch.Tensor:
        """(D, V)"""
        return self.unembed.W_U

    @property
    def b_U(self) -> torch.Tensor:
        """(V,) beta . W_U: what the final LayerNorm's bias adds to every logit, the unembedding
        bias TransformerLens gets by folding that LayerNorm into it (zeros without one)."""
        ln = self.ln_final
        if ln is None or ln.bias is None:
            return torch.zeros(self.cfg.vocab_size, device=self.W_E.device)
        with torch.no_grad():  # a constant for analysis, not a parameter
            return ln.bias @ self.W_U

    def param_counts(self) -> dict[str, int]:
        """Parameters by component: embed, pos_embed, attn, mlp, layernorm, unembed."""
        counts = dict.fromkeys(("embed", "pos_embed", "attn", "mlp", "layernorm", "unembed"), 0)
        for name, p in self.named_parameters():
            if name.startswith("embed."):
                key = "embed"
            elif name.startswith("pos_embed."):
                key = "pos_embed"
            elif ".attn." in name:
                key = "attn"
            elif ".mlp." in name:
                key = "mlp"
            elif name.startswith("unembed."):
                key = "unembed"
            else:
                key = "layernorm"
            counts[key] += p.numel()
        return counts

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
