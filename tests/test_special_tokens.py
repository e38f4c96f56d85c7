"""Special tokens in the project's Tokenizer: one id each, after the old ids, round trips through
encode/decode and tokenizer.json, and the encoded training stream keeps them whole."""

from __future__ import annotations

import pytest

from viz_model.text.data import TokenData
from viz_model.text.instructions import SPECIAL_TOKENS, instruct_text
from viz_model.text.tokenization import Tokenizer, TokenizerError

TEXT = "To be, or not to be: that is the question.\nbard drab\n" * 20
TURN = "<|user|>reverse: bard<|assistant|>drab<|end|>\n"


@pytest.mark.parametrize("kind", ["char", "bpe", "word"])
def test_each_special_token_is_one_new_id_and_old_ids_keep_their_meaning(kind):
    old = Tokenizer.train(TEXT, kind, 300 if kind == "bpe" else None)
    new = old.with_special_tokens(SPECIAL_TOKENS)
    assert new.vocab_size == old.vocab_size + 3
    ids = [new.token_to_id(t) for t in SPECIAL_TOKENS]
    assert ids == list(range(old.vocab_size, old.vocab_size + 3))
    for token, i in zip(SPECIAL_TOKENS, ids, strict=True):
        assert new.encode(token) == [i]
        assert new.id_to_token(i) == token
    assert new.encode("not to be") == old.encode("not to be")
    assert set(ids) <= new.special_ids and new.special_tokens == list(SPECIAL_TOKENS)
    assert new.kind == kind and Tokenizer.from_json(new.to_json()).kind == kind


def test_a_template_turn_round_trips_and_its_pieces_are_the_special_tokens_whole():
    tok = Tokenizer.train(TEXT + "v", "char").with_special_tokens(SPECIAL_TOKENS)
    ids = tok.encode(TURN)
    assert tok.decode(ids) == TURN
    pieces = [p.text for p in tok.pieces(TURN)]
    assert pieces[0] == "<|user|>" and pieces[-2:] == ["<|end|>", "\n"]
    assert "".join(pieces) == TURN
    assert len(ids) == len(TURN) - sum(len(t) - 1 for t in SPECIAL_TOKENS)
    loaded = Tokenizer.from_json(tok.to_json())
    assert loaded.encode(TURN) == ids and loaded.special_tokens == tok.special_tokens


def test_adding_tokens_twice_changes_nothing_and_the_original_is_untouched():
    old = Tokenizer.train(TEXT, "char")
    once = old.with_special_tokens(SPECIAL_TOKENS)
    assert once.with_special_tokens(SPECIAL_TOKENS).vocab_size == once.vocab_size
    assert old.special_tokens == [] and old.token_to_id("<|user|>") is None
    with pytest.raises(TokenizerError):
        old.with_special_tokens([""])


def test_the_training_stream_of_a_char_tokenizer_with_special_tokens_keeps_them_whole():
    text = instruct_text(200, seed=0)
    tok = Tokenizer.train(text.replace("<|", "").replace("|>", ""), "char")
    tok = tok.with_special_tokens(SPECIAL_TOKENS)
    data = TokenData(tok.encode(text), 0.1)
    assert TokenData.from_text(text, tok, 0.1).train.tolist() == data.train.tolist()
    assert tok.token_to_id("<|end|>") in data.train.tolist()
