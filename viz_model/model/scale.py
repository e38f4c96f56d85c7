"""How much of a model the pages look at at once, so a GPT-2-sized model stays usable.

The bundled models (2-6 layers, 4-8 heads, contexts of 64-256) fit every picture whole. GPT-2 small
(12 layers x 12 heads, d_model 768, 50,257 tokens, a context of 1024) does not: a full cache of
its activations on 1024 tokens is about 2.6 GB, and 144 small attention maps are unreadable. So:

- the pages read the first `view_tokens(cfg)` tokens of a prompt: as many as keep one full
  cache of every activation under CACHE_BUDGET (never fewer than MIN_VIEW_TOKENS, never more
  than n_ctx); the bundled models keep their whole context, GPT-2 small gets 128;
- the embedding scatter draws the first MAX_SCATTER_TOKENS ids (a BPE's commonest tokens);
- a page that draws every head draws `grid_layers(cfg)` layers at a time (at most MAX_PANELS
  small maps), and asks the student which layers.

Not here: the caches themselves (ui/cache.py) and the pages' widgets.
"""

from __future__ import annotations

from viz_model.model.config import GPTConfig

CACHE_BUDGET = 192 * 2**20  # bytes of one full cache (float32) of the prompt
MIN_VIEW_TOKENS = 64
MAX_PANELS = 48  # small attention maps in one figure: 4 layers of GPT-2's 12 heads
MAX_SCATTER_TOKENS = 10_000  # points of the embedding scatter (GPT-2 has 50,257 tokens)


def cache_bytes(cfg: GPTConfig, T: int) -> int:
    """Bytes of a float32 cache of every activation on T tokens (ActivationCache, no batch).

    Per layer and token: the residual stream before and after, attn_out and ln1's normalized
    vector (4 D), q, k, v, z (4 D), each head's result (H D), the scores and pattern (2 H T);
    with an MLP also resid_mid, mlp_out, ln2 (3 D) and the neurons before and after (2 M). Then
    the embeddings (2 D), the final LayerNorm (D) and the logits (V).

    >>> round(cache_bytes(GPTConfig(vocab_size=50257, n_ctx=1024, d_model=768, n_layer=12,
    ...     n_head=12), 128) / 2**20)
    183
    """
    D, H, M = cfg.d_model, cfg.n_head, cfg.d_mlp
    mlp = 0 if cfg.attn_only else 3 * D + 2 * M  # resid_mid, mlp_out, ln2; pre and post
    per_layer = 8 * D + H * D + mlp + 2 * H * T
    per_token = cfg.n_layer * per_layer + 3 * D + cfg.vocab_size
    return 4 * T * per_token


def view_tokens(cfg: GPTConfig, budget: int | None = None) -> int:
    """How many tokens of a prompt the pages read: the most whose full cache fits `budget`,
    at least MIN_VIEW_TOKENS, at most n_ctx.

    >>> view_tokens(GPTConfig(vocab_size=50257, n_ctx=1024, d_model=768, n_layer=12, n_head=12))
    128
    >>> view_tokens(GPTConfig(vocab_size=65, n_ctx=256, d_model=256, n_layer=6, n_head=8))
    256
    """
    if not hasattr(cfg, "n_head"):  # an RNN, LSTM, GRU or CNN: no cache of heads, its window
        return cfg.n_ctx
    budget = CACHE_BUDGET if budget is None else budget
    lo, hi = min(MIN_VIEW_TOKENS, cfg.n_ctx), cfg.n_ctx
    if cache_bytes(cfg, hi) <= budget:
        return hi
    while lo < hi:  # the largest T in [lo, hi] that fits (lo always counts)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if cache_bytes(cfg, mid) <= budget else (lo, mid - 1)
    # A round number reads better in a message: 128, not 131.
    return max(min(MIN_VIEW_TOKENS, cfg.n_ctx), lo - lo % 32 if lo >= 64 else lo)


def grid_layers(cfg: GPTConfig, max_panels: int = MAX_PANELS) -> int:
    """How many layers a figure of every head shows at once: all when they fit in max_panels
    maps, else as many whole layers as fit (at least one).

    >>> gpt2 = GPTConfig(vocab_size=9, d_model=768, n_layer=12, n_head=12)
    >>> grid_layers(gpt2), grid_layers(GPTConfig(vocab_size=9, n_layer=4, n_head=4))
    (4, 4)
    """
    return max(1, min(cfg.n_layer, max_panels // cfg.n_head))
