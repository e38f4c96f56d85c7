"""Scaling figure: validation loss against non-embedding parameters or training compute, log-log,
with the fitted power law and where GPT-2 and GPT-3 sit on the same axis.

Points in (analysis/scaling.py), a plotly figure out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.analysis.scaling import PowerLaw, Published, ScalingPoint, rule_of_thumb
from viz_model.charts.common import ACCENT, HEIGHT, house_layout, plotly_labels

SOURCE_STYLE = {  # source -> (colour, marker symbol)
    "sweep": ("#1f77b4", "circle"),
    "bundled": ("#2ca02c", "diamond"),
    "class run": ("#ff7f0e", "star"),
}
PUBLISHED_COLOUR = "#7f7f7f"
LABELLED = ("GPT-2 117M", "GPT-2 1542M", "GPT-3 175B")  # GPT-3 Small sits on GPT-2 117M
AXES = {"params": "non-embedding parameters N", "compute": "training compute C = 6 N D (FLOPs)"}


def _x(point: ScalingPoint, axis: str) -> float:
    return float(point.n_params if axis == "params" else point.compute)


def published_x(p: Published, axis: str) -> float | None:
    """A published model's place on the axis: N by 12 L d^2; C only when its tokens are known."""
    n = rule_of_thumb(p.n_layer, p.d_model)
    if axis == "params":
        return float(n)
    return 6.0 * n * p.tokens if p.tokens else None


def scaling_figure(
    points: Sequence[ScalingPoint],
    fit: PowerLaw | None,
    published: Sequence[Published],
    axis: str = "params",
    title: str = "",
) -> go.Figure:
    """Each source's points; the fit (solid over the sweep, dashed beyond); published models
    placed on the dashed line (the fit's guess, not their own losses: other text and tokens)."""
    traces = []
    for source, (colour, symbol) in SOURCE_STYLE.items():
        mine = [p for p in points if p.source == source]
        if mine:
            traces.append(
                go.Scatter(
                    x=[_x(p, axis) for p in mine],
                    y=[p.val_loss for p in mine],
                    mode="markers",
                    name=source,
                    marker=dict(color=colour, symbol=symbol, size=11),
                    customdata=plotly_labels(p.name for p in mine),
                    hovertemplate="%{customdata}<br>%{x:.3s}<br>loss %{y:.3f}<extra></extra>",
                )
            )
    placed = [(p, x) for p in published if (x := published_x(p, axis)) is not None]
    sweep = [_x(p, axis) for p in points if p.source == "sweep"]
    if fit is not None and sweep:
        lo, hi = min(sweep), max(sweep)
        far = max([hi, *(x for _, x in placed)])
        inside, beyond = np.geomspace(lo, hi, 20), np.geomspace(hi, far, 40)
        for xs, dash, name in ((inside, "solid", "fit"), (beyond, "dash", "fit, extrapolated")):
            traces.append(
                go.Scatter(
                    x=xs,
                    y=fit(xs),
                    mode="lines",
                    name=f"{name}: {fit.a:.2f} x^-{fit.b:.3f}",
                    line=dict(color=ACCENT, dash=dash, width=2),
                    hoverinfo="skip",
                )
            )
        if placed:
            xs = np.array([x for _, x in placed])
            traces.append(
                go.Scatter(
                    x=xs,
                    y=fit(xs),
                    mode="markers+text",
                    name="GPT-2 / GPT-3 (size only)",
                    marker=dict(color=PUBLISHED_COLOUR, symbol="x", size=9),
                    text=[p.name if p.name in LABELLED else "" for p, _ in placed],
                    textposition="top left",
                    customdata=[p.name for p, _ in placed],
                    hovertemplate="%{customdata}<br>%{x:.3s}<br>the fit's guess %{y:.2f}"
                    "<extra></extra>",
                )
            )
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT + 40,
            xaxis=dict(title=AXES[axis], type="log", exponentformat="power"),
            yaxis=dict(title="validation loss (nats per character)", type="log", tickformat=".1f"),
            legend=dict(orientation="h", y=-0.25),
        ),
    )
