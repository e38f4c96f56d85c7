"""The model drawn from its config: embeddings, the residual stream, N blocks (attention and MLP,
or attention only), LayerNorms where they sit (pre-LN: inside each branch, plus a final LN; post-LN:
on the stream after each sum), and the unembedding. Boxes carry hover text with the weights' shapes.

Drawn left to right in rows no wider than fits Home's column on a 1024 px projector (the stream
turns down into the next row like a line of text), each box as wide as its text; models deeper
than MAX_DRAWN_BLOCKS show their first blocks, a "⋯", and the last block. Also here: the bar chart
of parameter counts (the Home page takes them from model.param_counts()).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import plotly.graph_objects as go

from ui.charts.common import base_layout
from viz_model.model.config import ACT_LABELS, GPTConfig

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
BOX_W, BOX_H = 1.3, 0.8  # sublayer boxes at their narrowest, in data units
LN_W, LN_H = 0.7, 0.42
# Boxes are sized to their text on the narrowest plot: Home's column on a 1024 px projector with
# the sidebar open is ~560 px, so a row of the diagram may be ROW_UNITS wide at UNIT_PX a unit.
# Rows that would be wider wrap, the stream turning down and back like a line of text.
FONT_PX = 12  # the chart text floor (charts.common.TICK_FONT)
TEXT_EM = 0.57  # a character's width in em: ample for the sans-serif fonts browsers fall back to
NARROWEST_PX = 540
UNIT_PX = 40
X_LEFT = -0.5  # the x axis starts here: room for the stream coming down into a new row
ROW_UNITS = NARROWEST_PX / UNIT_PX + X_LEFT - 0.2
ROW_DY = 4.0  # data units from one row's stream to the next
Y_UNIT_PX = 70
TOP, BOTTOM = 3.1, -0.8  # one row's extent around its stream


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


def text_px(text: str, size: int = FONT_PX) -> float:
    """A generous estimate of the width of `text` (lines split by <br>) in pixels."""
    return max(len(line) for line in text.split("<br>")) * TEXT_EM * size


def fit(text: str, w_min: float, size: int = FONT_PX) -> float:
    """A box width (data units) at least w_min and wide enough for `text` on the narrowest plot."""
    return max(w_min, text_px(text, size) / UNIT_PX + 0.2)


@dataclass
class Part:
    """A piece of the diagram laid out from x = 0 on a stream at y = 0 (then moved into place):
    its boxes, arrows and lines (x0, y0, x1, y1), sums (x, y), frames (left, right, y, label),
    and where the stream enters and leaves it."""

    width: float = 0.0
    boxes: list[Box] = field(default_factory=list)
    arrows: list[tuple[float, float, float, float]] = field(default_factory=list)
    lines: list[tuple[float, float, float, float]] = field(default_factory=list)
    sums: list[tuple[float, float]] = field(default_factory=list)
    frames: list[tuple[float, float, float, str]] = field(default_factory=list)
    stream_from: float = 0.0
    stream_to: float | None = None  # None: the part's right edge
    # where a sublayer's output replaces the stream instead of adding (no residual connections)
    replaces: list[tuple[float, float]] = field(default_factory=list)

    def moved(self, dx: float, dy: float) -> Part:
        def seg(s):
            return (s[0] + dx, s[1] + dy, s[2] + dx, s[3] + dy)

        return Part(
            self.width,
            [replace(b, x=b.x + dx, y=b.y + dy) for b in self.boxes],
            [seg(a) for a in self.arrows],
            [seg(a) for a in self.lines],
            [(x + dx, y + dy) for x, y in self.sums],
            [(left + dx, right + dx, y + dy, label) for left, right, y, label in self.frames],
            self.stream_from + dx,
            (self.width if self.stream_to is None else self.stream_to) + dx,
            [(x + dx, y + dy) for x, y in self.replaces],
        )


def _ln_hover(cfg: GPTConfig, where: str) -> str:
    if cfg.norm_kind == "rmsnorm":
        return (
            f"RMSNorm ({where}): divide the vector by its root mean square, then scale "
            f"(γ: {cfg.d_model} numbers); no mean taken away, no shift"
        )
    return (
        f"LayerNorm ({where}): subtract the vector's mean, divide by its spread, "
        f"then scale and shift (γ, β: {cfg.d_model} numbers each)"
    )


NORM_SHORT = {"layernorm": "LN", "rmsnorm": "RMS"}  # a norm box's label: LN1, RMS1, final LN


def _norm_sentence(cfg: GPTConfig) -> str:
    readers = "attention reads" if cfg.attn_only else "attention and the MLP read"
    if cfg.norm_kind == "none":
        return "This model has **no normalization**: nothing rescales the vectors between layers."
    name, short = {"layernorm": ("LayerNorm", "LN"), "rmsnorm": ("RMSNorm", "RMS")}[cfg.norm_kind]
    llama = " (RMSNorm, as in Llama: divide by the root mean square, no mean taken away)"
    kind = llama if cfg.norm_kind == "rmsnorm" else ""
    if cfg.norm == "pre":
        return (
            f"This model is **pre-LN**: each block normalises its input ({short}{kind}) before "
            f"{readers} it, and a final {short} comes before the unembedding."
        )
    return (
        f"This model is **post-LN** (as in the original Transformer): {name}{kind} is applied to "
        f"the stream after each {'sum' if cfg.residual else 'sublayer'}, and there is no final "
        f"{short}."
    )


def model_sentences(cfg: GPTConfig) -> str:
    """Home's paragraph about the model on screen, each sentence decided by its config."""
    blocks = "attention only (no MLP)" if cfg.attn_only else "attention followed by an MLP"
    text = (
        f"Token ids are looked up in the **embedding** (a vector of d_model = {cfg.d_model} "
        f"numbers per token), then pass through {cfg.n_layer} **blocks**, each of them {blocks}. "
    )
    if cfg.residual:
        text += "Each part reads the **residual stream** (the blue line) and adds its output back to it. "
    else:
        text += (
            "Each part reads the stream (the blue line) and, with the **residual connections "
            "switched off**, replaces it with its output (the = signs) instead of adding to it. "
        )
    text += _norm_sentence(cfg) + " "
    if cfg.pos in ATTN_POSITIONS:
        how = {
            "rope": "attention rotates each query and key by its position (**RoPE**)",
            "alibi": "each attention head lowers a score more the farther back the key is (**ALiBi**)",
        }[cfg.pos]
        text += f"No position vectors are added to the embeddings: {how}. "
    if cfg.n_kv_heads < cfg.n_head:
        kind = "multi-query" if cfg.n_kv_heads == 1 else "grouped-query"
        text += (
            f"Its attention is **{kind}**: {cfg.n_kv_heads} key-value head(s), each shared by "
            f"{cfg.n_head // cfg.n_kv_heads} query heads, so the KV cache is smaller. "
        )
    if cfg.mlp == "gated" and not cfg.attn_only:
        name = "SwiGLU" if cfg.act == "silu" else f"gated {ACT_LABELS[cfg.act]}"
        text += (
            f"Its MLPs are **gated** ({name}): a second projection decides how much of each "
            "neuron passes. "
        )
    if not cfg.causal:
        text += (
            "Its attention has **no causal mask**: every token also sees the tokens after it, "
            "so it can copy the token it is asked to predict (a contrast model, not a predictor). "
        )
    return text + (
        "The **unembedding** turns each position's final vector into one score (logit) per token "
        "of the vocabulary; the last position's scores are the guess for the next token. Hover "
        "over a box for its weights' shapes."
    )


def blocks_drawn(n_layer: int) -> list[int | None]:
    """Which blocks are drawn, None standing for the '⋯' of the ones left out.

    >>> blocks_drawn(3), blocks_drawn(8)
    ([0, 1, 2], [0, 1, None, 7])
    """
    if n_layer <= MAX_DRAWN_BLOCKS:
        return list(range(n_layer))
    return [0, 1, None, n_layer - 1]


def _front(cfg: GPTConfig) -> Part:
    """Token ids (above) -> token embedding on the stream -> + position embedding (from above)."""
    d, part = cfg.d_model, Part()
    text = f"token<br>embed<br>{cfg.vocab_size}×{d}"
    ew = fit(text, 1.1)
    part.boxes.append(
        Box(
            "embed",
            ew / 2,
            0.0,
            ew,
            0.8,
            text,
            f"W_E: one row of {d} numbers per token id ({cfg.vocab_size} tokens)",
        )
    )
    iw = fit("token<br>ids", 0.9)
    part.boxes.append(Box("io", ew / 2, 1.6, iw, 0.6, "token<br>ids", "The prompt as token ids"))
    part.arrows.append((ew / 2, 1.3, ew / 2, 0.4))
    part.stream_from, part.width = ew / 2, ew + 0.3
    if cfg.pos not in ("learned", "sinusoidal"):  # none, or given inside attention
        return part
    text = {
        "learned": f"position<br>embed<br>{cfg.n_ctx}×{d}",
        "sinusoidal": "sinusoidal<br>positions<br>(fixed)",
    }[cfg.pos]
    hover = {
        "learned": f"W_pos: a learned vector for each of the {cfg.n_ctx} positions",
        "sinusoidal": "Fixed sine/cosine waves added for each position (nothing learned)",
    }[cfg.pos]
    pw = fit(text, 1.1)
    x = max(ew + 0.35, ew / 2 + iw / 2 + 0.15 + pw / 2)  # the + clears the embed and ids boxes
    part.boxes.append(Box("pos", x, 1.6, pw, 0.8, text, hover))
    part.arrows.append((x, 1.2, x, 0.12))
    part.sums.append((x, 0.0))
    part.width = x + pw / 2 + 0.1
    return part


def _branch(part: Part, x: float, box: tuple[str, str, str], w: float, ln: str, cfg) -> float:
    """One sublayer reading from the stream at x and adding back; returns the x after it."""
    kind, text, hover = box
    pre, normed = cfg.norm == "pre", cfg.norm_kind != "none"
    centre, right = x + w / 2, x + w + 0.2
    top = 2.05 if pre else 1.3
    lw = fit(ln, LN_W)
    if pre and normed:  # the stream -> LN -> sublayer
        part.boxes.append(Box("ln", centre, 1.0, lw, LN_H, ln, _ln_hover(cfg, "pre-LN")))
        part.arrows.append((centre, 0.0, centre, 1.0 - LN_H / 2))
        part.arrows.append((centre, 1.0 + LN_H / 2, centre, top - BOX_H / 2))
    else:  # the stream -> sublayer
        part.arrows.append((centre, 0.0, centre, top - BOX_H / 2))
    part.boxes.append(Box(kind, centre, top, w, BOX_H, text, hover))
    part.lines.append((x + w, top, right, top))
    part.arrows.append((right, top, right, 0.12))
    (part.sums if cfg.residual else part.replaces).append((right, 0.0))
    if pre or not normed:
        return right + 0.2
    # post-LN: normalise the stream itself, after the sum
    part.boxes.append(Box("ln", right + 0.2 + lw / 2, 0.0, lw, LN_H, ln, _ln_hover(cfg, "post-LN")))
    return right + lw + 0.4


def _block(cfg: GPTConfig, layer: int) -> Part:
    d, part = cfg.d_model, Part()
    attn = (
        "attn",
        f"Attention<br>{cfg.n_head} heads" + ATTN_POSITIONS.get(cfg.pos, ("", ""))[0],
        (
            "Causal self-attention"
            if cfg.causal
            else "Self-attention without a causal mask (each token sees the whole window)"
        )
        + f": {cfg.n_head} heads of size d_head = {cfg.d_head}; "
        + _attn_weights(cfg)
        + ATTN_POSITIONS.get(cfg.pos, ("", ""))[1],
    )
    act = ACT_LABELS[cfg.act]
    if cfg.mlp == "gated":
        name = "SwiGLU" if cfg.act == "silu" else f"gated {act}"
        mlp = (
            "mlp",
            f"MLP<br>d_mlp {cfg.d_mlp}<br>{name}",
            f"Gated MLP ({name}): {act}(W_gate x) times W_in x, {cfg.d_mlp} neurons, "
            f"projected back to {d}",
        )
    else:
        mlp = (
            "mlp",
            f"MLP<br>d_mlp {cfg.d_mlp}<br>{act}",
            f"MLP: widen to d_mlp = {cfg.d_mlp} neurons, apply {act}, project back to {d}",
        )
    short = NORM_SHORT.get(cfg.norm_kind, "")
    sublayers = [(attn, f"{short}1")] + ([] if cfg.attn_only else [(mlp, f"{short}2")])
    w = max(fit(box[1], BOX_W) for box, _ in sublayers)
    x = 0.15
    for box, ln in sublayers:
        x = _branch(part, x, box, w, ln, cfg)
    part.frames.append((0.0, x, 0.0, f"block {layer}"))
    part.width = x + 0.25  # room for the stream to turn down after the last block of a row
    return part


# Positions given inside attention: (a line in the box, a sentence in its hover text).
ATTN_POSITIONS = {
    "rope": ("<br>RoPE", "; q and k are rotated by their positions (RoPE)"),
    "alibi": ("<br>ALiBi", "; each head subtracts a penalty growing with distance (ALiBi)"),
}


def _attn_weights(cfg: GPTConfig) -> str:
    """The attention weights' shapes in words, grouped-query attention's shared K and V said."""
    d, kv = cfg.d_model, cfg.n_kv_heads * cfg.d_head
    if cfg.n_kv_heads == cfg.n_head:
        return f"W_Q, W_K, W_V, W_O ({d}×{d} each)"
    return (
        f"W_Q, W_O ({d}×{d}), W_K, W_V ({d}×{kv}): {cfg.n_kv_heads} key-value heads, each "
        f"shared by {cfg.n_head // cfg.n_kv_heads} query heads"
    )


def _gap(n_left_out: int) -> Part:
    part = Part(width=1.2)
    part.boxes.append(Box("gap", 0.6, 1.3, 1.0, 0.6, "⋯", f"{n_left_out} more blocks like these"))
    part.frames.append((0.0, 1.2, 0.0, f"{n_left_out} more<br>blocks"))
    return part


def _end(cfg: GPTConfig) -> Part:
    """(Final LN on the stream, pre-LN only) -> unembedding -> logits (above)."""
    d, part, x = cfg.d_model, Part(), 0.2
    if cfg.norm == "pre" and cfg.norm_kind != "none":
        text = f"final<br>{NORM_SHORT[cfg.norm_kind]}"
        fw = fit(text, LN_W)
        part.boxes.append(Box("ln", x + fw / 2, 0.0, fw, 0.6, text, _ln_hover(cfg, "final")))
        x += fw + 0.3
    tied = " (tied: W_Eᵀ)" if cfg.tie_embeddings else ""
    text = f"unembed<br>{d}×{cfg.vocab_size}" + ("<br>(= W_Eᵀ)" if cfg.tie_embeddings else "")
    uw = fit(text, 1.1)
    ux = x + uw / 2
    part.boxes.append(
        Box(
            "unembed",
            ux,
            0.0,
            uw,
            0.8,
            text,
            f"Unembedding W_U{tied}: one score (logit) per token of the vocabulary",
        )
    )
    lw = fit("logits", 0.9)
    part.boxes.append(
        Box("io", ux, 1.45, lw, 0.6, "logits", "Softmax turns them into next-token probabilities")
    )
    part.arrows.append((ux, 0.4, ux, 1.15))
    part.stream_to, part.width = ux, ux + max(uw, lw) / 2 + 0.1
    return part


def _rows(parts: list[Part]) -> list[list[Part]]:
    """Parts packed left to right into rows no wider than ROW_UNITS (a part never splits)."""
    rows: list[list[Part]] = [[]]
    for part in parts:
        if rows[-1] and sum(p.width for p in rows[-1]) + part.width > ROW_UNITS:
            rows.append([])
        rows[-1].append(part)
    return rows


def layout_boxes(cfg: GPTConfig) -> tuple[list[Box], list[tuple[float, float, float, float]], dict]:
    """The diagram's boxes, its arrows (x0, y0, x1, y1) and marks: sub-lines, sums (x, y), block
    frames (left, right, y, label), the stream as a polyline of (x, y) points, and each row's y."""
    drawn = blocks_drawn(cfg.n_layer)
    middle = [_gap(cfg.n_layer - 3) if i is None else _block(cfg, i) for i in drawn]
    placed: list[Part] = []
    stream: list[tuple[float, float]] = []
    rows = _rows([_front(cfg), *middle, _end(cfg)])
    for r, row in enumerate(rows):
        x, y = 0.0, -r * ROW_DY
        if r:  # come down the left margin into this row
            stream += [(X_LEFT + 0.2, y + ROW_DY + BOTTOM), (X_LEFT + 0.2, y)]
        for part in row:
            placed.append(part.moved(x, y))
            x += part.width
        first, last = placed[-len(row)], placed[-1]
        stream += [(first.stream_from if not r else X_LEFT + 0.2, y), (last.stream_to, y)]
        if r < len(rows) - 1:  # turn down under this row
            stream.append((last.stream_to, y + BOTTOM))
    marks = {
        "lines": [seg for p in placed for seg in p.lines],
        "sums": [s for p in placed for s in p.sums],
        "replaces": [s for p in placed for s in p.replaces],
        "frames": [f for p in placed for f in p.frames],
        "stream": stream,
        "rows": [-r * ROW_DY for r in range(len(rows))],
    }
    return [b for p in placed for b in p.boxes], [a for p in placed for a in p.arrows], marks


def architecture_figure(cfg: GPTConfig, title: str = "") -> go.Figure:
    """A plotly diagram of the model `cfg` describes (boxes, arrows, the residual stream)."""
    boxes, arrows, marks = layout_boxes(cfg)
    # Shapes and annotations are collected as plain dicts and set once: plotly validates every
    # add_shape/add_annotation call, which made this figure cost ~0.1 s to rebuild per rerun.
    path = "M " + " L ".join(f"{x:.3f},{y:.3f}" for x, y in marks["stream"])
    line = dict(color=LINE, width=1.3)
    shapes = [dict(type="path", path=path, line=dict(color=STREAM, width=10))]
    x0 = max(b.x + b.w / 2 for b in boxes if b.kind == "embed")  # the note starts after W_E
    notes = [
        dict(
            x=x0 + 0.1,
            y=-0.45,
            text=f"residual stream (d_model = {cfg.d_model})",
            showarrow=False,
            xanchor="left",
            font=dict(size=12, color="#3d85c6"),
        )
    ]
    for left, right, y, label in marks["frames"]:
        if "more" not in label:
            frame = dict(color="#bbbbbb", width=1, dash="dot")
            shapes.append(
                dict(type="rect", x0=left, x1=right, y0=y - 0.65, y1=y + 2.75, line=frame)
            )
        notes.append(
            dict(
                x=(left + right) / 2,
                y=y + 2.75,
                text=label,
                showarrow=False,
                yanchor="bottom",
                font=dict(size=12, color="#555555"),
            )
        )
    shapes += [
        dict(type="line", x0=a, y0=b, x1=c, y1=d, line=line) for a, b, c, d in marks["lines"]
    ]
    notes += [
        dict(
            x=c,
            y=d,
            ax=a,
            ay=b,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            text="",
            showarrow=True,
            arrowhead=2,
            arrowsize=1,
            arrowwidth=1.3,
            arrowcolor=LINE,
            standoff=0,
        )
        for a, b, c, d in arrows
    ]
    for box in boxes:
        gap = box.kind == "gap"
        shapes.append(
            dict(
                type="rect",
                x0=box.x - box.w / 2,
                x1=box.x + box.w / 2,
                y0=box.y - box.h / 2,
                y1=box.y + box.h / 2,
                fillcolor=COLOURS[box.kind],
                line=dict(color="rgba(0,0,0,0)" if gap else "#888888", width=1),
            )
        )
        notes.append(
            dict(
                x=box.x,
                y=box.y,
                text=box.text,
                showarrow=False,
                font=dict(size=22 if gap else FONT_PX, color="#222222"),
            )
        )
    for shape in shapes[:1] + [s for s in shapes if s.get("line", {}).get("dash")]:
        shape["layer"] = "below"
    sums, replaces = marks["sums"], marks["replaces"]
    joins = [(x, y, "+", "add the sublayer's output to the stream") for x, y in sums]
    joins += [
        (x, y, "=", "no residual connection: the sublayer's output replaces the stream")
        for x, y in replaces
    ]
    plus = go.Scatter(
        x=[j[0] for j in joins],
        y=[j[1] for j in joins],
        mode="markers+text",
        text=[j[2] for j in joins],
        textfont=dict(size=14),
        marker=dict(size=17, color="white", line=line),
        hovertext=[j[3] for j in joins],
        hoverinfo="text",
        showlegend=False,
    )
    hover = go.Scatter(
        x=[b.x for b in boxes],
        y=[b.y for b in boxes],
        mode="markers",
        marker=dict(size=28, opacity=0),
        hovertext=[b.hover for b in boxes],
        hoverinfo="text",
        showlegend=False,
    )
    # The stream and the block frames can reach past the last box (a row ending in a wide block,
    # e.g. GPT-2's 12 layers with a GELU (tanh) MLP): the range covers all of them.
    ends = [b.x + b.w / 2 for b in boxes] + [x for x, _ in marks["stream"]]
    right = max(ends + [f[1] for f in marks["frames"]]) + 0.2
    bottom = marks["rows"][-1] + BOTTOM
    fig = go.Figure(
        [plus, hover],
        layout=dict(
            shapes=shapes,
            annotations=notes,
            hoverlabel=dict(align="left"),
            xaxis=dict(visible=False, range=[X_LEFT, right], fixedrange=True),
            yaxis=dict(visible=False, range=[bottom, TOP], fixedrange=True),
        ),
    )
    return base_layout(fig, title, diagram_height(len(marks["rows"])))


def diagram_height(n_rows: int) -> int:
    """Pixels for a diagram of n_rows rows: Y_UNIT_PX a data unit, plus the title's margin."""
    return int((TOP - BOTTOM + (n_rows - 1) * ROW_DY) * Y_UNIT_PX) + 50


PARAM_LABELS = {
    "embed": "token embedding",
    "pos_embed": "position embedding",
    "attn": "attention",
    "mlp": "MLP",
    "layernorm": "LayerNorm",
    "unembed": "unembedding",
    # the layers of the other families (RecurrentLM.param_counts)
    "rnn": "RNN cells",
    "lstm": "LSTM cells",
    "gru": "GRU cells",
    "cnn": "convolutions",
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
    "RNN cells": "#e06666",
    "LSTM cells": "#e06666",
    "GRU cells": "#e06666",
    "convolutions": "#e06666",
}
