"""Sparse autoencoder: a dictionary of directions learned from one layer's activations on the
model's own training text, its reconstruction measured in the model's loss, and its features read:
top snippets, promoted tokens, activation along the prompt, steering.

The page's sections are functions in ui/sparse_autoencoder/ (docs/ADD_A_PAGE.md), the SAE jobs'
panels in ui/sae_job_panel.py: this script reads as the page's table of contents."""

import ui
from ui.sparse_autoencoder import dictionary, features

ctx = ui.context()

dictionary.intro()
dictionary.can_train(ctx)  # stops with words: no training text, or a model too large
shown = dictionary.choose(ctx)  # a finished job's SAE, or one trained here (cached)
dictionary.how_good(ctx, shown)
feature = features.read_feature(ctx, shown)  # stops with words when no feature fired
features.steer(ctx, shown, feature)
features.across_training(ctx, shown, feature)
features.what_this_is_not()
