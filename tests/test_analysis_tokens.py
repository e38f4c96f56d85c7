"""BPE merge stepping and pair counts, checked against the tokenizer itself and direct counts."""

from __future__ import annotations

from collections import Counter

import pytest

from viz_model.analysis import tokens as T
from viz_model.text.data import load_corpus
from viz_model.text.tokenization import Tokenizer

TEXTS = [
    "Hello world, my lord!\nThe  king  is dead.",
    "strawberry 1234567 3.14159 http://x.org http: //",
    " hello hello\thello\n\n",
    "aaaa aaa",
    "",
]


@pytest.fixture(scope="module")
def corpus() -> str:
    return load_corpus("shakespeare")[:80_000]


@pytest.fixture(scope="module")
def bpe(corpus) -> Tokenizer:
    return Tokenizer.train(corpus, "bpe", 600)


def test_byte_alphabet_is_a_bijection_and_names_space_G():
    table = T.byte_to_symbol()
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert T.symbol_text("Ġthe") == " the"
    assert T.symbol_text(table[0xE6]) == "<e6>"  # a lone lead byte of a 3-byte character
    assert T.bytes_text(" naï".encode()[:-1] + b"!") == " na<c3>!"


def test_display_tokens_show_partial_characters_as_bytes(bpe):
    shown = T.display_tokens(bpe, "a 日本")
    assert [i for i, _ in shown] == bpe.encode("a 日本")
    assert len(shown) > 3 and all(t for _, t in shown)
    assert "".join(t for _, t in shown) == "a " + "".join(f"<{b:02x}>" for b in "日本".encode())
    char = Tokenizer.train("abc", "char")
    assert T.display_tokens(char, "ab") == [(1, "a"), (2, "b")]


def test_token_text_shows_a_vocabulary_byte_as_hex_not_latin1(bpe):
    lead = bpe.token_to_id(T.byte_to_symbol()[0xC3])  # the lead byte of é, ï, ...: raw form "Ã"
    assert bpe.id_to_token(lead) == "Ã"  # what a page showed before
    assert T.token_text(bpe, lead) == "<c3>"
    assert T.token_text(bpe, bpe.token_to_id("Ġthe")) == " the"  # whole tokens: their text
    form_feed = bpe.token_to_id(T.byte_to_symbol()[0x0C])  # a whole, invisible character
    assert T.token_text(bpe, form_feed) == "<0c>"
    assert T.token_text(bpe, bpe.token_to_id("Ċ")) == "\n"  # line breaks stay for show_whitespace
    char = Tokenizer.train("abc", "char")
    assert [T.token_text(char, i) for i in range(1, 4)] == ["a", "b", "c"]


@pytest.mark.parametrize("text", TEXTS)
def test_all_merges_give_the_tokenizers_own_tokens(bpe, text):
    merged = T.flatten(T.apply_merges(T.initial_pieces(text), bpe.merges(), len(bpe.merges())))
    assert [bpe.token_to_id(s) for s in merged] == bpe.encode(text)


@pytest.mark.parametrize("text", TEXTS)
def test_no_merges_give_the_characters(bpe, text):
    merged = T.flatten(T.apply_merges(T.initial_pieces(text), bpe.merges(), 0))
    assert [T.symbol_text(s) for s in merged] == list(text)


def test_merges_in_turn_equal_lowest_rank_first(bpe):
    """Applying merge 0, then 1, ... one at a time gives what apply_merges gives for every n."""
    text = TEXTS[0] + TEXTS[1]
    pieces = T.initial_pieces(text)
    merges = bpe.merges()
    current = [list(w) for w in pieces]
    for n, merge in enumerate(merges[:200], start=1):
        current = T.apply_merges(current, [merge], 1)  # only this merge, on the last result
        assert current == T.apply_merges(pieces, merges, n)


def test_each_step_adds_one_token_or_none_and_joins_back_to_the_text(bpe):
    text = TEXTS[0]
    merges = bpe.merges()
    lengths = []
    for n in range(len(merges) + 1):
        step = T.merge_step(text, merges, n)
        assert "".join(step.tokens) == text
        lengths.append(len(step.tokens))
    assert lengths[0] == len(text)
    assert all(a >= b for a, b in zip(lengths, lengths[1:], strict=False))
    changed = T.steps_that_change(text, merges)
    assert changed and all(T.merge_step(text, merges, s).changed for s in changed)
    assert [n for n in range(1, len(merges) + 1) if lengths[n] < lengths[n - 1]] == changed


def test_pair_counts_against_a_direct_count():
    words = Counter({("a", "a", "a"): 2, ("a", "b"): 3, ("b",): 5})
    assert T.pair_counts(words) == Counter({("a", "a"): 4, ("a", "b"): 3})
    text = "the cat sat on the mat"
    words = T.word_counts(text)
    assert words[tuple("Ġthe")] == 1 and words[tuple("the")] == 1 and words[tuple("Ġcat")] == 1
    direct = Counter()
    for word in T.pre_tokenize(text):
        for i in range(len(word) - 1):
            direct[word[i : i + 2]] += 1
    assert {a + b: c for (a, b), c in T.pair_counts(words).items()} == dict(direct)


def test_each_merge_was_the_most_frequent_pair_when_learned(corpus, bpe):
    """The trainer picks the most frequent pair at every step: our counts must agree."""
    words = T.word_counts(corpus)
    merges = bpe.merges()
    for step in (1, 2, 3, 10, 50, 150, len(merges)):
        counts = T.pair_counts(T.merged_words(words, merges, step - 1))
        freq = T.merge_frequency(words, merges, step)
        assert freq == counts[merges[step - 1]] > 0
        assert freq == max(counts.values())
    assert T.merge_frequency(words, merges, 1) >= T.merge_frequency(words, merges, 50)


def test_merge_frequency_rejects_steps_outside_the_list(bpe):
    with pytest.raises(ValueError):
        T.merge_frequency(Counter(), bpe.merges(), 0)


def test_token_counts_and_the_vocab_curve(corpus):
    char = Tokenizer.train(corpus, "char")
    counts = T.token_counts(char, "abc ☃")
    assert (counts.chars, counts.tokens, counts.unknown) == (5, 5, 1)
    assert counts.chars_per_token == 1.0
    curve = T.vocab_curve(corpus[:20_000], [300, 256, 500])
    assert [v for v, _ in curve] == [256, 300, 500]
    assert curve[0][1] == len(corpus[:20_000].encode("utf-8"))  # no merges: one token per byte
    assert curve[0][1] > curve[1][1] > curve[2][1]


def test_pitfalls_each_have_examples_and_a_reason():
    assert {name for name, _ in T.PITFALLS} >= {"Counting letters", "Leading spaces"}
    # Every reason is written by pitfall_claim for the tokenizers shown (tests/test_claims_core.py).
    char = Tokenizer.train("To be, or not: 1 and 25.", "char")
    for name, examples in T.PITFALLS:
        assert examples
        assert T.pitfall_claim(name, examples, [("The char model", char)], 5).text.endswith(".")


def test_missing_digits_are_exactly_those_that_encode_to_unk():
    char = Tokenizer.train("To be, or not: 1 and 25.", "char")
    missing = T.missing_digits(char)
    assert missing == ["0", "3", "4", "6", "7", "8", "9"]
    assert all((char.unk_id in char.encode(d)) == (d in missing) for d in T.DIGITS)
    assert T.missing_digits(Tokenizer.train("no digits", "bpe", 260)) == []  # bytes cover all


def test_numbers_note_is_true_of_the_tokenizers_it_names():
    examples = ["1234567", "2024"]
    char = Tokenizer.train("abc 1 2 3 4 5", "char")
    few = Tokenizer.train("abc abd abe " * 50, "bpe", 270)  # no digits in training: no groups
    many = Tokenizer.train("in 2024 and 2024, 1234 1234 567 " * 50, "bpe", 300)
    assert T.digit_groups(char, examples) == [] and T.digit_groups(few, examples) == []
    groups = T.digit_groups(many, examples)
    assert groups and all(sum(c.isdigit() for c in g) >= 2 for g in groups)

    split = T.numbers_note([("The char model", char), ("The small BPE", few)], examples, 5)
    assert (
        "The char model cuts every digit into its own token and has no token for 0, 6, 7, 8 or 9"
        in split
    )
    assert "The small BPE cuts every digit into its own token." in split
    assert "training corpus holds only 5 digits" in split and "grouped" not in split
    grouped = T.numbers_note([("The big BPE", many)], examples, 9000)
    assert f"The big BPE groups digits (`{groups[0]}`" in grouped and "only 9000" not in grouped


def test_a_word_tokenizer_that_reads_numbers_as_unknown_groups_none():
    word = Tokenizer.train("the cat sat on the mat " * 30, "word")
    assert T.digit_groups(word, ["1234567", "2024"]) == []  # both are <unk>, not groups
