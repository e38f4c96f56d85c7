"""Hyperfitting (Carlsson et al., 2024): a model fine-tuned on a few pages until its training loss
is near zero, against its base, both decoding greedily from the same held-out prompts.

What is measured, per prompt: how much each text repeats itself (the share of its 3-word phrases
written before in the same text, usage.repetition_stats), and how much of it is recited (the share
of its 3-word phrases that occur in the pages the hyperfitted model memorised). Per model: the
loss on those pages and on the rest of the base's validation text, on the same windows, so the
price of memorising sits beside what it changed.

The pages and the validation text are TokenData (text/data.py): the pages' train split is what
scripts/hyperfit.py trained on; the base's val split was trained on by neither model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from viz_model.analysis.claims import Claim
from viz_model.analysis.usage import (
    PHRASE_WORDS,
    REPEAT_MARGIN,
    RepetitionStats,
    ngrams,
    repetition_stats,
)
from viz_model.model.decoding import decode
from viz_model.text.data import TokenData
from viz_model.text.tokenization import Tokenizer
from viz_model.training.loop import evaluate

N_PROMPTS = 8  # held-out prompts, evenly spaced through the validation text
PROMPT_TOKENS = 64
LOSS_BATCHES = 10  # windows of both texts the losses are measured on (seeded: the same each time)
LOSS_BATCH_SIZE = 16
RECITED_MOST = 0.5  # from this share of recited phrases on, most of the text is recited


@dataclass(frozen=True)
class Greedy:
    """One model's greedy continuation of one prompt."""

    text: str
    stats: RepetitionStats
    recited: float  # share of its 3-word phrases that occur in the memorised pages (NaN: none)


@dataclass(frozen=True)
class Losses:
    """Cross-entropy (nats per token) on the memorised pages and on the base's validation text."""

    pages: float
    rest: float


@dataclass(frozen=True)
class HyperfitReport:
    prompts: list[str]
    n_new: int
    pages_chars: int
    base: list[Greedy]
    fitted: list[Greedy]
    base_loss: Losses
    fitted_loss: Losses

    def mean(self, which: str, field: str) -> float:
        """The mean over prompts of `field` ("repeated" or "recited") of "base" or "fitted"."""
        runs = self.base if which == "base" else self.fitted
        values = [g.stats.repeated_phrases if field == "repeated" else g.recited for g in runs]
        values = [v for v in values if not math.isnan(v)]
        return sum(values) / len(values) if values else float("nan")

    def lower_on(self) -> int:
        """On how many prompts the hyperfitted text repeated less than the base's."""
        return sum(
            f.stats.repeated_phrases < b.stats.repeated_phrases
            for b, f in zip(self.base, self.fitted, strict=True)
        )


def held_out_prompts(data: TokenData, n: int = N_PROMPTS, length: int = PROMPT_TOKENS) -> list:
    """n windows of `length` token ids, evenly spaced through the validation split."""
    val = data.val.tolist()
    if len(val) < length:
        return []
    starts = [round(i * (len(val) - length) / max(1, n - 1)) for i in range(n)]
    return [val[s : s + length] for s in starts]


def phrases(text: str) -> set[tuple[str, ...]]:
    return set(ngrams(text.split(), PHRASE_WORDS))


def recited_share(text: str, source: set[tuple[str, ...]]) -> float:
    """The share of the text's 3-word phrases that occur in `source` (NaN: too short).

    >>> recited_share("to be or not to be", phrases("whether to be or not"))
    0.5
    """
    grams = ngrams(text.split(), PHRASE_WORDS)
    return sum(g in source for g in grams) / len(grams) if grams else float("nan")


def greedy_runs(
    model: torch.nn.Module, tokenizer: Tokenizer, prompts: list, n_new: int, pages: set
) -> list[Greedy]:
    out = []
    for ids in prompts:
        text = tokenizer.decode(decode(model, list(ids), n_new))
        out.append(Greedy(text, repetition_stats(text), recited_share(text, pages)))
    return out


def losses(model: torch.nn.Module, pages: TokenData, rest: TokenData) -> Losses:
    def mean(data: TokenData, split: str) -> float:
        return evaluate(model, data, LOSS_BATCH_SIZE, LOSS_BATCHES, split)

    return Losses(mean(pages, "train"), mean(rest, "val"))


def compare(
    base: torch.nn.Module,
    fitted: torch.nn.Module,
    tokenizer: Tokenizer,
    pages_text: str,
    pages: TokenData,
    rest: TokenData,
    n_new: int,
) -> HyperfitReport:
    """Both models decoding greedily from the held-out prompts, and their losses on both texts."""
    prompts = held_out_prompts(rest)
    seen = phrases(pages_text)
    return HyperfitReport(
        [tokenizer.decode(p) for p in prompts],
        n_new,
        len(pages_text),
        greedy_runs(base, tokenizer, prompts, n_new, seen),
        greedy_runs(fitted, tokenizer, prompts, n_new, seen),
        losses(base, pages, rest),
        losses(fitted, pages, rest),
    )


def hyperfit_claim(report: HyperfitReport) -> Claim:
    """Whether the hyperfitted model repeats itself less, more or about as much as its base
    (a mean at least REPEAT_MARGIN apart AND the same direction on most prompts), what memorising
    cost on the rest of the text, and how much of its text is recited from the pages."""
    b, f = report.mean("base", "repeated"), report.mean("fitted", "repeated")
    n, lower = len(report.base), report.lower_on()
    numbers = {"base_repeated": b, "fitted_repeated": f, "lower_on": float(lower), "prompts": n}
    if n == 0 or math.isnan(b) or math.isnan(f):
        return Claim("The texts are too short to count repeated phrases.", False, numbers)
    higher = sum(
        x.stats.repeated_phrases > y.stats.repeated_phrases
        for x, y in zip(report.fitted, report.base, strict=True)
    )
    if f <= b - REPEAT_MARGIN and lower > n / 2:
        verdict, made = f"repeated itself less than its base (lower on {lower} of {n} prompts)", 1
    elif f >= b + REPEAT_MARGIN and higher > n / 2:
        verdict, made = f"repeated itself more than its base (higher on {higher} of {n} prompts)", 1
    else:
        verdict, made = "repeated itself about as much as its base", 0
    rb, rf = report.mean("base", "recited"), report.mean("fitted", "recited")
    lb, lf = report.base_loss, report.fitted_loss
    numbers |= {
        "base_recited": rb,
        "fitted_recited": rf,
        "base_pages_loss": lb.pages,
        "fitted_pages_loss": lf.pages,
        "base_rest_loss": lb.rest,
        "fitted_rest_loss": lf.rest,
        "verdict": float(made),
    }
    recital = ""
    if rf >= rb + REPEAT_MARGIN:  # it recites more than the base: say how much
        how = (
            "most of what it writes is recited, not new"
            if rf >= RECITED_MOST
            else "part of its variety is recited"
        )
        recital = (
            f" But {rf:.0%} of its {PHRASE_WORDS}-word phrases occur in the pages it memorised "
            f"(the base's: {rb:.0%}): {how}."
        )
    text = (
        f"Writing {report.n_new} tokens greedily after each of {n} prompts it never trained on, "
        f"the base repeated {b:.0%} of its {PHRASE_WORDS}-word phrases on average and the "
        f"hyperfitted model {f:.0%}: it {verdict}. Memorising the {report.pages_chars:,} "
        f"characters took its loss on them from {lb.pages:.2f} to {lf.pages:.2f} nats a token, "
        f"and its loss on the validation text from {lb.rest:.2f} to {lf.rest:.2f}.{recital}"
    )
    return Claim(text, bool(made), numbers)
