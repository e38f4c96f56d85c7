"""The shared chart helpers."""

import pytest

from ui.charts.common import show_whitespace, token_labels
from viz_model.analysis.claims import md_escape


def test_token_labels_stay_distinct_when_tokens_repeat():
    labels = token_labels(["the", " cat", "the", "\n"])
    assert len(set(labels)) == 4
    assert labels[1] == "1:␣cat" and labels[3] == "3:↵"


def test_show_whitespace_makes_empty_and_blank_visible():
    assert show_whitespace("") == "∅"
    assert show_whitespace(" \t") == "␣⇥"


def test_controls_show_as_code_points_in_labels_and_markdown_and_scripts_stay():
    # a right-to-left override or isolate would reorder whatever is drawn after it
    assert show_whitespace("a\u202eb \u2066\x07\u2028") == "a<202e>b␣<2066><07><2028>"
    assert md_escape("x\u202e*") == "x\\<202e\\>\\*"
    kept = "שָׁלוֹם مرحبا 👨\u200d👩\u200d👧 e\u0301"  # right-to-left letters, emoji joiners, accents
    assert show_whitespace(kept) == kept.replace(" ", "␣") and md_escape(kept) == kept


def test_unknown_positions_are_marked_and_keep_what_was_typed():
    labels = token_labels(["R", "o", " ", "R"], unknown=[0, 2])
    assert labels == ["0:«R»", "1:o", "2:«␣»", "3:R"]  # same text, marked only where unknown


def test_every_chart_of_the_students_tokens_escapes_them_for_plotly():
    """Plotly reads <b>, <a href> and <br> in labels: a token typed as markup must stay text."""
    import json

    import numpy as np

    from ui.charts.attention import attention_lines, pattern_grid, pattern_heatmap, query_weights
    from ui.charts.layernorm import ln_stats_per_token
    from ui.charts.neurons import direction_bars, neuron_heatmap
    from ui.charts.next_token import layer_attention_heatmap
    from ui.charts.residual import prediction_through_layers, resid_norm_heatmap

    labels = ["0:<b>bold", "1:<a href=x>", "2:ok"]
    p = np.tril(np.full((3, 3), 1 / 3))
    figures = {
        "pattern_heatmap": pattern_heatmap(p, labels),
        "pattern_grid": pattern_grid(np.stack([np.stack([p])]), labels),
        "attention_lines": attention_lines(p, labels, query=2),
        "query_weights": query_weights(p[2], labels, 2),
        "ln_stats_per_token": ln_stats_per_token(np.ones(3), np.ones(3), labels, 0),
        "neuron_heatmap": neuron_heatmap(np.ones((3, 2)), labels, [0, 1]),
        "resid_norm_heatmap": resid_norm_heatmap(np.ones((2, 3)), ["a", "b"], labels),
        "layer_attention_heatmap": layer_attention_heatmap(np.ones((2, 3)), ["a", "b"], labels),
        "direction_bars": direction_bars(labels[:2], np.ones(2), labels[2:], -np.ones(1)),
        "prediction_through_layers": prediction_through_layers(
            np.ones(3) / 2, np.ones(3) / 2, labels, ["a", "b", "c"], labels[0]
        ),
    }
    for name, fig in figures.items():
        text = json.dumps(fig.to_plotly_json())
        assert "<b>bold" not in text and "<a href" not in text, name
        assert "&lt;b&gt;bold" in text, name


# ---- series colours, direct labels, the legend below (issue 38: a projector) -------------------


def test_the_series_palette_keeps_hues_apart_and_dark_enough_for_a_washed_out_projector():
    import itertools

    from ui.charts.common import (
        CONTRAST_MIN,
        FEW_SERIES,
        MIN_HUE_GAP,
        SERIES_COLOURS,
        contrast_on_white,
        hue_degrees,
        hue_gap,
    )

    assert len(SERIES_COLOURS) > FEW_SERIES  # room for a chart's own marks besides its series
    assert all(hue_degrees(c) is not None for c in SERIES_COLOURS)  # grey is for context only
    for a, b in itertools.combinations(SERIES_COLOURS, 2):
        assert hue_gap(a, b) >= MIN_HUE_GAP, (a, b)
    assert all(contrast_on_white(c) >= CONTRAST_MIN for c in SERIES_COLOURS)
    assert contrast_on_white("#ffffff") == 1 and round(contrast_on_white("#000000")) == 21
    assert hue_gap("#ff0000", "#ff0011") < 5 and hue_gap("#ff0000", "#808080") == 360


def test_series_colours_avoid_the_hues_a_chart_already_spends_and_refuse_to_repeat_one():
    import pytest

    from ui.charts.common import MIN_HUE_GAP, SERIES_COLOURS, hue_gap, series_colours

    red = "#d62728"
    picked = series_colours(3, taken=[red])
    assert len(set(picked)) == 3 and all(hue_gap(c, red) >= MIN_HUE_GAP for c in picked)
    assert series_colours(2) == list(SERIES_COLOURS[:2])  # in the palette's order
    far = series_colours(len(SERIES_COLOURS) - 2, taken=SERIES_COLOURS[:2], farthest=True)
    gaps = [min(hue_gap(c, t) for t in SERIES_COLOURS[:2]) for c in far]
    assert gaps == sorted(gaps, reverse=True)  # the farthest hue first
    with pytest.raises(ValueError):
        series_colours(len(SERIES_COLOURS) + 1)


@pytest.mark.parametrize(
    "values",
    [[], [0.3], [0.5, 0.5, 0.5], [0.0, 0.01, 0.02, 1.0], [1.0, 0.0, 0.5], [0.9, 0.91, 0.1, 0.12]],
)
def test_spread_labels_keep_their_order_and_a_gap_and_move_no_more_than_they_must(values):
    from ui.charts.common import spread

    gap = 0.1
    placed = spread(values, gap)
    assert len(placed) == len(values)
    ranked = sorted(range(len(values)), key=lambda i: (values[i], i))
    ys = [placed[i] for i in ranked]
    assert all(b - a >= gap - 1e-9 for a, b in zip(ys, ys[1:], strict=False))
    assert all(abs(p - v) <= gap * len(values) for p, v in zip(placed, values, strict=True))
    if all(abs(a - b) >= gap for a, b in zip(sorted(values), sorted(values)[1:], strict=False)):
        assert placed == pytest.approx(values)  # labels already apart stay where they are
    inside = spread(values, gap, bounds=(0.0, 1.0))  # plotly hides a label off its axis
    assert all(-1e-9 <= y <= 1 + 1e-9 for y in inside)
    ys = sorted(inside)
    assert all(b - a >= gap - 1e-9 for a, b in zip(ys, ys[1:], strict=False))


def test_end_labels_name_each_line_in_its_colour_right_of_its_end():
    from ui.charts.common import end_labels, label_margin

    labels = end_labels(
        ["L1 H2", "L0 H3"], 40, [0.8, 0.79], ["#1f5fbf", "#1b7f3b"], 0.2, "x2", "y2"
    )
    assert [a["text"] for a in labels] == ["<b>L1 H2</b>", "<b>L0 H3</b>"]
    assert all(a["x"] == 40 and a["xanchor"] == "left" and a["yref"] == "y2" for a in labels)
    assert [a["font"]["color"] for a in labels] == ["#1f5fbf", "#1b7f3b"]
    assert labels[0]["y"] - labels[1]["y"] >= 0.2 - 1e-9  # pulled apart, in order
    assert label_margin(["L1 H2", "second copy"]) > label_margin(["L1 H2"]) > 0


def test_legend_below_is_measured_in_the_container_not_the_plot():
    from ui.charts.common import TICK_FONT, legend_below

    legend = legend_below(title=dict(text="kept"))
    assert legend["yref"] == "container" and legend["y"] == 0 and legend["yanchor"] == "bottom"
    assert legend["orientation"] == "h" and legend["font"]["size"] >= TICK_FONT
    assert legend["title"] == {"text": "kept"}
