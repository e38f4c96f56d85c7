"""The Generation page's sections, drawn in order by pages/08_generation.py:

- stepper: the idea and the formula, the sampling controls and the seed, and the stepper itself
  (a fragment): the text so far and this step's choices, with the sections below it
- steps: the generated steps in the session (restored from a link, replayed with a new seed) and
  the buttons' callbacks that take, undo and reset them
- views: where the newest token looks, generation with and without the KV cache (or a recurrent
  model's carried state), and the numbers behind it
- runs: the cached forward pass of a text and the figures built from it (cache.per_prompt)

Not here: the stepping, replaying and link encoding (viz_model/analysis/generation.py), the
sampling sliders shared with Next token (ui/controls.py), the training-text checks
(ui/training_text.py), the chart builders (ui/charts/next_token.py).
"""
