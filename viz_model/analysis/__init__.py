"""Analyses of a model's activations, one module per concept (attention, next_token, residual, ...).

Plain functions: tensors or a cache in, tensors/numpy/dataclasses out; never streamlit.
"""
