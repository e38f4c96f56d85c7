"""The one way pages and ui modules cache: say what a result depends on, never write a key by hand.

- `@per_prompt`: a result that depends on anything a student types or picks (the prompt's ids, a
  token, a layer, a head, a seed). Kept in the server's one byte budget (ui/shared_cache.py:
  VIZ_CACHE_MB, least recently used first, dropped after VIZ_CACHE_TTL_S unused) and shared
  read-only by every session: two students on the same prompt compute it once.
- `@per_model`: a result that depends only on a model (its bundle id, the text or config it was
  built from): loading a bundle, a model's corpus scan, its embedding PCA. Kept for at most
  `keep` models per function (MODELS by default), shared read-only (numpy arrays are frozen).
  It refuses a parameter named like a prompt (`ids`, `prompt`, `tokens`, `text`): per prompt.
- `figure(builder, *args)`: a chart, built by `builder(*args)` once per distinct arguments and kept
  in the per-prompt budget as a FrozenFigure. The key is the builder's qualified name and every
  argument (numpy arrays by their bytes), so a figure can never be shown for inputs it was not
  built from, which a hand-written key next to a closure could not promise. A `@per_prompt` or
  `@per_model` function may also return a figure it builds from its own arguments alone (the
  Attention page's heatmaps, the Embeddings page's scatter): that is keyed the same way.

Arguments of all three must be plain values: tuples rather than lists for ids, numbers, strings,
numpy arrays, dataclasses of them (ui.shared_cache.key_of); a result is never changed in place.
Not here: the byte-budget mechanism itself (ui/shared_cache.py), widget state (ui/state.py).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from serving.models import path_of, split_precision, split_step
from ui.charts.common import FrozenFigure, frozen
from ui.shared_cache import call_key, freeze, get_or_compute, per_prompt
from viz_model.analysis.untrained import Twin, untrained_twin
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.load import load_bundle
from viz_model.model.quantize import float32_size, parse_spec, quantize_model

F = TypeVar("F", bound=Callable[..., Any])
MODELS = 24  # per_model's default bound: the 15 bundled models and a few trained here
PROMPT_NAMES = frozenset({"ids", "prompt", "tokens", "text"})

__all__ = [
    "MODELS",
    "activations",
    "bundle",
    "figure",
    "logits",
    "per_model",
    "per_prompt",
    "untrained",
]


def per_model(
    fn: F | None = None, *, spinner: str | bool = False, keep: int = MODELS
) -> F | Callable[[F], F]:
    """Cache `fn` per model: `@per_model`, or `@per_model(spinner="Loading…", keep=4)` for a
    result too large to keep for every model. Arguments named with a leading "_" are not keyed."""

    def wrap(fn: F) -> F:
        prompt_like = PROMPT_NAMES & set(inspect.signature(fn).parameters)
        if prompt_like:
            raise TypeError(f"{fn.__qualname__} takes {sorted(prompt_like)}: use @per_prompt")

        @functools.wraps(fn)
        def read_only(*args: Any, **kwargs: Any) -> Any:
            return freeze(fn(*args, **kwargs))

        cached = st.cache_resource(show_spinner=spinner, max_entries=keep)(read_only)
        return cached  # type: ignore[return-value]

    return wrap(fn) if fn is not None else wrap


def figure(builder: Callable[..., go.Figure], *args: Any, **kwargs: Any) -> FrozenFigure:
    """`builder(*args, **kwargs)` as a FrozenFigure, built once per distinct arguments and shared
    read-only (st.plotly_chart only copies it): building a plotly figure costs tens of
    milliseconds, drawing a built frozen one about one."""
    if not callable(builder):
        raise TypeError("cache.figure takes the chart function and its arguments, not a key")
    inner = inspect.unwrap(builder)  # a decorated builder (functools.wraps): its own function
    if getattr(inner, "__closure__", None) or isinstance(inner, functools.partial):
        raise TypeError(f"{builder!r} carries inputs the key cannot see: pass them as arguments")
    key = call_key(builder, args, kwargs)
    return get_or_compute(key, lambda: frozen(builder(*args, **kwargs)))


@per_model(spinner="Loading the model…")
def bundle(bundle_id: str) -> Bundle:
    """The loaded bundle for an id from serving.models.bundle_id; raises CheckpointError (not cached).

    A snapshot's id ("...#step") gives the same bundle (config, tokenizer, history) with the
    model as it was at that training step, so every page can look back through training.
    A quantised copy's id ("...#q=int4", after any "#step") gives a new model computing with the
    quantised weights (viz_model/model/quantize.py), and meta["precision"] says how it is stored.
    Models are never mutated once served: pages record activations per call (run_with_cache).
    """
    plain_id, precision = split_precision(bundle_id)
    if precision is not None:
        return _quantized(bundle(plain_id), precision)
    final_id, step = split_step(bundle_id)
    if step is None:
        return load_bundle(path_of(bundle_id))
    final = bundle(final_id)
    return dataclasses.replace(final, model=final.load_snapshot(step), step=step)


@per_model(spinner="Loading the same model with random weights…")
def untrained(bundle_id: str) -> Twin:
    """The model of `bundle_id`'s shape that learned nothing (analysis/untrained.py): the baseline
    of every "has / reaches / learned" claim. Like a bundle's model, never changed once served."""
    return untrained_twin(bundle(bundle_id))


def _quantized(source: Bundle, precision: str) -> Bundle:
    """A copy of `source` whose model is stored at `precision`; the source is never changed."""
    if getattr(source, "family", "gpt") != "gpt":
        raise CheckpointError(f"quantisation applies to GPT models, not {source.family}")
    try:
        spec = parse_spec(precision)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc
    model, size = quantize_model(source.model, spec)
    stored = {
        "name": spec.name,
        "label": spec.label,
        "bytes": size.total,
        "float32_bytes": float32_size(source.model).total,
    }
    return dataclasses.replace(source, model=model, meta={**source.meta, "precision": stored})


@per_prompt
def activations(
    bundle_id: str, ids: tuple[int, ...], names: tuple[str, ...]
) -> dict[str, np.ndarray]:
    """The named activations of the model on `ids` (one sequence), as numpy, batch dim dropped."""
    model = bundle(bundle_id).model
    _, cache = model.run_with_cache(torch.tensor(list(ids), dtype=torch.long), names=list(names))
    return {name: cache.numpy(name) for name in names}


@per_prompt
def logits(bundle_id: str, ids: tuple[int, ...]) -> np.ndarray:
    """The model's logits (T, V) on `ids`."""
    model = bundle(bundle_id).model
    with torch.no_grad():
        return model(torch.tensor(list(ids), dtype=torch.long)).numpy()
