"""The Using a model page's figures (ui/charts/usage.py), each built alone from arrays: what a
student sees (values, labels, order), not colours."""

from __future__ import annotations

import numpy as np

from ui.charts import usage as charts


def test_surprisal_bars_leave_the_first_token_empty():
    fig = charts.surprisal_bars(["0:a", "1:<b>", "2:c"], np.array([np.nan, 1.5, 0.2]), "t")
    bar = fig.data[0]
    assert list(bar.y) == [None, 1.5, 0.2] and list(bar.x) == ["0:a", "1:&lt;b&gt;", "2:c"]


def test_forced_lines_draw_both_runs_and_mark_the_forced_step():
    fig = charts.forced_lines(["x", "y"], np.array([0.1, 0.2]), ["z", "y"], np.array([5.0, 0.4]), 0)
    assert [t.name for t in fig.data] == ["greedy, nothing forced", "with the forced token"]
    assert list(fig.data[1].y) == [5.0, 0.4] and fig.layout.shapes[0].x0 == 1


def test_repetition_bars_show_shares_as_percentages():
    fig = charts.repetition_bars(["greedy", "sampling"], [0.4, float("nan")], [0.5, 0.9])
    assert list(fig.data[0].text) == ["40%", "–"] and list(fig.data[1].y) == [0.5, 0.9]


def test_the_beam_tree_starts_at_the_prompt_and_follows_the_best_beam():
    texts = [["a", "b"], ["ac", "bd"]]
    logps = [[-0.1, -0.5], [-0.9, -0.6]]
    parents = [[0, 0], [0, 1]]
    fig = charts.beam_tree(texts, logps, parents, [-0.1, -0.9])
    best = next(t for t in fig.data if t.name == "best beam")
    assert list(best.x) == [0, 1, 2] and list(best.y) == [0.0, -0.1, -0.9]
    greedy = next(t for t in fig.data if t.name == "greedy")
    assert list(greedy.y) == [0.0, -0.1, -0.9]


def test_score_bars_put_the_best_first():
    fig = charts.score_bars(["a", "b", "c"], [-3.0, -1.0, -2.0], "t", "x")
    assert list(fig.data[0].y) == ["b", "c", "a"] and list(fig.data[0].x) == [-1.0, -2.0, -3.0]


def test_the_fewshot_curve_draws_two_standard_errors_and_chance():
    fig = charts.fewshot_curve([0, 1], [0.2, 0.5], [0.01, 0.02], 0.375)
    assert list(fig.data[0].error_y.array) == [0.02, 0.04]
    assert fig.layout.shapes[0].y0 == 0.375


def test_channel_bars_stack_the_two_terms_in_the_given_order():
    fig = charts.channel_bars(["light", "night"], [-4.6, -9.2], [-8.4, -7.1])
    assert fig.layout.barmode == "relative"
    assert list(fig.data[0].y) == ["light", "night"] and list(fig.data[1].x) == [-8.4, -7.1]
