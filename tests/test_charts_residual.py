"""Residual stream figures, each built alone from arrays and labels."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ui.charts.common import token_labels
from ui.charts.residual import (
    CELL_TEXT_MAX_T,
    attribution_waterfall,
    head_attribution_heatmap,
    logit_lens_grid,
    prediction_through_layers,
    resid_norm_heatmap,
    text_colour,
)

STATIONS = ["embed", "after block 0", "after block 1"]
SPAN = re.compile(r'^<span style="color:(#[0-9a-f]{6})">(.*)</span>$')


def _cell(text: str) -> str:
    """A lens cell's text without its colour span (the markup plotly draws)."""
    return SPAN.match(text).group(2)


PIECES = ["a", " b", "\n", "a"]
LABELS = token_labels(PIECES)


def test_resid_norm_heatmap_keeps_the_values_and_runs_down_the_stations():
    norms = np.arange(12, dtype=float).reshape(3, 4)
    fig = resid_norm_heatmap(norms, STATIONS, LABELS)
    hm = fig.data[0]
    np.testing.assert_array_equal(np.asarray(hm.z), norms)
    assert list(hm.y) == STATIONS and list(hm.x) == LABELS
    assert fig.layout.yaxis.autorange == "reversed"


def test_logit_lens_grid_writes_the_top_tokens_and_marks_hits():
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 0.95, 0.99, 1.0]])
    tokens = [["x", " ", "b", "a"], ["b", "\n", "a", "a"], ["b", "\n", "a", "z"]]
    fig = logit_lens_grid(probs, tokens, STATIONS, LABELS, next_tokens=[" b", "\n", "a", None])
    hm = fig.data[0]
    assert (hm.zmin, hm.zmax) == (0, 1)
    text = [[_cell(t) for t in r] for r in hm.text]
    assert text[0][1] == "␣"  # whitespace made visible
    assert text[1][1] == "<b>↵</b>" and text[2][2] == "<b>a</b>"  # guessed the real next token
    assert text[2][0] == "b"  # " b" was next, "b" is a different token
    assert hm.customdata[0][3][1] == "—"  # no next token after the last position


def test_logit_lens_grid_drops_cell_text_for_long_prompts():
    T = CELL_TEXT_MAX_T + 1
    fig = logit_lens_grid(np.zeros((2, T)), [["a"] * T] * 2, STATIONS[:2], token_labels(["a"] * T))
    assert fig.data[0].text is None


def test_prediction_through_layers_has_both_lines():
    fig = prediction_through_layers(
        np.array([0.01, 0.2, 0.9]), np.array([0.3, 0.4, 0.9]), ["q", "e", " "], STATIONS, " "
    )
    final = [t for t in fig.data if "final prediction" in t.name][0]
    np.testing.assert_allclose(final.y, [0.01, 0.2, 0.9])
    own = [t for t in fig.data if "own top guess" in t.name][0]
    assert list(own.text) == ["q", "e", "␣"]


def test_many_stations_alternate_short_labels_and_hover_the_whole_token():
    """13 stations (GPT-2's embed + 12 blocks): whole labels above every point ran together."""
    stations = ["embed"] + [f"after block {i}" for i in range(12)]
    tokens = [f"token{i:02d}-long" for i in range(13)]
    p = np.linspace(0, 1, 13)
    own = prediction_through_layers(p, p, tokens, stations, "x").data[0]
    assert all(len(t) <= 8 for t in own.text) and own.text[3] == "token03…"
    assert list(own.textposition[:2]) == ["bottom center", "top center"]
    assert list(own.customdata) == tokens and "%{customdata}" in own.hovertemplate
    few = prediction_through_layers(p[:3], p[:3], tokens[:3], stations[:3], "x").data[0]
    assert list(few.text) == tokens[:3] and few.textposition == "top center"


def test_waterfall_ends_at_the_logit():
    values = np.array([1.0, -0.5, 2.0, -0.25])
    fig = attribution_waterfall(["embed", "pos", "attn 0", "mlp 0"], values, 0.75, 3.0)
    wf = fig.data[0]
    assert list(wf.x) == ["embed", "pos", "attn 0", "mlp 0", "LN bias", "logit"]
    assert list(wf.measure) == ["relative"] * 5 + ["total"]
    assert sum(wf.y[:-1]) == pytest.approx(wf.y[-1])
    assert wf.increasing.marker.color != wf.decreasing.marker.color  # a push up reads apart


def test_head_heatmap_is_symmetric_around_zero():
    v = np.array([[0.5, -2.0], [1.0, 0.0]])
    fig = head_attribution_heatmap(v)
    hm = fig.data[0]
    assert (hm.zmin, hm.zmax, hm.zmid) == (-2.0, 2.0, 0)
    assert list(hm.x) == ["head 0", "head 1"] and list(hm.y) == ["layer 0", "layer 1"]


def test_logit_lens_grid_clips_long_tokens_but_hovers_them_whole():
    tokens = [["through", "a"] * 10]
    fig = logit_lens_grid(np.full((1, 20), 0.5), tokens, ["embed"], [str(i) for i in range(20)])
    hm = fig.data[0]
    assert _cell(hm.text[0][0]).endswith("…") and len(_cell(hm.text[0][0])) < len("through")
    assert _cell(hm.text[0][1]) == "a"
    assert hm.customdata[0][0][0] == "through"


def test_logit_lens_grid_keeps_short_tokens_like_unk_whole_and_escaped():
    T = CELL_TEXT_MAX_T  # the most positions with text: the narrowest cells
    tokens = [["<unk>", "a"] * (T // 2)]
    fig = logit_lens_grid(np.full((1, T), 0.5), tokens, ["embed"], [str(i) for i in range(T)])
    assert _cell(fig.data[0].text[0][0]) == "&lt;unk&gt;"  # whole, and text rather than a tag
    assert fig.data[0].customdata[0][0][0] == "&lt;unk&gt;"  # the hover too


def test_logit_lens_abbreviates_a_long_special_token_and_hovers_it_whole():
    T = CELL_TEXT_MAX_T  # cells of 2 characters: "<|assistant|>" would spill over its neighbours
    tokens = [["<|assistant|>", "b"] * (T // 2)]
    fig = logit_lens_grid(np.full((1, T), 0.5), tokens, ["embed"], [str(i) for i in range(T)])
    assert _cell(fig.data[0].text[0][0]) == "⟨a⟩"
    assert fig.data[0].customdata[0][0][0] == "&lt;|assistant|&gt;"


def test_logit_lens_text_is_dark_on_light_cells_and_white_on_dark_ones():
    probs = np.array([[0.0, 0.05, 0.95, 1.0]])  # Viridis: dark purple ... bright yellow
    fig = logit_lens_grid(probs, [["a", "b", "c", "d"]], ["embed"], LABELS)
    colours = [SPAN.match(t).group(1) for t in fig.data[0].text[0]]
    light = [_luminance(c) for c in colours]
    assert min(light[:2]) > 0.5 > max(light[2:])  # light text on the dark cells, dark on light


def _luminance(hex_colour: str) -> float:
    """0 (black) .. 1 (white): the mean of the sRGB channels, enough to tell light from dark."""
    return sum(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)) / (3 * 255)


def test_text_colour_follows_the_luminance_of_any_scale():
    dark_on_white, light_on_black = text_colour(np.array([0.0, 1.0]), "Greys")
    assert _luminance(dark_on_white) < 0.5 < _luminance(light_on_black)


def test_station_grids_label_every_position_only_while_there_is_room():
    def axis(n):
        labels = token_labels(["a"] * n)
        return resid_norm_heatmap(np.ones((3, n)), STATIONS, labels).layout.xaxis

    assert axis(20).tickmode == "array" and len(axis(20).tickvals) == 20
    assert axis(60).tickmode != "array"  # 60 labels in ~360 px: plotly thins them
