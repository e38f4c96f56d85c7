"""The n-gram figures: what each trace holds, the undefined count ratio left out, and every piece
of corpus or student text escaped."""

from __future__ import annotations

import numpy as np

from ui.charts import ngrams as charts
from viz_model.analysis.ngrams import Snippet


def test_order_chart_draws_models_and_each_gpt_as_a_level_line():
    fig = charts.order_chart([1, 2, 3], {"Kneser-Ney": [3.0, 2.0, 1.5]}, {"a<b>": 1.2}, "bits", "t")
    names = [t.name for t in fig.data]
    assert names == ["Kneser-Ney", "GPT a&lt;b&gt;: 1.20"]
    assert list(fig.data[1].y) == [1.2, 1.2] and list(fig.data[1].x) == [1, 3]


def test_estimate_bars_leave_out_an_undefined_count_ratio():
    defined = charts.estimate_bars(["a", " "], [0.5, 0.5], [0.4, 0.4], [0.3, 0.6], "t")
    undefined = charts.estimate_bars(["a", " "], None, [0.4, 0.4], [0.3, 0.6], "t")
    assert [t.name for t in defined.data][0] == "count ratio"
    assert "count ratio" not in [t.name for t in undefined.data]
    assert list(defined.data[0].y) == ["“a”", "“␣”"]


def test_contribution_chart_compounds_the_log_probabilities():
    log_p = np.log([np.nan, 0.5, 0.1, 0.5])
    fig = charts.contribution_chart(["0:a", "1:b", "2:c", "3:d"], log_p, "t")
    bars, running = fig.data
    assert np.isnan(bars.y[0]) and bars.y[1] == -1.0  # log2 0.5
    assert running.y[-1] == np.log10(0.5 * 0.1 * 0.5)


def test_snippets_and_spans_escape_text():
    s = Snippet("<script>", "<b>", "&", "</div>", 3, "training")
    out = charts.snippets_html([s])
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;" in out
    chips = charts.span_chips(["<i>", "x"], [True, False], first_generated=1)
    assert "<i>" not in chips and "&lt;i&gt;" in chips
    assert chips.count(charts.MATCH_BG) >= 2  # the covered chip and the legend
