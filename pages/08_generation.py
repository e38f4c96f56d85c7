"""Generation stepper: write text one token at a time from the prompt, see each step's distribution,
override the sampler, undo, replay with a seed, and compare generation with and without the KV cache.

The page's sections are functions in ui/generation/ (docs/ADD_A_PAGE.md): this script reads as
the page's table of contents."""

import ui
from ui.generation import stepper, steps

ctx = ui.context()

stepper.intro(ctx)
sampling = stepper.controls(ctx)  # temperature, top-k, top-p (shared with Next token), the seed
steps.restore(ctx, sampling)  # the session's steps: a link's, or replayed with a new seed
stepper.step_by_step(ctx, sampling)  # a fragment: the text so far, this step, attention, KV cache
