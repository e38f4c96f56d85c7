"""Architecture contrasts: two small bundled models that differ in one design choice, side by side
with the numbers that show what the choice does (no causal mask; one attention layer or two; the
parts modern models changed: RMSNorm, SwiGLU, RoPE and ALiBi past the context, multi-query
attention's KV cache).

The page's sections are functions in the package ui/architecture_contrasts/ (docs/ADD_A_PAGE.md),
the sweeps read from their results files in ui/contrast_sweeps.py: this script reads as the
page's table of contents."""

import ui
from ui import architecture_contrasts as contrasts
from ui.architecture_contrasts import pair

ctx = ui.context()

pair.intro()
key = pair.choose()  # a sweep is drawn from its results file, and the run stops there
chosen = pair.load(key)  # the contrast's two bundled models; stops with a note when one is missing
contrasts.draw(ctx, chosen)  # its heading, then its own measures
pair.how_they_trained(chosen)
