"""The Attention page's cached computations: the attention run of a prompt, the head scores and
roles, x·x against every head (here and on the untrained twin), one query's scores through the
softmaxes, and the figures built from them, each keyed by exactly what it shows (ui/cache.py)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui import cache
from ui.charts.attention import (
    attention_lines,
    highlight_head,
    lines_window,
    outline_query,
    pattern_grid,
    pattern_heatmap,
    query_weights,
)
from ui.charts.common import frozen, plotly_text
from viz_model.analysis.attention import (
    AttentionRun,
    HeadScores,
    InductionTest,
    attention_run,
    head_scores,
    induction_test,
)
from viz_model.analysis.before_qkv import Comparison, attention_inputs, compare, xx_patterns
from viz_model.analysis.head_roles import head_roles
from viz_model.analysis.softmax import SoftmaxRow, softmax_row
from viz_model.model.scale import view_tokens

RANDOM_SEED = 0  # the repeated random sequence's (viz_model/lessons/answers_attention.py's too)


@cache.per_prompt
def run_attention(bundle_id: str, ids: tuple[int, ...]) -> AttentionRun:
    """Every attention layer's pattern, scores, q, k, v, z and per-head result, as numpy."""
    return attention_run(cache.bundle(bundle_id).model, list(ids))


# Figures are cached per prompt as objects (never mutated, only drawn) because building a plotly
# figure costs far more than drawing it; each is keyed by its function's arguments, exactly what it shows, so moving
# the query selector rebuilds nothing but the cheap outline, and a head change reuses the grid.
# They are frozen (charts.common.frozen): drawing one does not re-encode its arrays every run.


@cache.per_prompt
def head_heatmap(
    bundle_id: str,
    ids: tuple[int, ...],
    labels: tuple[str, ...],
    layer: int,
    head: int,
    scores: bool,
) -> go.Figure:
    run = run_attention(bundle_id, ids)
    values = run.scores[layer, head] if scores else run.pattern[layer, head]
    return frozen(pattern_heatmap(values, list(labels), scores=scores, causal=run.causal))


@cache.per_prompt
def head_outlined(
    bundle_id: str,
    ids: tuple[int, ...],
    labels: tuple[str, ...],
    layer: int,
    head: int,
    scores: bool,
    query: int | None,
) -> go.Figure:
    """head_heatmap with the query's row outlined: cached too, so the students of a class who
    open the same view share one copy instead of each making it (a few ms a run)."""
    return outline_query(head_heatmap(bundle_id, ids, labels, layer, head, scores), query)


@cache.per_prompt
def head_lines(
    bundle_id: str, ids: tuple[int, ...], labels: tuple[str, ...], layer: int, head: int, query: int
) -> go.Figure:
    """The lines of a window of at most LINES_MAX_T tokens ending at the query (lines_window)."""
    run = run_attention(bundle_id, ids)
    first, end = lines_window(len(ids), query)
    pattern = run.pattern[layer, head, first:end, first:end]
    return frozen(
        attention_lines(pattern, list(labels[first:end]), query=query - first, causal=run.causal)
    )


@cache.per_prompt
def query_bars(
    bundle_id: str, ids: tuple[int, ...], labels: tuple[str, ...], layer: int, head: int, query: int
) -> go.Figure:
    run = run_attention(bundle_id, ids)
    title = f"Weights of query {plotly_text(labels[query])}"
    weights = run.pattern[layer, head, query]
    return frozen(query_weights(weights, list(labels), query, title=title, causal=run.causal))


@cache.per_prompt
def all_heads(
    bundle_id: str, ids: tuple[int, ...], labels: tuple[str, ...], first: int, count: int
) -> go.Figure:
    """Layers first .. first + count - 1 of the grid (all of them for a small model)."""
    run = run_attention(bundle_id, ids)
    patterns = run.pattern[first : first + count]
    return frozen(pattern_grid(patterns, list(labels), first_layer=first, causal=run.causal))


@cache.per_prompt
def all_heads_chosen(
    bundle_id: str,
    ids: tuple[int, ...],
    labels: tuple[str, ...],
    window: tuple[int, int],
    layer: int,
    head: int,
) -> go.Figure:
    """The grid with one head titled in red: it shares the grid's arrays, so an entry is small."""
    return highlight_head(all_heads(bundle_id, ids, labels, *window), layer, head)


@cache.per_model
def induction_input(bundle_id: str) -> InductionTest:
    """Which tokens the repeated random test draws from, and its copy lengths, for one bundle."""
    b = cache.bundle(bundle_id)
    return induction_test(b.tokenizer, b.meta, view_tokens(b.config))


@cache.per_prompt
def prompt_head_scores(bundle_id: str, ids: tuple[int, ...]) -> HeadScores:
    """Every head's role scores on these ids, with what each would be by chance."""
    b = cache.bundle(bundle_id)
    pattern = run_attention(bundle_id, ids).pattern
    return head_scores(pattern, list(ids), b.config.causal, b.tokenizer.special_ids)


@cache.per_prompt
def roles_of(
    bundle_id: str, ids: tuple[int, ...], random_ids: tuple[int, ...] | None
) -> list[dict]:
    """Every head's roles, scored on the prompt (induction on the repeated random sequence when
    given): once per view, not once per run, as a class's page runs repeat it."""
    random_scores = None if random_ids is None else prompt_head_scores(bundle_id, random_ids)
    return head_roles(prompt_head_scores(bundle_id, ids), random_scores)


@cache.per_prompt
def xx_pattern(bundle_id: str, ids: tuple[int, ...]) -> np.ndarray:
    """(L, T, T): softmax(x xᵀ / √d + mask) on what each layer's attention reads (before_qkv)."""
    b = cache.bundle(bundle_id)
    return xx_patterns(attention_inputs(b.model, list(ids)), b.config.causal)


@cache.per_prompt
def xx_against_heads(bundle_id: str, ids: tuple[int, ...]) -> Comparison:
    """x·x against every head of the model on these ids."""
    pattern = run_attention(bundle_id, ids).pattern
    return compare(xx_pattern(bundle_id, ids), pattern, cache.bundle(bundle_id).config.causal)


@cache.per_prompt
def twin_xx_against_heads(bundle_id: str, ids: tuple[int, ...]) -> Comparison:
    """The same on the model's untrained twin (cache.untrained): its own x and its own heads."""
    model = cache.untrained(bundle_id).model
    xx = xx_patterns(attention_inputs(model, list(ids)), model.cfg.causal)
    return compare(xx, attention_run(model, list(ids)).pattern, model.cfg.causal)


@cache.per_prompt
def scores_row(
    bundle_id: str, ids: tuple[int, ...], layer: int, head: int, query: int, factor: int
) -> SoftmaxRow:
    """The chosen head's scores for one query (the keys it reads), times factor, through the
    naive and the max-subtracted softmax in float32 and float16 (analysis/softmax.py)."""
    row = run_attention(bundle_id, ids).scores[layer, head, query]
    return softmax_row(row[read_keys(bundle_id, ids, layer, head, query)], factor)


def read_keys(
    bundle_id: str, ids: tuple[int, ...], layer: int, head: int, query: int
) -> np.ndarray:
    """The positions of the keys the query reads: its scores that the mask left finite."""
    return np.flatnonzero(np.isfinite(run_attention(bundle_id, ids).scores[layer, head, query]))
