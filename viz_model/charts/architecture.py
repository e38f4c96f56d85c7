"""The model drawn from its config: embeddings, the residual stream, N blocks (attention and MLP,
or attention only), LayerNorms where they sit (pre-LN: inside each branch, plus a final LN; post-LN:
on the stream after each sum), and the unembedding. Boxes carry hover text with the weights' shapes.

Drawn left to right; models deeper than MAX_DRAWN_BLOCKS show their first blocks, a "⋯", and the
last block. Not here: parameter counts (the Home page takes them from model.param_counts()).
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from viz_model.charts.common import base_layout
from viz_model.config import GPTConfig

MAX_DRAWN_BLOCKS = 4  # deeper models: blocks 0, 1, ⋯, last
COLOURS = {
    "embed": "#cfe2f3",
    "pos": "#d9ead3",
    "ln": "#eeeeee",
    "attn": "#fce5cd",
    "mlp": "#d9d2e9",
    "unembed": "#cfe2f3",
    "io": "#ffffff",
    "gap": "rgba(0,0,0,0)",
}
STREAM = "#9fc5e8"
LINE = "#666666"
BOX_W, BOX_H = 1.3, 0.8  # sublayer boxes, in data units
LN_W, LN_H = 0.7, 0.42
HEIGHT = 340


@dataclass(frozen=True)
class Box:
    """One drawn component: its centre, size, text, fill colour key, and hover text."""

    kind: str
    x: float
    y: float
    w: float
    h: float
    text: str
    hover: str


def _ln_hover(d: int, where: str) -> str:
    return (
        f"LayerNorm ({where}): subtract the vector's mean, divide by its spread, "
        f"then scale and shift (γ, β: {d} numbers each)"
    )


def blocks_drawn(n_layer: int) -> list[int | None]:
    """Which blocks are drawn, None standing for the '⋯' of the ones left out.

    >>> blocks_drawn(3), blocks_drawn(8)
    ([0, 1, 2], [0, 1, None, 7])
    """
    if n_layer <= MAX_DRAWN_BLOCKS:
        return list(range(n_layer))
    return [0, 1, None, n_layer - 1]


def layout_boxes(cfg: GPTConfig) -> tuple[list[Box], list[tuple[float, float, float, float]], dict]:
    """The diagram's boxes, its arrows (x0, y0, x1, y1) and marks (sums, stream span, block frames)."""
    d, boxes, arrows, lines = cfg.d_model, [], [], []
    sums: list[float] = []
    frames: list[tuple[float, float, str]] = []
    pre = cfg.norm == "pre"

    boxes.append(Box("io", 0.0, 0.0, 0.9, 0.6, "token<br>ids", "The prompt as token ids"))
    boxes.append(
        Box(
            "embed",
            1.4,
            0.0,
            1.1,
            0.8,
            f"token<br>embed<br>{cfg.vocab_size}×{d}",
            f"W_E: one row of {d} numbers per token id ({cfg.vocab_size} tokens)",
        )
    )
    arrows.append((0.45, 0.0, 0.85, 0.0))
    x = 2.3
    if cfg.pos != "none":
        text = {
            "learned": f"position<br>embed<br>{cfg.n_ctx}×{d}",
            "sinusoidal": "sinusoidal<br>positions<br>(fixed)",
        }[cfg.pos]
        hover = {
            "learned": f"W_pos: a learned vector for each of the {cfg.n_ctx} positions",
            "sinusoidal": "Fixed sine/cosine waves added for each position (nothing learned)",
        }[cfg.pos]
        boxes.append(Box("pos", x, 1.6, 1.1, 0.8, text, hover))
        arrows.append((x, 1.2, x, 0.12))
        sums.append(x)
    x += 0.8

    def branch(x: float, kind: str, text: str, hover: str, ln_name: str) -> float:
        """One sublayer reading from the stream at x and adding back; returns the x after it."""
        centre, right = x + BOX_W / 2, x + BOX_W + 0.3
        top = 2.05 if pre else 1.3
        if pre:  # the stream -> LN -> sublayer
            boxes.append(Box("ln", centre, 1.0, LN_W, LN_H, ln_name, _ln_hover(d, "pre-LN")))
            arrows.append((centre, 0.0, centre, 1.0 - LN_H / 2))
            arrows.append((centre, 1.0 + LN_H / 2, centre, top - BOX_H / 2))
        else:  # the stream -> sublayer
            arrows.append((centre, 0.0, centre, top - BOX_H / 2))
        boxes.append(Box(kind, centre, top, BOX_W, BOX_H, text, hover))
        lines.append((x + BOX_W, top, right, top))
        arrows.append((right, top, right, 0.12))
        sums.append(right)
        if pre:
            return right + 0.25
        # post-LN: normalise the stream itself, after the sum
        boxes.append(Box("ln", right + 0.6, 0.0, LN_W, LN_H, ln_name, _ln_hover(d, "post-LN")))
        return right + 1.1

    drawn = blocks_drawn(cfg.n_layer)
    for layer in drawn:
        start = x
        if layer is None:
            left_out = cfg.n_layer - 3
            boxes.append(
                Box("gap", x + 0.6, 1.3, 1.0, 0.6, "⋯", f"{left_out} more blocks like these")
            )
            frames.append((x, x + 1.2, f"{left_out} more<br>blocks"))
            x += 1.2
            continue
        x += 0.2
        heads = f"Attention<br>{cfg.n_head} heads"
        x = branch(
            x,
            "attn",
            heads,
            f"Causal self-attention: {cfg.n_head} heads of size d_head = {cfg.d_head}; "
            f"W_Q, W_K, W_V, W_O ({d}×{d} each)",
            "LN1",
        )
        if not cfg.attn_only:
            mlp = f"MLP<br>d_mlp {cfg.d_mlp}<br>{cfg.act.upper()}"
            x = branch(
                x,
                "mlp",
                mlp,
                f"MLP: widen to d_mlp = {cfg.d_mlp} neurons, apply {cfg.act.upper()}, project back to {d}",
                "LN2",
            )
        frames.append((start, x, f"block {layer}"))
        x += 0.15
    if pre:
        x += 0.2
        boxes.append(Box("ln", x + 0.35, 0.0, LN_W, 0.6, "final<br>LN", _ln_hover(d, "final")))
        x += LN_W + 0.4
    tied = " (tied: W_Eᵀ)" if cfg.tie_embeddings else ""
    ux = x + 0.55
    boxes.append(
        Box(
            "unembed",
            ux,
            0.0,
            1.1,
            0.8,
            f"unembed<br>{d}×{cfg.vocab_size}" + ("<br>(= W_Eᵀ)" if cfg.tie_embeddings else ""),
            f"Unembedding W_U{tied}: one score (logit) per token of the vocabulary",
        )
    )
    boxes.append(
        Box(
            "io",
            ux + 1.35,
            0.0,
            0.9,
            0.6,
            "logits",
            "Softmax turns them into next-token probabilities",
        )
    )
    arrows.append((ux + 0.55, 0.0, ux + 0.9, 0.0))
    marks = {"lines": lines, "sums": sums, "stream": (1.95, ux - 0.55), "frames": frames}
    return boxes, arrows, marks


def architecture_figure(cfg: GPTConfig, title: str = "") -> go.Figure:
    """A plotly diagram of the model `cfg` describes (boxes, arrows, the residual stream)."""
    boxes, arrows, marks = layout_boxes(cfg)
    # Shapes and annotations are collected as plain dicts and set once: plotly validates every
    # add_shape/add_annotation call, which made this figure cost ~0.1 s to rebuild per rerun.
    x0, x1 = marks["stream"]
    line = dict(color=LINE, width=1.3)
    shapes = [dict(type="line", x0=x0, x1=x1, y0=0, y1=0, line=dict(color=STREAM, width=10))]
    notes = [
        dict(
            x=x0 + 0.1, y=-0.45, text=f"residual stream (d_model = {cfg.d_model})",
            showarrow=False, xanchor="left", font=dict(size=12, color="#3d85c6"),
        )
    ]  # fmt: skip
    for left, right, label in marks["frames"]:
        if "more" not in label:
            frame = dict(color="#bbbbbb", width=1, dash="dot")
            shapes.append(dict(type="rect", x0=left, x1=right, y0=-0.65, y1=2.75, line=frame))
        notes.append(
            dict(
                x=(left + right) / 2, y=2.75, text=label, showarrow=False, yanchor="bottom",
                font=dict(size=12, color="#555555"),
            )
        )  # fmt: skip
    shapes += [
        dict(type="line", x0=a, y0=b, x1=c, y1=d, line=line) for a, b, c, d in marks["lines"]
    ]
    notes += [
        dict(
            x=c, y=d, ax=a, ay=b, xref="x", yref="y", axref="x", ayref="y", text="",
            showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.3, arrowcolor=LINE, standoff=0,
        )
        for a, b, c, d in arrows
    ]  # fmt: skip
    for box in boxes:
        gap = box.kind == "gap"
        shapes.append(
            dict(
                type="rect", x0=box.x - box.w / 2, x1=box.x + box.w / 2, y0=box.y - box.h / 2,
                y1=box.y + box.h / 2, fillcolor=COLOURS[box.kind],
                line=dict(color="rgba(0,0,0,0)" if gap else "#888888", width=1),
            )
        )  # fmt: skip
        notes.append(
            dict(
                x=box.x, y=box.y, text=box.text, showarrow=False,
                font=dict(size=22 if gap else 11, color="#222222"),
            )
        )  # fmt: skip
    for shape in shapes[:1] + [s for s in shapes if s.get("line", {}).get("dash")]:
        shape["layer"] = "below"
    sums = marks["sums"]
    plus = go.Scatter(
        x=sums, y=[0.0] * len(sums), mode="markers+text", text=["+"] * len(sums),
        textfont=dict(size=14), marker=dict(size=17, color="white", line=line),
        hovertext=["add the sublayer's output to the stream"] * len(sums), hoverinfo="text",
        showlegend=False,
    )  # fmt: skip
    hover = go.Scatter(
        x=[b.x for b in boxes], y=[b.y for b in boxes], mode="markers",
        marker=dict(size=28, opacity=0), hovertext=[b.hover for b in boxes], hoverinfo="text",
        showlegend=False,
    )  # fmt: skip
    right = max(b.x + b.w / 2 for b in boxes) + 0.2
    fig = go.Figure(
        [plus, hover],
        layout=dict(
            shapes=shapes, annotations=notes, hoverlabel=dict(align="left"),
            xaxis=dict(visible=False, range=[-0.6, right], fixedrange=True),
            yaxis=dict(visible=False, range=[-0.8, 3.1], fixedrange=True),
        ),
    )  # fmt: skip
    return base_layout(fig, title, HEIGHT)


PARAM_LABELS = {
    "embed": "token embedding",
    "pos_embed": "position embedding",
    "attn": "attention",
    "mlp": "MLP",
    "layernorm": "LayerNorm",
    "unembed": "unembedding",
}


def param_rows(counts: dict[str, int]) -> list[tuple[str, int, float]]:
    """(component, parameters, share of the total) in model order, components with none left out."""
    total = sum(counts.values()) or 1
    order = [k for k in PARAM_LABELS if k in counts] + [k for k in counts if k not in PARAM_LABELS]
    return [(PARAM_LABELS.get(k, k), counts[k], counts[k] / total) for k in order if counts[k]]


def param_counts_figure(counts: dict[str, int], title: str = "") -> go.Figure:
    """Horizontal bars: parameters per component (model.param_counts()), with each one's share."""
    rows = param_rows(counts)
    labels = [r[0] for r in rows]
    fig = go.Figure(
        go.Bar(
            x=[r[1] for r in rows],
            y=labels,
            orientation="h",
            marker_color=[_BAR_COLOURS.get(label, "#999999") for label in labels],
            text=[f"{r[1]:,} ({r[2]:.0%})" for r in rows],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:,} parameters<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="parameters", rangemode="tozero")
    base_layout(fig, title, max(220, 60 + 34 * len(rows)))
    fig.update_layout(margin=dict(l=10, r=90, t=40 if title else 10, b=10))
    return fig


_BAR_COLOURS = {
    "token embedding": "#6fa8dc",
    "position embedding": "#93c47d",
    "attention": "#f6b26b",
    "MLP": "#8e7cc3",
    "LayerNorm": "#b7b7b7",
    "unembedding": "#6fa8dc",
}
