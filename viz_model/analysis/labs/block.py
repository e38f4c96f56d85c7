"""One transformer block redone by hand, in the lecture's notation, for every token of a prompt.

A pre-LN block (Jurafsky & Martin's "Transformers" chapter names each step t1..t5 and h):

    t1 = LayerNorm(x)              the token's vector on a standard scale
    t2 = MultiHeadAttention(t1)    what attention brings from the earlier tokens
    t3 = x + t2                    the residual stream half-way through the block (resid_mid)
    t4 = LayerNorm(t3)             t3 on a standard scale, for the MLP to read
    t5 = MLP(t4)                   what the MLP adds
    h  = t3 + t5                   the block's output (resid_post)

`block_walk(model, ids, layer)` recomputes every step from the block's weights in float64 numpy,
for the whole prompt at once: the matrix form Q = t1 W_Q, K, V, the pattern
softmax(Q K^T / sqrt(d_head) + mask) and Z = pattern V per head, with the model's own mask
(viz_model/model/mask.py: causal, or none for a model trained without one). Post-LN blocks and
attention-only blocks are walked too, with their own steps (the lecture's names describe the
pre-LN block), and so are the variants of config.py: RMSNorm or no normalization (the t1 and t4
steps then say so or drop out), no residual connections (t3 = t2, h = t5), a gated MLP,
grouped-query attention (heads of a group share W_K and W_V), RoPE (q and k turned by position
before they meet) and ALiBi (the distance penalty added to the scores).

`circuits(model, layer, head)` gives the head's two D x D matrices, W_QK = W_Q W_K^T (which tokens
it reads from) and W_OV = W_V W_O (what it writes), their singular values and rank, and both maps
read through the vocabulary.

Not here: one query row step by step (analysis/attention.py, which `block_walk` is tested against);
charts (charts/block/walk.py, charts/block/matrices.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.attention import head_W_O
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT
from viz_model.model.mask import hidden_keys
from viz_model.model.norms import Norm, RMSNorm
from viz_model.model.positions import alibi_bias, rope_angles

NORM_LABELS = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}  # config.NORM_KINDS, in formulas


@dataclass(frozen=True)
class Step:
    """One step of the walk: a symbol ("t1"), what it is in words, the formula, (T, D) vectors,
    and the hook that recorded the same tensor (None when the model records no such sum)."""

    symbol: str
    words: str
    formula: str
    vectors: np.ndarray
    hook: str | None

    def norms(self) -> np.ndarray:
        return np.linalg.norm(self.vectors, axis=-1)


@dataclass(frozen=True)
class BlockWalk:
    """The walk of block `layer` over a prompt of T tokens (H heads, E = d_head).

    steps: in forward order, the first is x (resid_pre), the last the block's output.
    q, k, v, z: (H, T, E), per query head (with grouped-query attention the heads of a group show
    the same k and v), q and k turned by position in a RoPE model; scores: (H, T, T)
    q.k / sqrt(E) (+ ALiBi's penalty), -inf where the mask hides a key (above the diagonal in a
    causal model, nowhere without the mask);
    pattern: (H, T, T); head_out: (H, T, D), each head's write z_h W_O[h].
    """

    layer: int
    norm: str
    steps: list[Step]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    pattern: np.ndarray
    z: np.ndarray
    head_out: np.ndarray

    def step(self, symbol: str) -> Step:
        return next(s for s in self.steps if s.symbol == symbol)


def _np(t: torch.Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
    """A parameter as float64 numpy; zeros of `shape` when the model has no such bias."""
    if t is None:
        return np.zeros(shape)
    return t.detach().double().cpu().numpy()


def layer_norm(x: np.ndarray, ln: Norm | None) -> np.ndarray:
    """(x - mu) / sigma * gamma + beta, row by row: (T, D) -> (T, D). An RMSNorm takes no mean
    and adds no beta, x / rms * gamma; no norm (None) leaves x as it is."""
    if ln is None:
        return x
    d = x.shape[-1]
    if isinstance(ln, RMSNorm):
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + ln.eps) * _np(ln.weight, (d,))
    centred = x - x.mean(-1, keepdims=True)
    sigma = np.sqrt((centred**2).mean(-1, keepdims=True) + ln.eps)
    return centred / sigma * _np(ln.weight, (d,)) + _np(ln.bias, (d,))


def norm_label(cfg: GPTConfig) -> str:
    """How a formula names the block's normalization: "LayerNorm", "RMSNorm" ("" for none)."""
    return NORM_LABELS.get(cfg.norm_kind, "")


def head_weights(model: GPT, layer: int) -> dict[str, np.ndarray]:
    """Per-head weights of one attention layer: W_Q, W_K, W_V (H, D, E), b_Q, b_K, b_V (H, E),
    W_O (H, E, D), b_O (D,). The fused qkv layer's output splits as (H + 2 H_kv, E): the query
    heads, then the key heads, then the value heads; with grouped-query attention (H_kv < H)
    each key and value head is repeated for the H / H_kv query heads of its group."""
    cfg, attn = model.cfg, model.blocks[layer].attn
    H, G, E, D = cfg.n_head, cfg.n_kv_heads, cfg.d_head, cfg.d_model
    w = _np(attn.qkv.weight, ()).reshape(H + 2 * G, E, D).transpose(0, 2, 1)  # (H + 2G, D, E)
    b = _np(attn.qkv.bias, ((H + 2 * G) * E,)).reshape(H + 2 * G, E)
    with torch.no_grad():
        W_O = _np(head_W_O(model, layer), ())
    out = {"W_O": W_O, "b_O": _np(attn.out.bias, (D,)), "W_Q": w[:H], "b_Q": b[:H]}
    for name, rows in (("K", slice(H, H + G)), ("V", slice(H + G, H + 2 * G))):
        out[f"W_{name}"] = np.repeat(w[rows], H // G, axis=0)  # (H, D, E)
        out[f"b_{name}"] = np.repeat(b[rows], H // G, axis=0)  # (H, E)
    return out


def attention_matrices(
    t1: np.ndarray, w: dict[str, np.ndarray], causal: GPTConfig | bool
) -> dict[str, np.ndarray]:
    """Multi-head attention on a whole prompt at once, as matrices, under the model's mask.

    t1 (T, D) -> q, k, v, z (H, T, E); scores, pattern (H, T, T); head_out (H, T, D); out (T, D).
    causal: the model's config (or its `causal` flag); without a causal mask nothing is hidden.
    Given the config, its positions count too: RoPE turns q and k, ALiBi adds its penalty.
    """
    q = np.einsum("td,hde->hte", t1, w["W_Q"]) + w["b_Q"][:, None]
    k = np.einsum("td,hde->hte", t1, w["W_K"]) + w["b_K"][:, None]
    v = np.einsum("td,hde->hte", t1, w["W_V"]) + w["b_V"][:, None]
    T, E = t1.shape[0], q.shape[-1]
    pos = causal.pos if isinstance(causal, GPTConfig) else "learned"
    if pos == "rope":
        q, k = rope(q), rope(k)
    raw = q @ k.transpose(0, 2, 1) / math.sqrt(E)
    if pos == "alibi":
        raw = raw + alibi_bias(q.shape[0], T, 0, bool(causal.causal)).double().numpy()
    hidden = hidden_keys(causal, T)  # a causal model hides each key after its query
    scores = np.where(hidden, -np.inf, raw)
    shifted = np.exp(scores - scores.max(-1, keepdims=True))
    pattern = shifted / shifted.sum(-1, keepdims=True)
    z = pattern @ v  # (H, T, E)
    head_out = z @ w["W_O"]  # (H, T, E) @ (H, E, D)
    out = head_out.sum(0) + w["b_O"]
    return dict(q=q, k=k, v=v, scores=scores, pattern=pattern, z=z, head_out=head_out, out=out)


def rope(x: np.ndarray) -> np.ndarray:
    """(H, T, E) vectors at positions 0..T-1 turned as RoPE turns them: each pair (a, b) of
    numbers e and e + E/2 becomes (a cos - b sin, b cos + a sin) (positions.py)."""
    T, E = x.shape[1], x.shape[2]
    cos, sin = (t[:, 0].double().numpy() for t in rope_angles(0, T, E))  # (T, E) each
    a, b = x[..., : E // 2], x[..., E // 2 :]
    return x * cos + np.concatenate([-b, a], axis=-1) * sin


def activation(pre: np.ndarray, act: str) -> np.ndarray:
    """The nonlinearity config.ACTS names, in numpy."""
    if act == "gelu":  # the exact GELU, as F.gelu: x * Phi(x)
        erf = np.vectorize(math.erf)
        return 0.5 * pre * (1.0 + erf(pre / math.sqrt(2.0)))
    if act == "gelu_tanh":
        inner = math.sqrt(2.0 / math.pi) * (pre + 0.044715 * pre**3)
        return 0.5 * pre * (1.0 + np.tanh(inner))
    if act == "silu":
        return pre / (1.0 + np.exp(-pre))
    return np.maximum(pre, 0.0)


def mlp(x: np.ndarray, model: GPT, layer: int) -> np.ndarray:
    """W_out act(W_in x + b_in) + b_out, row by row: (T, D) -> (T, D); gated:
    W_out (act(W_gate x + b_gate) * (W_in x + b_in)) + b_out."""
    m = model.blocks[layer].mlp

    def linear(fc: torch.nn.Linear, rows: np.ndarray) -> np.ndarray:
        return rows @ _np(fc.weight, ()).T + _np(fc.bias, (fc.out_features,))

    if m.gated:
        post = activation(linear(m.fc_gate, x), model.cfg.act) * linear(m.fc_in, x)
    else:
        post = activation(linear(m.fc_in, x), model.cfg.act)
    return linear(m.fc_out, post)


def resid_pre(model: GPT, ids: list[int] | torch.Tensor, layer: int) -> np.ndarray:
    """The residual stream entering block `layer`, (T, D), as the model recorded it."""
    name = f"blocks.{layer}.hook_resid_pre"
    _, cache = model.run_with_cache(torch.as_tensor(ids, dtype=torch.long), names=[name])
    return cache[name].double().cpu().numpy()


def block_walk(model: GPT, ids: list[int] | torch.Tensor, layer: int) -> BlockWalk:
    """Every step of block `layer` on a prompt, recomputed by hand from x = resid_pre."""
    x = resid_pre(model, ids, layer)
    cfg, b = model.cfg, f"blocks.{layer}"
    steps = [Step("x", "the token's vector entering the block", "x", x, f"{b}.hook_resid_pre")]
    walk = _pre_norm if cfg.norm == "pre" else _post_norm
    a = walk(model, layer, x, steps)
    if cfg.attn_only:  # the half-way residual is the output
        last = steps[-1]
        steps[-1] = Step("h", "the block's output", last.formula, last.vectors, last.hook)
    parts = {n: a[n] for n in ("q", "k", "v", "scores", "pattern", "z", "head_out")}
    return BlockWalk(layer, cfg.norm, steps, **parts)


def _add(cfg: GPTConfig, x: np.ndarray, out: np.ndarray, names: tuple[str, str]) -> tuple:
    """The residual connection as a step's (vectors, formula): x + out, or out alone without one."""
    if cfg.residual:
        return x + out, f"{names[0]} + {names[1]}"
    return out, f"{names[1]} (no residual connection: {names[0]} is not added)"


def _pre_norm(model: GPT, layer: int, x: np.ndarray, steps: list[Step]) -> dict:
    """x -> t1 = Norm(x) -> t2 = attention -> t3 = x + t2 -> t4 = Norm(t3) -> t5 = MLP -> h."""
    block, cfg, b = model.blocks[layer], model.cfg, f"blocks.{layer}"
    label = norm_label(cfg)
    mid = f"{b}.hook_resid_post" if cfg.attn_only else f"{b}.hook_resid_mid"
    t1 = layer_norm(x, block.ln1)
    if label:
        steps.append(Step("t1", "x on a standard scale", f"{label}(x)", t1, None))
    a = attention_matrices(t1, head_weights(model, layer), cfg)
    reads = "t1" if label else "x"
    steps.append(
        Step(
            "t2",
            "what attention brings",
            f"MultiHeadAttention({reads})",
            a["out"],
            f"{b}.hook_attn_out",
        )
    )
    t3, formula = _add(cfg, x, a["out"], ("x", "t2"))
    steps.append(Step("t3", "the residual half-way", formula, t3, mid))
    if cfg.attn_only:
        return a
    t4 = layer_norm(t3, block.ln2)
    if label:
        steps.append(Step("t4", "t3 on a standard scale", f"{label}(t3)", t4, None))
    t5 = mlp(t4, model, layer)
    reads = "t4" if label else "t3"
    steps.append(Step("t5", "what the MLP adds", f"MLP({reads})", t5, f"{b}.hook_mlp_out"))
    h, formula = _add(cfg, t3, t5, ("t3", "t5"))
    steps.append(Step("h", "the block's output", formula, h, f"{b}.hook_resid_post"))
    return a


def _post_norm(model: GPT, layer: int, x: np.ndarray, steps: list[Step]) -> dict:
    """Post-LN: the norm sits on the stream, after each add: t3 = Norm(x + a), h = Norm(t3 + m)."""
    block, cfg, b = model.blocks[layer], model.cfg, f"blocks.{layer}"
    label = norm_label(cfg)
    mid = f"{b}.hook_resid_post" if cfg.attn_only else f"{b}.hook_resid_mid"
    a = attention_matrices(x, head_weights(model, layer), cfg)
    steps.append(
        Step("a", "what attention brings", "MultiHeadAttention(x)", a["out"], f"{b}.hook_attn_out")
    )
    s1, formula = _add(cfg, x, a["out"], ("x", "a"))
    if label and cfg.residual:
        steps.append(Step("x + a", "the sum before the norm", formula, s1, None))
    words = "the sum on a standard scale" if label else "the residual half-way"
    t3 = layer_norm(s1, block.ln1)
    steps.append(Step("t3", words, f"{label}({formula})" if label else formula, t3, mid))
    if cfg.attn_only:
        return a
    m = mlp(t3, model, layer)
    steps.append(Step("m", "what the MLP adds", "MLP(t3)", m, f"{b}.hook_mlp_out"))
    s2, formula = _add(cfg, t3, m, ("t3", "m"))
    if label and cfg.residual:
        steps.append(Step("t3 + m", "the sum before the norm", formula, s2, None))
    h = layer_norm(s2, block.ln2)
    steps.append(
        Step(
            "h",
            "the block's output",
            f"{label}({formula})" if label else formula,
            h,
            f"{b}.hook_resid_post",
        )
    )
    return a


def recorded_differences(
    model: GPT, ids: list[int] | torch.Tensor, walk: BlockWalk
) -> dict[str, float]:
    """Largest |by hand - recorded| of each step that a hook records too, by symbol: the check a
    student can read that the walk-through is the model's own computation."""
    hooks = [s.hook for s in walk.steps if s.hook is not None]
    _, cache = model.run_with_cache(torch.as_tensor(ids, dtype=torch.long), names=hooks)
    return {
        s.symbol: float(np.abs(s.vectors - cache[s.hook].double().cpu().numpy()).max())
        for s in walk.steps
        if s.hook is not None
    }


# ---- a head's two circuits ------------------------------------------------------------------


@dataclass(frozen=True)
class Circuits:
    """One head's QK and OV circuits (D x D each) and what they do to tokens (V x V each).

    W_QK = W_Q W_K^T: the score of query vector a for key vector b is a W_QK b^T / sqrt(E) (plus
    bias terms). W_OV = W_V W_O: a key vector b, fully attended to, writes b W_OV (plus b_V W_O).
    Each is a product through the head's E dimensions, so its rank is at most E.
    qk_singular, ov_singular: (D,) singular values; qk_rank, ov_rank: numerical ranks.
    tokens (V, D): the vocabulary as the head reads it on the direct path (the token's embedding
    through the block's first LayerNorm in a pre-LN model, no position, no earlier layer).
    qk_tokens (n, n): tokens @ W_QK @ tokens^T / sqrt(E), query token down, key token across;
    ov_tokens (n, n): tokens @ W_OV @ W_U, source token down, pushed-up output token across;
    token_ids (n,): the vocabulary ids of those rows and columns (all of a small vocabulary).
    """

    W_QK: np.ndarray
    W_OV: np.ndarray
    qk_singular: np.ndarray
    ov_singular: np.ndarray
    qk_rank: int
    ov_rank: int
    qk_tokens: np.ndarray
    ov_tokens: np.ndarray
    token_ids: list[int]


def direct_tokens(model: GPT, layer: int) -> np.ndarray:
    """(V, D): each token's embedding as block `layer`'s attention would read it if the residual
    held that embedding alone: through ln1 in a pre-LN model, as it is in a post-LN one."""
    W_E = _np(model.W_E, ())
    return layer_norm(W_E, model.blocks[layer].ln1) if model.cfg.norm == "pre" else W_E


MAX_VOCAB_MAP = 1024  # V x V token maps past this grow too large (GPT-2: 50,257^2 numbers)


def map_tokens(vocab_size: int, extra: list[int] = ()) -> list[int]:
    """The token ids a V x V map covers: all of a small vocabulary; of a large one the first
    MAX_VOCAB_MAP ids and `extra` (e.g. the prompt's tokens), sorted."""
    if vocab_size <= MAX_VOCAB_MAP:
        return list(range(vocab_size))
    return sorted(set(range(MAX_VOCAB_MAP)) | {int(t) for t in extra})


def circuits(model: GPT, layer: int, head: int, tokens: list[int] | None = None) -> Circuits:
    """The QK and OV circuits of one head, their ranks, and both read through the vocabulary:
    token maps over `tokens` (default: map_tokens of the vocabulary), rows and columns alike."""
    w = head_weights(model, layer)
    W_QK = w["W_Q"][head] @ w["W_K"][head].T  # (D, E) @ (E, D)
    W_OV = w["W_V"][head] @ w["W_O"][head]  # (D, E) @ (E, D)
    qk_s, ov_s = np.linalg.svd(W_QK, compute_uv=False), np.linalg.svd(W_OV, compute_uv=False)
    tokens = map_tokens(model.cfg.vocab_size) if tokens is None else list(tokens)
    X = direct_tokens(model, layer)[tokens]
    E = w["W_Q"].shape[-1]
    return Circuits(
        W_QK=W_QK,
        W_OV=W_OV,
        qk_singular=qk_s,
        ov_singular=ov_s,
        qk_rank=int(np.linalg.matrix_rank(W_QK)),
        ov_rank=int(np.linalg.matrix_rank(W_OV)),
        qk_tokens=X @ W_QK @ X.T / math.sqrt(E),
        ov_tokens=X @ W_OV @ _np(model.W_U, ())[:, tokens],
        token_ids=tokens,
    )


def top_pairs(
    table: np.ndarray, n: int = 10, centre_rows: bool = True
) -> list[tuple[int, int, float]]:
    """The n largest entries of a V x V token map as (row token, column token, value), largest
    first. With centre_rows, each row's mean is subtracted first: a softmax over keys (or over
    output tokens) ignores what a row adds to every entry, so only the differences matter."""
    t = table - table.mean(1, keepdims=True) if centre_rows else table
    flat = np.argsort(t, axis=None)[::-1][:n]
    rows, cols = np.unravel_index(flat, t.shape)
    return [(int(r), int(c), float(t[r, c])) for r, c in zip(rows, cols, strict=True)]


def row_top(table: np.ndarray, rows: list[int], n: int = 3) -> dict[int, list[tuple[int, float]]]:
    """For each chosen row token, its n largest columns (row mean subtracted) and their values."""
    out = {}
    for r in rows:
        centred = table[r] - table[r].mean()
        best = np.argsort(centred)[::-1][:n]
        out[r] = [(int(c), float(centred[c])) for c in best]
    return out
