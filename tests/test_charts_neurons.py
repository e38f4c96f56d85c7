"""MLP neuron figures and snippet HTML, each built alone."""

from __future__ import annotations

import numpy as np

from ui.charts.neurons import direction_bars, neuron_heatmap, snippet_html, snippets_html


def test_neuron_heatmap_labels_and_centre():
    acts = np.array([[0.5, -0.1], [2.0, 0.0], [0.0, 1.0]])
    fig = neuron_heatmap(acts, ["0:a", "1:b", "2:c"], [7, 3])
    hm = fig.data[0]
    assert list(hm.x) == ["n7", "n3"] and list(hm.y) == ["0:a", "1:b", "2:c"]
    assert (hm.zmin, hm.zmax, hm.zmid) == (-2.0, 2.0, 0)
    np.testing.assert_array_equal(np.asarray(hm.z), acts)


def test_neuron_heatmap_names_every_token_of_a_60_token_prompt():
    labels = [f"{i}:t" for i in range(60)]  # plotly alone labelled every 2nd row here
    layout = neuron_heatmap(np.zeros((60, 8)), labels, list(range(8))).layout
    assert layout.yaxis.tickmode == "array" and list(layout.yaxis.tickvals) == labels
    assert list(layout.yaxis.ticktext) == labels
    # readable on a projector: a 10 px+ font on rows at least 6 px taller than it
    font = layout.yaxis.tickfont.size
    assert font >= 10 and (layout.height - 110) / 60 >= font + 6


def test_snippet_escapes_text_and_outlines_the_max_token():
    texts = ["<b>", " &", "\n", "x"]
    html = snippet_html(texts, np.array([0.0, 1.0, 3.0, -1.0]), position=2, peak=3.0)
    assert "<b>" not in html
    assert "&lt;b&gt;" in html and "&amp;" in html
    assert html.count("outline") == 1
    assert "↵" in html  # the newline token stays visible and on one line
    assert "rgba(214,39,40,0.75)" in html  # the peak token is the fullest red
    assert "rgba(214,39,40,0.00)" in html  # negative activations stay unshaded


def test_snippets_share_one_scale():
    rows = [(["a", "b"], np.array([1.0, 2.0]), 1), (["c", "d"], np.array([4.0, 0.5]), 0)]
    html = snippets_html(rows)
    assert html.count('class="snip"') == 2
    assert "rgba(214,39,40,0.38)" in html  # 2 of a shared peak of 4: half the red
    assert "<script" not in snippets_html([(["<script>alert(1)</script>"], np.array([1.0]), 0)])


def test_direction_bars_put_promoted_on_top():
    fig = direction_bars(["x", " y"], np.array([3.0, 2.0]), ["z", "w"], np.array([-4.0, -1.0]))
    bar = fig.data[0]
    assert list(bar.x) == [-1.0, -4.0, 2.0, 3.0]  # plotly draws the first bar at the bottom
    assert list(fig.layout.yaxis.ticktext) == ["w", "z", "␣y", "x"]


def test_a_peak_that_rounds_to_zero_is_not_shown_as_minus_zero():
    body = snippet_html(["a", "b"], np.array([-0.00004, -0.0003]), 0, 0.0)
    assert ">0.00</span>" in body and "-0.00" not in body.split('class="tok"')[0]
