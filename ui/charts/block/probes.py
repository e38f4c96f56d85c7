"""Linear probes: each property's accuracy by station, held out and on training text, against
the majority baseline and the untrained model.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.block.shared import (
    STEP_COLOUR,
    UNTRAINED_COLOUR,
)
from ui.charts.common import (
    ACCENT,
    SMALL_HEIGHT,
    base_layout,
)


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
