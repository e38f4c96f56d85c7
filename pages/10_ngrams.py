"""N-grams (Shannon): language models made by counting, on the chosen model's own corpus and
tokenizer: Shannon's approximations, the count-ratio estimate after a context (and where it is
undefined), how sparse contexts get, and perplexity by order beside the trained models (GPTs, and RNNs, LSTMs, GRUs, CNNs).

The page's sections are functions in ui/ngrams.py (docs/ADD_A_PAGE.md): this script reads as the
page's table of contents."""

import ui
from ui import ngrams

ctx = ui.context()

models = ngrams.counts(ctx)  # the idea; stops with a note when there is no text to count
ngrams.shannon_samples(ctx, models)
ngrams.count_ratio(ctx, models)
ngrams.sparsity(ctx, models)
ngrams.perplexity(ctx, models)
