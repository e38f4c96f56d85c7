"""The generation stepper's logic: one token at a time, each step reproducible from (seed, step).

A step looks at the last n_ctx tokens, reshapes the next-token distribution by the settings, and
samples with a generator seeded from (seed, step index), so undoing a step and stepping again gives
the same token, and a class using the same seed and the same choices gets the same text. The
student may force any token instead of the sampled one; the step records that it was forced.

Also: the newest token's attention in every layer, and generation timed with and without the KV cache.

Not here: temperature / top-k / top-p and the KV-cache generation loop (viz_model.sampling).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.next_token import crop_to_context
from viz_model.model import GPT
from viz_model.sampling import (
    Distribution,
    SamplingSettings,
    generate,
    next_token_distribution,
    pick,
)

SEED_STRIDE = 1_000_003  # a prime: (seed, step) pairs map to distinct generator seeds


@dataclass(frozen=True)
class Step:
    """One generated token and how it came about."""

    token: int  # the token appended to the text
    prob: float  # its probability under the distribution of this step (after the settings)
    sampled: int  # what the sampler picked (== token unless the student forced another)
    forced: bool
    settings: SamplingSettings


@dataclass(frozen=True)
class Action:
    """What the student did at one step: let the sampler pick (forced=None) or force a token."""

    settings: SamplingSettings
    forced: int | None = None


def step_generator(seed: int, step: int) -> torch.Generator:
    """A generator that depends only on (seed, step): replaying a step samples the same token."""
    return torch.Generator().manual_seed(int(seed) * SEED_STRIDE + int(step))


@torch.no_grad()
def step_distribution(model: GPT, seq: list[int], settings: SamplingSettings) -> Distribution:
    """The distribution of the token after seq (its last n_ctx tokens), reshaped by settings.

    It takes its logits from newest_token_view, the forward pass the Generation page shows (the
    explicit attention path, since it records the pattern), so a replay draws from exactly the
    probabilities the student saw: the fused path can differ in the last bits and flip a near tie.
    """
    logits = newest_token_view(model, seq)[0]
    return next_token_distribution(torch.from_numpy(logits), settings)


def choose(
    dist: Distribution, seed: int, step: int, settings: SamplingSettings, forced: int | None = None
) -> Step:
    """The step's token: the seeded sample, or `forced` when the student picked one."""
    sampled = pick(dist, step_generator(seed, step))
    token = sampled if forced is None else int(forced)
    if not 0 <= token < dist.probs.numel():
        raise ValueError(f"token {token} is outside the vocabulary ({dist.probs.numel()})")
    # a token the student chose stays chosen, even when the sampler agrees (so a replay with
    # another seed keeps it)
    return Step(token, float(dist.probs[token]), sampled, forced is not None, settings)


def take_step(
    model: GPT,
    seq: list[int],
    step: int,
    seed: int,
    settings: SamplingSettings,
    forced: int | None = None,
) -> Step:
    """Compute the distribution after seq and choose step number `step` (0-based)."""
    return choose(step_distribution(model, seq, settings), seed, step, settings, forced)


def replay(model: GPT, prompt: list[int], actions: list[Action], seed: int) -> list[Step]:
    """Re-run a history of actions from the prompt; the same inputs always give the same steps."""
    seq, steps = list(prompt), []
    for i, action in enumerate(actions):
        s = take_step(model, seq, i, seed, action.settings, action.forced)
        steps.append(s)
        seq.append(s.token)
    return steps


def actions_of(steps: list[Step]) -> list[Action]:
    """The actions that reproduce a history: forced tokens stay forced, the rest are re-sampled."""
    return [Action(s.settings, s.token if s.forced else None) for s in steps]


def newest_token_attention(model: GPT, seq: list[int]) -> np.ndarray:
    """(n_layer, n_head, T) attention of the last token of seq (last n_ctx tokens) over the window."""
    return newest_token_view(model, seq)[1]


@dataclass(frozen=True)
class KVComparison:
    with_cache: list[int]
    without_cache: list[int]
    seconds_with: float
    seconds_without: float

    @property
    def match(self) -> bool:
        return self.with_cache == self.without_cache

    @property
    def first_difference(self) -> int | None:
        """Index of the first token where the two ways differ, None when they match."""
        pairs = zip(self.with_cache, self.without_cache, strict=True)
        return next((i for i, (a, b) in enumerate(pairs) if a != b), None)


def compare_kv_cache(
    model: GPT, prompt: list[int], n: int, settings: SamplingSettings, seed: int
) -> KVComparison:
    """Generate n tokens with and without the KV cache (same seed) and time each."""
    out, secs = {}, {}
    for use in (True, False):
        t0 = time.perf_counter()
        out[use] = generate(model, list(prompt), n, settings, seed=seed, use_kv_cache=use)
        secs[use] = time.perf_counter() - t0
    return KVComparison(out[True], out[False], secs[True], secs[False])


@torch.no_grad()
def newest_token_view(model: GPT, seq: list[int]) -> tuple[np.ndarray, np.ndarray, int]:
    """One forward pass over the window (the last n_ctx tokens of seq): the logits after it (V,),
    the newest token's attention in every layer (n_layer, n_head, T), and how many were cropped."""
    window, cut = crop_to_context(seq, model.cfg.n_ctx)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layer)]
    ids = torch.tensor(window, dtype=torch.long, device=model.embed.weight.device)
    logits, cache = model.run_with_cache(ids, names)
    att = np.stack([cache[n][:, -1, :].float().cpu().numpy() for n in names])
    return logits[-1].float().cpu().numpy(), att, cut


def attention_rows(att: np.ndarray, per_head: bool) -> tuple[np.ndarray, list[str]]:
    """(n_layer, n_head, T) -> rows to draw: one per layer (mean over heads) or one per head."""
    n_layer, n_head, T = att.shape
    if per_head:
        labels = [f"layer {layer} head {h}" for layer in range(n_layer) for h in range(n_head)]
        return att.reshape(n_layer * n_head, T), labels
    return att.mean(axis=1), [f"layer {layer}" for layer in range(n_layer)]
