"""Attention figures: one head's pattern (or scores), every head as small multiples, lines from
each token to what it attends to, and one query's weights as bars.

Arrays and labels in, plotly figures out. Queries run down, keys across; cells the model's mask
hides (keys after the query, in a causal model) are drawn in MASKED_COLOUR with a legend entry,
never as a zero or a -inf. Every figure takes `causal` (the model's `cfg.causal`; viz_model/model/mask.py
says which cells that hides); left as None it is read from the values: a causal pattern is
exactly 0 above the diagonal and its scores -inf, which no unmasked softmax gives.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    DIVERGING,
    LABEL_PX,
    MASKED_COLOUR,
    SEQUENTIAL,
    SMALL_HEIGHT,
    TICK_FONT,
    axis_suffix,
    base_layout,
    every_tick,
    frozen,
    house_layout,
    plotly_labels,
    subplot_domains,
)
from viz_model.model.mask import attention_mask, hidden_keys

MASK_NOTE = "masked: a token cannot look at later tokens"
CELL_TEXT_MAX_T = 10  # numbers in the cells up to this many tokens: "0.35" at 12 px fits a cell
LINES_MAX_T = 24  # "who looks at whom" draws at most this many tokens: 128 made a 2,000 px tangle
# Cell values are sent as float32 (base64 typed arrays: 4 bytes a cell, half of float64): a hover
# shows 3 decimals and a colour far fewer, so the browser never shows the difference.
CELL_DTYPE = np.float32
LINE_BINS = 8
LINE_COLOUR = "#1f77b4"


def masked_cells(values: np.ndarray, causal: bool | None = None) -> np.ndarray:
    """(T, T) bool, True where the model's mask hid the key from the query.

    values (..., T, T): patterns or scores; causal: the model's `cfg.causal`, or None to read it
    from the values (every cell above the diagonal exactly 0, or -inf: the mask was on).
    """
    values = np.asarray(values)
    T = values.shape[-1]
    if causal is None:
        above = values[..., hidden_keys(True, T)]
        causal = bool(np.all(above == 0) or np.all(np.isneginf(above)))
    return hidden_keys(causal, T)


def _mask_legend_entry() -> go.Scatter:
    """An invisible trace that puts a grey square and MASK_NOTE in the legend."""
    return go.Scatter(
        x=[None],
        y=[None],
        mode="markers",
        marker=dict(
            symbol="square", size=14, color=MASKED_COLOUR, line=dict(color="#999", width=1)
        ),
        name=MASK_NOTE,
        showlegend=True,
        hoverinfo="skip",
    )


def pattern_heatmap(
    values: np.ndarray,
    labels: list[str],
    *,
    scores: bool = False,
    title: str = "",
    query: int | None = None,
    causal: bool | None = None,
) -> go.Figure:
    """One head's (T, T) pattern (weights 0..1) or, with scores=True, its scores before softmax.

    Masked cells (hidden by the model's mask, see `masked_cells`, or not finite) become a grey
    layer under a NaN in the values, so -inf never reaches the colour scale; without a causal
    mask there are none, and no legend entry. `query` outlines that row.
    """
    labels = plotly_labels(labels)  # the student's tokens: never markup
    values = np.asarray(values, dtype=float)
    T = values.shape[0]
    masked = masked_cells(values, causal) | ~np.isfinite(values)
    shown = np.where(masked, np.nan, values)
    hover = "query %{y}<br>key %{x}<br>" + ("score %{z:.3f}" if scores else "weight %{z:.3f}")
    if scores:
        finite = shown[~masked]
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        colours = dict(
            colorscale=get_colorscale(DIVERGING), zmid=0, zmin=-bound, zmax=bound, reversescale=True
        )
        bar_title = "score"
    else:
        colours = dict(colorscale=get_colorscale(SEQUENTIAL), zmin=0, zmax=1)
        bar_title = "weight"
    text = (
        dict(texttemplate="%{z:.2f}", textfont=dict(size=TICK_FONT)) if T <= CELL_TEXT_MAX_T else {}
    )
    traces = [  # plain dicts, already as validation leaves them: 9 -> ~1 ms a head
        dict(
            type="heatmap",
            z=np.where(masked, 1.0, np.nan).astype(CELL_DTYPE),
            x=labels,
            y=labels,
            colorscale=[[0, MASKED_COLOUR], [1, MASKED_COLOUR]],
            showscale=False,
            hovertemplate="query %{y}<br>key %{x}<br>" + MASK_NOTE + "<extra></extra>",
            name="masked",
        ),
        dict(
            type="heatmap",
            z=shown.astype(CELL_DTYPE),
            x=labels,
            y=labels,
            colorbar=dict(title=dict(text=bar_title), len=0.8, thickness=12),
            hovertemplate=hover + "<extra></extra>",
            xgap=1,
            ygap=1,
            name="scores" if scores else "pattern",
            **colours,
            **text,
        ),
    ]
    if masked.any():
        traces.append(_mask_legend_entry().to_plotly_json())
    layout = house_layout(title, height=heatmap_height(T))
    layout.update(
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", bgcolor="rgba(0,0,0,0)"),
        margin=dict(l=10, r=10, t=80, b=10),
        plot_bgcolor="white",
        xaxis=dict(
            title=dict(text="key (the token looked at)"),
            tickangle=-90 if T > 20 else -60,
            type="category",
            showgrid=False,
            **every_tick(labels, COLUMN_TICKS_MAX_T),  # across: the column's width
        ),
        yaxis=dict(
            title=dict(text="query (the token looking)"),
            autorange="reversed",
            type="category",
            showgrid=False,
            **every_tick(labels),  # down: rows of LABEL_PX, the figure grows with the prompt
        ),
    )
    if query is not None:
        layout["shapes"] = [_row_outline(T, query)]
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def heatmap_height(T: int) -> int:
    """Pixels for a (T, T) heatmap: LABEL_PX a row once T is large, so that every row's 12 px
    label fits up to 64 rows (the width is the page column's, ~560 px on a 1024 px projector)."""
    return int(np.clip(LABEL_PX * T + 220, 360, 1400))


def lines_window(T: int, query: int, size: int = LINES_MAX_T) -> tuple[int, int]:
    """(first, end) of the at most `size` positions "who looks at whom" draws: the query and the
    tokens just before it (what a causal query can read), or from 0 when the prompt is short.

    >>> lines_window(10, 9), lines_window(128, 127), lines_window(128, 5)
    ((0, 10), (104, 128), (0, 24))
    """
    first = min(max(query - size + 1, 0), max(T - size, 0))
    return first, min(first + size, T)


def _row_outline(T: int, query: int) -> dict:
    return dict(
        type="rect",
        x0=-0.5,
        x1=T - 0.5,
        y0=query - 0.5,
        y1=query + 0.5,
        line=dict(color=ACCENT, width=2),
    )


def _unchecked_copy(fig: go.Figure, layout: dict) -> go.Figure:
    """A frozen copy of a built figure with some layout keys replaced, its data not re-validated.

    Validation is what makes building a plotly figure slow (0.1-0.3 s for the grid); a figure
    cached once per prompt can then follow the sliders for a few milliseconds. From a frozen
    figure (charts.common.frozen) the copy shares its data arrays and does not re-encode them.
    """
    spec = fig.to_dict()
    return frozen({**spec, "layout": {**spec["layout"], **layout}})


def outline_query(heatmap: go.Figure, query: int | None) -> go.Figure:
    """A pattern_heatmap figure (drawn without a query) with row `query` outlined."""
    T = len(heatmap.data[0].y)
    shapes = [] if query is None else [_row_outline(T, query)]
    return _unchecked_copy(heatmap, {"shapes": shapes})


def highlight_head(grid: go.Figure, layer: int, head: int) -> go.Figure:
    """A pattern_grid figure (drawn without a selection) with head (layer, head) titled in red."""
    titles = [dict(a.to_plotly_json()) for a in grid.layout.annotations]
    names = [t.get("text") for t in titles]
    index = names.index(f"L{layer} H{head}") if f"L{layer} H{head}" in names else -1
    return _unchecked_copy(grid, {"annotations": _select_title(titles, index)})


def _select_title(titles: list[dict], index: int) -> list[dict]:
    out = [dict(t) for t in titles]
    if 0 <= index < len(out):
        out[index]["font"] = dict(color=ACCENT, size=(out[index].get("font") or {}).get("size", 14))
        out[index]["text"] = f"<b>{out[index]['text']}</b>"
    return out


def pattern_grid(
    patterns: np.ndarray,
    labels: list[str] | None = None,
    *,
    selected: tuple[int, int] | None = None,
    first_layer: int = 0,
    causal: bool | None = None,
) -> go.Figure:
    """Every head's pattern at once: one figure of L x H small heatmaps titled "L0 H1".

    Masked cells (see `masked_cells`) are NaN over a grey plot background. `selected` =
    (layer, head) is titled in red.
    `patterns` may be a window of a deeper model's layers, starting at `first_layer` (titles and
    `selected` count from the model's layer 0).
    Built as plain dicts, laid out as make_subplots would (row 1 at the top): through plotly's
    validating setters the 16 heads of a 4 x 4 model took ~55 ms, a third of a new prompt's view.
    """
    patterns = np.asarray(patterns, dtype=float)
    L, H, T, _ = patterns.shape
    labels = plotly_labels(labels) if labels is not None else [str(i) for i in range(T)]
    masked = masked_cells(patterns, causal)
    axes = _grid_axes(L, H)
    names = [f"L{first_layer + layer} H{head}" for layer, head in np.ndindex(L, H)]
    traces = [
        dict(
            type="heatmap",
            z=np.where(masked, np.nan, patterns[layer, head]).astype(CELL_DTYPE),
            x=labels,
            y=labels,
            coloraxis="coloraxis",
            name=names[i],
            hovertemplate=f"{names[i]}<br>query %{{y}}<br>key %{{x}}<br>"
            "weight %{z:.3f}<extra></extra>",
            xaxis=f"x{i + 1}" if i else "x",
            yaxis=f"y{i + 1}" if i else "y",
        )
        for i, (layer, head) in enumerate(np.ndindex(L, H))
    ]
    legend_entry = _mask_legend_entry().to_plotly_json()
    cell = int(np.clip(1100 / H, 70, 170))
    # Past 6 heads a row, 16 px titles ("L10 H11") run into each other on a 1024 px projector.
    size = 16 if H <= 6 else TICK_FONT
    titles = [
        dict(
            text=names[i],
            font=dict(size=size),
            showarrow=False,
            xref="paper",
            yref="paper",
            xanchor="center",
            yanchor="bottom",
            x=sum(axes[f"xaxis{axis_suffix(i)}"]["domain"]) / 2,
            y=axes[f"yaxis{axis_suffix(i)}"]["domain"][1],
        )
        for i in range(L * H)
    ]
    in_view = selected is not None and 0 <= selected[0] - first_layer < L
    index = (selected[0] - first_layer) * H + selected[1] if in_view else -1
    layout = dict(
        house_layout("", height=L * (cell + 30) + 70),
        annotations=_select_title(titles, index),
        coloraxis=dict(  # spelled out as validation would: plotly.js has its own "Blues"
            colorscale=get_colorscale(SEQUENTIAL),
            cmin=0,
            cmax=1,
            colorbar=dict(title=dict(text="weight"), len=0.6),
        ),
        plot_bgcolor=MASKED_COLOUR,
        legend=dict(orientation="h", x=0, y=0, yanchor="top", bgcolor="rgba(0,0,0,0)"),
        margin=dict(l=10, r=10, t=30, b=40),
        **axes,
    )
    legend = [{**legend_entry, "xaxis": "x", "yaxis": "y"}] if masked.any() else []
    return go.Figure(dict(data=[*traces, *legend], layout=layout), _validate=False)


def _grid_axes(L: int, H: int) -> dict:
    """xaxis/yaxis entries of an L x H grid of subplots: make_subplots' domains and spacing."""
    h_space = min(0.02, 0.5 / max(H - 1, 1))
    v_space = min(0.06, 0.5 / max(L - 1, 1))
    axes = {}
    for i, (x_domain, y_domain) in enumerate(subplot_domains(L, H, h_space, v_space)):
        n = axis_suffix(i)
        style = dict(showticklabels=False, showgrid=False, type="category")
        axes[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=x_domain, **style)
        axes[f"yaxis{n}"] = dict(anchor=f"x{n}", domain=y_domain, autorange="reversed", **style)
    return axes


def attention_lines(
    pattern: np.ndarray,
    labels: list[str],
    *,
    query: int | None = None,
    min_weight: float = 0.02,
    title: str = "",
    causal: bool | None = None,
) -> go.Figure:
    """Tokens in two columns, a line from each query (left) to each key it attends to (right).

    Line width and opacity grow with the weight; weights below min_weight are not drawn. Lines
    are grouped into LINE_BINS traces by weight (one trace per bin, segments split by None), and
    the chosen query's lines are drawn on top in ACCENT.
    """
    labels = plotly_labels(labels)  # the student's tokens: never markup
    pattern = np.asarray(pattern, dtype=float)
    T = pattern.shape[0]
    edges = np.linspace(min_weight, 1.0, LINE_BINS + 1)
    visible = ~masked_cells(pattern, causal)
    rows, cols = np.nonzero(visible)  # every (query t, key s) the query may read, row by row
    weights = pattern[rows, cols]
    drawn = weights >= min_weight
    bins = np.clip(np.searchsorted(edges, weights, side="right") - 1, 0, LINE_BINS - 1)
    chosen = rows == query
    traces = []  # plain dicts, already as validation leaves them: 13 -> ~3 ms a head or query
    for highlight in (False, True):
        for b in range(LINE_BINS):
            pick = drawn & (bins == b) & (chosen == highlight)
            if not pick.any():
                continue
            n = int(pick.sum())
            ys: list[int | None] = []
            for t, s in zip(rows[pick].tolist(), cols[pick].tolist(), strict=True):
                ys += [t, s, None]
            mid = (edges[b] + edges[b + 1]) / 2
            traces.append(
                dict(
                    type="scatter",
                    x=[0, 1, None] * n,
                    y=ys,
                    mode="lines",
                    line=dict(width=0.5 + 7 * mid, color=ACCENT if highlight else LINE_COLOUR),
                    opacity=min(1.0, 0.15 + 0.85 * mid) if not highlight else min(1.0, 0.35 + mid),
                    hoverinfo="skip",
                    showlegend=False,
                    name=f"weights {edges[b]:.2f}-{edges[b + 1]:.2f}"
                    + (" (chosen query)" if highlight else ""),
                )
            )
    for x, side in ((0, "middle left"), (1, "middle right")):
        colours = [ACCENT if (x == 0 and t == query) else "#222" for t in range(T)]
        traces.append(
            dict(
                type="scatter",
                x=[x] * T,
                y=list(range(T)),
                mode="markers+text",
                text=labels,
                textposition=side,
                textfont=dict(color=colours, size=12),
                marker=dict(size=6, color=colours),
                hovertext=[
                    _top_keys(pattern, t, labels, visible[t]) if x == 0 else labels[t]
                    for t in range(T)
                ],
                hoverinfo="text",
                showlegend=False,
                name="queries" if x == 0 else "keys",
            )
        )
    layout = house_layout(title, height=max(SMALL_HEIGHT, 15 * T + 90))
    layout.update(
        xaxis=dict(
            range=[-0.55, 1.55],
            showticklabels=True,
            tickvals=[0, 1],
            ticktext=["query (looking)", "key (looked at)"],
            side="top",
            showgrid=False,
            zeroline=False,
        ),
        yaxis=dict(autorange="reversed", visible=False),
        margin=dict(l=10, r=10, t=50, b=10),
    )
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def _top_keys(pattern: np.ndarray, t: int, labels: list[str], visible: np.ndarray, n=3) -> str:
    keys = np.flatnonzero(visible)
    top = keys[np.argsort(pattern[t, keys])[::-1][:n]]
    parts = [f"{labels[s]} {pattern[t, s]:.2f}" for s in top]
    return f"{labels[t]} looks at: " + ", ".join(parts)


def query_weights(
    weights: np.ndarray, labels: list[str], query: int, title: str = "", causal: bool = True
) -> go.Figure:
    """One query's attention weights over the keys as bars; keys the mask hides (after the
    query, in a causal model) are greyed and say "masked"."""
    labels = plotly_labels(labels)  # the student's tokens: never markup
    weights = np.asarray(weights, dtype=float)
    T = len(weights)
    visible = attention_mask(causal, T)[query]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=np.where(visible, weights, 0.0),
            marker_color=[LINE_COLOUR if v else MASKED_COLOUR for v in visible],
            text=[f"{w:.2f}" if v else "masked" for w, v in zip(weights, visible, strict=True)],
            textposition="outside",
            hovertemplate="key %{x}<br>weight %{y:.3f}<extra></extra>",
        )
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 40)
    fig.update_xaxes(type="category", tickangle=-60, title="key")
    fig.update_yaxes(range=[0, 1.15], title="weight")
    return fig
