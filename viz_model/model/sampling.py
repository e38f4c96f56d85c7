"""From logits to the next token: temperature, top-k, top-p, greedy and seeded sampling, generation.

`next_token_distribution` says which tokens each setting cut, so a page can grey them out.
`generate_steps` yields one token at a time, with or without a KV cache; both give the same tokens.
An RNN, LSTM, GRU or CNN (recurrent.py) carries a RecurrentState instead of a KV cache and runs
past its training window: without the state, each step reads the whole sequence again.

One rule for randomness on any device: every seeded draw is made on the CPU with a CPU
torch.Generator, and only its result moves to the model's device (data.py cuts batches the same
way), so a seed gives the same tokens on a CPU, a CUDA GPU or Apple's MPS.

Not here: the model's forward pass (gpt.py) and surprisal/perplexity of a text (analysis).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from viz_model.model.gpt import GPT, KVCache
from viz_model.model.recurrent import RecurrentLM


@dataclass(frozen=True)
class SamplingSettings:
    """temperature 0 means greedy; top_k 0 and top_p 1.0 mean no cut."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@dataclass(frozen=True)
class Distribution:
    """The next-token distribution before and after the settings reshape it. All (V,) tensors."""

    logits: torch.Tensor  # raw logits
    base_probs: torch.Tensor  # softmax(logits), temperature 1, nothing cut
    scaled_probs: torch.Tensor  # softmax(logits / temperature), nothing cut
    probs: torch.Tensor  # after top-k / top-p, renormalised over the kept tokens
    kept: torch.Tensor  # bool, False for the tokens the settings cut

    @property
    def entropy(self) -> float:
        """Entropy in nats of the final distribution: -sum p log p, never below 0 (one token at
        probability 1 sums to -0.0, which would print as "-0.000")."""
        p = self.probs[self.probs > 0]
        return max(0.0, float(-(p * p.log()).sum()))


def next_token_distribution(
    logits: torch.Tensor, settings: SamplingSettings = SamplingSettings()
) -> Distribution:
    """Reshape the logits of one position (V,) by temperature, then top-k, then top-p.

    The distribution lives on the CPU whatever device the model is on: a seeded torch.Generator is
    a CPU generator, and sampling from CPU probabilities with it gives the same text for a seed on
    every device (torch.multinomial refuses a CPU generator for CUDA probabilities).
    """
    logits = logits.detach().float().cpu()
    base = torch.softmax(logits, dim=-1)
    if settings.temperature == 0:  # greedy: all mass on the argmax
        kept = torch.zeros_like(logits, dtype=torch.bool)
        kept[int(logits.argmax())] = True
        return Distribution(logits, base, kept.float(), kept.float(), kept)
    scaled = torch.softmax(logits / settings.temperature, dim=-1)
    kept = torch.ones_like(logits, dtype=torch.bool)
    if 0 < settings.top_k < logits.numel():
        kept[:] = False
        kept[torch.topk(scaled, settings.top_k).indices] = True
    if settings.top_p < 1.0:
        # keep the smallest set of most likely tokens whose mass reaches top_p
        masked = torch.where(kept, scaled, torch.zeros_like(scaled))
        order = torch.argsort(masked, descending=True)
        cum = torch.cumsum(masked[order] / masked.sum(), dim=0)
        n_keep = int((cum < settings.top_p).sum()) + 1
        kept = torch.zeros_like(kept)
        kept[order[:n_keep]] = True
    probs = torch.where(kept, scaled, torch.zeros_like(scaled))
    return Distribution(logits, base, scaled, probs / probs.sum(), kept)


def pick(dist: Distribution, generator: torch.Generator | None = None) -> int:
    """Sample a token id from the distribution (the argmax when only one token is kept)."""
    if int(dist.kept.sum()) == 1:
        return int(dist.kept.nonzero()[0])
    return int(torch.multinomial(dist.probs, 1, generator=generator))


@dataclass(frozen=True)
class GenStep:
    token: int
    prob: float  # probability of the chosen token under the reshaped distribution


@torch.no_grad()
def generate_steps(
    model: GPT | RecurrentLM,
    ids: list[int],
    max_new_tokens: int,
    settings: SamplingSettings = SamplingSettings(),
    seed: int | None = None,
    use_kv_cache: bool = True,
) -> Iterator[GenStep]:
    """Yield new tokens one at a time after the prompt `ids` (which must not be empty).

    With the KV cache each step feeds only the newest token; once the sequence outgrows the
    context, both paths run on the last n_ctx tokens, so the tokens are the same either way.
    """
    if not ids:
        raise ValueError("generation needs at least one prompt token")
    if isinstance(model, RecurrentLM):
        yield from _recurrent_steps(model, ids, max_new_tokens, settings, seed, use_kv_cache)
        return
    n_ctx = model.cfg.n_ctx
    device = model.embed.weight.device
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    seq = list(ids)
    # Without a causal mask every position reads the new token too, so nothing can be cached.
    kv = KVCache(model.cfg.n_layer) if use_kv_cache and model.cfg.causal else None
    fresh = seq[-n_ctx:]  # what the next forward call must feed
    for _ in range(max_new_tokens):
        if kv is not None and kv.length + len(fresh) > n_ctx:
            kv, fresh = KVCache(model.cfg.n_layer), seq[-n_ctx:]
        window = fresh if kv is not None else seq[-n_ctx:]
        logits = model(torch.tensor(window, device=device), kv)[-1]
        dist = next_token_distribution(logits, settings)
        token = pick(dist, gen)
        seq.append(token)
        fresh = [token]
        yield GenStep(token, float(dist.probs[token]))


def _recurrent_steps(
    model: RecurrentLM,
    ids: list[int],
    max_new_tokens: int,
    settings: SamplingSettings,
    seed: int | None,
    use_state: bool,
) -> Iterator[GenStep]:
    """generate_steps for a RecurrentLM: with the state, feed the prompt once, then one token a
    step; without, the whole sequence every step (the same tokens, at a growing cost)."""
    device = model.embed.weight.device
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    seq = list(ids)
    state = model.new_state() if use_state else None
    fresh = seq
    for _ in range(max_new_tokens):
        window = fresh if state is not None else seq
        logits = model(torch.tensor(window, device=device), state)[-1]
        dist = next_token_distribution(logits, settings)
        token = pick(dist, gen)
        seq.append(token)
        fresh = [token]
        yield GenStep(token, float(dist.probs[token]))


def generate(
    model: GPT | RecurrentLM,
    ids: list[int],
    max_new_tokens: int,
    settings: SamplingSettings = SamplingSettings(),
    seed: int | None = None,
    use_kv_cache: bool = True,
) -> list[int]:
    """The new token ids only (not the prompt)."""
    steps = generate_steps(model, ids, max_new_tokens, settings, seed, use_kv_cache)
    return [s.token for s in steps]
