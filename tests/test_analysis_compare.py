"""Comparing models: bits per character on a prompt, the prompt cut to the context, and curves
moved to bits per character so two tokenizers share one axis."""

from __future__ import annotations

import math

import numpy as np
import pytest

from viz_model.analysis.compare import PromptTokens, curves_in, prompt_scores, read_prompt
from viz_model.analysis.training import curves
from viz_model.tokenization import Tokenizer


def test_bits_per_character_counts_the_predicted_tokens_and_their_characters():
    # three tokens "ab", "c", "de"; p("c" | "ab") = 1/2, p("de" | "ab c") = 1/4: 1 + 2 bits
    logits = np.log(np.array([[0.5, 0.5, 0.0 + 1e-12], [0.25, 0.5, 0.25], [1 / 3, 1 / 3, 1 / 3]]))
    tokens = PromptTokens(ids=[0, 1, 2], texts=["ab", "c", "de"], n_cut=0)
    scores = prompt_scores(logits, tokens, 2, lambda i: "xyz"[i])
    assert scores.bits_per_char == pytest.approx(3 / 3)  # 3 bits over "c" + "de"
    assert math.isnan(scores.surprisal[0])
    assert scores.top.labels[0] in "xyz" and scores.top.base_probs.sum() <= 1 + 1e-9
    one = prompt_scores(logits[:1], PromptTokens([0], ["ab"], 0), 2, str)
    assert math.isnan(one.bits_per_char)  # nothing predicted


def test_read_prompt_keeps_the_last_n_ctx_tokens_as_the_frame_does():
    tok = Tokenizer.train("hello world", "char")
    tokens = read_prompt(tok, 4, "hello")
    assert tokens.texts == ["e", "l", "l", "o"] and tokens.n_cut == 1 and tokens.n_chars == 4
    assert read_prompt(tok, 9, "hello").texts == list("hello")  # nothing cut when it fits


def test_curves_in_bits_per_character_divide_by_ln2_and_characters_per_token():
    history = [{"step": s, "train_loss": 4.0 / s, "val_loss": 3.0 / s} for s in range(1, 6)]
    nats = curves(history)
    bits = curves_in(nats, 2.0, "bits per character")
    np.testing.assert_allclose(bits.val_loss, nats.val_loss / math.log(2) / 2.0)
    np.testing.assert_allclose(bits.train_loss, nats.train_loss / math.log(2) / 2.0)
    assert curves_in(nats, 2.0, "nats per token") is nats
    assert curves_in(nats, None, "bits per character") is None
    with pytest.raises(ValueError, match="unit must be"):
        curves_in(nats, 2.0, "bytes")
