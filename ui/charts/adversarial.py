"""Figures of the Adversarial suffix page: p(target) climbing step by step, and each layer's
attention from the last position onto the suffix against uniform attention's share."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ui.charts.common import ACCENT, house_layout, plotly_text


def climb_chart(p_target: Sequence[float], target_label: str) -> go.Figure:
    """p(target) after each accepted swap (step 0: the starting suffix), log-y."""
    steps = list(range(len(p_target)))
    return go.Figure(
        go.Scatter(
            x=steps,
            y=list(p_target),
            mode="lines+markers",
            line=dict(color=ACCENT, width=2),
            hovertemplate="step %{x}<br>p = %{y:.2e}<extra></extra>",
        ),
        house_layout(
            f"p({plotly_text(target_label)} next) as the suffix is searched",
            xaxis=dict(title="accepted swaps", dtick=1 if len(steps) <= 20 else None),
            # a label a power of ten, written 1e-05: superscripts and minor labels draw under 12 px
            yaxis=dict(title="probability of the target", type="log", dtick=1, exponentformat="e"),
            showlegend=False,
        ),
    )


def attention_bars(before: Sequence[float], after: Sequence[float]) -> go.Figure:
    """Per layer: the last position's attention on the suffix (mean over heads), with the
    starting suffix and with the one found."""
    layers = [f"layer {i}" for i in range(len(after))]
    # grey before, blue after (a pale blue beside the blue washed out to one hue on a projector)
    bars = [("starting suffix", before, "#7f7f7f"), ("suffix found", after, "#1f77b4")]
    return go.Figure(
        [
            go.Bar(
                x=layers,
                y=list(values),
                name=name,
                marker_color=colour,
                hovertemplate="%{x}<br>%{y:.0%} of the attention on the suffix<extra></extra>",
            )
            for name, values, colour in bars
        ],
        house_layout(
            "Where the last token looks: its attention on the suffix",
            yaxis=dict(title="share of attention", range=[0, 1], tickformat=".0%"),
            barmode="group",
            legend=dict(orientation="h", y=-0.2),
        ),
    )
