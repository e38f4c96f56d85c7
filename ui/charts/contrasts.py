"""Architecture contrast figures: two models' loss at each position, drawn in the Compare models
page's two colours (charts/compare.py), so model A and model B look the same on both pages.

- `look_ahead_lines`: per position, the loss reading the whole window (solid) and as generated
  (dashed), for each model; a model without a causal mask splits the two apart.
- `loss_lines`: each model's loss at each position, one line each, with an optional mark.
- `copy_lines`: per position of a random sequence written twice, each model's mean loss, with the
  point where the second copy starts (where copying becomes possible).
- `kv_memory_lines`: each model's KV cache memory against the tokens it holds.

Arrays in (analysis/contrasts.py), plotly figures out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import HEIGHT, house_layout, plotly_labels, show_whitespace
from ui.charts.compare import MODEL_COLOURS
from viz_model.analysis.contrasts import LookAhead

WAYS = ("whole window", "as generated")  # LookAhead.seen, LookAhead.generated
DASHES = ("solid", "dash")


def look_ahead_lines(
    named: Sequence[tuple[str, LookAhead]], targets: Sequence[str], title: str = ""
) -> go.Figure:
    """Loss in nats at each position t, labelled by the token it predicts (targets[t], T-1 of
    them): for each model, reading the whole window (solid) and as generated (dashed)."""
    shown = [f"{t + 1}:{show_whitespace(p)}" for t, p in enumerate(targets)]
    traces = []
    for (name, la), colour in zip(named, MODEL_COLOURS, strict=False):
        label = plotly_labels([name])[0]
        for way, values, dash in zip(WAYS, (la.seen, la.generated), DASHES, strict=True):
            traces.append(
                go.Scatter(
                    x=list(range(len(values))),
                    y=np.asarray(values, dtype=float),
                    customdata=plotly_labels(shown),
                    mode="lines",
                    name=f"{label}: {way}",
                    line=dict(color=colour, dash=dash, width=2.5 if dash == "solid" else 2),
                    hovertemplate=f"{label}, {way}<br>predicting %{{customdata}}"
                    "<br>loss %{y:.2f} nats<extra></extra>",
                )
            )
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT,
            xaxis=dict(title="position t (predicting token t+1)"),
            yaxis=dict(title="loss (nats)", rangemode="tozero"),
            legend=dict(orientation="h", y=-0.22),
        ),
    )


def loss_lines(
    named: Sequence[tuple[str, np.ndarray]],
    x_title: str,
    title: str = "",
    mark: tuple[float, str] | None = None,
    markers: bool = True,
) -> go.Figure:
    """Each model's loss (one value per position) as a line in its colour; `mark` = (x, text)
    draws a dotted vertical line there, labelled; markers=False for long lines."""
    traces = [
        go.Scatter(
            x=list(range(len(loss))),
            y=np.asarray(loss, dtype=float),
            mode="lines+markers" if markers else "lines",
            name=plotly_labels([name])[0],
            line=dict(color=colour, width=2.5 if markers else 1.8),
            marker=dict(size=5),
            hovertemplate="position %{x}<br>loss %{y:.2f} nats<extra></extra>",
        )
        for (name, loss), colour in zip(named, MODEL_COLOURS, strict=False)
    ]
    fig = go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT,
            xaxis=dict(title=x_title),
            yaxis=dict(title="loss (nats)", rangemode="tozero"),
            legend=dict(orientation="h", y=-0.22),
        ),
    )
    if mark is not None:
        fig.add_vline(x=mark[0], line=dict(color="#444444", dash="dot", width=1))
        fig.add_annotation(
            x=mark[0], y=1, yref="paper", text=mark[1], showarrow=False, xanchor="left"
        )
    return fig


def copy_lines(named: Sequence[tuple[str, np.ndarray]], k: int, title: str = "") -> go.Figure:
    """Each model's mean loss (2k-1,) at position i predicting token i+1 of k random tokens
    written twice; a line marks position k, the first whose answer an induction head can copy
    (token k+1, the second of the second copy)."""
    return loss_lines(
        named, "position i (predicting token i+1)", title, (k - 0.5, "copying possible →")
    )


def kv_memory_lines(
    named: Sequence[tuple[str, float]], max_tokens: int, title: str = ""
) -> go.Figure:
    """The KV cache's memory (MiB, one sequence) against the tokens it holds, from each model's
    measured bytes per token (analysis/variants.kv_bytes_per_token), log-scaled on both axes."""
    tokens = np.unique(np.geomspace(1, max_tokens, 60).round().astype(int))
    traces = [
        go.Scatter(
            x=tokens,
            y=per_token * tokens / 2**20,
            mode="lines",
            name=plotly_labels([name])[0],
            line=dict(color=colour, width=2.5),
            hovertemplate="%{x:,} tokens<br>%{y:.3g} MiB<extra></extra>",
        )
        for (name, per_token), colour in zip(named, MODEL_COLOURS, strict=False)
    ]
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT,
            xaxis=dict(title="tokens in the cache (context length)", type="log"),
            yaxis=dict(title="KV cache (MiB)", type="log"),
            legend=dict(orientation="h", y=-0.22),
        ),
    )
