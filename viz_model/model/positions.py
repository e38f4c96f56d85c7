"""How a GPT knows where a token is: a table added to the embeddings, or a change to attention.

Added to the residual stream (GPT.position_embeddings): a learned table, or the fixed sinusoids of
"Attention is all you need". Inside attention instead (config.POSITIONS):

- **RoPE** (Su et al. 2021, Llama): q and k are turned, pair of numbers by pair, by an angle
  proportional to their position, so q_i . k_j depends only on the distance i - j. Pairs are
  (e, e + E/2), the "rotate half" layout of GPT-NeoX and Llama.
- **ALiBi** (Press et al. 2022): no rotation; each head adds -m_h (i - j) to its scores, a penalty
  growing with distance, with slopes m_h = 2^(-8h/H) for h = 1..H.

Neither puts anything in the residual stream, so both can be read past the trained context.

    >>> alibi_slopes(4).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]

Not here: where they are applied (gpt.Attention), the attention mask (mask.py).
"""

from __future__ import annotations

import functools
import math

import torch

ROPE_BASE = 10_000.0


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


@functools.lru_cache(maxsize=64)
def rope_angles(start: int, T: int, d_head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotation angles of positions start..start+T-1, each (T, 1, E).

    Pair e (numbers e and e + E/2) turns by position x theta_e, theta_e = base^(-2e/E): the
    first pairs turn fast (near positions), the last slowly (far ones)."""
    with torch.inference_mode(False):  # plain tensors, reusable by autograd
        half = d_head // 2
        theta = ROPE_BASE ** (-torch.arange(half, dtype=torch.float32) * 2 / d_head)  # (E/2,)
        angle = torch.arange(start, start + T, dtype=torch.float32)[:, None] * theta  # (T, E/2)
        angle = torch.cat([angle, angle], dim=-1)[:, None, :]  # (T, 1, E)
        return angle.cos(), angle.sin()


def rotate(x: torch.Tensor, start: int) -> torch.Tensor:
    """x (B, T, H, E) at positions start.., each pair (a, b) turned to (a cos - b sin,
    b cos + a sin)."""
    T, E = x.shape[1], x.shape[-1]
    cos, sin = rope_angles(start, T, E)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    a, b = x[..., : E // 2], x[..., E // 2 :]
    return x * cos + torch.cat([-b, a], dim=-1) * sin


def alibi_slopes(n_head: int) -> torch.Tensor:
    """(H,) the heads' distance penalties: 2^(-8h/H) for h = 1..H when H is a power of two;
    otherwise the nearest power of two's slopes, then every other one of twice that many (the
    paper's rule), so every head still gets its own slope."""

    def powers(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    low = 2 ** math.floor(math.log2(n_head))
    slopes = powers(low) + powers(2 * low)[0::2][: n_head - low]
    return torch.tensor(slopes, dtype=torch.float32)


@functools.lru_cache(maxsize=64)
def alibi_bias(n_head: int, T: int, past: int, causal: bool) -> torch.Tensor:
    """(H, T, past + T) what ALiBi adds to the scores of queries past..past+T-1: -m_h |i - j|
    (only j <= i is ever read when causal; the mask hides the rest)."""
    with torch.inference_mode(False):
        query = torch.arange(past, past + T, dtype=torch.float32)[:, None]
        key = torch.arange(past + T, dtype=torch.float32)[None, :]
        distance = (query - key).abs() if not causal else (query - key).clamp(min=0)
        return -alibi_slopes(n_head)[:, None, None] * distance  # (H, T, past + T)
