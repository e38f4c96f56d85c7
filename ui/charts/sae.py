"""Figures of the Sparse autoencoder page: the reconstruction improving over training, and one
feature's activation along the prompt. (Its top snippets and promoted tokens reuse the MLP
neurons page's `snippets_html` and `direction_bars`.)"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import ACCENT, SMALL_HEIGHT, every_tick, house_layout, plotly_labels

SMOOTH = 20  # training steps averaged per point of the curve


def training_curve(mse: Sequence[float], resampled: Sequence[int] = ()) -> go.Figure:
    """1 - the batch's reconstruction error (in units of the activations' variance) per training
    step, smoothed over SMOOTH steps; dotted lines where dead features were resampled."""
    mse = np.asarray(mse, dtype=float)
    n = max(1, min(SMOOTH, len(mse)))
    smooth = np.convolve(mse, np.ones(n) / n, mode="valid") if len(mse) else mse
    steps = np.arange(len(smooth)) + n - 1
    fig = go.Figure(
        go.Scatter(
            x=steps.tolist(),
            y=(1 - smooth).tolist(),
            mode="lines",
            line=dict(color="#1f77b4", width=2),
            hovertemplate="step %{x}<br>%{y:.1%} of the variance explained<extra></extra>",
        ),
        house_layout(
            "The reconstruction as the SAE trains",
            SMALL_HEIGHT + 40,
            xaxis=dict(title="training step"),
            yaxis=dict(title="variance explained", tickformat=".0%"),
            showlegend=False,
        ),
    )
    for step in resampled:
        fig.add_vline(x=step, line=dict(color=ACCENT, dash="dot", width=1))
    return fig


def along_prompt(values: Sequence[float], labels: Sequence[str], feature: int) -> go.Figure:
    """One feature's activation at each token of the prompt, as bars."""
    shown = plotly_labels(list(labels))  # token text: never markup
    fig = go.Figure(
        go.Bar(
            x=shown,
            y=[float(v) for v in values],
            marker_color=ACCENT,
            hovertemplate="%{x}<br>activation %{y:.3f}<extra></extra>",
        ),
        house_layout(
            f"Feature {feature} along your prompt",
            SMALL_HEIGHT + 60,
            yaxis=dict(title="activation", rangemode="tozero"),
            showlegend=False,
        ),
    )
    fig.update_xaxes(type="category", title="token of your prompt", **every_tick(shown, 36))
    return fig
