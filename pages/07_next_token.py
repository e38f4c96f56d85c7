"""Next token: the distribution after the prompt, reshaped live by temperature, top-k and top-p;
its entropy; how surprised the model is by each token of the prompt (surprisal, perplexity); and
the same numbers named as the training loss, cross-entropy, beside accuracy and random weights.

The page's sections are functions in ui/next_token.py (docs/ADD_A_PAGE.md), the training text
behind the prediction in ui/training_text.py: this script reads as the page's table of contents."""

import ui
from ui import next_token, training_text

ctx = ui.context()

next_token.intro()
prompt = next_token.prompt(ctx)  # the logits after the prompt, each token's surprisal (cached)
view = next_token.controls(ctx)  # temperature, top-k, top-p; bars shown, log scale
shown = next_token.distribution(ctx, prompt, view)
next_token.entropy(ctx, shown)
next_token.surprisal(ctx, prompt)
next_token.loss_named(ctx, prompt)  # the mean surprisal is the training loss, cross-entropy
training_text.prompt_probability(ctx, prompt.surprisal)
training_text.in_training_text(ctx, prompt.last_logits)
next_token.numbers_behind_it(ctx, prompt, shown)
