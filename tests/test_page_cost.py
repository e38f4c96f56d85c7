"""What a page view costs the server, pinned as structure (never as time): the classroom config,
and bounds on the payloads of the largest figures (benchmarks/bench_page_cost.py measures both)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_classroom_config_skips_the_full_gc_after_every_run():
    # Streamlit's default (true) walks every live object after each script run: ~45 ms of every
    # page view once Training's imports are in memory. The generational collector still runs.
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False


def test_a_frozen_figure_draws_the_same_json_and_keeps_its_dict():
    import json

    import numpy as np
    import plotly.io as pio

    from ui.charts.attention import pattern_heatmap
    from ui.charts.common import FrozenFigure, frozen

    fig = pattern_heatmap(np.tril(np.full((5, 5), 0.2)), [f"{i}:a" for i in range(5)])
    ice = frozen(fig)
    assert isinstance(ice, FrozenFigure) and frozen(ice) is ice
    assert json.loads(pio.to_json(ice, validate=False)) == json.loads(pio.to_json(fig))
    spec = ice.to_dict()
    spec["data"][0]["name"], spec["layout"]["height"] = "changed", 1
    assert ice.to_dict()["data"][0]["name"] == "masked" and ice.to_dict()["layout"]["height"] > 1
    assert len(ice.data) == 3  # still a figure whose traces can be read


def test_the_attention_grid_sends_float32_cells():
    # 4 layers x 4 heads of a 57-token prompt (Shakespeare's default): 850 kB a view before, most
    # of it this grid's float64 cells (base64, ~10.7 bytes a cell); float32 is ~5.3.
    import json

    import numpy as np
    import plotly.io as pio

    from ui.charts.attention import pattern_grid

    L, H, T = 4, 4, 57
    patterns = np.random.default_rng(0).dirichlet(np.ones(T), size=(L, H, T))
    spec = json.loads(pio.to_json(pattern_grid(patterns, [f"{i}:x" for i in range(T)])))
    heatmaps = [t for t in spec["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == L * H and all(t["z"]["dtype"] == "f4" for t in heatmaps)
    assert len(json.dumps(spec)) / (L * H * T * T) < 7


def test_the_attention_grid_is_laid_out_as_make_subplots_would():
    # pattern_grid builds its layout as plain dicts (57 -> 4 ms for 4 x 4 heads): same domains,
    # anchors and title positions as plotly's own make_subplots, for several grid shapes.
    import numpy as np
    from plotly.subplots import make_subplots

    from ui.charts.attention import pattern_grid

    for L, H in [(1, 1), (2, 3), (4, 4), (6, 8)]:
        grid = pattern_grid(np.full((L, H, 3, 3), 1 / 3)).to_dict()["layout"]
        reference = make_subplots(
            rows=L,
            cols=H,
            subplot_titles=[f"L{i} H{j}" for i in range(L) for j in range(H)],
            horizontal_spacing=min(0.02, 0.5 / max(H - 1, 1)),
            vertical_spacing=min(0.06, 0.5 / max(L - 1, 1)),
        ).to_dict()["layout"]
        for name, axis in reference.items():
            if name.startswith(("xaxis", "yaxis")):
                assert grid[name]["anchor"] == axis["anchor"]
                np.testing.assert_allclose(grid[name]["domain"], axis["domain"], atol=1e-12)
        for ours, theirs in zip(grid["annotations"], reference["annotations"], strict=True):
            assert ours["text"] == theirs["text"]
            np.testing.assert_allclose([ours["x"], ours["y"]], [theirs["x"], theirs["y"]])


def test_base_layout_assigns_what_update_layout_would_have_merged():
    # base_layout assigns the properties a figure has not set (10x cheaper than update_layout)
    # and merges the others: the result is the same figure either way.
    import plotly.graph_objects as go

    from ui.charts.common import base_layout, house_layout

    def fresh() -> go.Figure:
        return go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))

    def partly_set() -> go.Figure:
        fig = fresh()
        fig.layout.title.font.color = "red"  # kept by the merge
        fig.layout.margin.pad = 3
        return fig

    for make in (fresh, partly_set):
        expected = make().update_layout(**house_layout("A title", 321))
        got = base_layout(make(), "A title", 321)
        assert got.to_plotly_json() == expected.to_plotly_json()
    assert base_layout(partly_set(), "t").layout.title.font.color == "red"


def test_figures_built_as_dicts_are_what_plotly_validation_makes_of_them():
    # Attention's, LayerNorm's and Next token's charts skip plotly's validating setters (~10x cheaper);
    # validating what they built must change nothing (a named colour scale, a title
    # given as a string, would be expanded: plotly.js's own "Blues" is another scale).
    import json

    import numpy as np
    import plotly.graph_objects as go
    import plotly.io as pio

    from ui.charts.attention import attention_lines, pattern_grid, pattern_heatmap
    from ui.charts.layernorm import ln_histograms, ln_stats_per_token, ln_steps
    from ui.charts.next_token import distribution_bars

    T = 7
    rng = np.random.default_rng(0)
    pattern = np.tril(rng.dirichlet(np.ones(T), size=T))
    labels = [f"{i}:<b>" for i in range(T)]
    figures = [
        pattern_heatmap(pattern, labels, query=3),
        pattern_heatmap(np.log(pattern + 1e-9), labels, scores=True, title="scores"),
        attention_lines(pattern, labels, query=2),
        pattern_grid(np.stack([[pattern, pattern.T]] * 3), labels, selected=(1, 0)),
        ln_steps(pattern[3], 0.1, 0.2, pattern[4], pattern[5], pattern[6], pattern[2], "t"),
        ln_stats_per_token(pattern[6], pattern[5], labels, chosen=2, title="t"),
        ln_histograms(pattern, pattern * 2),
        distribution_bars(labels, pattern[6], pattern[5], pattern[4], pattern[6] > 0.1, "t"),
        distribution_bars(labels, pattern[6], pattern[6], pattern[6], pattern[6] > 0, log_y=True),
    ]
    for fig in figures:
        validated = go.Figure(fig.to_dict())  # through every validator
        assert json.loads(pio.to_json(fig)) == json.loads(pio.to_json(validated))
