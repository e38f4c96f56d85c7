"""The architecture diagram follows the config: one box per component, LayerNorms where they sit."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from tests.conftest import tiny_config
from viz_model.charts.architecture import (
    MAX_DRAWN_BLOCKS,
    architecture_figure,
    blocks_drawn,
    layout_boxes,
    param_counts_figure,
    param_rows,
)
from viz_model.config import GPTConfig


def kinds(cfg: GPTConfig) -> dict[str, int]:
    boxes, _, _ = layout_boxes(cfg)
    out: dict[str, int] = {}
    for box in boxes:
        out[box.kind] = out.get(box.kind, 0) + 1
    return out


@pytest.mark.parametrize("n_layer", [1, 2, 3, 4])
def test_pre_ln_has_a_block_per_layer_and_a_final_ln(n_layer):
    k = kinds(tiny_config(n_layer=n_layer))
    assert k["attn"] == k["mlp"] == n_layer
    assert k["ln"] == 2 * n_layer + 1  # ln1, ln2 per block + ln_final
    assert k["embed"] == k["pos"] == k["unembed"] == 1


def test_post_ln_puts_ln_on_the_stream_and_has_no_final_ln():
    cfg = tiny_config(norm="post")
    boxes, _, _ = layout_boxes(cfg)
    lns = [b for b in boxes if b.kind == "ln"]
    assert len(lns) == 2 * cfg.n_layer
    assert all(b.y == 0.0 for b in lns)  # on the residual stream, after each sum
    assert not any("final" in b.text for b in lns)
    _, _, marks = layout_boxes(cfg)
    assert all(any(ln.x > s for ln in lns) for s in marks["sums"])  # each sum is normalised
    pre = [b for b in layout_boxes(tiny_config())[0] if b.kind == "ln"]
    assert sum(b.y > 0 for b in pre) == 2 * cfg.n_layer  # pre-LN: inside the branches


def test_attention_only_and_positions():
    k = kinds(tiny_config(attn_only=True, pos="none"))
    assert "mlp" not in k and "pos" not in k
    assert k["ln"] == 2 + 1
    boxes, _, _ = layout_boxes(tiny_config(pos="sinusoidal"))
    assert any("sinusoidal" in b.text for b in boxes)


def test_one_sum_per_sublayer_plus_positions():
    _, _, marks = layout_boxes(tiny_config(n_layer=3))
    assert len(marks["sums"]) == 1 + 2 * 3
    _, _, marks = layout_boxes(tiny_config(n_layer=3, attn_only=True, pos="none"))
    assert len(marks["sums"]) == 3


def test_deep_models_collapse_the_middle_blocks():
    assert blocks_drawn(MAX_DRAWN_BLOCKS) == list(range(MAX_DRAWN_BLOCKS))
    assert blocks_drawn(12) == [0, 1, None, 11]
    cfg = tiny_config(n_layer=12)
    k = kinds(cfg)
    assert k["attn"] == 3 and k["gap"] == 1
    gap = next(b for b in layout_boxes(cfg)[0] if b.kind == "gap")
    assert "9 more" in gap.hover
    labels = [a.text for a in architecture_figure(cfg).layout.annotations]
    assert "block 11" in labels and "block 2" not in labels


def test_tied_unembedding_says_so():
    (unembed,) = [
        b for b in layout_boxes(tiny_config(tie_embeddings=True))[0] if b.kind == "unembed"
    ]
    assert "W_E" in unembed.text
    (unembed,) = [b for b in layout_boxes(tiny_config())[0] if b.kind == "unembed"]
    assert "W_E" not in unembed.text


def test_figure_shows_every_box_inside_its_range():
    cfg = tiny_config()
    fig = architecture_figure(cfg, title="t")
    assert isinstance(fig, go.Figure)
    boxes, _, _ = layout_boxes(cfg)
    hover = next(t for t in fig.data if len(t.x) == len(boxes))
    assert list(hover.hovertext) == [b.hover for b in boxes]
    lo, hi = fig.layout.xaxis.range
    assert all(lo <= b.x - b.w / 2 and b.x + b.w / 2 <= hi for b in boxes)
    texts = {a.text for a in fig.layout.annotations}
    assert {"block 0", "block 1"} <= texts
    assert f"residual stream (d_model = {cfg.d_model})" in texts


def test_shapes_in_the_text_come_from_the_config():
    cfg = tiny_config(d_model=64, n_head=8, d_mlp=100, act="relu")
    boxes, _, _ = layout_boxes(cfg)
    attn = next(b for b in boxes if b.kind == "attn")
    mlp = next(b for b in boxes if b.kind == "mlp")
    assert "8 heads" in attn.text and "d_head = 8" in attn.hover
    assert "d_mlp 100" in mlp.text and "RELU" in mlp.text and "64" in mlp.hover


def test_param_rows_and_bars(model):
    counts = model.param_counts()
    rows = param_rows(counts)
    assert sum(r[1] for r in rows) == model.n_params()
    assert sum(r[2] for r in rows) == pytest.approx(1.0)
    fig = param_counts_figure(counts)
    assert list(fig.data[0].x) == [r[1] for r in rows]
    assert list(fig.data[0].y) == [
        "token embedding",
        "position embedding",
        "attention",
        "MLP",
        "LayerNorm",
        "unembedding",
    ]


def test_param_rows_leave_out_empty_components():
    rows = param_rows({"embed": 10, "pos_embed": 0, "attn": 30})
    assert [r[0] for r in rows] == ["token embedding", "attention"]
    assert rows[1][2] == pytest.approx(0.75)
