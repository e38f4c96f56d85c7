"""The noisy channel for spelling correction: which word y did the writer mean, given the typed x?

    y* = argmax_y  p(y) p(x | y)      i.e.  argmax_y  log p(y) + log p(x | y)

The prior p(y) is the language model on screen: the probability of the word (and the character
after it) given the text before it. The channel p(x | y) is the simplest edit model: each edit
(insert, delete or change a letter, swap two neighbours) happens with one probability e, so
log p(x | y) = d(x, y) log e, where d is the optimal-string-alignment edit distance. Candidates
are the words of the model's training text within distance MAX_DISTANCE of x.

Not here: scoring a continuation (analysis/scoring.py), the page's text boxes (ui/usage/).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import torch

from viz_model.analysis.claims import Claim, md_escape
from viz_model.analysis.scoring import candidate_logps

MAX_DISTANCE = 2
MAX_CANDIDATES = 60  # scored at most: the closest first, then the most frequent
# letters of any alphabet, with inner apostrophes (o'er)
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
    neighbouring letters, each one edit. With `limit`, any distance above it is returned as
    limit + 1 (the search stops early).

    >>> edit_distance("lihgt", "light"), edit_distance("kitten", "sitting"), edit_distance("", "ab")
    (1, 3, 2)
    """
    if limit is not None and abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if limit is not None and min(row) > limit:
            return limit + 1
        prev2, prev = prev, row
    return prev[-1] if limit is None else min(prev[-1], limit + 1)


def vocabulary(text: str) -> dict[str, int]:
    """The words of a text and how often each occurs, case kept ("Romeo" and "romeo" differ)."""
    return dict(Counter(WORD.findall(text)))


def candidates(
    typed: str, words: dict[str, int], max_distance: int = MAX_DISTANCE
) -> dict[str, int]:
    """The vocabulary's words within max_distance edits of the typed word: word -> distance,
    the closest first and, among equals, the most frequent first."""
    out = {}
    for word in words:
        d = edit_distance(typed, word, max_distance)
        if d <= max_distance:
            out[word] = d
    return dict(sorted(out.items(), key=lambda item: (item[1], -words[item[0]], item[0])))


@dataclass(frozen=True)
class Correction:
    """One candidate: its edit distance from the typed word and the two log-probabilities."""

    word: str
    distance: int
    log_channel: float  # log p(x | y) = distance * log e
    log_prior: float  # log p(y + after | context), from the language model

    @property
    def score(self) -> float:
        return self.log_channel + self.log_prior


def channel_logp(distance: int, edit_prob: float) -> float:
    """log p(x | y) of the simple edit model: each of `distance` edits has probability edit_prob."""
    if not 0 < edit_prob < 1:
        raise ValueError(f"the edit probability must be in (0, 1), got {edit_prob}")
    return distance * math.log(edit_prob)


def correct(
    model: torch.nn.Module,
    encode,
    context: str,
    typed: str,
    after: str,
    words: dict[str, int],
    edit_prob: float,
) -> list[Correction]:
    """Every candidate for `typed` ranked by log p(x|y) + log p(y), best first. The prior scores
    the candidate with the whitespace before it and the character `after` it, given the context
    (the text before the word, its trailing whitespace moved onto the candidate, so a tokenizer
    that attaches a space to the word sees it as in its training text). `encode`: text -> ids."""
    core = context.rstrip()
    gap = context[len(core) :]
    prompt = encode(core)
    if not prompt:
        raise ValueError("the noisy channel needs some text before the word")
    out = []
    for word, d in list(candidates(typed, words).items())[:MAX_CANDIDATES]:
        prior = float(candidate_logps(model, prompt, encode(gap + word + after)).sum())
        out.append(Correction(word, d, channel_logp(d, edit_prob), prior))
    return sorted(out, key=lambda c: (-c.score, c.word))


def correction_claim(typed: str, ranked: list[Correction]) -> Claim:
    """Which word the sum picks, and whether the prior alone or the channel alone would have
    picked another (the reason to multiply the two)."""
    if not ranked:
        return Claim(
            f"No word of the vocabulary is within {MAX_DISTANCE} edits of “{md_escape(typed)}”.",
            False,
            {"candidates": 0},
        )
    best = ranked[0]
    by_prior = max(ranked, key=lambda c: (c.log_prior, -c.distance))
    closest = min(ranked, key=lambda c: (c.distance, -c.log_prior))
    numbers = {
        "candidates": len(ranked),
        "best_score": best.score,
        "best_prior": best.log_prior,
        "best_channel": best.log_channel,
        "prior_only_best": by_prior.log_prior,
    }
    text = (
        f"The noisy channel reads “{md_escape(typed)}” as **“{md_escape(best.word)}”** "
        f"({best.distance} edit{'s' * (best.distance != 1)}, log p(x|y) = {best.log_channel:.2f}, "
        f"log p(y) = {best.log_prior:.2f})."
    )
    if by_prior.word != best.word:
        text += (
            f" The language model alone would pick “{md_escape(by_prior.word)}” "
            f"(log p(y) = {by_prior.log_prior:.2f}), {by_prior.distance} edits away: the edit "
            "model outweighed it."
        )
    if closest.word != best.word and closest.distance < best.distance:
        text += (
            f" The closest word, “{md_escape(closest.word)}” ({closest.distance} edit"
            f"{'s' * (closest.distance != 1)}), lost on the prior."
        )
    return Claim(text, True, numbers)
