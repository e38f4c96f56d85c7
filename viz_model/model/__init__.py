"""The GPT and its instruments: config, mask, the model, hook points, the activation cache,
the residual-stream stacks, sampling, and how much of a big model the pages look at (scale)."""
