"""Tests for viz_model/text/tokenization.py: round trips, offsets, save/load, merges, bad input."""

from __future__ import annotations

import json

import pytest
import tokenizers
from tokenizers import processors

from viz_model.text.tokenization import Piece, Tokenizer, TokenizerError

KINDS = ("char", "bpe", "word")

AWKWARD = [
    "",
    "naïve café",
    "日本語",
    "Привет",
    "🙂👍🏽",
    "a\n\nb   c\t d\n",
    "  two  spaces  ",
    "The king's men, O! -- 'tis night.",
]

# Small but varied: every awkward string appears, so the char tokenizer knows all their characters.
TRAIN_TEXT = "\n".join(
    [
        "First Citizen: Before we proceed any further, hear me speak.",
        "All: Speak, speak. The king's men -- 'tis night, O!",
        *AWKWARD,
    ]
    * 30
)


@pytest.fixture(scope="module")
def toks() -> dict[str, Tokenizer]:
    return {
        "char": Tokenizer.train(TRAIN_TEXT, "char"),
        "bpe": Tokenizer.train(TRAIN_TEXT, "bpe", vocab_size=300),
        "word": Tokenizer.train(TRAIN_TEXT, "word", vocab_size=50),
    }


def _check_pieces(text: str, pieces: list[Piece]) -> None:
    """Pieces are in order, never overlap, and each one's text is the span it claims."""
    done = 0
    for p in pieces:
        assert done <= p.start <= p.end <= len(text)
        assert text[p.start : p.end] == p.text
        done = p.end


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("text", AWKWARD)
def test_pieces_offsets_cover_text_in_order(toks, kind, text):
    tok = toks[kind]
    pieces = tok.pieces(text)
    assert [p.id for p in pieces] == tok.encode(text)
    _check_pieces(text, pieces)
    if kind == "word":  # whitespace is skipped, everything else is covered
        covered = {i for p in pieces for i in range(p.start, p.end)}
        assert covered == {i for i, c in enumerate(text) if not c.isspace()}
    else:
        assert "".join(p.text for p in pieces) == text


@pytest.mark.parametrize("kind", ("char", "bpe"))
@pytest.mark.parametrize("text", AWKWARD)
def test_round_trip_on_known_text(toks, kind, text):
    assert toks[kind].decode(toks[kind].encode(text)) == text


@pytest.mark.parametrize("text", [*AWKWARD, "\x00\x7f\ufffd unseen: ∮ Ω 𝔘𝔫𝔦 \r\n", "ä" * 50])
def test_bpe_round_trips_any_text_without_unknowns(text):
    tok = Tokenizer.train("plain ascii only, nothing fancy\n" * 20, "bpe", vocab_size=270)
    assert tok.unk_id is None
    assert tok.decode(tok.encode(text)) == text
    pieces = tok.pieces(text)
    _check_pieces(text, pieces)
    assert "".join(p.text for p in pieces) == text


@pytest.mark.parametrize("unknown", ["X", "🙂", "\n", "👍🏽"])
def test_char_unknown_character_is_unk_with_offsets(unknown):
    tok = Tokenizer.train("abcabc", "char")
    text = f"ab{unknown}c"
    ids = tok.encode(text)
    assert ids.count(tok.unk_id) == len(unknown)  # one per code point
    pieces = tok.pieces(text)
    _check_pieces(text, pieces)
    assert "".join(p.text for p in pieces) == text
    assert [p.text for p in pieces if p.id == tok.unk_id] == list(unknown)
    assert tok.decode(ids) == "ab" + "<unk>" * len(unknown) + "c"


def test_char_vocab_is_sorted_characters_plus_unk():
    tok = Tokenizer.train("abba\n c", "char")
    assert tok.vocab_size == 6
    assert [tok.id_to_token(i) for i in range(6)] == ["<unk>", "\n", " ", "a", "b", "c"]
    assert tok.unk_id == 0
    assert tok.merges() == []


def test_word_level_unknowns_and_best_effort_decode(toks):
    tok = toks["word"]
    assert tok.unk_id is not None
    assert tok.id_to_token(tok.unk_id) == "<unk>"
    assert tok.decode(tok.encode("speak, speak")) == "speak , speak"
    assert tok.encode("zzyzx") == [tok.unk_id]
    assert tok.merges() == []
    small = Tokenizer.train("a b c d e f a b c a b a", "word", vocab_size=4)
    assert small.vocab_size == 4
    assert [small.id_to_token(i) for i in range(4)] == ["<unk>", "a", "b", "c"]


@pytest.mark.parametrize("kind", KINDS)
def test_empty_and_batch(toks, kind):
    tok = toks[kind]
    assert tok.encode("") == [] and tok.pieces("") == [] and tok.decode([]) == ""
    assert tok.encode_batch(AWKWARD) == [tok.encode(t) for t in AWKWARD]


@pytest.mark.parametrize("kind", KINDS)
def test_save_load_round_trip(toks, kind, tmp_path):
    tok = toks[kind]
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    back = Tokenizer.load(path)
    assert back.kind == kind
    assert back.sha256 == tok.sha256
    assert back.to_json() == tok.to_json()
    assert [back.encode(t) for t in AWKWARD] == [tok.encode(t) for t in AWKWARD]
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer.json"]  # no temp file left behind
    tokenizers.Tokenizer.from_file(str(path))  # a plain HF tokenizer.json


@pytest.mark.parametrize("kind", KINDS)
def test_training_is_deterministic(kind):
    assert (
        Tokenizer.train(TRAIN_TEXT, kind).to_json() == Tokenizer.train(TRAIN_TEXT, kind).to_json()
    )


def test_bpe_vocab_size_is_as_requested(toks):
    assert toks["bpe"].vocab_size == 300
    assert len(toks["bpe"].merges()) == 300 - 256


def test_bpe_first_merge_is_most_frequent_pair():
    # Byte-level words: "aaab", "Ġaaab" x2. Pair counts: (a, a) 6, (a, b) 3, (Ġ, a) 2.
    tok = Tokenizer.train("aaab aaab aaab", "bpe", vocab_size=257)
    assert tok.merges() == [("a", "a")]


def test_bpe_merges_in_rank_order(toks):
    """Each merge joins tokens that exist before it: bytes, or the results of earlier merges."""
    tok = toks["bpe"]
    known = set(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    for a, b in tok.merges():
        assert a in known and b in known
        assert tok.token_to_id(a + b) is not None
        known.add(a + b)


def test_id_to_token_shows_real_spaces(toks):
    tok = toks["bpe"]
    ids = tok.encode(" speak")
    assert len(ids) == 1  # frequent enough to be one token
    assert tok.token_to_id("Ġspeak") == ids[0]  # the raw byte-level form
    assert tok.id_to_token(ids[0]) == " speak"
    with pytest.raises(TokenizerError):
        tok.id_to_token(tok.vocab_size)


def test_gpt2_style_json_is_kind_json_and_old_merges_format_reads(toks):
    hf = tokenizers.Tokenizer.from_str(toks["bpe"].to_json())
    hf.post_processor = processors.ByteLevel(trim_offsets=False)
    hf.add_special_tokens(["<|endoftext|>"])
    data = json.loads(hf.to_str())
    data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]  # GPT-2's format
    tok = Tokenizer.from_json(json.dumps(data))
    assert tok.kind == "json"
    assert tok.merges() == toks["bpe"].merges()
    assert tok.vocab_size == 301 and tok.unk_id is None
    text = "naïve 🙂 speak"
    assert tok.encode(text) == toks["bpe"].encode(text)
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize(
    "data",
    ["", "not json", "[]", "{}", '{"model": 3}', '{"version": "1.0", "model": {"type": "Nope"}}'],
)
def test_from_json_garbage_raises(data):
    with pytest.raises(TokenizerError):
        Tokenizer.from_json(data)


def test_load_bad_files_raise(tmp_path):
    with pytest.raises(TokenizerError, match="cannot read"):
        Tokenizer.load(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TokenizerError, match="UTF-8"):
        Tokenizer.load(tmp_path / "bin.json")


@pytest.mark.parametrize(
    ("kind", "vocab_size"),
    [
        ("nope", None),
        ("json", None),
        ("bpe", 100),
        ("bpe", 10**9),
        ("word", 0),
        ("word", -5),
        ("bpe", 3.5),
        ("char", True),
    ],
)
def test_train_bad_arguments_raise(kind, vocab_size):
    with pytest.raises(TokenizerError):
        Tokenizer.train("some text", kind, vocab_size)
