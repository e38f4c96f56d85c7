"""Tokenization: the prompt cut into tokens four ways, BPE learned merge by merge, and the pitfalls.

The page's sections are functions in ui/tokenization.py (docs/ADD_A_PAGE.md): this script reads as
the page's table of contents."""

import ui
from ui import tokenization as tok

ctx = ui.context()

tok.intro()
bpe = tok.four_ways(ctx)  # the BPE the vocabulary slider picks, used by every later section
tok.chat_template(ctx)
tok.merge_by_merge(ctx, bpe)
tok.vocabulary_curve(bpe)
tok.pitfalls(ctx, bpe)
tok.numbers_behind_it(ctx, bpe)
