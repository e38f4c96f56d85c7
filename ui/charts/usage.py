"""Figures of the Using a model page: surprisal along a text, a forced token's aftermath,
repetition by decoder, the beams of beam search, candidates' scores, few-shot accuracy, and the
noisy channel's two terms. Arrays and labels in, a plotly figure out; no Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.charts.common import (
    ACCENT,
    COLUMN_TICKS_MAX_T,
    SMALL_HEIGHT,
    TICK_FONT,
    base_layout,
    every_tick,
    plotly_labels,
    plotly_text,
)

BLUE, GREY, ORANGE, GREEN = "#1f77b4", "#7f7f7f", "#ff7f0e", "#2ca02c"
DECODER_COLOURS = {"greedy": BLUE, "sampling": ORANGE, "penalty": GREEN}


def _axis(title: str, **extra) -> dict:
    return dict(title=dict(text=title), tickfont=dict(size=TICK_FONT), **extra)


def surprisal_bars(labels: Sequence[str], surprisal: np.ndarray, title: str) -> go.Figure:
    """Each token's surprisal (nats) along the text; the first token has none (NaN: no bar)."""
    labels = plotly_labels(labels)
    s = np.asarray(surprisal, dtype=float)
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=np.where(np.isnan(s), None, s),
            marker_color=BLUE,
            hovertemplate="%{x}: %{y:.2f} nats<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis=dict(type="category", **every_tick(labels, COLUMN_TICKS_MAX_T)),
        yaxis=_axis("surprisal −log p (nats)", rangemode="tozero"),
        showlegend=False,
    )
    return base_layout(fig, title, height=SMALL_HEIGHT + 40)


def forced_lines(
    base_pieces: Sequence[str],
    base_surprisal: np.ndarray,
    forced_pieces: Sequence[str],
    forced_surprisal: np.ndarray,
    position: int,
) -> go.Figure:
    """Surprisal of each new token, greedy against the run with a token forced at `position`
    (0-based); the forced step is marked."""
    fig = go.Figure()
    for name, pieces, s, colour in (
        ("greedy, nothing forced", base_pieces, base_surprisal, BLUE),
        ("with the forced token", forced_pieces, forced_surprisal, ACCENT),
    ):
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(s) + 1)),
                y=list(np.asarray(s, dtype=float)),
                mode="lines+markers",
                name=name,
                line=dict(color=colour),
                customdata=plotly_labels(pieces),
                hovertemplate="new token %{x}: “%{customdata}” %{y:.2f} nats<extra>"
                + name
                + "</extra>",
            )
        )
    fig.add_vline(x=position + 1, line=dict(color=GREY, dash="dot"))
    fig.update_layout(
        xaxis=_axis("new token (1 = the first after the prompt)"),
        yaxis=_axis("surprisal (nats)", rangemode="tozero"),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return base_layout(fig, "", height=SMALL_HEIGHT + 40)


def repetition_bars(
    decoders: Sequence[str], repeated: Sequence[float], distinct: Sequence[float]
) -> go.Figure:
    """Per decoder: the share of 3-word phrases written before, and of distinct words."""
    fig = go.Figure()
    for name, values, colour in (
        ("3-word phrases repeated", repeated, ACCENT),
        ("distinct words", distinct, BLUE),
    ):
        fig.add_trace(
            go.Bar(
                x=list(decoders),
                y=[None if np.isnan(v) else v for v in values],
                name=name,
                marker_color=colour,
                text=["–" if np.isnan(v) else f"{v:.0%}" for v in values],
                textposition="outside",
                textfont=dict(size=TICK_FONT),
                hovertemplate="%{x}: %{y:.1%}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        xaxis=_axis(""),
        yaxis=_axis("share", tickformat=".0%", range=[0, 1.15]),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return base_layout(fig, "", height=SMALL_HEIGHT + 40)


def hyperfit_bars(
    prompts: Sequence[str], base: Sequence[float], fitted: Sequence[float]
) -> go.Figure:
    """Per held-out prompt: the share of 3-word phrases each model's greedy text had written
    before (the base grey, the hyperfitted model red)."""
    fig = go.Figure()
    for name, values, colour in (("base", base, GREY), ("hyperfitted", fitted, ACCENT)):
        fig.add_trace(
            go.Bar(
                x=list(prompts),
                y=[None if np.isnan(v) else v for v in values],
                name=name,
                marker_color=colour,
                text=["–" if np.isnan(v) else f"{v:.0%}" for v in values],
                textposition="outside",
                textfont=dict(size=TICK_FONT),
                hovertemplate="%{x}: %{y:.1%}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        xaxis=_axis("held-out prompt"),
        yaxis=_axis("3-word phrases repeated", tickformat=".0%", range=[0, 1.15]),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return base_layout(fig, "", height=SMALL_HEIGHT + 40)


def beam_tree(
    step_texts: Sequence[Sequence[str]],
    step_logprobs: Sequence[Sequence[float]],
    parents: Sequence[Sequence[int]],
    greedy_logprobs: Sequence[float],
) -> go.Figure:
    """The beams after each step (x) at their cumulative log-probability (y), each joined to the
    beam it extended; the best final beam's path and greedy's path drawn over them."""
    fig = go.Figure()
    xs, ys = [], []
    for t in range(len(step_logprobs)):  # step 0 is the prompt itself, at log p = 0
        for j, parent in enumerate(parents[t]):
            xs += [t, t + 1, None]
            ys += [step_logprobs[t - 1][parent] if t else 0.0, step_logprobs[t][j], None]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line=dict(color="#c7c7c7"),
            hoverinfo="skip",
            name="kept beams",
        )
    )
    x_all = [t + 1 for t, row in enumerate(step_logprobs) for _ in row]
    y_all = [v for row in step_logprobs for v in row]
    text_all = [plotly_text(s) for row in step_texts for s in row]
    fig.add_trace(
        go.Scatter(
            x=x_all,
            y=y_all,
            mode="markers",
            marker=dict(color=GREY, size=7),
            customdata=text_all,
            hovertemplate="step %{x}: “%{customdata}”<br>log p = %{y:.2f}<extra></extra>",
            showlegend=False,
        )
    )
    best = _path(parents)
    fig.add_trace(
        go.Scatter(
            x=list(range(len(best) + 1)),
            y=[0.0] + [step_logprobs[t][j] for t, j in enumerate(best)],
            mode="lines+markers",
            line=dict(color=BLUE, width=3),
            name="best beam",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=list(range(len(greedy_logprobs) + 1)),
            y=[0.0, *greedy_logprobs],
            mode="lines",
            line=dict(color=ACCENT, dash="dash", width=2),
            name="greedy",
        )
    )
    fig.update_layout(
        xaxis=_axis(
            "tokens generated (0: the prompt)", dtick=1 if len(step_logprobs) <= 20 else None
        ),
        yaxis=_axis("log p(continuation | prompt)"),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return base_layout(fig, "", height=SMALL_HEIGHT + 80)


def _path(parents: Sequence[Sequence[int]]) -> list[int]:
    """The index at each step of the beam that ends as the best (index 0 of the last step)."""
    path = [0]
    for t in range(len(parents) - 1, 0, -1):
        path.append(parents[t][path[-1]])
    return path[::-1]


def score_bars(texts: Sequence[str], values: Sequence[float], title: str, axis: str) -> go.Figure:
    """Horizontal bars of one score per candidate, the best on top."""
    order = np.argsort(-np.asarray(values, dtype=float), kind="stable")
    labels = [plotly_text(texts[i]) for i in order]
    vals = [float(values[i]) for i in order]
    colours = [BLUE if k == 0 else GREY for k in range(len(order))]
    fig = go.Figure(
        go.Bar(
            x=vals,
            y=labels,
            orientation="h",
            marker_color=colours,
            text=[f"{v:.2f}" for v in vals],
            textposition="auto",
            textfont=dict(size=TICK_FONT),
            hovertemplate="“%{y}”: %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis=_axis(axis),
        yaxis=dict(autorange="reversed", type="category", tickfont=dict(size=TICK_FONT)),
        showlegend=False,
    )
    return base_layout(fig, title, height=max(SMALL_HEIGHT, 60 + 34 * len(vals)))


def fewshot_curve(
    ks: Sequence[int], accuracy: Sequence[float], stderr: Sequence[float], chance: float
) -> go.Figure:
    """Accuracy of the query's answer against the examples in the prompt, with ±2 standard
    errors, and the rule-blind chance as a dashed line."""
    fig = go.Figure(
        go.Scatter(
            x=list(ks),
            y=list(accuracy),
            mode="lines+markers",
            line=dict(color=BLUE, width=3),
            error_y=dict(type="data", array=[2 * s for s in stderr], visible=True),
            name="accuracy",
            hovertemplate="%{x} examples: %{y:.1%}<extra></extra>",
        )
    )
    fig.add_hline(
        y=chance,
        line=dict(color=ACCENT, dash="dash"),
        annotation=dict(text=f"chance {chance:.1%}", font=dict(size=TICK_FONT, color=ACCENT)),
    )
    fig.update_layout(
        xaxis=_axis("examples in the prompt", dtick=1),
        yaxis=_axis("answers right", tickformat=".0%", range=[0, 1.05]),
        showlegend=False,
    )
    return base_layout(fig, "", height=SMALL_HEIGHT + 40)


def channel_bars(
    words: Sequence[str], log_channel: Sequence[float], log_prior: Sequence[float]
) -> go.Figure:
    """Per candidate, log p(x|y) and log p(y) stacked (both negative): the bar's whole length is
    the score, the shortest wins. Candidates in the order given (best first, on top)."""
    labels = plotly_labels(words)
    fig = go.Figure()
    for name, values, colour in (
        ("log p(x | y): the edits", log_channel, ORANGE),
        ("log p(y): the language model", log_prior, BLUE),
    ):
        fig.add_trace(
            go.Bar(
                x=list(values),
                y=labels,
                orientation="h",
                name=name,
                marker_color=colour,
                hovertemplate="“%{y}”: %{x:.2f}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        barmode="relative",
        xaxis=_axis("log-probability (nats; longer bar = less likely)"),
        yaxis=dict(autorange="reversed", type="category", tickfont=dict(size=TICK_FONT)),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return base_layout(fig, "", height=max(SMALL_HEIGHT, 80 + 30 * len(labels)))


def instruct_bars(
    kinds: Sequence[str],
    before: Sequence[float],
    after: Sequence[float],
    interval_before: Sequence[tuple[float, float]],
    interval_after: Sequence[tuple[float, float]],
    baseline: Sequence[float],
) -> go.Figure:
    """Exact answers per instruction kind before and after tuning: bars labelled with their value
    (a 0% bar is otherwise invisible), whiskers over each share's (low, high) interval (Wilson),
    and each kind's no-skill baseline as a dash."""
    fig = go.Figure()
    for name, values, interval, colour in (
        ("before tuning", before, interval_before, GREY),
        ("after tuning", after, interval_after, BLUE),
    ):
        fig.add_bar(
            x=list(kinds),
            y=list(values),
            name=name,
            marker_color=colour,
            offsetgroup=name,
            error_y=dict(
                type="data",
                symmetric=False,
                array=[hi - v for v, (_, hi) in zip(values, interval, strict=True)],
                arrayminus=[v - lo for v, (lo, _) in zip(values, interval, strict=True)],
                visible=True,
                color="#333333",
            ),
            hovertemplate="%{x}: %{y:.0%} exact<extra>" + name + "</extra>",
        )
        fig.add_scatter(  # each bar's value above its whisker (a 0% bar has no height to hold it)
            x=list(kinds),
            y=[hi for _, hi in interval],
            text=[f"{v:.0%}" for v in values],
            mode="text",
            textposition="top center",
            textfont=dict(size=TICK_FONT, color="black"),
            offsetgroup=name,
            showlegend=False,
            hoverinfo="skip",
            cliponaxis=False,
        )
    fig.add_scatter(
        x=list(kinds),
        y=list(baseline),
        mode="markers",
        name="baseline (no skill)",
        marker=dict(symbol="line-ew", size=40, line=dict(color=ACCENT, width=3)),
        hovertemplate="%{x}: baseline %{y:.1%}<extra></extra>",
    )
    fig.update_layout(
        barmode="group",
        xaxis=_axis("instruction"),
        scattermode="group",  # the value labels sit over their own bar
        yaxis=_axis("held-out answers exact", tickformat=".0%", range=[0, 1.14]),
        legend=dict(orientation="h", y=-0.25, font=dict(size=TICK_FONT)),
    )
    return base_layout(fig, "", height=SMALL_HEIGHT + 60)
