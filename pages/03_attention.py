"""Attention: which earlier tokens each token looks at, head by head, and the arithmetic behind one row.

The page's sections are functions in ui/attention/ (docs/ADD_A_PAGE.md): this script reads as
the page's table of contents."""

import ui
from ui.attention import arithmetic, before_qkv, head, overflow, roles

ctx = ui.context()

head.intro(ctx)
view = head.choices(ctx)
head.one_head(ctx, view)
arithmetic.by_hand(ctx, view)
before_qkv.side_by_side(ctx, view)
overflow.naive_softmax(ctx, view)
shown_layers = roles.all_heads(ctx, view)
random_ids = roles.what_each_head_does(ctx, view, shown_layers)
roles.numbers_behind_it(ctx, view, random_ids)
