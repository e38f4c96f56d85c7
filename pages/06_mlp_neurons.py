"""MLP neurons: the most active neurons of a layer on the prompt, the corpus snippets that excite a
chosen neuron most, and the tokens its output direction promotes or suppresses (the key-value view).

The page's sections are functions in ui/mlp_neurons.py (docs/ADD_A_PAGE.md): this script reads as
the page's table of contents."""

import ui
from ui import mlp_neurons as neurons

ctx = ui.context()

neurons.intro(ctx)  # what an MLP is on this model; stops on an attention-only model
chosen = neurons.active_neurons(ctx)  # 1. the layer's most active neurons on the prompt
neurons.one_neuron(ctx, chosen)  # 2. and 3. one neuron, a fragment
