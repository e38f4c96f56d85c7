"""Widgets more than one page shares, bound to the URL like every page choice."""

from __future__ import annotations

from ui import state
from viz_model.model.sampling import SamplingSettings


def sampling_controls(vocab_size: int, columns) -> SamplingSettings:
    """Temperature, top-k and top-p sliders in three columns. The URL keys are shared, so the
    settings follow the student between the Next token and Generation pages."""
    c1, c2, c3 = columns
    temperature = state.slider(
        "Temperature T",
        "temperature",
        0.0,
        2.0,
        1.0,
        step=0.05,
        container=c1,
        help="Divides the logits before the softmax. 0 = greedy (always the most likely token).",
    )
    top_k = state.slider(
        "Top-k (0 = off)",
        "top_k",
        0,
        min(vocab_size, 100),
        0,
        container=c2,
        help="Keep only the k most likely tokens. Applied before top-p.",
    )
    top_p = state.slider(
        "Top-p (1 = off)",
        "top_p",
        0.05,
        1.0,
        1.0,
        step=0.05,
        container=c3,
        help="Keep the fewest most likely tokens whose probabilities add up to at least p. "
        "Applied after top-k, to the tokens it kept (renormalised).",
    )
    return SamplingSettings(temperature=temperature, top_k=top_k, top_p=top_p)
