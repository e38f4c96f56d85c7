"""Scaling: validation loss against parameters and compute on log-log axes (a sweep of small shapes,
the bundled models, the class's runs), power laws fitted over the sweep's own range with their
uncertainty, tokens per parameter beside Chinchilla's ~20, published results in their own numbers,
and the 12 L d^2 rule against published and counted parameters.

The page's sections are functions in ui/scaling.py (docs/ADD_A_PAGE.md): this script reads as the
page's table of contents."""

import ui
from ui import scaling

ctx = ui.context()

scaling.intro()
sweep = scaling.sweep()  # the sweep's results; stops when they cannot be read
points = scaling.loss_against_size(sweep)  # against parameters or compute (the radio), the fit
scaling.tokens_per_parameter(sweep)
scaling.published_results()
scaling.rule_of_thumb(sweep)
scaling.every_point(points)
