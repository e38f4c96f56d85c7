"""Analyses of a model's activations, one module per concept (attention, next_token, residual, ...).

Plain functions: tensors or a cache in, tensors/numpy/dataclasses out; never streamlit. Here are
the walk-through's measures and what many pages share (claims.py, tokens.py, training.py,
untrained.py, scoring.py); the labs' measures are in labs/, which imports from here and never the
other way round.
"""
