"""Residual stream: how long each token's running sum is after each layer, the logit lens (what the
model would predict if it stopped at each layer), and direct logit attribution (which component
pushed the chosen token's logit up or down).

The page's sections are functions in ui/residual_stream.py (docs/ADD_A_PAGE.md): this script reads
as the page's table of contents."""

import ui
from ui import residual_stream as resid

ctx = ui.context()

resid.intro(ctx)
report = resid.lens_report(ctx)  # the logit lens and the norms of the prompt (one cached run)
resid.norms(ctx, report)
resid.logit_lens(ctx, report)
resid.follow_position(ctx, report)  # a fragment: one position, its attribution, the numbers
