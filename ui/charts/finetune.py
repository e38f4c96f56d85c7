"""Fine-tuning figures: the loss on the old and the new text as a fine-tune trains (forgetting),
and the singular values of what it changed in one matrix (LoRA's update, a full fine-tune's).

Numbers in (a history and its step-0 values; {label: singular values}), plotly figures out.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ui.charts.common import house_layout, plotly_text

OLD_COLOUR = "#9467bd"
NEW_COLOUR = "#d62728"
SPECTRUM_COLOURS = {"full": "#1f77b4", "lora": "#ff7f0e"}


def forgetting_figure(
    history: list[dict], before: dict[str, float], old_label: str, new_label: str
) -> go.Figure:
    """Validation loss on the new text and on the base's old text against the step, step 0 being
    the base model itself (`before`)."""
    evals = [r for r in history if r.get("val_loss") is not None]
    traces = []
    for key, label, colour in (
        ("old_val_loss", old_label, OLD_COLOUR),
        ("val_loss", new_label, NEW_COLOUR),
    ):
        points = [(0, before[key])] if before.get(key) is not None else []
        points += [(r["step"], r[key]) for r in evals if r.get(key) is not None]
        if not points:
            continue
        traces.append(
            go.Scatter(
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                mode="lines+markers",
                name=plotly_text(label),
                line=dict(color=colour, width=2),
                marker=dict(size=7),
                hovertemplate="step %{x:,}<br>loss %{y:.3f}<extra></extra>",
            )
        )
    return go.Figure(
        traces,
        layout=house_layout(
            "Loss on the new text and on the old (step 0: the model before fine-tuning)",
            xaxis=dict(title="step"),
            yaxis=dict(title="loss (nats per token)", rangemode="tozero"),
            legend=dict(orientation="h", y=-0.25),
        ),
    )


def spectrum_figure(spectra: dict[str, list[float]], matrix: str, rank: int | None) -> go.Figure:
    """The singular values of each labelled change to `matrix`, largest first (LoRA's past r are
    zero and left out); a dotted line after the r-th value when a rank is given. Labels are "full ..." or
    "LoRA ..." (the colour follows)."""
    traces = []
    for label, values in spectra.items():
        kind = "lora" if label.startswith("LoRA") else "full"
        top = max(values, default=0.0)
        # a LoRA update's values past r are zero but for rounding (~1e-7 of the top): not drawn
        shown = [v for v in values if v > 1e-5 * top]
        traces.append(
            go.Scatter(
                x=list(range(1, len(shown) + 1)),
                y=shown,
                mode="lines+markers",
                name=plotly_text(label),
                line=dict(color=SPECTRUM_COLOURS[kind], width=2),
                marker=dict(size=6),
                hovertemplate="direction %{x}<br>singular value %{y:.3g}<extra></extra>",
            )
        )
    fig = go.Figure(
        traces,
        layout=house_layout(
            f"Singular values of the change to {plotly_text(matrix)}",
            xaxis=dict(title="direction (largest first)"),
            yaxis=dict(title="singular value", rangemode="tozero"),
            legend=dict(orientation="h", y=-0.25),
        ),
    )
    if rank:
        fig.add_vline(x=rank + 0.5, line=dict(color="#7f7f7f", dash="dot", width=1.5))
        fig.add_annotation(
            x=rank + 0.5,
            y=1.02,
            yref="paper",
            text=f"r = {rank}",
            showarrow=False,
            xanchor="left",
            font=dict(size=12),
        )
    return fig
