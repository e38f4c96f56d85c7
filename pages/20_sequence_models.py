"""Sequence models: the GPT beside the RNN, LSTM, GRU and causal CNN trained on the same text and
budget: bits per character, how far back each uses the past, the gates of an LSTM or GRU on the
prompt, and what reading one more token costs as the context grows.

The page's sections are functions in ui/sequence_models.py (docs/ADD_A_PAGE.md): this script reads
as the page's table of contents."""

import ui
from ui import sequence_models as seq

ctx = ui.context()

seq.intro()
lineup = seq.lineup(ctx)  # the models side by side; stops with a note when there are none
seq.same_budget(ctx, lineup)
seq.how_far_back(ctx, lineup)
seq.gates(ctx, lineup)
seq.cost(lineup)
