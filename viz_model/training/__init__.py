"""Training: the loop (loop), its optimisers written out (optim: AdamW, SGD), the gradient-health
records (health), what a run is made of (settings), the measured speed estimate (estimate) and the
command line (cli; `python -m viz_model.training`)."""
