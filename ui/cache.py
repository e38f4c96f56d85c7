"""Cached loading of bundles and activations, shared by every session of the server.

Models are loaded once per bundle id (`st.cache_resource`) and never mutated once served: pages
record activations per call (run_with_cache) and never register hooks on the shared model.
Activations, logits and figures, like every result a page computes per prompt, live in the
server's one byte budget (ui/shared_cache.py: VIZ_CACHE_MB), shared read-only by every session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from serving.models import path_of, split_step
from ui.charts.common import frozen
from ui.shared_cache import shared
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.load import load_bundle


@st.cache_resource(show_spinner="Loading the model…", max_entries=16)  # 10 are bundled
def bundle(bundle_id: str) -> Bundle:
    """The loaded bundle for an id from serving.models.bundle_id; raises CheckpointError (not cached).

    A snapshot's id ("...#step") gives the same bundle (config, tokenizer, history) with the
    model as it was at that training step, so every page can look back through training.
    """
    final_id, step = split_step(bundle_id)
    if step is None:
        return load_bundle(path_of(bundle_id))
    final = bundle(final_id)
    return dataclasses.replace(final, model=final.load_snapshot(step))


@shared
def activations(
    bundle_id: str, ids: tuple[int, ...], names: tuple[str, ...]
) -> dict[str, np.ndarray]:
    """The named activations of the model on `ids` (one sequence), as numpy, batch dim dropped."""
    model = bundle(bundle_id).model
    _, cache = model.run_with_cache(torch.tensor(list(ids), dtype=torch.long), names=list(names))
    return {name: cache.numpy(name) for name in names}


@shared
def logits(bundle_id: str, ids: tuple[int, ...]) -> np.ndarray:
    """The model's logits (T, V) on `ids`."""
    model = bundle(bundle_id).model
    with torch.no_grad():
        return model(torch.tensor(list(ids), dtype=torch.long)).numpy()


@shared
def figure(key: tuple, _build: Callable[[], go.Figure]) -> go.Figure:
    """A figure built once per key and shared read-only (st.plotly_chart only copies it).

    Building a plotly figure costs tens of milliseconds, drawing a built one about one; it is kept
    frozen (charts.common.FrozenFigure), so drawing it does not re-encode its arrays either. The
    key must name the figure and everything it depends on, e.g. ("lens", bundle_id, ids,
    first_position); the cache is shared by every page, so start it with a name no other figure
    uses.
    """
    return frozen(_build())
