"""Inside one block: a token's vector at each step of the block, the attention matrices of a whole
prompt side by side, a head's circuits (singular values, token maps).

Arrays and labels in, plotly figures out. Signed values use the diverging scale centred on 0,
attention weights the sequential one, as on the Attention page.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    DIVERGING,
    SEQUENTIAL,
    SMALL_HEIGHT,
    base_layout,
    every_tick,
    plotly_labels,
)

STEP_COLOUR = "#1f77b4"
QK_COLOUR = "#1f77b4"
OV_COLOUR = "#ff7f0e"
UNTRAINED_COLOUR = "#6e6e6e"  # the same shape with random weights: a baseline, so grey


def _bound(values: np.ndarray) -> float:
    """A symmetric colour range that one outlier cannot wash out: the 99th percentile of |v|."""
    finite = np.abs(values[np.isfinite(values)])
    return float(np.percentile(finite, 99)) if finite.size and finite.max() > 0 else 1.0


def walk_steps(
    symbols: list[str], formulas: list[str], vectors: np.ndarray, title: str = ""
) -> go.Figure:
    """One token's vector (S steps, D numbers) as a heatmap, steps down, beside its norm as bars."""
    S, D = vectors.shape
    rows = [f"{s} = {f}" if s != f else s for s, f in zip(symbols, formulas, strict=True)]
    norms = np.linalg.norm(vectors, axis=-1)
    bound = _bound(vectors)
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        column_widths=[0.72, 0.28],
        horizontal_spacing=0.03,
        subplot_titles=(f"the vector, its {D} numbers", "its length ‖·‖"),
    )
    fig.add_trace(
        go.Heatmap(
            z=vectors,
            x=np.arange(D),
            y=rows,
            colorscale=DIVERGING,
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            showscale=False,
            hovertemplate="%{y}<br>dimension %{x}: %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=norms,
            y=rows,
            orientation="h",
            marker_color=STEP_COLOUR,
            text=[f"{n:.2f}" for n in norms],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>length %{x:.3f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    base_layout(fig, title, height=60 + 40 * S + 80)
    fig.update_layout(showlegend=False, plot_bgcolor="white")
    fig.update_yaxes(autorange="reversed", type="category", row=1, col=1)
    fig.update_xaxes(title="dimension", row=1, col=1)
    fig.update_xaxes(range=[0, 1.3 * float(norms.max() or 1.0)], row=1, col=2)
    return fig


def matrices(
    panels: list[tuple[str, np.ndarray, bool, list[str] | None]],
    row_labels: list[str],
    title: str = "",
) -> go.Figure:
    """Matrices side by side, one row per token: (title, array (T, n), is_weights, column labels).

    Weights (a pattern) use the sequential 0..1 scale with the masked cells left blank; other
    matrices the diverging scale, each on its own range (hover for the numbers)."""
    labels = plotly_labels(row_labels)
    widths = [a.shape[1] for _, a, _, _ in panels]
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=True,
        column_widths=[w / sum(widths) for w in widths],
        horizontal_spacing=0.02,
        subplot_titles=[p[0] for p in panels],
    )
    for i, (_, values, weights, cols) in enumerate(panels, start=1):
        values = np.asarray(values, dtype=float)
        x = plotly_labels(cols) if cols is not None else np.arange(values.shape[1])
        scale = (
            dict(colorscale=SEQUENTIAL, zmin=0, zmax=1)
            if weights
            else dict(
                colorscale=DIVERGING,
                reversescale=True,
                zmid=0,
                zmin=-_bound(values),
                zmax=_bound(values),
            )
        )
        shown = np.where(np.isfinite(values), values, np.nan)
        fig.add_trace(
            go.Heatmap(
                z=np.where(weights & (shown == 0), np.nan, shown) if weights else shown,
                x=x,
                y=labels,
                showscale=False,
                hovertemplate="token %{y}<br>column %{x}: %{z:.3f}<extra></extra>",
                **scale,
            ),
            row=1,
            col=i,
        )
        fig.update_xaxes(type="category", showticklabels=cols is not None, row=1, col=i)
        if cols is not None:
            fig.update_xaxes(tickangle=-90, **every_tick(x, max_t=COLUMN_TICKS_MAX_T), row=1, col=i)
    T = len(labels)
    base_layout(fig, title, height=int(np.clip(10 * T + 180, 300, 760)))
    fig.update_yaxes(autorange="reversed", type="category", **every_tick(labels, max_t=40))
    fig.update_layout(plot_bgcolor="white")
    return fig


def singular_values(qk: np.ndarray, ov: np.ndarray, d_head: int, title: str = "") -> go.Figure:
    """The singular values of W_QK and W_OV, largest first, with the head's width d_head marked:
    past it they are zero (up to rounding), so the rank is at most d_head."""
    n = np.arange(1, len(qk) + 1)
    fig = go.Figure(
        [
            go.Bar(x=n, y=qk, name="W_QK = W_Q W_Kᵀ", marker_color=QK_COLOUR),
            go.Bar(x=n, y=ov, name="W_OV = W_V W_O", marker_color=OV_COLOUR),
        ]
    )
    fig.add_vline(
        x=d_head + 0.5,
        line=dict(color=ACCENT, dash="dash"),
        annotation_text=f"d_head = {d_head}",
        annotation_position="top right",
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 40)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0.3))
    fig.update_xaxes(title="singular value number", range=[0.5, min(len(n), 2 * d_head) + 0.5])
    fig.update_yaxes(title="size")
    return fig


def token_map(
    table: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    row_name: str,
    col_name: str,
    title: str = "",
) -> go.Figure:
    """A token-by-token map (rows x columns) on the diverging scale, each row's mean subtracted
    (a softmax ignores it), so a cell says how much more than usual the row token favours it."""
    values = np.asarray(table, dtype=float)
    values = values - values.mean(1, keepdims=True)
    rows, cols = plotly_labels(row_labels), plotly_labels(col_labels)
    bound = _bound(values)
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=cols,
            y=rows,
            colorscale=DIVERGING,
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            colorbar=dict(thickness=12, len=0.8),
            hovertemplate=f"{row_name} %{{y}}<br>{col_name} %{{x}}<br>%{{z:.3f}}<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    base_layout(fig, title, height=int(np.clip(16 * len(rows) + 200, 320, 900)))
    fig.update_xaxes(
        title=col_name, type="category", tickangle=-90, **every_tick(cols, COLUMN_TICKS_MAX_T)
    )
    fig.update_yaxes(title=row_name, type="category", autorange="reversed", **every_tick(rows))
    fig.update_layout(plot_bgcolor="white")
    return fig


# ---- one gradient step ---------------------------------------------------------------------------

UP_COLOUR = "#2ca02c"
DOWN_COLOUR = "#d62728"
BEFORE_COLOUR = "#7f7f7f"


def gradient_norms(groups: list[tuple[str, float, float, int]], title: str = "") -> go.Figure:
    """The gradient's length for each parameter group (bars), with the weights' length and the
    parameter count in the hover; groups top to bottom in forward order."""
    names = [g[0] for g in groups]
    fig = go.Figure(
        go.Bar(
            x=[g[1] for g in groups],
            y=names,
            orientation="h",
            marker_color=STEP_COLOUR,
            customdata=[[g[2], g[3]] for g in groups],
            text=[f"{g[1]:.3g}" for g in groups],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>gradient length %{x:.4g}<br>weights' length "
            "%{customdata[0]:.4g}<br>%{customdata[1]:,} parameters<extra></extra>",
        )
    )
    base_layout(fig, title, height=80 + 26 * len(groups))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title="‖∂L/∂w‖ over the group", range=[0, 1.25 * max(g[1] for g in groups)])
    return fig


def loss_along_gradient(
    etas: np.ndarray, losses: np.ndarray, loss: float, grad_sq: float, lr: float, title: str = ""
) -> go.Figure:
    """The loss after one step of each learning rate (solid, log axis) beside the first-order
    estimate L - lr |g|^2 (dashed, drawn while it stays above 0) and the loss before (dotted);
    the chosen lr is ringed."""
    line = loss - etas * grad_sq
    keep = line > 0
    chosen = int(np.argmin(np.abs(np.log(etas / lr))))
    fig = go.Figure(
        [
            go.Scatter(
                x=etas,
                y=losses,
                mode="lines+markers",
                name="loss after one step",
                line=dict(color=STEP_COLOUR),
                hovertemplate="η = %{x:g}<br>loss after %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=etas[keep],
                y=line[keep],
                mode="lines",
                name="first order: L − η‖g‖²",
                line=dict(color=ACCENT, dash="dash"),
                hovertemplate="η = %{x:g}<br>first order %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=[etas[0], etas[-1]],
                y=[loss, loss],
                mode="lines",
                name="loss before",
                line=dict(color=BEFORE_COLOUR, dash="dot"),
                hoverinfo="skip",
            ),
            go.Scatter(
                x=[etas[chosen]],
                y=[losses[chosen]],
                mode="markers",
                name="this η",
                marker=dict(size=16, color="rgba(0,0,0,0)", line=dict(color="black", width=2)),
                hovertemplate="η = %{x:g}<br>loss after %{y:.4f}<extra>this η</extra>",
            ),
        ]
    )
    finite = losses[np.isfinite(losses)]
    low = min(float(finite.min()) if finite.size else loss, loss)
    high = max(float(finite.max()) if finite.size else loss, loss)
    pad = 0.08 * (high - low) + 1e-3
    base_layout(fig, title, height=SMALL_HEIGHT + 100)
    fig.update_layout(
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
        margin=dict(l=10, r=10, t=70, b=10),
    )
    fig.update_xaxes(
        type="log",
        title="learning rate η (log scale)",
        tickvals=etas,
        ticktext=[f"{e:g}" for e in etas],
        tickangle=-45,
    )
    fig.update_yaxes(title="loss on the prompt (nats)", range=[max(0.0, low - pad), high + pad])
    return fig


def probability_change(
    labels: list[str], before: np.ndarray, after: np.ndarray, title: str = ""
) -> go.Figure:
    """Each target token's probability before (grey dot) and after (green up, red down) the step,
    joined by a line, one column per position."""
    x = plotly_labels(labels)
    up = after >= before
    xs, ys = [], []
    for i, label in enumerate(x):
        xs += [label, label, None]
        ys += [float(before[i]), float(after[i]), None]
    fig = go.Figure(
        [
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line=dict(color="#bbbbbb"),
                hoverinfo="skip",
                showlegend=False,
            ),
            go.Scatter(
                x=x,
                y=before,
                mode="markers",
                name="before",
                marker=dict(color=BEFORE_COLOUR, size=7),
                hovertemplate="%{x}<br>before %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=x,
                y=after,
                mode="markers",
                name="after the step",
                marker=dict(
                    color=np.where(up, UP_COLOUR, DOWN_COLOUR).tolist(), size=9, symbol="diamond"
                ),
                hovertemplate="%{x}<br>after %{y:.4f}<extra></extra>",
            ),
        ]
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 100)
    fig.update_layout(
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
        margin=dict(l=10, r=10, t=70, b=10),
    )
    fig.update_xaxes(type="category", tickangle=-90, **every_tick(x, COLUMN_TICKS_MAX_T))
    fig.update_yaxes(title="p(next token)", range=[0, 1.04])
    return fig


# ---- look-up: exact, nearest, soft ---------------------------------------------------------------

LOOKUP_COLOURS = {
    "exact": "#9467bd",
    "nearest": "#ff7f0e",
    "soft": "#1f77b4",
    "soft, unscaled": "#17becf",
}


def lookup_weights(
    weights: dict[str, np.ndarray], labels: list[str], titles: dict[str, str]
) -> go.Figure:
    """One row of bars per way of looking up: the weight each key gets (keys across)."""
    names = list(weights)
    x = plotly_labels(labels)
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.09,
        subplot_titles=[titles[n] for n in names],
    )
    fig.add_traces(
        [
            go.Bar(
                x=x,
                y=weights[n],
                name=n,
                marker_color=LOOKUP_COLOURS.get(n, STEP_COLOUR),
                hovertemplate="key %{x}<br>weight %{y:.3f}<extra>" + n + "</extra>",
            )
            for n in names
        ],
        rows=list(range(1, len(names) + 1)),
        cols=[1] * len(names),
    )
    base_layout(fig, "", height=90 + 120 * len(names))
    fig.update_layout(showlegend=False, margin=dict(l=10, r=10, t=30, b=10))
    fig.update_yaxes(range=[0, 1.05], nticks=3)
    fig.update_xaxes(type="category", tickangle=-90, **every_tick(x, COLUMN_TICKS_MAX_T))
    for annotation in fig.layout.annotations:
        annotation.update(x=0, xanchor="left", font=dict(size=13))
    return fig


def spread_by_width(
    ds: list[int], raw: np.ndarray, scaled: np.ndarray, d_head: int, title: str = ""
) -> go.Figure:
    """The spread (standard deviation) of q . k for random vectors, as the width d grows:
    unscaled it grows like sqrt(d); divided by sqrt(d) it stays at 1. The model's d_head marked."""
    fig = go.Figure(
        [
            go.Scatter(
                x=ds,
                y=raw,
                mode="lines+markers",
                name="q · k",
                line=dict(color=LOOKUP_COLOURS["soft, unscaled"]),
            ),
            go.Scatter(
                x=ds,
                y=scaled,
                mode="lines+markers",
                name="q · k / √d",
                line=dict(color=LOOKUP_COLOURS["soft"]),
            ),
        ]
    )
    # A line trace, not add_vline: on a log axis a shape's x is read as log10(x).
    fig.add_trace(
        go.Scatter(
            x=[d_head, d_head],
            y=[0, float(max(raw))],
            mode="lines",
            line=dict(color=ACCENT, dash="dash"),
            name=f"this model: d_head = {d_head}",
        )
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 60)
    fig.update_xaxes(title="width d (numbers per vector)", type="log")
    fig.update_yaxes(title="spread of the score (std)")
    fig.update_layout(legend=dict(x=0.02, y=0.98, bgcolor="rgba(255,255,255,0.7)"))
    return fig


def score_histograms(raw: np.ndarray, scaled: np.ndarray, title: str = "") -> go.Figure:
    """This head's q . k over every visible pair, unscaled and divided by sqrt(d_head)."""
    fig = go.Figure(
        [
            go.Histogram(
                x=raw,
                name="q · k",
                opacity=0.6,
                nbinsx=50,
                marker_color=LOOKUP_COLOURS["soft, unscaled"],
            ),
            go.Histogram(
                x=scaled,
                name="q · k / √d_head",
                opacity=0.6,
                nbinsx=50,
                marker_color=LOOKUP_COLOURS["soft"],
            ),
        ]
    )
    base_layout(fig, title, height=SMALL_HEIGHT + 60)
    fig.update_layout(
        barmode="overlay",
        legend=dict(x=0.02, y=0.98, bgcolor="rgba(255,255,255,0.7)"),
    )
    fig.update_xaxes(title="score")
    fig.update_yaxes(title="pairs")
    return fig


# ---- contextual embeddings -----------------------------------------------------------------------

GROUP_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#bbbbbb"]


def context_projections(
    points: np.ndarray,
    shares: np.ndarray,
    stations: list[str],
    groups: list[str],
    snippets: list[str],
    title: str = "",
    legend_title: str = "before it:",
) -> go.Figure:
    """Small multiples, one per station: the occurrences (S, n, 2) by that station's own PCA,
    coloured by group (e.g. the token before), the context in the hover."""
    S = len(stations)
    cols = min(S, 3)
    rows = -(-S // cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        horizontal_spacing=0.04,
        vertical_spacing=0.12,
        subplot_titles=[f"{s} · {shares[i].sum():.0%}" for i, s in enumerate(stations)],
    )
    names = list(dict.fromkeys(groups))
    hover = plotly_labels([s.replace("\n", "↵") for s in snippets])
    for i in range(S):
        for g, name in enumerate(names):
            mask = np.array([x == name for x in groups])
            fig.add_trace(
                go.Scatter(
                    x=points[i, mask, 0],
                    y=points[i, mask, 1],
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=i == 0,
                    marker=dict(color=GROUP_COLOURS[g % len(GROUP_COLOURS)], size=7),
                    text=[hover[j] for j in np.flatnonzero(mask)],
                    hovertemplate="…%{text}<extra>" + plotly_labels([name])[0] + "</extra>",
                ),
                row=i // cols + 1,
                col=i % cols + 1,
            )
    base_layout(fig, title, height=60 + 250 * rows)
    fig.update_annotations(font=dict(size=12))
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    fig.update_layout(legend=dict(orientation="h", y=-0.02, yanchor="top", x=0, title=legend_title))
    return fig


def context_similarity(
    stations: list[str],
    to_layer0: np.ndarray,
    to_layer0_min: np.ndarray,
    between: np.ndarray,
    title: str = "",
    baseline: np.ndarray | None = None,
) -> go.Figure:
    """By station: the mean (and least) cosine of each occurrence to its own layer-0 vector, the
    mean cosine between two different occurrences, and (baseline) between two different tokens."""
    fig = go.Figure(
        [
            go.Scatter(
                x=stations,
                y=to_layer0,
                mode="lines+markers",
                name="to its own layer-0 vector",
                line=dict(color=STEP_COLOUR),
            ),
            go.Scatter(
                x=stations,
                y=to_layer0_min,
                mode="lines",
                name="… the least similar context",
                line=dict(color=STEP_COLOUR, dash="dot"),
            ),
            go.Scatter(
                x=stations,
                y=between,
                mode="lines+markers",
                name="between two contexts",
                line=dict(color=OV_COLOUR),
            ),
        ]
    )
    if baseline is not None:
        fig.add_trace(
            go.Scatter(
                x=stations,
                y=baseline,
                mode="lines",
                name="any two different tokens",
                line=dict(color="#7f7f7f", dash="dash"),
            )
        )
    base_layout(fig, title, height=SMALL_HEIGHT + 80)
    low = min(
        [0.0, float(to_layer0_min.min())]
        + ([float(baseline.min())] if baseline is not None else [])
    )
    fig.update_yaxes(title="cosine similarity", range=[low - 0.02, 1.02])
    fig.update_xaxes(type="category")
    fig.update_layout(legend=dict(orientation="h", y=-0.22))  # below: the lines reach every corner
    return fig


# ---- linear probes -------------------------------------------------------------------------------


def probe_accuracy(
    stations: list[str],
    results: dict[str, tuple[np.ndarray, np.ndarray, float, float]],
    title: str = "",
    untrained: dict[str, np.ndarray] | None = None,
) -> go.Figure:
    """One panel per property: the probe's accuracy by station on held-out text (solid) and on
    its training text (dotted), against the majority baseline (dashed), the band above it
    that held-out noise could explain (baseline + margin, shaded) and, where `untrained` gives
    them (S,), the same probes' held-out accuracy on the model's shape with random weights (grey:
    what a model that learned nothing already gives). Every panel on one y-axis, from 50% (or
    lower if some accuracy is) to 100%, so a one-point gain looks like one point."""
    names = list(results)
    fig = make_subplots(
        rows=1, cols=len(names), horizontal_spacing=0.04, subplot_titles=names, shared_yaxes=True
    )
    for i, name in enumerate(names, start=1):
        test, train, baseline, margin = results[name]
        first = i == 1
        ends = [stations[0], stations[-1]]
        fig.add_traces(
            [
                go.Scatter(
                    x=ends,
                    y=[baseline, baseline],
                    mode="lines",
                    line=dict(width=0),
                    showlegend=False,
                    hoverinfo="skip",
                    legendgroup="noise",
                ),
                go.Scatter(
                    x=ends,
                    y=[baseline + margin] * 2,
                    mode="lines",
                    line=dict(width=0),
                    fill="tonexty",
                    fillcolor="rgba(214,39,40,0.15)",
                    name="within the noise of the baseline",
                    legendgroup="noise",
                    showlegend=first,
                    hovertemplate=f"baseline + noise: {baseline + margin:.1%}<extra></extra>",
                ),
                go.Scatter(
                    x=stations,
                    y=test,
                    mode="lines+markers",
                    name="held-out text",
                    line=dict(color=STEP_COLOUR),
                    legendgroup="test",
                    showlegend=first,
                    hovertemplate="%{x}: %{y:.1%}<extra>held-out</extra>",
                ),
                go.Scatter(
                    x=stations,
                    y=train,
                    mode="lines",
                    name="training text",
                    line=dict(color=STEP_COLOUR, dash="dot"),
                    legendgroup="train",
                    showlegend=first,
                    hovertemplate="%{x}: %{y:.1%}<extra>training</extra>",
                ),
                go.Scatter(
                    x=ends,
                    y=[baseline, baseline],
                    mode="lines",
                    name="majority baseline",
                    line=dict(color=ACCENT, dash="dash"),
                    legendgroup="base",
                    showlegend=first,
                    hovertemplate=f"always the commoner answer: {baseline:.1%}<extra></extra>",
                ),
            ],
            rows=1,
            cols=i,
        )
        if untrained is not None and name in untrained:
            fig.add_trace(
                go.Scatter(
                    x=stations,
                    y=untrained[name],
                    mode="lines+markers",
                    name="random weights (learned nothing)",
                    line=dict(color=UNTRAINED_COLOUR, width=2),
                    marker=dict(symbol="x"),
                    legendgroup="untrained",
                    showlegend=first,
                    hovertemplate="%{x}: %{y:.1%}<extra>random weights</extra>",
                ),
                row=1,
                col=i,
            )
    base_layout(fig, title, height=SMALL_HEIGHT + 140)
    fig.update_layout(margin=dict(l=10, r=10, t=70, b=10))
    lowest = min(min(float(np.min(r[0])), float(np.min(r[1])), r[2]) for r in results.values())
    if untrained:
        lowest = min(lowest, *(float(np.min(u)) for u in untrained.values()))
    low = min(0.5, np.floor(lowest * 10) / 10)
    fig.update_yaxes(tickformat=".0%", range=[low, 1.005], matches="y")
    fig.update_xaxes(
        type="category", tickangle=-45, categoryorder="array", categoryarray=stations
    )  # the band is drawn first: without this its two ends would come first on the axis
    fig.update_layout(legend=dict(orientation="h", y=-0.35, yanchor="top", x=0))
    return fig
