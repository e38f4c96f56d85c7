"""Attention figures, each built alone from arrays and labels."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.charts.attention import (
    LINE_BINS,
    LINES_MAX_T,
    MASK_NOTE,
    attention_lines,
    lines_window,
    masked_cells,
    pattern_grid,
    pattern_heatmap,
    query_weights,
)
from ui.charts.common import COLUMN_TICKS_MAX_T, token_labels
from viz_model.model.mask import hidden_keys

PIECES = ["the", " cat", " sat", " on", "the", " mat"]  # "the" repeats
T = len(PIECES)


def _pattern(T: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = np.where(hidden_keys(True, T), 0.0, rng.random((T, T)))
    return p / p.sum(-1, keepdims=True)


def _scores(T: int) -> np.ndarray:
    s = np.random.default_rng(1).normal(size=(T, T)) * 3
    return np.where(hidden_keys(True, T), -np.inf, s)


def _heatmaps(fig: go.Figure) -> list[go.Heatmap]:
    return [t for t in fig.data if t.type == "heatmap"]


def test_pattern_heatmap_has_values_and_a_visible_mask_layer():
    labels = token_labels(PIECES)
    fig = pattern_heatmap(_pattern(T), labels, query=2)
    mask, values = _heatmaps(fig)
    assert list(values.x) == labels and list(values.y) == labels
    assert len(set(values.x)) == T  # the repeated "the" stays two distinct columns
    z = np.array(values.z, dtype=float)
    m = np.array(mask.z, dtype=float)
    upper = hidden_keys(True, T)
    assert np.isnan(z[upper]).all() and np.isfinite(z[~upper]).all()
    assert (m[upper] == 1).all() and np.isnan(m[~upper]).all()
    # hidden cells are one flat colour with no colour bar, and the legend says what it means
    assert mask.colorscale[0][1] == mask.colorscale[-1][1] and not mask.showscale
    assert any(t.name == MASK_NOTE and t.showlegend for t in fig.data)
    assert values.zmin == 0 and values.zmax == 1
    assert fig.layout.yaxis.autorange == "reversed"  # query 0 at the top
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].y0 == 1.5  # row 2 outlined


def test_scores_heatmap_keeps_minus_infinity_out_of_the_colour_scale():
    s = _scores(T)
    fig = pattern_heatmap(s, token_labels(PIECES), scores=True)
    _, values = _heatmaps(fig)
    z = np.array(values.z, dtype=float)
    assert not np.isinf(z).any() and np.isnan(z[hidden_keys(True, T)]).all()
    bound = np.abs(s[~hidden_keys(True, T)]).max()
    assert values.zmin == -bound and values.zmax == bound and values.zmid == 0
    fig.to_json()  # serialisable: no -inf left anywhere


def test_heatmap_writes_numbers_only_for_short_prompts():
    short = _heatmaps(pattern_heatmap(_pattern(4), token_labels(list("abcd"))))[1]
    long = _heatmaps(pattern_heatmap(_pattern(40), token_labels(list("x" * 40))))[1]
    assert short.texttemplate and not long.texttemplate


def test_heatmap_grows_with_the_prompt_and_labels_every_row_at_60_in_12_px():
    heights = []
    for n in (10, 30, 60):
        fig = pattern_heatmap(_pattern(n), token_labels(list("ab" * n)[:n]))
        heights.append(fig.layout.height)
        assert fig.layout.xaxis.tickfont.size >= 12 and fig.layout.yaxis.tickfont.size >= 12
    assert heights[0] < heights[1] < heights[2]
    assert heights[2] >= 60 * 15  # 15 px a row: 60 labels of 12 px do not collide
    labels = token_labels(list("ab" * 30))
    fig = pattern_heatmap(_pattern(60), labels)
    rows, columns = fig.layout.yaxis, fig.layout.xaxis
    assert rows.tickmode == "array" and list(rows.tickvals) == labels  # no row skipped
    assert list(rows.ticktext) == labels
    # across, a column has room for fewer 12 px labels: plotly writes as many as fit
    assert columns.tickmode != "array" and len(labels) > COLUMN_TICKS_MAX_T


def test_lines_window_keeps_the_query_and_at_most_its_size():
    for T, query in ((5, 4), (128, 127), (128, 0), (128, 60), (24, 10)):
        first, end = lines_window(T, query)
        assert first <= query < end <= T and end - first == min(T, LINES_MAX_T)


def test_pattern_grid_is_one_figure_with_layers_times_heads_subplots():
    L, H = 3, 4
    patterns = np.stack([[_pattern(T, seed=i * H + h) for h in range(H)] for i in range(L)])
    fig = pattern_grid(patterns, token_labels(PIECES), selected=(1, 2))
    heatmaps = _heatmaps(fig)
    assert len(heatmaps) == L * H
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:2] == ["L0 H0", "L0 H1"] and titles[-1] == "L2 H3"
    assert titles[1 * H + 2] == "<b>L1 H2</b>"  # the selected head's title stands out
    assert fig.layout.annotations[6].font.color != fig.layout.annotations[5].font.color
    axes = {(h.xaxis, h.yaxis) for h in heatmaps}
    assert len(axes) == L * H  # each head on its own axes
    np.testing.assert_allclose(
        np.array(heatmaps[5].z, dtype=float), np.where(hidden_keys(True, T), np.nan, patterns[1, 1])
    )
    # NaN cells show the background: the same grey as the hidden cells of one head's heatmap
    one = _heatmaps(pattern_heatmap(_pattern(T), token_labels(PIECES)))[0]
    assert fig.layout.plot_bgcolor == one.colorscale[0][1]
    assert all(h.coloraxis == "coloraxis" for h in heatmaps)


def test_attention_lines_draw_one_segment_per_weight_above_the_cut():
    p = _pattern(T)
    fig = attention_lines(p, token_labels(PIECES), query=3, min_weight=0.05)
    lines = [t for t in fig.data if t.mode == "lines"]
    n_segments = sum(list(t.x).count(None) for t in lines)
    assert n_segments == int(((p >= 0.05) & ~hidden_keys(True, T)).sum())
    # each segment runs from a query on the left (x=0) to a key on the right no later than it
    for t in lines:
        xs, ys = list(t.x), list(t.y)
        for i in range(0, len(xs), 3):
            assert xs[i : i + 2] == [0, 1] and ys[i + 1] <= ys[i]
    # heavier bins are wider; the chosen query's lines, and only they, stand out in their colour
    starts = [set(list(t.y)[0::3]) for t in lines]
    chosen = [t for t, s in zip(lines, starts, strict=True) if s == {3}]
    plain = [t for t, s in zip(lines, starts, strict=True) if s != {3}]
    widths = [t.line.width for t in plain]
    assert widths == sorted(widths) and len(plain) <= LINE_BINS
    assert chosen and {t.line.color for t in chosen}.isdisjoint(t.line.color for t in plain)
    tokens = [t for t in fig.data if t.mode == "markers+text"]
    assert [list(t.text) for t in tokens] == [token_labels(PIECES)] * 2


def test_attention_lines_of_a_one_hot_pattern_draw_exactly_t_lines():
    p = np.eye(T)
    fig = attention_lines(p, token_labels(PIECES))
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 1 and list(lines[0].x).count(None) == T


def test_query_weights_grey_out_the_masked_keys():
    p = _pattern(T)
    fig = query_weights(p[2], token_labels(PIECES), query=2)
    bar = fig.data[0]
    colours = list(bar.marker.color)  # the later keys are greyed and say why
    assert len(set(colours[3:])) == 1 and colours[3] not in colours[:3]
    assert list(bar.text[3:]) == ["masked"] * 3
    np.testing.assert_allclose(np.array(bar.y[:3]), p[2, :3])


def test_highlight_and_outline_copies_equal_a_fresh_build():
    """The cheap copies the page draws from cached figures equal figures built with the choice."""
    import json

    import plotly.io as pio

    from ui.charts.attention import highlight_head, outline_query

    def spec(fig):
        return json.loads(pio.to_json(fig, validate=False))

    labels = token_labels(PIECES)
    patterns = np.stack([[_pattern(T, seed=i * 3 + h) for h in range(3)] for i in range(2)])
    grid = pattern_grid(patterns, labels)
    assert spec(highlight_head(grid, 1, 2)) == spec(pattern_grid(patterns, labels, selected=(1, 2)))
    assert spec(grid) == spec(pattern_grid(patterns, labels))  # the cached figure is not changed
    heatmap = pattern_heatmap(patterns[0, 1], labels)
    assert spec(outline_query(heatmap, 4)) == spec(pattern_heatmap(patterns[0, 1], labels, query=4))
    assert not heatmap.layout.shapes


def _unmasked_pattern(T: int, seed: int = 0) -> np.ndarray:
    p = np.random.default_rng(seed).random((T, T))
    return p / p.sum(-1, keepdims=True)


def test_without_the_causal_mask_no_cell_is_grey_and_the_future_is_drawn():
    """shakespeare-nomask puts most of its weight on later tokens: those are real weights."""
    p, labels = _unmasked_pattern(T), token_labels(PIECES)
    for causal in (False, None):  # said, or read from the values (nothing is 0 above)
        fig = pattern_heatmap(p, labels, causal=causal)
        mask, values = _heatmaps(fig)
        np.testing.assert_allclose(np.array(values.z, dtype=float), p, rtol=1e-6)
        assert np.isnan(np.array(mask.z, dtype=float)).all()
        assert not any(t.name == MASK_NOTE for t in fig.data)
    grid = pattern_grid(np.stack([[p, p]]), labels, causal=False)
    assert not np.isnan(np.array(_heatmaps(grid)[1].z, dtype=float)).any()
    assert not any(t.name == MASK_NOTE for t in grid.data)
    lines = attention_lines(p, labels, min_weight=0.0, causal=False)
    segments = [t for t in lines.data if t.mode == "lines"]
    assert sum(list(t.x).count(None) for t in segments) == T * T  # later keys too
    bars = query_weights(p[2], labels, query=2, causal=False).data[0]
    assert len(set(bars.marker.color)) == 1 and "masked" not in list(bars.text)  # none greyed
    np.testing.assert_allclose(np.array(bars.y), p[2])


def test_a_causal_pattern_is_read_as_masked_and_said_causal_wins():
    p = _pattern(T)
    assert (masked_cells(p) == hidden_keys(True, T)).all()
    assert (masked_cells(_scores(T)) == hidden_keys(True, T)).all()
    assert not masked_cells(_unmasked_pattern(T)).any()
    assert not masked_cells(p, causal=False).any()  # what the config says decides
