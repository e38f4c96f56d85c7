"""LayerNorm figures: one token's vector at each step of the formula, mean and sigma per token,
histograms of the values before and after, and the residual norm through the layers of several models.

Arrays and labels in, plotly figures out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    SMALL_HEIGHT,
    axis_suffix,
    base_layout,
    house_layout,
    plotly_labels,
    subplot_domains,
)

BEFORE_COLOUR = "#7f7f7f"
NORMALIZED_COLOUR = "#1f77b4"
AFTER_COLOUR = "#ff7f0e"
GAMMA_COLOUR = "#2ca02c"
BETA_COLOUR = "#9467bd"


def ln_steps(
    x: np.ndarray,
    mean: float,
    sigma: float,
    normalized: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    y: np.ndarray,
    title: str = "",
) -> go.Figure:
    """Four stacked bar charts over the D dimensions of one token: x (with mu and mu +- sigma),
    (x - mu) / sigma, gamma and beta, and the output y."""
    D = len(x)
    dims = np.arange(D)
    titles = (
        "1. before: x, the residual entering the LayerNorm (red: μ, dashed: μ ± σ)",
        "2. normalized: (x − μ) / σ, mean 0 and standard deviation 1",
        "3. the learned scale γ (gamma, green) and shift β (beta, purple)",
        "4. after: y = normalized · γ + β",
    )
    hover = "dimension %{x}: %{y:.3f}<extra>%{fullData.name}</extra>"
    bars = [
        ("x", x, BEFORE_COLOUR, 1),
        ("normalized", normalized, NORMALIZED_COLOUR, 2),
        ("γ", gamma, GAMMA_COLOUR, 3),
        ("β", beta, BETA_COLOUR, 3),
        ("y", y, AFTER_COLOUR, 4),
    ]
    # Plain dicts laid out as make_subplots(4, 1, shared_xaxes=True) would, already as plotly's
    # validation leaves them (it cost ~20 ms, and a student moves the token and layer often).
    traces = [
        dict(
            type="bar",
            x=dims,
            y=np.asarray(v),
            name=name,
            marker=dict(color=colour),
            hovertemplate=hover,
            xaxis=f"x{axis_suffix(row - 1)}",
            yaxis=f"y{axis_suffix(row - 1)}",
        )
        for name, v, colour, row in bars
    ]
    layout = house_layout(title, 680 if D <= 256 else 760)
    for i, (x_domain, y_domain) in enumerate(subplot_domains(4, 1, v_space=0.07)):
        n = axis_suffix(i)
        shared = dict(matches="x4", showticklabels=False) if i < 3 else {}
        layout[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=x_domain, **shared)
        layout[f"yaxis{n}"] = dict(anchor=f"x{n}", domain=y_domain)
        layout.setdefault("annotations", []).append(
            dict(
                text=titles[i],
                font=dict(size=13),
                showarrow=False,
                x=0,
                xanchor="left",
                xref="paper",
                y=y_domain[1],
                yanchor="bottom",
                yref="paper",
            )
        )
    layout["xaxis4"]["title"] = dict(text="dimension of the vector")
    line = dict(type="line", xref="x domain", x0=0, x1=1, yref="y")
    layout.update(
        shapes=[
            {**line, "y0": mean, "y1": mean, "line": dict(color=ACCENT, width=2)},
            *(
                {
                    **line,
                    "y0": mean + s * sigma,
                    "y1": mean + s * sigma,
                    "line": dict(color=ACCENT, dash="dash"),
                }
                for s in (-1, 1)
            ),
        ],
        barmode="group",
        bargap=0.15,
        showlegend=False,
        margin=dict(l=10, r=10, t=60 if title else 30, b=10),
    )
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def ln_stats_per_token(
    mean: np.ndarray,
    sigma: np.ndarray,
    labels: list[str],
    chosen: int | None = None,
    title: str = "",
) -> go.Figure:
    """Mean and sigma of each token's vector before the LayerNorm, side by side; `chosen` in red."""
    labels = plotly_labels(labels)  # the student's tokens: never markup
    colours = [ACCENT if i == chosen else "#1f77b4" for i in range(len(labels))]
    traces = [
        dict(
            type="bar",
            x=labels,
            y=np.asarray(values),
            marker=dict(color=colours),
            name=name,
            hovertemplate=f"%{{x}}: {name} = %{{y:.4f}}<extra></extra>",
            xaxis=f"x{axis_suffix(i)}",
            yaxis=f"y{axis_suffix(i)}",
        )
        for i, (values, name) in enumerate(((mean, "μ"), (sigma, "σ")))
    ]
    axis = dict(
        type="category",
        tickangle=-60 if len(labels) > 10 else 0,
        title=dict(text="token (position:text)"),
    )
    titles = ("mean μ of each token's vector", "standard deviation σ of each token's vector")
    layout = _side_by_side(titles, axis, axis)
    layout.update(house_layout(title, SMALL_HEIGHT + 60), showlegend=False)
    layout["margin"] = dict(l=10, r=10, t=70 if title else 40, b=10)
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def _side_by_side(titles: tuple[str, str], xaxis: dict, xaxis2: dict, yaxis: dict | None = None):
    """The layout of two subplots side by side (make_subplots(1, 2, horizontal_spacing=0.08)),
    titled in 13 px, as plain dicts: building it through plotly's setters cost ~10 ms a chart."""
    layout: dict = {"annotations": []}
    for i, (x_domain, y_domain) in enumerate(subplot_domains(1, 2, h_space=0.08)):
        n = axis_suffix(i)
        layout[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=x_domain, **(xaxis2 if i else xaxis))
        layout[f"yaxis{n}"] = dict(
            anchor=f"x{n}", domain=y_domain, **((yaxis or {}) if not i else {})
        )
        layout["annotations"].append(
            dict(
                text=titles[i],
                font=dict(size=13),
                showarrow=False,
                x=sum(x_domain) / 2,
                xanchor="center",
                xref="paper",
                y=y_domain[1],
                yanchor="bottom",
                yref="paper",
            )
        )
    return layout


def ln_histograms(before: np.ndarray, after: np.ndarray, title: str = "") -> go.Figure:
    """Histograms of every value before and after the LayerNorm, on their own x scales."""
    traces = [
        dict(
            type="histogram",
            x=np.ravel(values),
            nbinsx=60,
            marker=dict(color=colour),
            name=name,
            xaxis=f"x{axis_suffix(i)}",
            yaxis=f"y{axis_suffix(i)}",
        )
        for i, (values, colour, name) in enumerate(
            ((before, BEFORE_COLOUR, "before"), (after, AFTER_COLOUR, "after"))
        )
    ]
    value = dict(title=dict(text="value"))
    titles = ("values before (x)", "values after (y)")
    layout = _side_by_side(titles, value, value, dict(title=dict(text="how many values")))
    layout.update(house_layout(title, SMALL_HEIGHT + 40), showlegend=False, bargap=0.05)
    layout["margin"] = dict(l=10, r=10, t=70 if title else 40, b=10)
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def norm_profiles(
    profiles: dict[str, np.ndarray], stations: dict[str, list[str]], title: str = ""
) -> go.Figure:
    """Mean residual norm at each station for several models (name -> (L + 1,)), one line each."""
    fig = go.Figure()
    for name, values in profiles.items():
        fig.add_trace(
            go.Scatter(
                x=stations[name],
                y=np.asarray(values, dtype=float),
                mode="lines+markers",
                name=name,
                hovertemplate="%{x}: mean ‖x‖ = %{y:.2f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(type="category", title="where in the model")
    fig.update_yaxes(title="mean ‖x‖ over the prompt", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=-0.3))
    return base_layout(fig, title, 360)
