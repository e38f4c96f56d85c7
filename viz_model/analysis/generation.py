"""The generation stepper's logic: one token at a time, each step reproducible from (seed, step).

A step looks at the last n_ctx tokens, reshapes the next-token distribution by the settings, and
samples with a generator seeded from (seed, step index), so undoing a step and stepping again gives
the same token, and a class using the same seed and the same choices gets the same text. The
student may force any token instead of the sampled one; the step records that it was forced.

Also: the newest token's attention in every layer, generation timed with and without the KV cache,
and the history written into a link (and rebuilt from one), so a shared URL shows the same steps.

Not here: temperature / top-k / top-p and the KV-cache generation loop (viz_model.model.sampling).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.analysis.next_token import crop_to_context
from viz_model.model.gpt import GPT
from viz_model.model.sampling import (
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
    return next_token_distribution(torch.tensor(logits), settings)


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
    the newest token's attention in every layer (n_layer, n_head, T), and how many were cropped.
    An RNN, LSTM, GRU or CNN reads the whole of seq, as it generates, and has no attention: the
    logits, an empty (0, 0, T) array, and 0."""
    if not isinstance(model, GPT):
        ids = torch.tensor(seq, dtype=torch.long, device=model.embed.weight.device)
        return model(ids)[-1].float().cpu().numpy(), np.zeros((0, 0, len(seq))), 0
    window, cut = crop_to_context(seq, model.cfg.n_ctx)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layer)]
    ids = torch.tensor(window, dtype=torch.long, device=model.embed.weight.device)
    logits, cache = model.run_with_cache(ids, names)
    att = np.stack([cache[n][:, -1, :].float().cpu().numpy() for n in names])
    return logits[-1].float().cpu().numpy(), att, cut


def attention_rows(
    att: np.ndarray, per_head: bool, layers: range | None = None
) -> tuple[np.ndarray, list[str]]:
    """(n_layer, n_head, T) -> rows to draw: one per layer (mean over heads) or one per head;
    per head, only `layers` when given (GPT-2's 144 rows do not fit a screen)."""
    n_layer, n_head, T = att.shape
    if per_head:
        layers = range(n_layer) if layers is None else layers
        labels = [f"layer {layer} head {h}" for layer in layers for h in range(n_head)]
        return att[layers.start : layers.stop].reshape(len(layers) * n_head, T), labels
    return att.mean(axis=1), [f"layer {layer}" for layer in range(n_layer)]


# ---- the history in a link ----------------------------------------------------------------------
# A shared link carries the generated tokens, so the reader's page rebuilds the same steps: ids
# joined by '_', a forced one written 'f<id>', and a settings item 't<T>k<top_k>p<top_p>' before
# each run of steps whose settings differ from the previous run's (for the first run: from the
# page's current settings, which the URL carries anyway). Only characters a URL never escapes.
#   "72_f101_32_t0.5k0p1_9"  = 72 sampled, 101 forced, 32 sampled, then at T=0.5: 9 sampled
LINK_MAX_STEPS = 200  # about 1 KB of URL at most: a link stays short enough to paste in a chat
_TOKEN_ITEM = re.compile(r"(f?)(\d{1,9})")
_NUMBER = r"\d{1,6}(?:\.\d{1,6})?"
_SETTINGS_ITEM = re.compile(rf"t({_NUMBER})k(\d{{1,9}})p({_NUMBER})")


@dataclass(frozen=True)
class LinkedStep:
    """One step as a link records it: the token, whether the student forced it, the settings."""

    token: int
    forced: bool
    settings: SamplingSettings


def _number(x: float) -> str:
    """A setting as the link writes it: 0.5 -> '0.5', 1.0 -> '1' (fixed point, never '1e-05')."""
    return f"{x:.6f}".rstrip("0").rstrip(".")


def settings_item(s: SamplingSettings) -> str:
    return f"t{_number(s.temperature)}k{s.top_k}p{_number(s.top_p)}"


def encode_steps(steps: list[Step], current: SamplingSettings) -> str:
    """The first LINK_MAX_STEPS steps as the link's text (see above); '' for no steps."""
    items, previous = [], settings_item(current)
    for s in steps[:LINK_MAX_STEPS]:
        if (item := settings_item(s.settings)) != previous:
            items.append(item)
            previous = item
        items.append(f"f{s.token}" if s.forced else str(s.token))
    return "_".join(items)


def decode_steps(
    text: str, vocab_size: int, current: SamplingSettings
) -> tuple[list[LinkedStep], str | None]:
    """The steps a link's text names, up to the first item that does not fit, and what did not
    fit (None when all did). Never raises: a link is user input."""
    out: list[LinkedStep] = []
    settings = current
    for n, item in enumerate(text.split("_") if text else [], start=1):
        if len(out) == LINK_MAX_STEPS:
            return (
                out,
                f"it names more than {LINK_MAX_STEPS} steps; the first {LINK_MAX_STEPS} are kept",
            )
        if m := _TOKEN_ITEM.fullmatch(item):
            token = int(m[2])
            if token >= vocab_size:
                return out, (
                    f"step {len(out) + 1} names token id {token}, outside this model's vocabulary "
                    f"of {vocab_size}"
                )
            out.append(LinkedStep(token, m[1] == "f", settings))
        elif m := _SETTINGS_ITEM.fullmatch(item):
            try:
                settings = SamplingSettings(float(m[1]), int(m[2]), float(m[3]))
            except ValueError as exc:
                return out, f"entry {n} of gen= holds impossible sampling settings ({exc})"
        else:
            return out, f"entry {n} of gen= is neither a token id nor sampling settings"
    return out, None


def rebuild(
    model: GPT, prompt: list[int], linked: list[LinkedStep], seed: int
) -> tuple[list[Step], int | None]:
    """Re-take the linked steps from the prompt with the seed: forced tokens are forced again,
    sampled ones must be what the sampler draws now. Returns the steps up to the first that does
    not follow (another model, prompt or seed than the link's) and that step's index, or None."""
    seq, steps = list(prompt), []
    for i, ls in enumerate(linked):
        step = take_step(model, seq, i, seed, ls.settings, ls.token if ls.forced else None)
        if step.token != ls.token:
            return steps, i
        steps.append(step)
        seq.append(step.token)
    return steps, None


def restore_link(
    model: GPT, prompt: list[int], text: str, seed: int, current: SamplingSettings
) -> tuple[list[Step], list[str]]:
    """The steps a link's text rebuilds, and in plain words what of it did not fit (the steps
    before the first misfit are kept)."""
    linked, problem = decode_steps(text, model.cfg.vocab_size, current)
    steps, misfit = rebuild(model, prompt, linked, seed)
    problems = [problem] if problem else []
    if misfit is not None:
        problems.insert(
            0,
            f"step {misfit + 1} is not what this model draws after this prompt with seed {seed} "
            "(the link was made with another model or prompt, or the model was retrained)",
        )
    return steps, problems


# ---- claims (docs/ARCHITECTURE.md, Claims) ------------------------------------------------------------------


def kv_cache_claim(result: KVComparison, causal: bool) -> Claim:
    """What the comparison with and without the KV cache showed. With the causal mask the cache
    is exact, so the tokens must match; without it every earlier token also reads the newest one,
    their keys and values change at every step, and generation cannot use a cache at all
    (viz_model.model.sampling.generate falls back to the full window), so a match shows nothing."""
    n, first = len(result.with_cache), result.first_difference
    speedup = result.seconds_without / max(result.seconds_with, 1e-9)
    numbers = {"tokens": n, "match": float(result.match), "causal": float(causal)}
    numbers |= {"first_difference": -1 if first is None else first, "speedup": speedup}
    if not causal:
        text = (
            "This model has no causal mask: every earlier token also reads the newest one, so "
            "their keys and values change at every step and there is nothing to cache. Both runs "
            "recomputed the whole window at every step"
            + (", so they give the same tokens" if result.match else "")
            + " and the time difference is noise."
        )
        return Claim(text, False, numbers)
    if result.match:
        return Claim(f"The {n} tokens match, one for one.", True, numbers)
    text = (
        f"The tokens differ from token {first + 1} on: with a causal mask the cache should give "
        "the same numbers up to float rounding, which can only flip a draw between two "
        "near-equal probabilities."
    )
    return Claim(text, False, numbers)


def state_idea(family: str) -> str:
    """What an RNN, LSTM, GRU or CNN carries from step to step instead of a KV cache, in words."""
    if family == "cnn":
        carried = (
            "each layer's last few inputs (as many as its convolution reaches back), so each step "
            "feeds only the newest token"
        )
    else:
        carried = (
            "its state (the hidden vector"
            + (" and the cell state" if family == "lstm" else "")
            + ") after the last token, so each step feeds only the newest token and updates it"
        )
    return (
        "Without it, every step runs the model again over the whole text. This model has no keys "
        f"or values to cache; it carries {carried}. Its cost per token stays the same however long "
        "the text grows, and the state does not grow either (a GPT's KV cache grows by one token's "
        "keys and values a step). Same seed, same settings: the tokens must be identical, only "
        "the time differs."
    )


def state_claim(result: KVComparison) -> Claim:
    """What the comparison with and without the carried state showed: the state is exact, so
    the tokens must match (up to float rounding flipping a near-tie)."""
    n, first = len(result.with_cache), result.first_difference
    numbers = {"tokens": n, "match": float(result.match)}
    numbers |= {"first_difference": -1 if first is None else first}
    if result.match:
        return Claim(f"The {n} tokens match, one for one.", True, numbers)
    text = (
        f"The tokens differ from token {first + 1} on: the carried state should give the same "
        "numbers up to float rounding, which can only flip a draw between two near-equal "
        "probabilities."
    )
    return Claim(text, False, numbers)


def kv_cache_idea(causal: bool) -> str:
    """The KV cache in words, true of this model's attention (a causal mask or none)."""
    text = (
        "Without a cache, every step runs the model again over the whole text. But with a causal "
        "mask the keys and values of earlier tokens never change (a token only looks back), so a "
        "**KV cache** stores them and each step feeds only the newest token. Same seed, same "
        "settings: the tokens must be identical, only the time differs. (When the text outgrows "
        "the context, the cache is rebuilt from the last tokens, so both ways see the same "
        "window.)"
    )
    if not causal:
        text += (
            " **This model has no causal mask**, so its earlier tokens read the newest one too: "
            "their keys and values change at every step, and a cache would give wrong answers."
        )
    return text
