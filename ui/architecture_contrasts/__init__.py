"""The Architecture contrasts page's sections, drawn in order by
pages/15_architecture_contrasts.py:

- pair: the idea (`intro`), the radio of contrasts (`choose`: a sweep is drawn from its results
  file by ui/contrast_sweeps.py and the run stops), the contrast's two bundled models (`load`),
  and how they trained, with the commands (`how_they_trained`)
- mask: no causal mask, the loss with the window seen whole and as generated, what each writes
- copying: one layer or two, the loss on random letters written twice
- same_shape: the pairs of one shape (LayerNorm's place, positions, RMSNorm, SwiGLU, RoPE, ALiBi,
  Llama's block, multi-query attention, tied embeddings): the setting, the size and the losses,
  and past the context or the KV cache's memory where the contrast asks
- runs: the cached measures of each model (cache.per_prompt, cache.per_model)

`draw(ctx, pair)` draws the chosen contrast's heading and its measures (`MEASURES` by
`Contrast.measure`, the same-shape pairs otherwise).

Not here: the contrasts, measures and claims (viz_model/analysis/contrasts.py,
viz_model/analysis/variants.py), the chart builders (ui/charts/contrasts.py).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ui.architecture_contrasts import copying, mask, same_shape
from ui.architecture_contrasts.pair import Pair
from ui.frame import PageContext

MEASURES: dict[str, Callable[[PageContext, Pair], None]] = {
    "look_ahead": mask.draw,
    "copy": copying.draw,
}


def draw(ctx: PageContext, pair: Pair) -> None:
    """The contrast's heading, then its own measures."""
    st.subheader(pair.contrast.title)
    MEASURES.get(pair.contrast.measure, same_shape.draw)(ctx, pair)
