"""The next-token figures built alone: bars (cut ones greyed), chips (escaped), attention heatmap."""

from __future__ import annotations

import re

import numpy as np

from ui.charts.common import COLUMN_TICKS_MAX_T, TICK_FONT, plotly_labels
from ui.charts.next_token import (
    HIT_COLOUR,
    MISS_COLOUR,
    distinct_labels,
    distribution_bars,
    history_chips,
    layer_attention_heatmap,
    nll_bars,
    plotly_text,
    surprisal_chips,
)

LABELS = ["the", " cat", "\n", "the", "x"]
BASE = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
SCALED = np.array([0.5, 0.3, 0.12, 0.06, 0.02])
KEPT = np.array([True, True, False, False, False])
PROBS = np.where(KEPT, SCALED, 0) / SCALED[KEPT].sum()


def test_labels_show_whitespace_and_stay_distinct():
    labels = distinct_labels(LABELS)
    assert labels[1] == "␣cat" and labels[2] == "↵"
    assert len(set(labels)) == len(labels)


def test_bars_one_per_token_with_cut_ones_greyed():
    fig = distribution_bars(LABELS, BASE, SCALED, PROBS, KEPT, title="next")
    bars = [t for t in fig.data if t.type == "bar"]
    before, after = bars
    assert len(before.x) == len(after.x) == 5
    assert list(before.x) == distinct_labels(LABELS)
    np.testing.assert_allclose(before.y, SCALED)
    colours = list(before.marker.color)  # the kept tokens look alike, the cut ones are greyed
    assert colours[0] == colours[1] and colours[2] == colours[3] == colours[4]
    assert colours[1] != colours[2] and after.marker.color not in colours[2:]
    np.testing.assert_allclose(after.y, PROBS)
    assert sum(after.y[2:]) == 0 and abs(sum(after.y) - 1) < 1e-9
    ticks = [t for t in fig.data if t.type == "scatter" and t.x[0] is not None][0]
    np.testing.assert_allclose(ticks.y, BASE)
    (cut,) = [t for t in fig.data if t.name.startswith("cut")]  # the legend says what grey is
    assert cut.showlegend is not False and cut.marker.color == colours[2]


def test_bars_without_cuts_have_no_grey_and_no_cut_legend():
    kept = np.ones(5, dtype=bool)
    fig = distribution_bars(LABELS, BASE, SCALED, SCALED, kept)
    assert len(set(fig.data[0].marker.color)) == 1  # nothing greyed
    assert not any(t.name.startswith("cut") for t in fig.data)


def test_surprisal_chips_escape_text_and_grey_the_first_token():
    pieces = ["<b>", " &", "x"]
    out = surprisal_chips(pieces, np.array([np.nan, 0.1, 3.0]))
    assert "<b>" not in out.replace('<div class="chips"', "") and "&lt;b&gt;" in out
    assert "␣&amp;" in out
    chips = re.findall(r'<span class="chip"[^>]*style="background:(#[0-9a-f]{6})', out)
    assert len(chips) == 3
    assert chips[0] == "#f0f0f0" and chips[1] != chips[2]  # low and high surprisal differ
    assert "legend" in out and "nats" in out


def test_history_chips_mark_forced_tokens():
    out = history_chips(["a", "b"], ["c", "d", "e"], [0.9, 0.01, 0.5], [False, True, False])
    assert out.count('class="chip"') == 5
    assert out.count("*</sup>") == 1 and out.count("dashed #000") == 1
    assert "forced by you" in out and "step 2" in out


def test_layer_attention_heatmap_shape_and_labels():
    w = np.random.default_rng(0).random((3, 6))
    fig = layer_attention_heatmap(w, ["L0", "L1", "L2"], [f"{i}:t" for i in range(6)], "att")
    hm = fig.data[0]
    assert np.asarray(hm.z).shape == (3, 6) and list(hm.y) == ["L0", "L1", "L2"]
    assert hm.zmin == 0 and len(hm.x) == 6


def test_cut_labels_are_greyed_and_escaped_and_log_scale_reaches_the_smallest():
    fig = distribution_bars(
        ["<", "b", "c"],
        [0.9, 0.09, 1e-6],
        [0.9, 0.09, 1e-6],
        [1, 0, 0],
        [True, False, False],
        log_y=True,
    )
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[0] == "&lt;" and "color" in ticks[1] and "color" not in ticks[0]
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.range[0] <= -6


def test_tick_labels_keep_quotes_and_escape_only_what_plotly_reads_as_html():
    # plotly turns &lt; &gt; &amp; back into characters, but shows &quot; literally
    labels = ['"', "'", "<", "&", "a"]
    fig = distribution_bars(
        labels,
        [0.5, 0.2, 0.1, 0.1, 0.1],
        [0.5, 0.2, 0.1, 0.1, 0.1],
        [0.5, 0.2, 0.1, 0.1, 0.1],
        [True] * 5,
    )
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[:4] == ['"', "'", "&lt;", "&amp;"]
    assert not any("&quot;" in t or "&#x27;" in t for t in ticks)
    cut = distribution_bars(['"'], [1.0], [1.0], [0.0], [False]).layout.xaxis.ticktext[0]
    assert "&quot;" not in cut and '>"</span>' in cut
    assert plotly_text('"<b>"') == '"&lt;b&gt;"'


def test_attention_heatmap_labels_every_key_when_there_is_room():
    for n in (6, COLUMN_TICKS_MAX_T):
        cols = [f'{i}:"' if i % 2 else f"{i}:<" for i in range(n)]
        xaxis = layer_attention_heatmap(np.ones((2, n)), ["L0", "L1"], cols).layout.xaxis
        # Escaped once, as values: the ticks and the hover both show "<" as typed.
        assert xaxis.tickmode == "array" and list(xaxis.tickvals) == plotly_labels(cols)
        assert xaxis.ticktext[1] == '1:"' and xaxis.ticktext[0] == "0:&lt;"
    cols = [f"{i}:t" for i in range(2 * COLUMN_TICKS_MAX_T + 10)]
    xaxis = layer_attention_heatmap(np.ones((1, len(cols))), ["L0"], cols).layout.xaxis
    assert len(xaxis.tickvals) <= COLUMN_TICKS_MAX_T and xaxis.tickvals[0] == cols[0]
    assert "every 3 tokens" in xaxis.title.text


def test_bars_legend_sits_below_the_plot_clear_of_the_title():
    # Above the plot it wrapped to two rows at 1024 px and ran into the title (issue 9, item 7).
    legend = distribution_bars(LABELS, BASE, SCALED, PROBS, KEPT, title="next").layout.legend
    assert legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"


def test_attention_heatmap_of_a_60_token_text_labels_every_other_key_at_the_floor():
    cols = [f"{i}:t" for i in range(60)]
    fig = layer_attention_heatmap(np.ones((4, 60)), [f"layer {i}" for i in range(4)], cols)
    xaxis = fig.layout.xaxis
    assert list(xaxis.tickvals) == cols[::2] and xaxis.tickangle == -90
    # 60 labels at 8 px were unreadable on a projector: half of them at the 12 px floor
    assert xaxis.tickfont.size == TICK_FONT == 12
    assert "every 2 tokens" in xaxis.title.text
    assert fig.data[0].colorbar.orientation == "h"  # beside the plot it took ~100 px of 560


def test_chips_keep_each_word_on_one_line():
    out = history_chips(["b", "re", "aks", " what"], [" now", "!"], [0.5, 0.5], [False, False])
    words = out.split('<span style="white-space:nowrap">')[1:]
    chips_per_word = [w.count('class="chip"') for w in words]
    assert chips_per_word == [3, 1, 2]  # "breaks", " what", " now!"
    out = surprisal_chips(["a", "b", "\n", "c"], np.array([np.nan, 1.0, 2.0, 0.5]))
    assert out.count("white-space:nowrap") == 3 and out.count('class="chip"') == 4  # ab | ↵ | c


def test_bar_labels_turn_only_when_they_would_not_fit():
    flat = distribution_bars(
        [chr(97 + i) for i in range(20)], *[np.full(20, 0.05)] * 3, np.ones(20, bool)
    )
    assert flat.layout.xaxis.tickangle == 0
    long = [f"␣word{i}" for i in range(20)]
    turned = distribution_bars(long, *[np.full(20, 0.05)] * 3, np.ones(20, bool))
    assert turned.layout.xaxis.tickangle == -45
    # 20 BPE pieces of three characters fit 900 px but ran together at 1024 px (a ~500 px plot)
    bpe = [f"␣{chr(97 + i)}{chr(98 + i)}" for i in range(20)]
    assert (
        distribution_bars(bpe, *[np.full(20, 0.05)] * 3, np.ones(20, bool)).layout.xaxis.tickangle
        == -45
    )


def test_the_loss_bars_colour_hits_and_draw_the_loss_and_blind_guess_lines():
    nll = np.array([0.1, 2.0, 0.7])
    fig = nll_bars(["1:a", "2:b", "3:c"], nll, np.array([1.0, 0.0, 1.0]), 0.93, 3.14, "t")
    traces = {t.name: t for t in fig.data}
    hit, miss = traces["top token was the next token"], traces["it was not"]
    assert list(hit.x) == ["1:a", "3:c"] and list(miss.x) == ["2:b"]
    assert hit.marker.color == HIT_COLOUR and miss.marker.color == MISS_COLOUR
    assert np.allclose(hit.customdata, np.exp(-np.array([0.1, 0.7])))  # p(next) on hover
    assert list(traces["mean = the loss 0.93"].y) == [0.93, 0.93]
    assert list(traces["blind guess ln V 3.14"].y) == [3.14, 3.14]
    assert list(fig.layout.xaxis.ticktext) == ["1:a", "2:b", "3:c"]  # every position labelled
    # all hits: no empty "it was not" trace in the legend
    names = [t.name for t in nll_bars(["1:a"], np.array([0.2]), np.array([1.0]), 0.2, 3.1, "").data]
    assert "it was not" not in names
