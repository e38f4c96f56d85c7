"""The architecture diagram follows the config: one box per component, LayerNorms where they sit."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import pytest

from tests.conftest import tiny_config
from ui.charts.architecture import (
    MAX_DRAWN_BLOCKS,
    NARROWEST_PX,
    architecture_figure,
    blocks_drawn,
    layout_boxes,
    param_counts_figure,
    param_rows,
    text_px,
)
from viz_model.model.config import GPTConfig

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"


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
    _, _, marks = layout_boxes(cfg)
    assert all(b.y in marks["rows"] for b in lns)  # on the residual stream, after each sum
    assert not any("final" in b.text for b in lns)
    assert all(any(ln.y == y and ln.x > x for ln in lns) for x, y in marks["sums"])
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
    bottom, top = fig.layout.yaxis.range
    assert all(bottom <= b.y - b.h / 2 and b.y + b.h / 2 <= top for b in boxes)
    texts = {a.text for a in fig.layout.annotations}
    assert {"block 0", "block 1"} <= texts
    assert f"residual stream (d_model = {cfg.d_model})" in texts


def test_a_gpt2_sized_model_keeps_its_stream_and_frames_inside_the_range():
    """GPT-2's row of block 1, ..., block 11 ends in a wide block: the stream turning down after
    it and the block's frame were drawn past the x range (cut off at the right) before."""
    cfg = GPTConfig(
        vocab_size=50257, n_ctx=1024, d_model=768, n_layer=12, n_head=12, act="gelu_tanh"
    )
    fig = architecture_figure(cfg)
    _, _, marks = layout_boxes(cfg)
    _, hi = fig.layout.xaxis.range
    assert max(x for x, _ in marks["stream"]) < hi
    assert max(right for _, right, _, _ in marks["frames"]) < hi


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


def _configs() -> list[GPTConfig]:
    """The bundled models' shapes, and the widest texts a config can put in a box."""
    bundled = [
        GPTConfig(**json.loads((MODELS / name / "config.json").read_text())["model"])
        for name in ("shakespeare-char", "shakespeare-bpe", "induction-2l")
    ]
    return (
        bundled
        + [
            tiny_config(n_layer=n, norm=norm, vocab_size=50257, d_model=768, d_mlp=3072, n_head=12)
            for n in (1, 2, 4, 12)
            for norm in ("pre", "post")
        ]
        + [tiny_config(pos="sinusoidal", tie_embeddings=True, attn_only=True)]
    )


@pytest.mark.parametrize("cfg", _configs(), ids=lambda c: f"{c.n_layer}L-{c.norm}-{c.d_mlp}")
def test_every_box_is_wider_than_its_text_on_the_narrowest_plot(cfg):
    fig = architecture_figure(cfg)
    lo, hi = fig.layout.xaxis.range
    px_per_unit = NARROWEST_PX / (hi - lo)  # Home's column on a 1024 px projector
    boxes, _, _ = layout_boxes(cfg)
    for box in boxes:
        if box.kind != "gap":
            assert box.w * px_per_unit >= text_px(box.text) + 4, box.text
    y_px = fig.layout.height / (fig.layout.yaxis.range[1] - fig.layout.yaxis.range[0])
    for box in boxes:  # and tall enough for its lines (~14 px each)
        assert box.h * y_px >= 14 * (box.text.count("<br>") + 1), box.text


def test_boxes_do_not_overlap_and_long_models_wrap_into_rows():
    cfg = GPTConfig(
        **json.loads((MODELS / "shakespeare-char" / "config.json").read_text())["model"]
    )
    boxes, _, marks = layout_boxes(cfg)
    assert len(marks["rows"]) == 2  # 4 blocks do not fit one row at 1024 px
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart_x = abs(a.x - b.x) >= (a.w + b.w) / 2
            apart_y = abs(a.y - b.y) >= (a.h + b.h) / 2
            assert apart_x or apart_y, (a.text, b.text)
    ys = [y for _, y in marks["stream"]]
    assert ys[0] == 0.0 and ys[-1] == marks["rows"][-1]  # one stream from the first row to the last


def test_home_sentences_name_each_part_the_config_has_and_no_part_it_lacks():
    from ui.charts.architecture import model_sentences

    gpt2 = model_sentences(GPTConfig(vocab_size=65))
    assert "adds its output back" in gpt2 and "final LN" in gpt2 and "RoPE" not in gpt2
    llama = model_sentences(
        GPTConfig(
            vocab_size=65, norm_kind="rmsnorm", pos="rope", mlp="gated", act="silu", n_kv_heads=2
        )
    )
    assert "RMSNorm" in llama and "final RMS" in llama and "RoPE" in llama and "SwiGLU" in llama
    assert "grouped-query" in llama and "2 key-value head(s), each shared by 2" in llama
    off = model_sentences(GPTConfig(vocab_size=65, norm_kind="none", residual=False, pos="alibi"))
    assert "adds its output back" not in off and "replaces it" in off
    assert "no normalization" in off and "final LN" not in off and "ALiBi" in off
    assert "multi-query" in model_sentences(GPTConfig(vocab_size=65, n_kv_heads=1))
