"""Sequence-model figures: no two series of a chart share a hue, even when two models of one
family are drawn (the model on screen beside the GPT standing for its family, issue 38), and a
family keeps its colour from chart to chart."""

from __future__ import annotations

import itertools

import numpy as np

from ui.charts.common import CONTRAST_MIN, MIN_HUE_GAP, contrast_on_white, hue_gap
from ui.charts.sequence_models import bpc_bars, cost_chart, cost_curves_chart, reach_chart

KINDS = {
    "shakespeare-tiny": "GPT",
    "shakespeare-rnn": "RNN",
    "shakespeare-lstm": "LSTM",
    "shakespeare-gru": "GRU",
    "shakespeare-cnn": "causal CNN",
    "shakespeare-char": "GPT",  # the model on screen, on another budget: a second GPT line
}


def _profiles() -> dict[str, np.ndarray]:
    k = np.arange(32)
    return {name: np.exp(-k / (3 + i)) for i, name in enumerate(KINDS)}


def _line_colours(fig) -> dict[str, str]:
    return {t.name: t.line.color for t in fig.data}


def _assert_apart(colours: dict[str, str]) -> None:
    for (a, ca), (b, cb) in itertools.combinations(colours.items(), 2):
        assert hue_gap(ca, cb) >= MIN_HUE_GAP, f"{a} and {b} share a hue: {ca}, {cb}"
    for name, colour in colours.items():  # a pale line vanishes on a washed-out projector
        assert contrast_on_white(colour) >= CONTRAST_MIN, f"{name}: {colour} is too pale"


def test_two_gpt_lines_on_the_reach_chart_are_in_hues_apart_from_each_other_and_the_rest():
    fig = reach_chart(_profiles(), KINDS, {"shakespeare-cnn": 16}, 0.01)
    colours = _line_colours(fig)
    assert len(colours) == len(KINDS)
    _assert_apart(colours)
    gpts = [t for t in fig.data if "(GPT)" in t.name]
    assert len(gpts) == 2 and gpts[0].line.dash != gpts[1].line.dash  # the second one dashed
    (field,) = [s for s in fig.layout.shapes if s.line.dash == "dot"]  # the CNN's field
    assert field.line.color == colours["shakespeare-cnn (causal CNN)"]


def test_the_cost_chart_and_the_bars_keep_every_family_in_its_own_hue():
    lengths = (16, 64, 256)
    series = {name: [float(i + 1)] * len(lengths) for i, name in enumerate(KINDS)}
    _assert_apart(_line_colours(cost_chart(lengths, series, KINDS, "numbers", "memory")))
    names = list(KINDS)
    bars = bpc_bars(names, [KINDS[n] for n in names], [2.0 + i / 10 for i in range(len(names))])
    by_label = dict(zip(bars.data[0].y, bars.data[0].marker.color, strict=True))
    _assert_apart(by_label)


def test_a_family_has_the_same_colour_in_every_chart_of_the_page():
    one_each = {n: k for n, k in KINDS.items() if n != "shakespeare-char"}
    reach = _line_colours(reach_chart(_profiles(), KINDS, {}, 0.01))
    cost = _line_colours(cost_chart((16, 64), {n: [1.0, 2.0] for n in one_each}, one_each, "", ""))
    names = list(one_each)
    bars = bpc_bars(names, [one_each[n] for n in names], [2.0] * len(names)).data[0]
    bar_colours = dict(zip(bars.y, bars.marker.color, strict=True))
    for name, kind in one_each.items():
        label = f"{name} ({kind})"
        assert reach[label] == cost[label] == bar_colours[label], label


def test_the_cost_curves_chart_draws_each_series_log_log_with_every_t_labelled():
    lengths = [64, 128, 256]
    fig = cost_curves_chart(
        lengths,
        ["GPT: training step", "LSTM: training step", "GPT: forward"],
        ["GPT", "LSTM", "GPT"],
        [[1.0, 2.0, 4.0], [2.0, 4.0, 8.0], [0.5, 1.0, 2.0]],
        ["solid", "solid", "dot"],
        "milliseconds (log)",
        "Time against context length",
    )
    assert [t.name for t in fig.data] == [
        "GPT: training step",
        "LSTM: training step",
        "GPT: forward",
    ]
    assert list(fig.data[1].y) == [2.0, 4.0, 8.0] and list(fig.data[0].x) == lengths
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["64", "128", "256"]
    # a family keeps its hue across its two measures; the measures differ by dash
    assert fig.data[0].line.color == fig.data[2].line.color != fig.data[1].line.color
    assert fig.data[0].line.dash != fig.data[2].line.dash
