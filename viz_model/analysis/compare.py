"""Two models on one prompt: what each tokenizer makes of it, how surprised each model is per
character (the unit every tokenizer shares), and what each would write next.

- `read_prompt(tokenizer, n_ctx, prompt)`: the prompt in a model's tokens, cut to its context.
- `prompt_scores(logits, ids, texts, k, id_to_token)`: bits per character on the prompt and the
  top-k next tokens, from the logits (T, V) the model gave it.
- `curves_in(curves, chars_per_token, unit)`: a training curve in nats per token or bits per
  character, so two tokenizers' curves share one axis.

Bits per character = sum over tokens 1..T-1 of -log2 p(token | before) / their characters; the
first token has nothing before it, so neither it nor its characters count.
Not here: charts (charts/compare.py), loading models, streamlit.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from viz_model.analysis.next_token import LN2, TopTokens, distribution, surprisal, top_tokens
from viz_model.analysis.training import Curves
from viz_model.sampling import SamplingSettings
from viz_model.tokenization import Tokenizer

UNITS = ("bits per character", "nats per token")


@dataclass(frozen=True)
class PromptTokens:
    """ids and texts (T,) of the prompt's last T <= n_ctx tokens; the first n_cut did not fit."""

    ids: list[int]
    texts: list[str]
    n_cut: int

    @property
    def n_chars(self) -> int:
        return sum(len(t) for t in self.texts)


def read_prompt(tokenizer: Tokenizer, n_ctx: int, prompt: str) -> PromptTokens:
    """The prompt as the model reads it: its tokens, the last n_ctx of them (as the frame cuts)."""
    pieces = tokenizer.pieces(prompt)
    kept = pieces[max(0, len(pieces) - n_ctx) :]
    return PromptTokens([p.id for p in kept], [p.text for p in kept], len(pieces) - len(kept))


@dataclass(frozen=True)
class PromptScores:
    """surprisal (T,) in nats (NaN for token 0); bits_per_char over tokens 1..T-1 (NaN when
    T < 2); top: the k most likely next tokens after the whole prompt."""

    surprisal: np.ndarray
    bits_per_char: float
    top: TopTokens


def prompt_scores(logits: np.ndarray, tokens: PromptTokens, k: int, id_to_token) -> PromptScores:
    """Score the prompt with the logits (T, V) its model gave it at every position.

    Example: two tokens "ab" then "c", p("c" | "ab") = 1/2 -> 1 bit over 1 character.
    """
    s = surprisal(logits, tokens.ids)
    chars = sum(len(t) for t in tokens.texts[1:])
    bits = float(np.nansum(s[1:]) / LN2 / chars) if len(tokens.ids) > 1 and chars else math.nan
    top = top_tokens(distribution(logits[-1], SamplingSettings()), k, id_to_token)
    return PromptScores(s, bits, top)


def curves_in(curves: Curves, chars_per_token: float | None, unit: str) -> Curves | None:
    """The curves in `unit`: unchanged for nats per token; / ln 2 / characters per token for bits
    per character (None when the characters per token are not known)."""
    if unit == "nats per token":
        return curves
    if unit != "bits per character":
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    if not chars_per_token:
        return None
    scale = 1.0 / LN2 / chars_per_token
    return dataclasses.replace(
        curves, train_loss=curves.train_loss * scale, val_loss=curves.val_loss * scale
    )
