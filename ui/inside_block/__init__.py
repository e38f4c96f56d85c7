"""The seven parts of the Inside a block page, one module each, every part a function of the page's
context that draws it: `title, draw = PARTS[name]; draw(ctx)`.

- walk: one token's vector through one block (the lecture's t1..t5 and h)
- matrices: attention as matrix products for the whole prompt, and a head's QK and OV circuits
- lookup: attention as a soft dictionary look-up, and why the scores are divided by sqrt(d_head)
- context: contextual embeddings, one token in many contexts layer by layer
- probes: linear probes, what a straight line can read from the residual stream at each layer
- gradient: one step of gradient descent on the prompt, and the chain rule for one weight
- template: prompts written from a template, their last-token vectors by layer, two groups told
  apart or not

Not here: the page's frame, intro and part radio (pages/14_inside_a_block.py), the analyses
(viz_model.analysis) and the chart builders (ui.charts.block).
"""

from __future__ import annotations

from collections.abc import Callable

from ui.frame import PageContext
from ui.inside_block import context, gradient, lookup, matrices, probes, template, walk

PARTS: dict[str, tuple[str, Callable[[PageContext], None]]] = {
    "walk": ("One block, step by step", walk.draw),
    "matrices": ("Matrices and circuits", matrices.draw),
    "lookup": ("A soft look-up", lookup.draw),
    "context": ("Contextual embeddings", context.draw),
    "probes": ("Linear probes", probes.draw),
    "gradient": ("One gradient step", gradient.draw),
    "template": ("Prompts from a template", template.draw),
}
