"""Training dynamics: each head's role against training step, read from the model's snapshots, with
the loss on repeated text on the same axis (the moment an induction head forms), copy accuracy
against the loss (is emergence in the model, or a mirage of the metric?), and the gradient's health
along training, by layer (recorded while it trained, no snapshot needed).

The page's sections are functions in ui/training_dynamics.py (docs/ADD_A_PAGE.md): this script
reads as the page's table of contents."""

import ui
from ui import training_dynamics as dynamics

ctx = ui.context()

run = dynamics.shown(ctx)  # the final weights' id and the sidebar's step
dynamics.other_family(ctx, run)  # an RNN, LSTM, GRU or CNN: its curves, then stops
dynamics.intro()
d = dynamics.measured_steps(ctx, run)  # every saved step, measured; stops when there are none
found = dynamics.roles(run, d)  # the head followed, and whether copying was learned
dynamics.loss_against_accuracy(ctx, d, found)
dynamics.gradient_health(ctx, run)
