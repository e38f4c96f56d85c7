"""Compare models: the sidebar's model and any other side by side on one prompt: tokens, bits per
character, next-token distributions, one head's attention each, and their training curves.

The page's sections are functions in ui/compare_models.py (docs/ADD_A_PAGE.md): this script reads
as the page's table of contents."""

import ui
from ui import compare_models as compare

ctx = ui.context()

compare.intro()
pair = compare.chosen(ctx)  # the sidebar's model and the one to compare with; stops if it fails
sides = compare.read(ctx, pair)  # each reads the prompt; stops when one makes no tokens of it
compare.prompt_table(ctx, sides)
compare.next_token(sides)
compare.cut_word(ctx, sides)
compare.one_head(sides)  # only when one of them is a GPT
compare.how_they_trained(sides)
