"""Scaling figure: validation loss against non-embedding parameters or training compute, log-log,
with the fitted power law drawn over the range of the points it was fitted on, and nowhere else.

Against parameters: the sweep's final points, the fit over them, other models (not fitted).
Against compute: every evaluation on every sweep run's curve (faint), the compute frontier, and the
fit on that frontier (compute's own exponent), with the final points and other models.
Published models are never drawn here: their losses are on other text and other tokens (the page
lists them in a table with their own numbers).

Points in (analysis/labs/scaling.py), a plotly figure out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import ACCENT, HEIGHT, house_layout, plotly_labels
from viz_model.analysis.labs.scaling import CurvePoint, FitReport, ScalingPoint

SOURCE_STYLE = {  # source -> (colour, marker symbol)
    "sweep": ("#1f77b4", "circle"),
    "bundled": ("#2ca02c", "diamond"),
    "class run": ("#ff7f0e", "star"),
}
CURVE_COLOUR = "#9ecae1"
AXES = {"params": "non-embedding parameters N", "compute": "training compute C = 6 N D (FLOPs)"}


def _x(point: ScalingPoint, axis: str) -> float:
    return float(point.n_params if axis == "params" else point.compute)


def fit_name(r: FitReport) -> str:
    """The fit's legend entry: its exponent and the 95% interval."""
    return f"fit: b = {r.b:.3f} (95%: {r.b_low:.3f} to {r.b_high:.3f})"


LOSS_STEPS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)  # spacings of the loss axis's labels, finest first


def loss_ticks(values: Sequence[float], most: int = 7) -> list[float]:
    """Round losses to label the log loss axis with, in the full font (plotly's own log labels
    between powers of ten are smaller than the 12 px floor): the finest spacing that gives at
    most `most` labels over the values' range, one step beyond it each way.

    >>> loss_ticks([1.42, 1.9])
    [1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0]
    """
    finite = [v for v in values if np.isfinite(v) and v > 0]
    if not finite:
        return []
    lo, hi = min(finite), max(finite)
    step = next((s for s in LOSS_STEPS if (hi - lo) / s <= most), LOSS_STEPS[-1])
    first, last = (np.floor(lo / step) - 1) * step, (np.ceil(hi / step) + 1) * step
    ticks = np.arange(first, last + step / 2, step)
    return [round(float(t), 2) for t in ticks if t > 0]


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def decade_ticks(values: Sequence[float]) -> dict:
    """A label at each power of ten the values span, written 10⁶ in the full font: plotly's own
    log labels write the exponent (and the 2s and 5s between decades) smaller, under the 12 px
    floor (charts.common.TICK_FONT).

    >>> decade_ticks([2e5, 3e7])["ticktext"]
    ['10⁵', '10⁶', '10⁷', '10⁸']
    """
    positive = [v for v in values if v > 0]
    if not positive:
        return {}
    lo, hi = int(np.floor(np.log10(min(positive)))), int(np.ceil(np.log10(max(positive))))
    powers = range(lo, max(hi, lo + 1) + 1)
    return dict(
        tickvals=[10.0**k for k in powers],
        ticktext=[f"10{str(k).translate(SUPERSCRIPT)}" for k in powers],
    )


def scaling_figure(
    points: Sequence[ScalingPoint],
    fit: FitReport | None,
    axis: str = "params",
    title: str = "",
    curve: Sequence[CurvePoint] = (),
    frontier: Sequence[CurvePoint] = (),
) -> go.Figure:
    """Each source's points; on compute, the curves and their frontier; the fit as a solid line
    from its smallest to its largest x (no extrapolation)."""
    traces = []
    xs_of = [_x(p, axis) for p in points] + [p.compute for p in (*curve, *frontier)]
    ys_of = [p.val_loss for p in points] + [p.val_loss for p in (*curve, *frontier)]
    if axis == "compute" and curve:
        traces.append(
            go.Scatter(
                x=[p.compute for p in curve],
                y=[p.val_loss for p in curve],
                mode="markers",
                name="every evaluation of the sweep",
                marker=dict(color=CURVE_COLOUR, size=6),
                customdata=[f"{p.run}, step {p.step}" for p in curve],
                hovertemplate="%{customdata}<br>%{x:.3s} FLOPs<br>loss %{y:.3f}<extra></extra>",
            )
        )
    if axis == "compute" and frontier:
        traces.append(
            go.Scatter(
                x=[p.compute for p in frontier],
                y=[p.val_loss for p in frontier],
                mode="lines+markers",
                name="frontier: best loss for the compute",
                line=dict(color="#08519c", width=1),
                marker=dict(color="#08519c", size=5),
                hoverinfo="skip",
            )
        )
    for source, (colour, symbol) in SOURCE_STYLE.items():
        mine = [p for p in points if p.source == source]
        if mine:
            traces.append(
                go.Scatter(
                    x=[_x(p, axis) for p in mine],
                    y=[p.val_loss for p in mine],
                    mode="markers",
                    name=source if source != "sweep" else "sweep (end of training)",
                    marker=dict(color=colour, symbol=symbol, size=11),
                    customdata=plotly_labels(p.name for p in mine),
                    hovertemplate="%{customdata}<br>%{x:.3s}<br>loss %{y:.3f}<extra></extra>",
                )
            )
    if fit is not None:
        xs = np.geomspace(fit.x_low, fit.x_high, 30)
        traces.append(
            go.Scatter(
                x=xs,
                y=fit.law(xs),
                mode="lines",
                name=fit_name(fit),
                line=dict(color=ACCENT, width=2),
                hoverinfo="skip",
            )
        )
    return go.Figure(
        traces,
        layout=house_layout(
            title,
            HEIGHT + 40,
            xaxis=dict(title=AXES[axis], type="log", **decade_ticks(xs_of)),
            yaxis=dict(
                title="validation loss (nats per character)",
                type="log",
                tickvals=loss_ticks(ys_of),
                tickformat=".1f",
            ),
            legend=dict(orientation="h", y=-0.25),
        ),
    )
