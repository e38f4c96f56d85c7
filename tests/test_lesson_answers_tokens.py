"""Lesson 1, text to tokens (assets/lessons/1_tokens.toml): every stop's answer, measured on the
model the stop names, against a computation that takes another road (the tokenizer's own pieces,
the bytes of the text, cosine similarity in plain torch, a forward pass with our own hook); and
each kind's holds=False path on a model where the lesson's observation does not hold."""

from __future__ import annotations

from collections import Counter
from functools import partial

import torch
import torch.nn.functional as F

from tests.lesson_util import answer_on, bundle
from tests.lesson_util import at_stop as at_stop_of
from tests.lesson_util import lesson as lesson_of
from tests.lesson_util import subject as subject_of
from viz_model.analysis import tokens as tk
from viz_model.bundles.checkpoint import Bundle
from viz_model.lessons.kinds import subject_for
from viz_model.lessons.registry import ANSWERS
from viz_model.text.data import load_corpus
from viz_model.text.tokenization import Tokenizer

LESSON = "1_tokens"


lesson = partial(lesson_of, LESSON)
subject = partial(subject_of, LESSON)
at = partial(at_stop_of, LESSON)
other = answer_on


def test_the_lesson_reads_with_the_real_pages_and_models_and_has_6_to_12_stops():
    stops = lesson().stops
    assert 6 <= len(stops) <= 12
    assert [s.answer for s in stops] == [
        "token_count",
        "token_count",
        "first_merge",
        "leading_space",
        "digit_tokens",
        "unknown_count",
        "token_count",
        "nearest_token",
        "swap_changes_output",
    ]


def test_stop_1_the_char_model_makes_one_token_per_character():
    stop, s, truth = at(1, "token_count")
    tokenizer = bundle(stop.model).tokenizer
    assert tokenizer.kind == "char"
    assert truth.value == len(tokenizer.pieces(s.prompt)) == len(s.prompt)
    assert truth.holds


def test_stop_2_the_bpe_model_needs_fewer_tokens_for_the_same_prompt():
    stop, s, truth = at(2, "token_count")
    pieces = bundle(stop.model).tokenizer.pieces(s.prompt)
    assert truth.value == len(pieces)
    assert "".join(p.text for p in pieces) == s.prompt  # the pieces really cover the prompt
    assert truth.value < len(s.prompt)


def test_stop_3_the_first_merge_is_the_pages_and_the_corpus_commonest_pair():
    stop, s, truth = at(3, "first_merge")
    merges = bundle(stop.model).tokenizer.merges()
    # the page's stepper walks a BPE it trains on the corpus at the view's vocabulary size
    page_bpe = Tokenizer.train(load_corpus("shakespeare"), "bpe", stop.view["vocab"])
    assert page_bpe.merges() == merges
    commonest, _ = tk.pair_counts(tk.word_counts(load_corpus("shakespeare"))).most_common(1)[0]
    assert truth.value == tk.symbol_text("".join(commonest)) == " t"
    assert truth.check("␣t") and not truth.check("t")
    assert stop.view["merge"] in tk.steps_that_change(s.prompt, merges)  # the slider can stop there
    assert truth.holds


def test_first_merge_says_a_char_model_has_none():
    truth = other("shakespeare-char", "abc", "first_merge")
    assert not truth.holds and truth.numbers["merges"] == 0


def test_stop_4_a_leading_space_makes_the_bpe_word_one_token():
    stop, s, truth = at(4, "leading_space")
    tokenizer = bundle(stop.model).tokenizer
    word = stop.args["word"]
    assert s.prompt.startswith(word) and f" {word}" in s.prompt  # the chips show both
    assert truth.value == len(tokenizer.pieces(word)) == 2
    assert len(tokenizer.pieces(" " + word)) == 1
    assert truth.holds


def test_leading_space_does_not_hold_on_a_char_model():
    truth = other("shakespeare-char", "the", "leading_space", word="the")
    assert truth.value == 3 and not truth.holds


def test_stop_5_the_bpe_cuts_a_number_digit_by_digit():
    stop, s, truth = at(5, "digit_tokens")
    text = stop.args["text"]
    pieces = [p.text for p in bundle(stop.model).tokenizer.pieces(text)]
    assert truth.value == len(pieces) == len(text)
    assert pieces == list(text)
    assert truth.numbers["groups"] == 0


def test_stop_6_the_char_model_has_no_token_for_five_digits():
    stop, s, truth = at(6, "unknown_count")
    tokenizer = bundle(stop.model).tokenizer
    corpus = Counter(load_corpus("shakespeare"))
    unseen = [d for d in stop.args["text"] if tokenizer.token_to_id(d) is None]
    assert truth.value == len(unseen) == 5
    assert all(corpus[d] == 0 for d in unseen)  # never in the text its vocabulary comes from
    assert other("shakespeare-bpe", "x", "unknown_count", text="0123456789").value == 0


def test_stop_7_the_bpe_spends_one_token_per_utf8_byte_on_japanese():
    stop, s, truth = at(7, "token_count")
    text = stop.args["text"]
    assert truth.value == len(bundle(stop.model).tokenizer.encode(text))
    assert truth.value == len(text.encode("utf-8")) == 9


def test_stop_8_the_nearest_embedding_to_my_is_thy_beyond_chance():
    stop, s, truth = at(8, "nearest_token")
    b = bundle(stop.model)
    token = b.tokenizer.encode(stop.args["token"])
    assert token == [stop.view["token"]]  # the page opens on the token the question names
    unit = F.normalize(b.model.W_E.detach(), dim=-1)  # (V, D)
    sims = unit @ unit[token[0]]
    sims[token[0]] = -2.0
    assert truth.value == b.tokenizer.decode([int(sims.argmax())]) == " thy"
    top10 = float(sims.topk(10).values.mean())
    assert truth.holds == (top10 > truth.numbers["chance"])
    assert truth.holds


def test_nearest_token_does_not_hold_without_the_token_or_beyond_chance():
    assert not other("shakespeare-char", "x", "nearest_token", token=" my").holds
    # the char model's "a": its nearest is "A", but its ten nearest are no closer than chance
    truth = other("shakespeare-char", "x", "nearest_token", token="a")
    assert truth.value == "A" and not truth.holds


def _last_attn_out(b: Bundle, ids: list[int], zero_positions: bool) -> torch.Tensor:
    """(D,) the last token's layer-0 attention output, by our own hook on the position vectors."""
    hooks = []
    if zero_positions:
        hooks = [("hook_pos_embed", lambda x, hook: torch.zeros_like(x))]
    seen = {}

    def keep(x, hook):
        seen["out"] = x[0, -1].clone()

    with torch.no_grad():
        b.model.run_with_hooks(torch.tensor([ids]), hooks + [("blocks.0.hook_attn_out", keep)])
    return seen["out"]


def test_stop_9_without_positions_the_swap_leaves_layer_0_unchanged():
    stop, s, truth = at(9, "swap_changes_output")
    i, j = stop.args["i"], stop.args["j"]
    assert (stop.view["swap_i"], stop.view["swap_j"]) == (i, j)
    b = bundle(stop.model)
    ids = list(s.ids)
    swapped = list(ids)
    swapped[i], swapped[j] = ids[j], ids[i]
    assert b.tokenizer.decode(swapped) == "I love me, you love thee."
    off = (_last_attn_out(b, ids, True) - _last_attn_out(b, swapped, True)).abs().max()
    on = (_last_attn_out(b, ids, False) - _last_attn_out(b, swapped, False)).abs().max()
    assert off < 1e-5 < 0.01 < on
    assert truth.value == "no: only float rounding" and truth.holds


def test_swap_of_two_equal_tokens_does_not_hold():
    # " love" at positions 1 and 5: swapping them changes nothing, so nothing is shown
    truth = other("shakespeare-bpe", "I love thee, you love me.", "swap_changes_output", i=1, j=5)
    assert truth.numbers["same_token"] == 1.0 and not truth.holds


def test_the_prompt_kinds_answer_an_empty_prompt_without_claiming_anything():
    empty = subject_for(bundle("shakespeare-bpe"), "")
    assert ANSWERS["token_count"](empty, {}).value == 0
    assert not ANSWERS["swap_changes_output"](empty, {}).holds
