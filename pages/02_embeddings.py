"""Embeddings & positions: token vectors in 2D with their neighbours, position tables, and why a
model without positions cannot tell word order apart.

The page's sections are functions in ui/embeddings.py (docs/ADD_A_PAGE.md): this script reads as
the page's table of contents."""

import ui
from ui import embeddings as emb

ctx = ui.context()

emb.intro(ctx)
token = emb.token_embeddings(ctx)  # the token whose neighbours are shown
emb.position_embeddings(ctx)
pair = emb.swap_pair(ctx)  # stops the run where the swap does not apply
runs = emb.swap_outputs(ctx, pair)
emb.numbers_behind_it(ctx, token, runs)
