"""Figures of the Sequence models page: bits per character of each family, how far back each
uses the past, an LSTM's or GRU's gates along a prompt, and memory and time per token against
context length. Pure builders: numbers in, a plotly figure out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    COLUMN_TICKS_MAX_T,
    SEQUENTIAL,
    SERIES_COLOURS,
    colorbar_below,
    every_tick,
    house_layout,
    plotly_labels,
    plotly_text,
    series_colours,
)

# One colour per family, the same in every chart of the page (SERIES_COLOURS: hues that stay
# apart on a projector); the counting model is grey.
FAMILY_COLOURS = {
    "GPT": SERIES_COLOURS[0],
    "RNN": SERIES_COLOURS[1],
    "LSTM": SERIES_COLOURS[2],
    "GRU": SERIES_COLOURS[3],
    "causal CNN": SERIES_COLOURS[4],
    "n-gram": "#7f7f7f",
}
EXTRA_DASH = "dash"  # a second model of a family already drawn: its own hue, and dashed


def series_styles(kinds: Sequence[str]) -> list[tuple[str, str]]:
    """(colour, dash) of each series, given its family: the first model of a family in its family's colour, solid;
    another of the same family (the model on screen beside the one standing for its family) in a
    hue no other series of the chart has, dashed. No two series share a hue.

    >>> series_styles(["GPT", "GPT", "LSTM"])[1]
    ('#6b7d00', 'dash')
    """
    firsts = {kind: FAMILY_COLOURS.get(kind) for kind in kinds}
    spent = [c for c in firsts.values() if c is not None]
    n_extra = len(kinds) - len(spent)
    try:  # a hue no family has, so a colour means one family on every chart of the page
        extras = iter(
            series_colours(n_extra, taken=[*spent, *FAMILY_COLOURS.values()], farthest=True)
        )
    except ValueError:  # many extras: the hues of families this chart does not draw too
        extras = iter(series_colours(n_extra, taken=spent, farthest=True))
    seen: set[str] = set()
    styles = []
    for kind in kinds:
        if kind not in seen and firsts[kind] is not None:
            styles.append((firsts[kind], "solid"))
        else:
            styles.append((next(extras), EXTRA_DASH))
        seen.add(kind)
    return styles


def bpc_bars(names: Sequence[str], kinds: Sequence[str], bpc: Sequence[float]) -> go.Figure:
    """Horizontal bars, best (lowest) at the top, one colour per family."""
    order = np.argsort(bpc)[::-1]  # plotly draws the first bar at the bottom
    labels = [f"{plotly_text(names[i])} ({kinds[i]})" for i in order]
    styles = series_styles([kinds[i] for i in order])
    return go.Figure(
        go.Bar(
            x=[bpc[i] for i in order],
            y=labels,
            orientation="h",
            marker_color=[colour for colour, _ in styles],
            text=[f"{bpc[i]:.3f}" for i in order],
            textposition="outside",
            hovertemplate="%{y}<br>%{x:.3f} bits per character<extra></extra>",
        ),
        house_layout(
            "Bits per character of the validation text (lower is better)",
            height=120 + 34 * len(names),
            xaxis=dict(title="bits per character", range=[0, max(bpc) * 1.18]),
            yaxis=dict(automargin=True),
            showlegend=False,
        ),
    )


def reach_chart(
    profiles: dict[str, np.ndarray],
    kinds: dict[str, str],
    fields: dict[str, int],
    reach_fraction: float,
) -> go.Figure:
    """Sensitivity against distance k (log-y), each model's line scaled to its k = 0 value; a
    dotted line at each CNN's receptive field, past which its line stops (exactly zero)."""
    fig = go.Figure()
    styles = dict(zip(profiles, series_styles([kinds[n] for n in profiles]), strict=True))
    for name, profile in profiles.items():
        colour, dash = styles[name]
        scaled = profile / profile[0] if profile[0] > 0 else profile
        shown = np.where(scaled > 0, scaled, np.nan)  # log axis: zero is "off the chart"
        fig.add_trace(
            go.Scatter(
                x=np.arange(len(profile)),
                y=shown,
                mode="lines",
                name=f"{plotly_text(name)} ({kinds[name]})",
                line=dict(color=colour, width=2, dash=dash),
                hovertemplate="k = %{x} back<br>%{y:.2e} of the nearest token's<extra></extra>",
            )
        )
    length = max((len(p) for p in profiles.values()), default=1)
    for name, field in fields.items():
        if field < length:
            fig.add_vline(
                x=field - 0.5,
                line=dict(color=styles[name][0], dash="dot"),
                annotation_text=f"{plotly_text(name)}'s receptive field",
                annotation_position="bottom left",
                annotation_font_size=12,
            )
    fig.add_hline(
        y=reach_fraction,
        line=dict(color="#555", dash="dash", width=1),
        annotation_text=f"{reach_fraction:.0%}: the reach in the sentence below",
        annotation_position="top right",
        annotation_font_size=12,
    )
    fig.update_layout(
        house_layout(
            "How much the next-token prediction moves with a token k steps back",
            xaxis=dict(title="k: tokens back from the last one read", range=[0, length - 1]),
            yaxis=dict(
                title="gradient / the nearest token's",
                type="log",
                exponentformat="e",
                dtick=2,  # 1e-10, 1e-08, ...: superscripts would draw under 12 px
                range=[-10, 0.3],  # log10: below 1e-10 a token no longer matters at all
            ),
            legend=dict(orientation="h", y=-0.25),
        )
    )
    return fig


def gate_heatmap(values: np.ndarray, labels: Sequence[str], gate: str, units: Sequence[int]):
    """One gate (T, U) along the prompt: tokens across, the chosen units down, 0..1."""
    signed = gate == "cell"
    return go.Figure(
        go.Heatmap(
            z=values.T,
            x=plotly_labels(labels),
            y=[f"unit {u}" for u in units],
            colorscale="RdBu" if signed else SEQUENTIAL,
            zmid=0 if signed else None,
            zmin=None if signed else 0,
            zmax=None if signed else 1,
            colorbar=colorbar_below(gate),
            hovertemplate="%{x}<br>%{y}<br>" + gate + " %{z:.2f}<extra></extra>",
        ),
        house_layout(
            f"The {gate} {'state' if signed else 'gate'} at each token (the units that vary most)",
            height=140 + 16 * len(units),
            xaxis=every_tick(list(labels), max_t=COLUMN_TICKS_MAX_T),  # more would overlap
            yaxis=dict(autorange="reversed"),
        ),
    )


def cost_chart(
    lengths: Sequence[int],
    series: dict[str, Sequence[float]],
    kinds: dict[str, str],
    y_title: str,
    title: str,
) -> go.Figure:
    """One line per model against context length, log-log."""
    fig = go.Figure()
    dashes = [
        "solid",
        "dash",
        "dot",
        "dashdot",
        "longdash",
        "longdashdot",
    ]  # equal lines stay apart
    colours = [c for c, _ in series_styles([kinds[n] for n in series])]
    for i, (name, ys) in enumerate(series.items()):
        fig.add_trace(
            go.Scatter(
                x=list(lengths),
                y=list(ys),
                mode="lines+markers",
                name=f"{plotly_text(name)} ({kinds[name]})",
                line=dict(color=colours[i], width=2, dash=dashes[i % len(dashes)]),
                hovertemplate="%{x} tokens<br>%{y:,.3g}<extra></extra>",
            )
        )
    fig.update_layout(
        _log_log(title, lengths, "context length (tokens already read)", y_title, legend_y=-0.25)
    )
    return fig


def cost_curves_chart(
    lengths: Sequence[int],
    names: Sequence[str],
    kinds: Sequence[str],
    values: Sequence[Sequence[float]],
    dashes: Sequence[str],
    y_title: str,
    title: str,
) -> go.Figure:
    """One line per series against the context length T, log-log, each T labelled; a series is
    drawn in its family's colour (kinds[i]: "GPT", "LSTM", ...) with its own dash, so a family's
    two measures (a training step, a forward pass) share a hue."""
    fig = go.Figure()
    for name, kind, ys, dash in zip(names, kinds, values, dashes, strict=True):
        fig.add_trace(
            go.Scatter(
                x=list(lengths),
                y=list(ys),
                mode="lines+markers",
                name=plotly_text(name),
                line=dict(color=FAMILY_COLOURS.get(kind, "#7f7f7f"), width=2, dash=dash),
                hovertemplate="T = %{x:,}<br>%{y:,.3g}<extra>" + plotly_text(name) + "</extra>",
            )
        )
    fig.update_layout(
        _log_log(title, lengths, "context length T (tokens a sequence)", y_title, legend_y=-0.3)
    )
    return fig


def _log_log(
    title: str, lengths: Sequence[int], x_title: str, y_title: str, legend_y: float
) -> dict:
    """The layout of a measure against context length: both axes log, each length labelled, a
    y label per power of ten only, the legend below."""
    return house_layout(
        title,
        xaxis=dict(
            title=x_title,
            type="log",
            tickvals=list(lengths),
            ticktext=[f"{n:,}" for n in lengths],
        ),
        yaxis=dict(title=y_title, type="log", dtick=1),
        legend=dict(orientation="h", y=legend_y),
    )
