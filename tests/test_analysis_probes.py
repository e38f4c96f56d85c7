"""Linear probes: labels computed from the text, and a probe that finds what is there (and only that)."""

from __future__ import annotations

import numpy as np
import pytest

from viz_model.analysis.labs import probes as pr


def test_shakespeare_labels_by_hand():
    pieces = list("\nHam.\nTo be")  # one window, character tokens
    labels = pr.properties([pieces], "shakespeare")
    assert labels["vowel"][0].tolist() == [c in "aeiou" for c in "\nham.\nto be"]
    starts = labels["line start"][0].tolist()
    assert [i for i, s in enumerate(starts) if s] == [0, 1, 5, 6]  # "\n", "H", "\n", "T"
    speaker = labels["speaker name"][0].tolist()
    assert [i for i, s in enumerate(speaker) if s] == [1, 2, 3, 4]  # "Ham." after a blank line
    assert "speaker name" not in pr.properties([list("Ham.\nx")], "shakespeare")  # no blank before


def test_task_labels_by_hand():
    second = pr.properties([list("abcabc\nxyxy")], "repeat")["second copy"][0].tolist()
    assert second == [False] * 3 + [True] * 3 + [False] + [False] * 2 + [True] * 2
    deep = pr.properties([list("([{}])\n(")], "brackets")["deep bracket"][0].tolist()
    assert deep == [False, True, True, True, False, False, False, False]


def test_a_probe_reads_a_direction_where_it_is_and_not_where_it_is_not():
    rng = np.random.default_rng(0)
    N, W, D = 60, 12, 8
    labels = rng.random((N, W)) < 0.3
    noise = rng.standard_normal((2, N, W, D))
    noise[1, ..., 3] += np.where(labels, 2.5, -2.5)  # station 1 carries the label along dim 3
    result = pr.probe_by_station(noise, labels)
    assert result.test_accuracy[1] > 0.95
    assert result.test_accuracy[0] < result.baseline + 0.05  # station 0: nothing to read
    held_out = labels[np.arange(N) % pr.TEST_EVERY == pr.TEST_EVERY - 1, pr.FIRST_POSITION :]
    assert result.n_test == held_out.size
    assert result.baseline == max(held_out.mean(), 1 - held_out.mean())


def test_a_property_with_one_answer_only_is_left_out():
    labels = pr.properties([list("12 13 14\n15 16"), list("7 8 9\n10 11 12")], "count")
    assert "vowel" not in labels and "line start" in labels


def _result(acc, baseline, n_test):
    acc = np.array(acc)
    return pr.ProbeResult(acc, acc, baseline, 1 - baseline, 2 * n_test, n_test)


STATIONS = ["embed", "after block 0", "after block 1"]


def test_a_point_or_two_over_a_95_percent_baseline_is_within_the_noise():
    r = _result([0.955, 0.958, 0.962], baseline=0.95, n_test=2520)  # +0.5 .. +1.2 points
    margin = pr.noise_margin(r)
    assert margin == pytest.approx(3 * np.sqrt(0.95 * 0.05 / 2520))  # 1.3 points
    claim = pr.probe_claim("speaker name", STATIONS, r)
    assert not claim.made
    assert claim.text.startswith("**speaker name**: no station reads it beyond")
    assert "96.2% after block 1" in claim.text and "(95.0%)" in claim.text


def test_a_clear_gain_is_claimed_at_the_stations_that_have_it():
    r = _result([0.70, 0.80, 0.99], baseline=0.71, n_test=2520)
    claim = pr.probe_claim("vowel", STATIONS, r)
    assert claim.made and claim.numbers["stations_beyond"] == 2
    assert "(71.0%) after block 0 and after block 1; best 99.0% after block 1" in claim.text
    embed = pr.probe_claim("vowel", STATIONS, _result([0.99, 0.70, 0.70], 0.71, 2520))
    assert "(71.0%) at the embeddings; best 99.0% at the embeddings" in embed.text
    assert "(+28.0 points" in claim.text


def test_the_same_gain_on_few_tokens_is_noise():
    big = pr.probe_claim("x", STATIONS, _result([0.5, 0.56, 0.5], 0.5, 5000))
    small = pr.probe_claim("x", STATIONS, _result([0.5, 0.56, 0.5], 0.5, 100))
    assert big.made and not small.made


def test_a_reading_random_weights_give_as_well_is_said_and_not_claimed():
    trained = _result([0.99, 0.98, 0.97], baseline=0.71, n_test=2520)
    blank = _result([0.99, 0.97, 0.96], baseline=0.71, n_test=2520)  # a random embedding
    claim = pr.probe_claim("vowel", STATIONS, trained, blank)
    assert not claim.made and claim.numbers["stations_beyond_baseline"] == 3
    assert "no better than from the same shape with random weights" in claim.text
    assert "random weights of this shape: best 99.0% at the embeddings" in claim.text
    assert pr.probe_claim("vowel", STATIONS, trained).made  # against the baseline alone it was


def test_only_the_stations_beyond_random_weights_are_claimed():
    trained = _result([0.974, 0.997, 0.995], baseline=0.94, n_test=2520)  # margin 1.4 points
    blank = _result([0.974, 0.973, 0.973], baseline=0.94, n_test=2520)
    claim = pr.probe_claim("line start", STATIONS, trained, blank)
    assert claim.made and claim.numbers["stations_beyond"] == 2
    assert "read beyond the majority baseline and random weights (94.0%; random weights" in (
        claim.text
    )
    assert ") after block 0 and after block 1; best 99.7% after block 0" in claim.text
