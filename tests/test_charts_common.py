"""The shared chart helpers."""

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
