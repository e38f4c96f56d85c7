"""The shared chart helpers."""

from viz_model.charts.common import show_whitespace, token_labels


def test_token_labels_stay_distinct_when_tokens_repeat():
    labels = token_labels(["the", " cat", "the", "\n"])
    assert len(set(labels)) == 4
    assert labels[1] == "1:␣cat" and labels[3] == "3:↵"


def test_show_whitespace_makes_empty_and_blank_visible():
    assert show_whitespace("") == "∅"
    assert show_whitespace(" \t") == "␣⇥"


def test_unknown_positions_are_marked_and_keep_what_was_typed():
    labels = token_labels(["R", "o", " ", "R"], unknown=[0, 2])
    assert labels == ["0:«R»", "1:o", "2:«␣»", "3:R"]  # same text, marked only where unknown
