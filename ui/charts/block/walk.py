"""The walk through the block: one token's vector at each step (a heatmap, steps down) beside its
length.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.charts.block.shared import (
    STEP_COLOUR,
    symmetric_bound,
)
from ui.charts.common import (
    DIVERGING,
    base_layout,
)


def walk_steps(
    symbols: list[str], formulas: list[str], vectors: np.ndarray, title: str = ""
) -> go.Figure:
    """One token's vector (S steps, D numbers) as a heatmap, steps down, beside its norm as bars."""
    S, D = vectors.shape
    rows = [f"{s} = {f}" if s != f else s for s, f in zip(symbols, formulas, strict=True)]
    norms = np.linalg.norm(vectors, axis=-1)
    bound = symmetric_bound(vectors)
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        column_widths=[0.72, 0.28],
        horizontal_spacing=0.03,
        subplot_titles=(f"the vector, its {D} numbers", "its length ‖·‖"),
    )
    fig.add_trace(
        go.Heatmap(
            z=vectors,
            x=np.arange(D),
            y=rows,
            colorscale=DIVERGING,
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            showscale=False,
            hovertemplate="%{y}<br>dimension %{x}: %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=norms,
            y=rows,
            orientation="h",
            marker_color=STEP_COLOUR,
            text=[f"{n:.2f}" for n in norms],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>length %{x:.3f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    base_layout(fig, title, height=60 + 40 * S + 80)
    fig.update_layout(showlegend=False, plot_bgcolor="white")
    fig.update_yaxes(autorange="reversed", type="category", row=1, col=1)
    fig.update_xaxes(title="dimension", row=1, col=1)
    fig.update_xaxes(range=[0, 1.3 * float(norms.max() or 1.0)], row=1, col=2)
    return fig
