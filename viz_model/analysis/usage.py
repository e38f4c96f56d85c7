"""How a language model is used, measured: teacher forcing against free running, no backtracking
after a forced token, and how much greedy decoding, sampling and a repetition penalty repeat.

- Teacher forcing: in training the model reads the true text, so one forward pass over T tokens
  gives the loss at every position, -log p(x_t | x_<t) for all t at once. Generation feeds its own
  output back: one pass per new token. `forcing_race` times both on the model on screen and
  checks that T - 1 passes over the prefixes give the very numbers the one pass gave.
- No backtracking: `force_token` puts a chosen token into a greedy continuation; the model never
  goes back to change it, and what follows is conditioned on it.
- Repetition: `repetition_stats` of a text; `compare_decoders` runs greedy, sampling and greedy
  with CTRL's repetition penalty from one prompt.

Every function reads the model through `model(ids)` logits only (viz_model.model.decoding).
Not here: beam search and the penalty itself (viz_model.model.decoding), scoring candidates
(analysis/scoring.py), the figures (ui/charts/usage.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import torch

from viz_model.analysis.claims import Claim, as_printed
from viz_model.analysis.next_token import surprisal
from viz_model.model.decoding import (
    Beam,
    LogitStream,
    context_length,
    crop,
    decode,
    device_of,
    is_causal,
)
from viz_model.model.sampling import SamplingSettings

SAME_TOL = 1e-4  # nats: one pass and T passes "give the same numbers" within float rounding
EFFECT_NATS = 0.1  # a mean surprisal change smaller than this is reported as no change
NOISE_SE = 2  # ...and one within this many standard errors of the difference of two means


@torch.no_grad()
def logits_of(model: torch.nn.Module, ids: list[int]) -> np.ndarray:
    """Logits (T, V) at every position of ids (which must fit the context): one forward pass."""
    x = torch.tensor(list(ids), dtype=torch.long, device=device_of(model))
    return model(x).float().cpu().numpy()


def surprisal_one_pass(model: torch.nn.Module, ids: list[int]) -> np.ndarray:
    """Teacher forcing: each token's surprisal -log p(x_t | x_<t) (nats, (T,), NaN first) from
    one forward pass over the whole text."""
    return surprisal(logits_of(model, ids), list(ids))


@torch.no_grad()
def surprisal_sequential(model: torch.nn.Module, ids: list[int]) -> np.ndarray:
    """The same numbers from T - 1 forward passes, one per prefix x_<t, as generation would run."""
    out = np.full(len(ids), np.nan)
    device = device_of(model)
    for t in range(1, len(ids)):
        logits = model(torch.tensor(list(ids[:t]), dtype=torch.long, device=device))[-1]
        out[t] = -float(torch.log_softmax(logits.double(), -1)[ids[t]])
    return out


def free_running(model: torch.nn.Module, first: list[int], n_new: int) -> tuple[list[int], int]:
    """Greedy generation of n_new tokens after `first`, each pass a full forward over the text so
    far (no KV cache, as a recurrent model would need a pass per token too). Returns the tokens
    and the number of forward passes."""
    stream = LogitStream(model, first, use_kv_cache=False)
    out = []
    for _ in range(n_new):
        out.append(int(stream.logits.argmax()))
        if len(out) < n_new:
            stream.push(out[-1])
    return out, stream.passes


@dataclass(frozen=True)
class ForcingRace:
    """Teacher forcing against free running on one text of T tokens, timed on this server."""

    one_pass: np.ndarray  # (T,) surprisal from one forward pass (NaN first)
    sequential: np.ndarray  # (T,) the same from T - 1 passes over the prefixes
    generated: list[int]  # free running: T - 1 greedy tokens after the text's first token
    seconds_one_pass: float
    seconds_sequential: float
    seconds_free: float
    passes_free: int

    @property
    def n_tokens(self) -> int:
        return len(self.one_pass)

    @property
    def max_difference(self) -> float:
        """Largest |one pass - sequential| over the positions (nats); 0 for a 1-token text."""
        diff = np.abs(self.one_pass[1:] - self.sequential[1:])
        return float(diff.max()) if diff.size else 0.0


TIMING_REPEATS = 3  # each timing is the best of this many runs


def forcing_race(model: torch.nn.Module, ids: list[int]) -> ForcingRace:
    """Time one teacher-forced pass, T - 1 passes over the prefixes, and free running for T - 1
    tokens from the first token. ids must fit the model's context and hold at least 2 tokens."""
    if len(ids) < 2:
        raise ValueError("teacher forcing needs at least two tokens")
    surprisal_one_pass(model, ids)  # untimed: the first call on a new length pays one-off costs

    def best_of(run, repeats: int = TIMING_REPEATS):  # the fastest of a few: a shared machine
        times, out = [], None
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = run()
            times.append(time.perf_counter() - t0)
        return out, min(times)

    one, t_one = best_of(lambda: surprisal_one_pass(model, ids))
    seq, t_seq = best_of(lambda: surprisal_sequential(model, ids))
    (generated, passes), t_free = best_of(lambda: free_running(model, ids[:1], len(ids) - 1))
    return ForcingRace(one, seq, generated, t_one, t_seq, t_free, passes)


def _ms(ms: float) -> str:
    """A time in milliseconds to one decimal, or two significant figures under 1 ms."""
    return f"{ms:.1f}" if ms >= 1 else f"{ms:.2g}"


def forcing_claim(race: ForcingRace) -> Claim:
    """Whether one pass gave the same losses as T - 1 passes, and how the measured times compare."""
    n = race.n_tokens - 1
    numbers = {
        "positions": n,
        "max_difference": race.max_difference,
        "tolerance": SAME_TOL,
        "ms_one_pass": race.seconds_one_pass * 1000,
        "ms_sequential": race.seconds_sequential * 1000,
    }
    same = race.max_difference <= SAME_TOL
    # The ratio of the two times as printed, so a reader who divides them finds the same.
    ms_one, ms_seq = (_ms(s * 1000) for s in (race.seconds_one_pass, race.seconds_sequential))
    ratio = float(ms_seq) / float(ms_one) if float(ms_one) > 0 else math.inf
    numbers["ratio"] = ratio
    if not same:
        return Claim(
            f"The one pass and the {n} passes disagree by up to {race.max_difference:.2g} nats, "
            f"more than float rounding ({SAME_TOL:g}): this model's prediction at a position "
            "depends on more than the tokens before it.",
            False,
            numbers,
        )
    speed = (
        f"and took {ms_one} ms against {ms_seq} ms ({ratio:.0f}× faster)"
        if 1 < ratio < math.inf
        else "but was not faster here (this measurement was too small or noisy to show it)"
    )
    return Claim(
        f"One forward pass gave all {n} losses, the same numbers as {n} separate passes over the "
        f"prefixes (largest difference {race.max_difference:.1g} nats), {speed}.",
        True,
        numbers,
    )


# ---- no backtracking --------------------------------------------------------------------------


@dataclass(frozen=True)
class ForcedRun:
    """A greedy continuation, and the same with one token forced at `position` (0-based among
    the new tokens); each token's surprisal given the text before it (the run's own)."""

    position: int
    baseline: list[int]
    baseline_surprisal: np.ndarray  # (n,)
    forced: list[int]
    forced_surprisal: np.ndarray  # (n,)

    @property
    def after(self) -> tuple[np.ndarray, np.ndarray]:
        """The surprisals of the tokens after the forced one, (baseline, forced)."""
        k = self.position + 1
        return self.baseline_surprisal[k:], self.forced_surprisal[k:]


def continuation_surprisal(model: torch.nn.Module, ids: list[int], new: list[int]) -> np.ndarray:
    """-log p of each new token given the prompt and the new tokens before it, (len(new),): one
    pass over the window (a text past the context, or a model that reads ahead, one pass a token)."""
    n_ctx = context_length(model)
    seq = list(ids) + list(new)
    if is_causal(model) and (n_ctx is None or len(seq) <= n_ctx):
        return surprisal(logits_of(model, seq), seq)[len(ids) :]
    # past the context, or a model that reads ahead: each token from a pass over what came before
    stream, out = LogitStream(model, ids), []
    for token in new:
        logp = torch.log_softmax(stream.logits.double().cpu(), -1)
        out.append(-float(logp[token]))
        stream.push(token)
    return np.array(out)


def alternatives(model: torch.nn.Module, ids: list[int], k: int) -> tuple[list[int], list[float]]:
    """The k most likely next tokens after ids and their probabilities, most likely first."""
    stream = LogitStream(model, crop(ids, context_length(model)))
    probs = torch.softmax(stream.logits.double().cpu(), -1)
    top = torch.topk(probs, min(k, probs.numel()))
    return [int(i) for i in top.indices], [float(p) for p in top.values]


def force_token(
    model: torch.nn.Module, ids: list[int], n_new: int, position: int, token: int
) -> ForcedRun:
    """Greedy for n_new tokens, and again with `token` forced at `position`, greedy after it."""
    if not 0 <= position < n_new:
        raise ValueError(f"the forced position must be in 0..{n_new - 1}, got {position}")
    baseline = decode(model, ids, n_new)
    head = baseline[:position] + [int(token)]
    forced = (
        head + decode(model, list(ids) + head, n_new - position - 1) if n_new > len(head) else head
    )
    return ForcedRun(
        position,
        baseline,
        continuation_surprisal(model, ids, baseline),
        forced,
        continuation_surprisal(model, ids, forced),
    )


def forced_claim(run: ForcedRun) -> Claim:
    """Whether the tokens after the forced one were more (or less) surprising to the model than
    the greedy run's: by at least EFFECT_NATS per token on average and by more than the noise of
    two continuations this short (NOISE_SE standard errors of the difference of their means: one
    pair of 39-token continuations differing by 0.17 nats is 1.2 standard errors)."""
    base, forced = run.after
    n = len(base)
    numbers = {"after": n, "threshold": EFFECT_NATS}
    if n == 0:
        return Claim(
            "Nothing followed the forced token: force it earlier to see its effect.", False, numbers
        )
    mb, mf = float(base.mean()), float(forced.mean())
    diff = mf - mb
    se = float(np.sqrt((base.var(ddof=1) + forced.var(ddof=1)) / n)) if n > 1 else math.inf
    threshold = max(EFFECT_NATS, NOISE_SE * se)
    numbers.update(baseline_mean=mb, forced_mean=mf, difference=diff, noise=se, threshold=threshold)
    said = f"{mf:.2f} nats a token after the forced one against {mb:.2f} without it"
    noise = (
        f"noise: {NOISE_SE} standard errors of the difference over {n} token"
        f"{'s' * (n > 1)}, {NOISE_SE * se:.2f} nats"
        if math.isfinite(se)
        else "one token says nothing about the noise"
    )
    if diff > threshold:
        text = (
            f"The forced token raised the surprisal of what followed by {diff:.2f} nats a token "
            f"({said}; {noise})."
        )
    elif diff < -threshold:
        text = (
            f"The forced token lowered the surprisal of what followed by {-diff:.2f} nats a token "
            f"({said}; {noise})."
        )
    else:
        text = (
            f"What followed the forced token was about as surprising as without it ({said}: a "
            f"difference of {diff:+.2f}, under {EFFECT_NATS} nats or within the {noise})."
        )
    return Claim(text, abs(diff) > threshold, numbers)


# ---- repetition -------------------------------------------------------------------------------


def ngrams(items: list, n: int) -> list[tuple]:
    return [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]


def repeated_share(items: list, n: int) -> float:
    """The share of n-grams that already occurred earlier in the list (1 - distinct-n); NaN when
    the list has no n-gram.

    >>> repeated_share("a b a b a b".split(), 2)
    0.6
    """
    grams = ngrams(items, n)
    return (len(grams) - len(set(grams))) / len(grams) if grams else float("nan")


def longest_repeat(items: list | str) -> int:
    """The length of the longest stretch that occurs at least twice (overlaps allowed).

    >>> longest_repeat("abcXabcYab"), longest_repeat("abcd"), longest_repeat("aaaa")
    (3, 0, 3)
    """

    def repeats(n: int) -> bool:
        grams = ngrams(list(items), n)
        return len(grams) != len(set(grams))

    lo, hi = 0, max(0, len(items) - 1)  # repeats(n) is monotone: a repeated n-gram holds an n-1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if repeats(mid) else (lo, mid - 1)
    return lo


PHRASE_WORDS = 3  # repetition counted on 3-word phrases


@dataclass(frozen=True)
class RepetitionStats:
    repeated_phrases: float  # share of 3-word phrases seen before in the text (NaN: too short)
    distinct_words: float  # distinct words / words (NaN: no words)
    longest_repeat: int  # characters in the longest stretch written twice


def repetition_stats(text: str) -> RepetitionStats:
    words = text.split()
    return RepetitionStats(
        repeated_share(words, PHRASE_WORDS),
        len(set(words)) / len(words) if words else float("nan"),
        longest_repeat(text),
    )


DECODERS = ("greedy", "sampling", "penalty")


def compare_decoders(
    model: torch.nn.Module,
    ids: list[int],
    n_new: int,
    temperature: float,
    seed: int,
    theta: float,
) -> dict[str, list[int]]:
    """n_new tokens after ids three ways: greedy, sampled at `temperature` (seeded), and greedy
    with CTRL's repetition penalty theta."""
    return {
        "greedy": decode(model, ids, n_new),
        "sampling": decode(model, ids, n_new, SamplingSettings(temperature=temperature), seed),
        "penalty": decode(model, ids, n_new, penalty=theta),
    }


REPEAT_MARGIN = 0.05  # a decoder repeats "more" or "less" only by at least 5 points of the share
OTHER_NAMES = {"sampling": "sampling", "penalty": "greedy with the penalty"}


def _versus(g: float, other: float) -> int:
    """+1 when greedy's share is at least REPEAT_MARGIN above the other's, -1 below, 0 within."""
    if g >= other + REPEAT_MARGIN:
        return 1
    return -1 if g <= other - REPEAT_MARGIN else 0


def repetition_claim(stats: dict[str, RepetitionStats]) -> Claim:
    """How greedy's share of repeated 3-word phrases compares with sampling's and with the
    penalty's, each comparison said on its own (more, less, or within REPEAT_MARGIN)."""
    shares = {k: stats[k].repeated_phrases for k in DECODERS}
    numbers = {f"{k}_share": v for k, v in shares.items()} | {"margin": REPEAT_MARGIN}
    if any(math.isnan(v) for v in shares.values()):
        return Claim(
            f"The texts are too short to count repeated {PHRASE_WORDS}-word phrases: generate more tokens.",
            False,
            numbers,
        )
    g = shares["greedy"]
    verdicts = {k: _versus(g, shares[k]) for k in OTHER_NAMES}
    numbers |= {f"versus_{k}": float(v) for k, v in verdicts.items()}
    words = {1: "more than", 0: "about as much as", -1: "less than"}
    parts = [
        f"{words[verdicts[k]]} {name} ({g:.0%} against {shares[k]:.0%})"
        for k, name in OTHER_NAMES.items()
    ]
    said = f"greedy {g:.0%}, sampling {shares['sampling']:.0%}, greedy with the penalty {shares['penalty']:.0%}"
    return Claim(
        f"Of the {PHRASE_WORDS}-word phrases, {said} had been written before in the same text. "
        f"Greedy decoding repeated itself {parts[0]}, and {parts[1]}. A difference under "
        f"{REPEAT_MARGIN * 100:.0f} percentage points counts as about as much.",
        any(verdicts.values()),
        numbers,
    )


# ---- beam search ------------------------------------------------------------------------------


def beam_parents(steps: list[list[Beam]]) -> list[list[int]]:
    """For each step, the index in the step before of the beam each beam extended (step 0: 0)."""
    out = [[0] * len(steps[0])] if steps else []
    for before, after in pairwise(steps):
        where = {b.tokens: i for i, b in enumerate(before)}
        out.append([where[b.tokens[:-1]] for b in after])
    return out


def beam_claim(best: Beam, greedy: Beam, width: int) -> Claim:
    """How the best beam's total log-probability compares with greedy's at the same length."""
    diff = as_printed(best.logprob) - as_printed(greedy.logprob)  # as the sentence prints them
    numbers = {"width": width, "beam": best.logprob, "greedy": greedy.logprob, "difference": diff}
    if best.tokens == greedy.tokens:
        return Claim(
            f"With width {width}, beam search ends on greedy's own continuation "
            f"(log p = {best.logprob:.2f}): here no path through a less likely token paid off.",
            False,
            numbers,
        )
    if diff == 0:
        return Claim(
            f"Beam search (width {width}) ended on another continuation as likely as greedy's "
            f"(log p = {best.logprob:.2f} both, to two decimals).",
            False,
            numbers,
        )
    if diff > 0:
        return Claim(
            f"Beam search (width {width}) found a continuation {diff:.2f} nats more likely than "
            f"greedy's (log p = {best.logprob:.2f} against {greedy.logprob:.2f}), "
            f"{math.exp(diff):.1f} times as probable: it kept a path greedy dropped.",
            True,
            numbers,
        )
    return Claim(
        f"Beam search (width {width}) ended {-diff:.2f} nats below greedy (log p = "
        f"{best.logprob:.2f} against {greedy.logprob:.2f}): a beam keeps only the best prefixes "
        "so far, and here it pruned greedy's path; beam search is not guaranteed to beat greedy.",
        False,
        numbers,
    )
