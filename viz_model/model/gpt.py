"""A small GPT in plain PyTorch with a named hook point on every interesting tensor.

Shapes in comments: B batch, T tokens, D d_model, H heads, E d_head (D / H), M d_mlp, V vocab.
Hook names are attribute paths and match TransformerLens (DESIGN.md section 3), so
`blocks.0.attn.hook_pattern` is `model.blocks[0].attn.hook_pattern`.

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
from viz_model.model.mask import attention_mask


class KVCache:
    """Keys and values of the tokens seen so far, one (B, T_past, H, E) pair per layer."""

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


class LayerNorm(nn.Module):
    """LayerNorm whose mean, scale (sigma) and normalized vector can be recorded.

    y = (x - mu) / sigma * gamma + beta, with sigma = sqrt(var(x) + eps).
    """

    def __init__(self, d: int, bias: bool, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None  # beta
        self.hook_mean = HookPoint()  # (B, T, 1)
        self.hook_scale = HookPoint()  # (B, T, 1)
        self.hook_normalized = HookPoint()  # (B, T, D), before gamma and beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx = active_context()
        hooks = (self.hook_mean, self.hook_scale, self.hook_normalized)
        if ctx is None or not any(ctx.wants(h.name) for h in hooks):
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        # Two means rather than torch.var_mean, which is ~10x slower on CPU at these sizes.
        mean = self.hook_mean(x.mean(-1, keepdim=True))
        centred = x - mean
        scale = self.hook_scale(((centred * centred).mean(-1, keepdim=True) + self.eps).sqrt())
        normalized = self.hook_normalized(centred / scale)
        if self.bias is None:
            return normalized * self.weight
        return torch.addcmul(self.bias, normalized, self.weight)


class Attention(nn.Module):
    """Multi-head causal self-attention: pattern = softmax(q k^T / sqrt(E) + mask)."""

    def __init__(self, cfg: GPTConfig, layer: int) -> None:
        super().__init__()
        self.layer, self.n_head, self.d_head = layer, cfg.n_head, cfg.d_head
        self.dropout = cfg.dropout
        self.causal = cfg.causal  # False: no mask, each query sees the whole window (one lesson)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=cfg.bias)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        self.hook_q = HookPoint()  # (B, T, H, E)
        self.hook_k = HookPoint()  # (B, T, H, E)
        self.hook_v = HookPoint()  # (B, T, H, E)
        self.hook_attn_scores = HookPoint()  # (B, H, T, T), masked, before softmax
        self.hook_pattern = HookPoint()  # (B, H, T, T)
        self.hook_z = HookPoint()  # (B, T, H, E), the pattern-weighted sum of v
        self.hook_result = HookPoint()  # (B, T, H, D), each head's write into the residual

    def forward(self, x: torch.Tensor, kv: KVCache | None = None, past: int = 0) -> torch.Tensor:
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_head, self.d_head)
        # Indexing, not unbind: a hook may edit q, k or v in place, which unbind's views refuse.
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)  # (B, T, H, E) each
        if kv is not None:
            k, v = kv.update(self.layer, k, v)  # (B, past + T, H, E)
        ctx = active_context()
        explicit = ctx is not None and (
            ctx.wants(self.hook_attn_scores.name) or ctx.wants(self.hook_pattern.name)
        )
        z = self._explicit(q, k, v, past) if explicit else self._fused(q, k, v, past)
        z = self.hook_z(z)  # (B, T, H, E)
        if ctx is not None and ctx.wants(self.hook_result.name):
            w = self.out.weight.view(D, self.n_head, self.d_head).permute(1, 2, 0)  # (H, E, D)
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

    def _explicit(self, q, k, v, past: int) -> torch.Tensor:
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, E)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.d_head))  # (B, H, T, past + T)
        if self.causal:
            scores = scores.masked_fill(self._hidden(q.shape[2], past, q.device), float("-inf"))
        scores = self.hook_attn_scores(scores)
        pattern = self.hook_pattern(torch.softmax(scores, dim=-1))  # (B, H, T, past + T)
        return (self.drop(pattern) @ v).transpose(1, 2)  # (B, T, H, E)

    def _fused(self, q, k, v, past: int) -> torch.Tensor:
        T = q.shape[1]
        causal = self.causal and T > 1
        mask = self._causal_mask(T, past, q.device) if causal and past > 0 else None
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
}


class MLP(nn.Module):
    """Two linear maps with a nonlinearity between: out = W_out act(W_in x + b_in) + b_out."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.fc_in = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.bias)
        self.hook_pre = HookPoint()  # (B, T, M)
        self.hook_post = HookPoint()  # (B, T, M)
        self.fc_out = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.bias)
        self.act = ACTIVATIONS[cfg.act]
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        post = self.hook_post(self.act(self.hook_pre(self.fc_in(x))))
        return self.drop(self.fc_out(post))


class Block(nn.Module):
    """One transformer block. Pre-LN: x + attn(ln1(x)), then + mlp(ln2(.)).
    Post-LN (the 2017 original): ln1(x + attn(x)), then ln2(. + mlp(.))."""

    def __init__(self, cfg: GPTConfig, layer: int) -> None:
        super().__init__()
        self.pre_norm, self.attn_only = cfg.norm == "pre", cfg.attn_only
        self.hook_resid_pre = HookPoint()  # (B, T, D)
        self.ln1 = LayerNorm(cfg.d_model, cfg.bias)
        self.attn = Attention(cfg, layer)
        self.hook_attn_out = HookPoint()  # (B, T, D)
        if not cfg.attn_only:
            self.hook_resid_mid = HookPoint()  # (B, T, D)
            self.ln2 = LayerNorm(cfg.d_model, cfg.bias)
            self.mlp = MLP(cfg)
            self.hook_mlp_out = HookPoint()  # (B, T, D)
        self.hook_resid_post = HookPoint()  # (B, T, D)

    def forward(self, x: torch.Tensor, kv: KVCache | None = None, past: int = 0) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        if self.pre_norm:
            x = x + self.hook_attn_out(self.attn(self.ln1(x), kv, past))
            if self.attn_only:
                return self.hook_resid_post(x)
            x = self.hook_resid_mid(x)
            return self.hook_resid_post(x + self.hook_mlp_out(self.mlp(self.ln2(x))))
        x = self.ln1(x + self.hook_attn_out(self.attn(x, kv, past)))
        if self.attn_only:
            return self.hook_resid_post(x)
        x = self.hook_resid_mid(x)
        return self.hook_resid_post(self.ln2(x + self.hook_mlp_out(self.mlp(x))))


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


def sinusoidal_positions(n_ctx: int, d_model: int) -> torch.Tensor:
    """PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(p / 10000^(2i/D)); (n_ctx, D)."""
    pos = torch.arange(n_ctx, dtype=torch.float32)[:, None]
    freq = torch.exp(
        -math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model
    )
    pe = torch.zeros(n_ctx, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : d_model // 2]
    return pe


class GPT(nn.Module):
    """Token + position embeddings, n_layer blocks, a final LayerNorm (pre-LN only), unembedding."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.hook_embed = HookPoint()  # (B, T, D)
        if cfg.pos == "learned":
            self.pos_embed = nn.Embedding(cfg.n_ctx, cfg.d_model)
        elif cfg.pos == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_positions(cfg.n_ctx, cfg.d_model), False)
        if cfg.pos != "none":
            self.hook_pos_embed = HookPoint()  # (B, T, D)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        # Post-LN blocks already end in a LayerNorm, so only pre-LN needs a final one.
        self.ln_final = LayerNorm(cfg.d_model, cfg.bias) if cfg.norm == "pre" else None
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
        if past + T > self.cfg.n_ctx:
            raise ValueError(
                f"{past + T} tokens do not fit the model's context of {self.cfg.n_ctx}; "
                "crop the input first"
            )
        x = self.hook_embed(self.embed(ids))  # (B, T, D)
        if self.cfg.pos != "none":
            x = x + self.hook_pos_embed(self.position_embeddings(past, T).expand(B, T, -1))
        x = self.drop(x)
        for block in self.blocks:
            x = block(x, kv_cache, past)
        return self.unembed(self.final_norm(x))  # (B, T, V)

    def position_embeddings(self, start: int, T: int) -> torch.Tensor:
        """Rows start..start+T of the position table, (1, T, D)."""
        if self.cfg.pos == "learned":
            idx = torch.arange(start, start + T, device=self.embed.weight.device)
            return self.pos_embed(idx)[None]
        return self.pos_table[start : start + T][None].clone()  # a hook may edit it in place

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The final LayerNorm (pre-LN models); the identity for post-LN models."""
        return x if self.ln_final is None else self.ln_final(x)

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
    ) -> tuple[torch.Tensor, ActivationCache]:
        """Run once, recording the named activations (all when names is None), without grad.

        `names` is a list of hook names, one name, or a predicate on names; `names_filter` is
        TransformerLens's name for it. `hooks` are (name or predicate, fn) pairs applied first.
        Returns the logits (shaped like forward's) and an ActivationCache whose tensors drop the
        batch dimension when ids is one sequence ((T,) or (1, T)).
        """
        if names is not None and names_filter is not None:
            raise TypeError("give names or names_filter (TransformerLens's name), not both")
        record = self.check_names(names if names_filter is None else names_filter)
        single = ids.dim() == 1 or ids.shape[0] == 1
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
