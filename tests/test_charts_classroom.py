"""The class's answers chart: one bar per answer, the revealed truth standing apart and named,
whole answers on the axis, a student's text drawn as typed, the long tail summed."""

from __future__ import annotations

from ui.charts.classroom import MAX_BARS, answer_bars, number_strip


def _bars(fig) -> tuple[list[str], list[int], list[str]]:
    bar = fig.to_dict()["data"][0]
    return list(bar["y"]), list(bar["x"]), list(bar["marker"]["color"])


def test_the_truth_stands_apart_and_is_named_once_revealed():
    labels, counts, colours = _bars(answer_bars({"yes": 3, "no": 5, "maybe": 0}, truth="yes"))
    assert labels == ["yes ✓", "no", "maybe"] and counts == [3, 5, 0]
    assert colours[0] != colours[1] and colours[1] == colours[2]
    labels, _, colours = _bars(answer_bars({"yes": 3, "no": 5}))
    assert labels == ["yes", "no"] and len(set(colours)) == 1  # before the reveal: all alike


def test_the_axis_counts_whole_answers():
    assert answer_bars({"a": 1, "b": 0}).to_dict()["layout"]["xaxis"]["dtick"] == 1
    assert answer_bars({"a": 40, "b": 7}).to_dict()["layout"]["xaxis"]["dtick"] == 8


def test_typed_answers_are_drawn_as_typed_and_the_tail_is_summed():
    typed = {f"<b>{i}</b>": 20 - i for i in range(MAX_BARS + 3)}
    labels, counts, _ = _bars(answer_bars(typed))
    assert len(labels) == MAX_BARS and labels[0] == "&lt;b&gt;0&lt;/b&gt;"
    assert labels[-1] == "other answers" and sum(counts) == sum(typed.values())


def test_the_numbers_typed_are_dots_and_the_truth_a_line():
    fig = number_strip([1.0, 2.5, 2.5], truth=2.0, unit="bits").to_dict()
    assert list(fig["data"][0]["x"]) == [1.0, 2.5, 2.5]
    (line,) = fig["layout"]["shapes"]
    assert line["x0"] == line["x1"] == 2.0
