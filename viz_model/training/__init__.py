"""Training: the loop and its AdamW (loop), what a run is made of (settings), the measured speed
estimate (estimate) and the command line (cli; `python -m viz_model.training`)."""
