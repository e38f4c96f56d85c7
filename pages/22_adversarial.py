"""Adversarial suffix: a few tokens appended to the prompt, found by greedy coordinate gradient
(GCG), that make the model predict a chosen token next; the probability climbing step by step,
and where the last token's attention goes.

The page's sections are functions in ui/adversarial.py (docs/ADD_A_PAGE.md): this script reads
as the page's table of contents."""

import ui
from ui import adversarial

ctx = ui.context()

adversarial.intro()
chosen = adversarial.choices(ctx)  # the target and the settings; stops when they cannot run
result = adversarial.search(ctx, chosen)  # p(target) climbing, the suffix found (cached search)
adversarial.attention(ctx, chosen, result)
