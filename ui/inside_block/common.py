"""What several parts of Inside a block share: the block walk and its checks (per prompt), the
block and head sliders, and a vocabulary entry as a label."""

from __future__ import annotations

from ui import cache, parts, state
from ui.frame import PageContext
from viz_model.analysis.labs import block as blk


@cache.per_prompt
def walk_of(bundle_id: str, ids: tuple[int, ...], layer: int) -> blk.BlockWalk:
    return blk.block_walk(cache.bundle(bundle_id).model, list(ids), layer)


@cache.per_prompt
def checks_of(bundle_id: str, ids: tuple[int, ...], layer: int) -> dict[str, float]:
    model = cache.bundle(bundle_id).model
    return blk.recorded_differences(model, list(ids), walk_of(bundle_id, ids, layer))


def walk(ctx: PageContext, layer: int) -> blk.BlockWalk:
    """The prompt's walk through block `layer`."""
    return walk_of(ctx.bundle_id, tuple(ctx.ids), layer)


def vocab_label(ctx: PageContext, i: int) -> str:
    return parts.token_label(ctx.tokenizer, i)


def block_choice(ctx: PageContext, container) -> int:
    return state.slider(
        "Block (layer)",
        "blk_layer",
        0,
        ctx.config.n_layer - 1,
        0,
        container=container,
        help="Which block to open: 0 is the first.",
    )


def head_choice(ctx: PageContext, container) -> int:
    return state.slider("Head", "blk_head", 0, ctx.config.n_head - 1, 0, container=container)
