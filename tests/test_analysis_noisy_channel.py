"""The noisy channel for spelling correction (viz_model/analysis/noisy_channel.py): the edit
distance, the ranking as the sum of the two logs, and the true word found on a bundled model."""

from __future__ import annotations

import math

import pytest

from tests.claims_models import ASSETS
from tests.conftest import tiny_model
from viz_model.analysis import noisy_channel as nc
from viz_model.bundles.load import load_bundle
from viz_model.text.data import load_corpus


@pytest.mark.parametrize(
    ("a", "b", "d"),
    [
        ("light", "light", 0),
        ("lihgt", "light", 1),  # a swap of neighbours is one edit
        ("ligt", "light", 1),
        ("lights", "light", 1),
        ("lixht", "light", 1),
        ("kitten", "sitting", 3),
        ("", "abc", 3),
        ("ca", "abc", 3),  # optimal string alignment: no edit of a swapped pair
        ("abc", "", 3),
    ],
)
def test_edit_distance(a, b, d):
    assert nc.edit_distance(a, b) == d == nc.edit_distance(b, a)
    assert nc.edit_distance(a, b, limit=1) == min(d, 2)


def test_candidates_are_the_words_within_two_edits_closest_then_most_frequent():
    words = {"light": 5, "night": 9, "might": 2, "lights": 1, "dark": 7}
    found = nc.candidates("lihgt", words)
    assert found == {"light": 1, "night": 2, "might": 2, "lights": 2}
    assert list(found) == ["light", "night", "might", "lights"]


def test_the_ranking_is_by_the_sum_of_the_two_log_probabilities():
    model = tiny_model()
    encode = lambda text: [ord(c) % 23 for c in text]  # noqa: E731 (a stand-in tokenizer)
    words = {"abc": 1, "abd": 1, "xbc": 1, "bca": 1, "zzz": 1}
    ranked = nc.correct(model, encode, "some context ", "abc", " ", words, 0.05)
    assert {c.word for c in ranked} == {"abc", "abd", "xbc", "bca"}
    scores = [c.log_channel + c.log_prior for c in ranked]
    assert scores == sorted(scores, reverse=True)
    for c in ranked:
        assert c.log_channel == pytest.approx(c.distance * math.log(0.05))
        assert c.score == pytest.approx(c.log_channel + c.log_prior)
    with pytest.raises(ValueError):
        nc.channel_logp(1, 1.0)
    with pytest.raises(ValueError):
        nc.correct(model, encode, "   ", "abc", " ", words, 0.05)


@pytest.fixture(scope="module")
def shakespeare():
    bundle = load_bundle(ASSETS / "shakespeare-char")
    return bundle, nc.vocabulary(load_corpus("shakespeare"))


@pytest.mark.parametrize(
    ("context", "typed", "after", "truth"),
    [
        ("ROMEO:\nBut soft, what ", "lihgt", " ", "light"),
        ("ROMEO:\nBut soft, what light through yonder ", "windwo", " ", "window"),
    ],
)
def test_the_true_word_is_recovered_for_a_simple_typo(shakespeare, context, typed, after, truth):
    bundle, words = shakespeare
    ranked = nc.correct(bundle.model, bundle.tokenizer.encode, context, typed, after, words, 0.01)
    assert ranked[0].word == truth
    claim = nc.correction_claim(typed, ranked)
    assert claim.made and f"“{truth}”" in claim.text


def test_no_candidate_is_said_so(shakespeare):
    claim = nc.correction_claim("qqqqqqqq", [])
    assert not claim.made and "No word" in claim.text
