"""Presenter mode's figure scaling (ui/present.py): every font of the copy at least 16 px, the
figure passed in (a cached, shared FrozenFigure) unchanged; and one way to draw a chart."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from ui import present
from ui.charts.attention import attention_lines, pattern_grid, pattern_heatmap
from ui.charts.common import frozen, token_labels
from ui.charts.residual import logit_lens_grid
from ui.charts.scaling import decade_ticks

ROOT = Path(__file__).resolve().parent.parent
LABELS = token_labels(list("abcdef"))


def _pattern(T: int) -> np.ndarray:
    p = np.tril(np.random.default_rng(0).random((T, T)))
    return p / p.sum(axis=1, keepdims=True)


def _figures() -> dict[str, go.Figure]:
    """Figures that set fonts in every way the app does: small cell text, titles, legends,
    annotations, colour bars and axes, plus a bare one that sets none."""
    T = len(LABELS)
    patterns = np.stack([np.stack([_pattern(T)] * 2)] * 2)
    bars = go.Figure(go.Bar(x=["a", "b"], y=[1, 2], text=["1", "2"]), layout=dict(title="t"))
    bars.add_annotation(text="note", font=dict(size=9), x=0, y=1)
    return {
        "pattern_heatmap": pattern_heatmap(_pattern(T), LABELS, title="one head"),
        "pattern_grid": pattern_grid(patterns, LABELS),
        "attention_lines": attention_lines(_pattern(T), LABELS, query=2),
        "logit_lens_grid": logit_lens_grid(
            np.full((2, T), 0.5), [list("xyzxyz")] * 2, ["embed", "block 0"], LABELS
        ),
        "bars": bars,
        "bare": go.Figure(go.Scatter(x=[1, 2], y=[3, 4])),
    }


def _font_sizes(node, path="") -> list[tuple[str, object]]:
    """(where, size) of every font in a figure dict, and of the uniformtext floor."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "template":
                continue
            where = f"{path}.{key}"
            if key.endswith("font") and isinstance(value, dict):
                found.append((where, value.get("size")))
            elif key == "uniformtext" and isinstance(value, dict) and "minsize" in value:
                found.append((where, value["minsize"]))
            found += _font_sizes(value, where)
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            found += _font_sizes(value, f"{path}[{i}]")
    return found


def test_every_font_of_a_presenter_figure_is_at_least_16_px():
    for name, fig in _figures().items():
        scaled = present.presenter_figure(frozen(fig)).to_dict()
        sizes = _font_sizes(scaled)
        assert sizes, name
        for where, size in sizes:
            values = size if isinstance(size, list) else [size]
            assert all(v is not None and v >= present.PRESENTER_FLOOR for v in values), (
                f"{name}: {where} is {size}"
            )


def test_fonts_the_theme_would_draw_are_set_explicitly():
    """Streamlit's theme draws an unset tick font at 12 px and an axis title at 14: the copy
    sets both, on every axis, and the hover labels too."""
    scaled = present.presenter_figure(_figures()["bare"]).to_dict()["layout"]
    for axis in ("xaxis", "yaxis"):
        assert scaled[axis]["tickfont"]["size"] >= present.PRESENTER_FLOOR
    assert scaled["hoverlabel"]["font"]["size"] >= present.PRESENTER_FLOOR
    grid = present.presenter_figure(_figures()["pattern_grid"]).to_dict()["layout"]
    axes = [k for k in grid if re.match(r"^[xy]axis\d*$", k)]
    assert len(axes) == 2 * 4 and all(grid[k]["tickfont"]["size"] >= 16 for k in axes)


def test_larger_fonts_stay_larger_and_small_cell_text_grows():
    fig = frozen(_figures()["bars"])
    scaled = present.presenter_figure(fig).to_dict()["layout"]
    note = scaled["annotations"][0]["font"]["size"]
    assert note == present.PRESENTER_FLOOR  # 9 px -> the floor
    heat = present.presenter_figure(frozen(_figures()["pattern_heatmap"])).to_dict()
    title = heat["layout"]["title"]["font"]["size"]
    assert title > heat["layout"]["xaxis"]["tickfont"]["size"]  # a title stays the largest


def test_the_cached_figure_is_never_changed():
    for name, fig in _figures().items():
        shared = frozen(fig)
        before = copy.deepcopy(shared.to_dict())
        present.presenter_figure(shared)
        after = shared.to_dict()
        assert json.dumps(after, default=str, sort_keys=True) == json.dumps(
            before, default=str, sort_keys=True
        ), name


def test_presenter_figures_share_the_data_arrays_instead_of_copying_them():
    shared = frozen(_figures()["pattern_heatmap"])
    scaled = present.presenter_figure(shared)
    original_z = shared.to_dict()["data"][1]["z"]["bdata"]  # the encoded cells
    assert scaled.to_dict()["data"][1]["z"]["bdata"] is original_z


def test_a_figure_grows_taller_with_its_text():
    fig = frozen(_figures()["pattern_heatmap"])
    assert present.presenter_figure(fig).layout.height > fig.layout.height


def test_no_presenter_figure_is_taller_than_the_screen_and_its_token_labels_thin_out():
    """Issue 38: the attention heatmap of a 41-token prompt was 1,397 px tall in presenter mode,
    on a 768-px projector. Capped at MAX_HEIGHT, an axis whose rows got too short for a 16-px
    label names every n-th token, as many as fit, and no longer every one."""
    labels = token_labels(list("To be, or not to be, that is the question"))
    T = len(labels)
    fig = pattern_heatmap(_pattern(T), labels)
    assert fig.layout.height * present.HEIGHT_SCALE > present.MAX_HEIGHT  # it would not fit
    assert len(fig.layout.yaxis.tickvals) == T  # every token named on the laptop's chart
    big = present.presenter_figure(fig)
    assert big.layout.height == present.MAX_HEIGHT
    rows_px = big.layout.height - big.layout.margin.t - big.layout.margin.b
    assert big.layout.yaxis.tickvals is None and big.layout.yaxis.tickmode != "array"
    assert 2 <= big.layout.yaxis.nticks <= rows_px / present.ROW_PX
    assert big.layout.yaxis.nticks * present.ROW_PX > rows_px - present.ROW_PX  # as many as fit
    assert list(big.data[-1].y) == list(fig.data[-1].y)  # the cells themselves are all there
    small = frozen(pattern_heatmap(_pattern(6), LABELS))
    kept = present.presenter_figure(small)
    assert kept.layout.height <= present.MAX_HEIGHT
    assert list(kept.layout.yaxis.tickvals) == list(small.layout.yaxis.tickvals)  # they fit


def test_an_axis_keeps_its_labels_while_they_fit_and_level_x_labels_are_left_alone():
    axis = {"tickmode": "array", "tickvals": list("abcd"), "ticktext": list("abcd")}
    assert present.fitting_ticks(axis, 4 * present.ROW_PX) == axis
    thinned = present.fitting_ticks(axis, 3 * present.ROW_PX)
    assert "tickvals" not in thinned and thinned["nticks"] == 3
    assert present.fitting_ticks(axis, None) == axis  # level x labels: their widths unknown
    layout = {"height": 600, "margin": {"l": 10, "r": 10, "t": 40, "b": 10}}
    assert present._axis_px({**layout, "xaxis": {}}, "xaxis") is None
    assert present._axis_px({**layout, "xaxis": {"tickangle": -90}}, "xaxis") == 880
    assert present._axis_px({**layout, "yaxis2": {"domain": [0.5, 1.0]}}, "yaxis2") == 275


def test_pages_draw_charts_only_through_present_plot():
    """One chokepoint: a page calling st.plotly_chart itself would skip presenter mode."""
    files = [*ROOT.glob("pages/*.py"), *ROOT.glob("ui/**/*.py"), ROOT / "app.py"]
    calls = [
        f.relative_to(ROOT).as_posix()
        for f in files
        if ".plotly_chart(" in f.read_text() and f.name != "present.py"
    ]
    assert not calls, f"st.plotly_chart outside ui/present.py: {calls}"


def test_decade_ticks_write_powers_of_ten_in_full_size_digits():
    ticks = decade_ticks([3e4, 2e6])
    assert ticks["tickvals"] == [1e4, 1e5, 1e6, 1e7]
    assert ticks["ticktext"] == ["10⁴", "10⁵", "10⁶", "10⁷"]
    assert decade_ticks([]) == {}


def test_loss_ticks_label_a_narrow_range_several_times():
    from ui.charts.scaling import loss_ticks

    ticks = loss_ticks([1.42, 1.55, 1.9])
    inside = [t for t in ticks if 1.42 <= t <= 1.9]
    assert len(inside) >= 3 and ticks == sorted(ticks)
    assert loss_ticks([]) == []
