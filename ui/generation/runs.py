"""The Generation page's cached computations: one forward pass per text, and the figures built
from it, each keyed by exactly what it shows (ui/cache.py)."""

from __future__ import annotations

from functools import partial

import numpy as np
import plotly.graph_objects as go

from ui import cache
from ui.charts import next_token as charts
from ui.charts.common import show_whitespace
from viz_model.analysis import generation as gen
from viz_model.analysis import next_token as nt
from viz_model.analysis.tokens import token_text
from viz_model.model.sampling import SamplingSettings


@cache.per_prompt
def step_view(bundle_id: str, seq: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """The logits after seq (V,), the newest token's attention per layer (n_layer, n_head, T), and
    how many were cropped:
    one forward pass per text, shared by the proposal, the step itself and the figures."""
    return gen.newest_token_view(cache.bundle(bundle_id).model, list(seq))


# Figures are cached per prompt as objects (never mutated, only drawn), keyed by the arguments
# they are built from: building a plotly figure costs more than drawing it, and a rerun that does
# not take a step (the per-head toggle, the KV comparison, a number input) should not rebuild them.
@cache.per_prompt
def bars_figure(
    bundle_id: str, seq: tuple[int, ...], n_step: int, temperature: float, top_k: int, top_p: float
) -> go.Figure:
    """The 20 most likely next tokens after seq, reshaped by the settings (step n_step)."""
    dist = nt.distribution(
        step_view(bundle_id, seq)[0], SamplingSettings(temperature, top_k, top_p)
    )
    tokenizer = cache.bundle(bundle_id).tokenizer
    bars = nt.top_tokens(dist, 20, partial(token_text, tokenizer))
    return charts.distribution_bars(
        bars.labels,
        bars.base_probs,
        bars.scaled_probs,
        bars.probs,
        bars.kept,
        title=f"Step {n_step}: the 20 most likely next tokens (of {tokenizer.vocab_size})",
    )


@cache.per_prompt
def attention_figure(
    bundle_id: str, seq: tuple[int, ...], per_head: bool, layers: range
) -> go.Figure:
    """The newest token's attention over the window, per layer (mean of heads) or per head
    (of `layers`)."""
    _, attention, n_cropped = step_view(bundle_id, seq)
    rows, row_labels = gen.attention_rows(attention, per_head, layers)
    pieces = [token_text(cache.bundle(bundle_id).tokenizer, t) for t in seq[n_cropped:]]
    col_labels = [f"{n_cropped + i}:{show_whitespace(p)}" for i, p in enumerate(pieces)]
    return charts.layer_attention_heatmap(
        rows, row_labels, col_labels, title="Attention of the newest token over the text"
    )
