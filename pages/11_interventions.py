"""Interventions: knock parts of the model out, patch activations from one prompt into another,
steer generation with a direction, scramble the positions, and see what breaks.

Each experiment is its own module under ui/experiments/ (docs/ADD_A_PAGE.md); this page draws the
idea and the radio that picks one."""

import ui
from ui.experiments import EXPERIMENTS, common

ctx = ui.context()

common.intro()
EXPERIMENTS[common.choose(EXPERIMENTS)](ctx)
