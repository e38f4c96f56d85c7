"""Comparing models: bits per character on a prompt, the prompt cut to the context, and curves
moved to bits per character so two tokenizers share one axis."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from viz_model.analysis.labs.compare import (
    BoundarySide,
    ModelInfo,
    PromptTokens,
    WordCut,
    boundary_claim,
    continues_rightly,
    curves_in,
    cut_inside_token,
    partner,
    prompt_scores,
    read_prompt,
    seen_in_training,
    shown,
)
from viz_model.analysis.training import curves
from viz_model.text.tokenization import Tokenizer


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


# ---- the partner a model opens beside, and the token-boundary effect -------------------------


def test_a_model_opens_beside_the_same_text_read_by_another_tokenizer():
    infos = {
        "induction-1l": ModelInfo("repeat", "char", (1, 64)),
        "induction-2l": ModelInfo("repeat", "char", (2, 64)),
        "shakespeare-bpe": ModelInfo("shakespeare", "bpe", (4, 128)),
        "shakespeare-char": ModelInfo("shakespeare", "char", (4, 128)),
        "shakespeare-tiny": ModelInfo("shakespeare", "char", (2, 64)),
        "class-tiny": ModelInfo("shakespeare", "char", (2, 64)),
    }
    assert partner("shakespeare-char", infos) == "shakespeare-bpe"
    assert partner("shakespeare-bpe", infos) == "shakespeare-char"  # same shape first
    assert partner("class-tiny", infos) == "shakespeare-bpe"
    assert partner("induction-2l", infos) == "induction-1l"  # same text, one layer fewer
    assert partner("alone", {"alone": ModelInfo(None, None, None)}) == "alone"


def _bpe() -> Tokenizer:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "assets" / "models" / "shakespeare-bpe"
    return Tokenizer.load(root / "tokenizer.json")


def test_the_cut_falls_inside_a_token_the_tokenizer_keeps_whole():
    tok = _bpe()
    prompt = "To be, or not to be, that is the question"
    cut = cut_inside_token(prompt, tok)
    assert cut is not None and cut.word == "question"
    assert prompt.startswith(cut.text) and cut.text + cut.rest == prompt
    whole = [p.text for p in tok.pieces(prompt)]
    # the cut is inside a token of the whole prompt: its last token is not one of them
    assert [p.text for p in tok.pieces(cut.text)][-1] not in whole[-3:]
    # the control: cut one letter earlier, at the start of that token (a split the tokenizer makes)
    assert cut.control_text == cut.text[:-1] and cut.control_rest == cut.text[-1] + cut.rest
    assert [p.text for p in tok.pieces(cut.control_text)] == whole[
        : len(tok.pieces(cut.control_text))
    ]
    assert cut_inside_token("a b c", tok) is None  # no token of two letters inside a word


def test_continuations_and_training_counts():
    texts = ["e", "ea", "eaks", "eaks,", "o", "", " e", "eaksy"]
    assert continues_rightly(texts, "eaks").tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    right = np.array([False, True, False])
    tokens = np.array([0, 2, 1, 0, 2, 2, 0, 2, 1])  # (0, 2) occurs 3 times, then 1, 2, 1
    assert seen_in_training(tokens, [0, 2], right) == (3, 2)
    assert seen_in_training(tokens, [], right) == (0, 0)


def _side(kind, p, cut_pieces=(" b", "r"), whole=(" b", "re", "a", "k", "s"), control=None):
    return BoundarySide(kind, kind, p, list(cut_pieces), list(whole), 227, 0, control)


def test_the_boundary_effect_is_claimed_only_when_the_split_model_gives_half_or_less():
    whole = [" b", "re", "a", "k", "s"]
    cut = WordCut("what light br", "eaks", "breaks", whole, "what light b", "reaks")
    made = boundary_claim(cut, [_side("char", 0.3), _side("bpe", 0.01)])
    assert made.made and "the token-boundary effect" in made.text and "0 times in 227" in made.text
    not_half = boundary_claim(cut, [_side("char", 0.3), _side("bpe", 0.2)])
    assert not not_half.made and "no clear token-boundary effect" in not_half.text
    unpredictable = boundary_claim(cut, [_side("char", 0.05), _side("bpe", 0.0)])
    assert not unpredictable.made  # the character model cannot tell either
    same_split = _side("bpe", 0.0, cut_pieces=(" b", "re"))
    assert not boundary_claim(cut, [_side("char", 0.9), same_split]).made
    # no character model: the same model cut at the token's start is the reference
    other = _side("bpe", 0.9, cut_pieces=(" b", "re"))  # a tokenizer this cut does not split
    assert not boundary_claim(cut, [other, _side("bpe", 0.0)]).made
    own = boundary_claim(cut, [other, _side("bpe", 0.0, control=0.4)])
    assert own.made and "Cut one letter earlier instead" in own.text and "40%" in own.text
    assert not boundary_claim(cut, [other, _side("bpe", 0.3, control=0.4)]).made


def test_user_text_in_a_claim_is_shown_and_escaped():
    assert shown("a *b*\n_c_") == "a␣\\*b\\*↵\\_c\\_"
    cut = WordCut("x **bo", "ld", "bold", ["**", "bo", "ld"])
    text = boundary_claim(cut, [_side("char", 0.9), _side("bpe", 0.0)]).text
    assert "x␣\\*\\*bo" in text and re.search(r"(?<!\\)\*\*bo", text) is None


def test_training_notes_say_a_fine_tune_counts_from_its_start_and_texts_differ():
    from viz_model.analysis.labs.compare import training_notes

    scratch = {"data": {"corpus": "shakespeare"}}
    tuned = {"data": {"task": "brackets"}, "finetune": {"base_name": "shakespeare-tiny"}}
    notes = " ".join(training_notes([("a", scratch, scratch["data"]), ("b", tuned, tuned["data"])]))
    assert "“b” was fine-tuned from shakespeare-tiny" in notes
    assert "steps count from the start of fine-tuning" in notes
    assert "“a” and “b” were trained on different texts" in notes
    same = [("a", scratch, scratch["data"]), ("c", scratch, scratch["data"])]
    assert training_notes(same) == []
    assert training_notes([("a", scratch, scratch["data"]), ("d", {}, None)]) == []


def test_training_notes_read_the_bundles_own_records_of_text_and_tokenizer():
    from viz_model.analysis.labs.compare import training_notes

    # a class run records its split; shakespeare-bpe (trained before) records none: one text
    run = {"data": {"corpus": "shakespeare", "val_fraction": 0.1}, "tokenizer": "char"}
    bpe = {"data": {"corpus": "shakespeare"}, "tokenizer": "bpe", "vocab_size": 2048}
    notes = " ".join(training_notes([("run", run, run["data"]), ("bpe", bpe, bpe["data"])]))
    assert "different texts" not in notes and "not the same test" not in notes
    assert "same text with different tokenizers (BPE of 2,048, char)" in notes
    assert "in nats per token their losses are not comparable" in notes
    twin = {**run, "data": {"corpus": "shakespeare"}}
    assert training_notes([("run", run, run["data"]), ("twin", twin, twin["data"])]) == []
    other = {**run, "data": {"corpus": "shakespeare", "val_fraction": 0.2}}
    said = " ".join(training_notes([("run", run, run["data"]), ("o", other, other["data"])]))
    assert "held out different shares of it for validation (10%, 20%)" in said
    task = {"data": {"task": "repeat"}, "tokenizer": "char"}
    said = " ".join(training_notes([("run", run, run["data"]), ("t", task, task["data"])]))
    assert "were trained on different texts" in said and "tokenizers" not in said


def test_the_validation_cell_is_the_weights_on_screen_or_says_whose_it_is():
    """Issue 36: at step 0 the column "our-model (step 0)" showed the step-650 validation loss
    (2.845 bits per character) as if it were the random weights'."""
    from viz_model.analysis.labs.compare import validation_cell
    from viz_model.analysis.training import RecordedLoss

    final = RecordedLoss(1.972, 650, True)
    bits = f"{1.972 / math.log(2):.3f}"
    assert validation_cell(final, 1.0, None) == bits  # the final weights: their own
    assert validation_cell(final, 1.0, 0) == f"{bits} (final step 650)"
    earlier = RecordedLoss(2.29, 300, False)
    assert validation_cell(earlier, 2.0, 316) == f"{2.29 / math.log(2) / 2:.3f} (step 300)"
    assert validation_cell(None, 1.0, 0) == "–" and validation_cell(final, None, 0) == "–"
