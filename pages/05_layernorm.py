"""LayerNorm: one LayerNorm and one token taken apart (before, mean, sigma, normalized, gamma, beta,
after) with the formula filled in; mean and sigma across the prompt; histograms before and after;
and what placing LayerNorm before (pre-LN) or after (post-LN) each sublayer changes.

The page's sections are functions in ui/layernorm.py (docs/ADD_A_PAGE.md): this script reads as
the page's table of contents."""

import ui
from ui import layernorm

ctx = ui.context()

layernorm.intro(ctx)
layernorm.needs_a_layernorm(ctx)  # RMSNorm or no normalization: says so and stops
layernorm.one_layernorm(ctx)  # a fragment: the chosen LayerNorm and token, every token, numbers
layernorm.pre_versus_post()
found = layernorm.twins(ctx)  # two models that differ only in where LayerNorm sits, measured
layernorm.stream_length_profiles(ctx, found)
