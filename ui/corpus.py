"""The corpus a model was trained on, counted and indexed once per corpus and tokenizer and shared
by every session (ui.cache.per_model: read-only numpy arrays), for the N-grams page and the
"in the training text" sections of Next token and Generation.

The key is the bundle's data source (meta["data"]), its validation fraction and its tokenizer's
sha256: two models on the same text and tokenizer (a snapshot, a retrained run) share one build.
"""

from __future__ import annotations

import json
import math

from serving import models
from ui import cache
from ui.frame import val_loss
from viz_model.analysis import ngrams as ng
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.text.data import VAL_FRACTION, DataError, load_text

SPINNER = "Counting and indexing the training text (once per corpus and tokenizer)…"


def source_of(bundle: Bundle) -> dict | None:
    """The bundle's data source as training stored it, or None when it does not say."""
    source = bundle.meta.get("data")
    if not (isinstance(source, dict) and source):
        return None
    # Bundles trained before the split was recorded held out the default share: the same text
    return {"val_fraction": VAL_FRACTION, **source}


def describe(source: dict) -> str:
    if "corpus" in source:
        return f"the “{source['corpus']}” corpus"
    if "task" in source:
        return f"the synthetic task “{source['task']}”"
    return "an uploaded text"


def _key(source: dict) -> str:
    return json.dumps(source, sort_keys=True, default=str)


@cache.per_model(keep=4)
def _text(source_key: str) -> str | None:

    try:
        return load_text(json.loads(source_key))
    except (OSError, KeyError, TypeError, ValueError, DataError):
        return None


def text_of(bundle: Bundle) -> str | None:
    source = source_of(bundle)
    return None if source is None else _text(_key(source))


@cache.per_model(spinner=SPINNER, keep=4)
def _token_models(source_key: str, val_fraction: float, sha: str, _bundle_id: str):
    bundle = cache.bundle(_bundle_id)
    text = _text(source_key)
    if text is None:
        return None
    try:
        return ng.token_models(text, bundle.tokenizer, val_fraction)
    except ValueError:
        return None


def token_models(bundle_id: str) -> ng.TokenModels | None:
    """The model's corpus in its own tokens, counted and indexed; None when its training text
    cannot be found (the bundle does not say, or an uploaded file is gone) or is too short."""
    final_id = models.split_step(bundle_id)[0]
    bundle = cache.bundle(final_id)
    source = source_of(bundle)
    if source is None:
        return None
    fraction = source.get("val_fraction", VAL_FRACTION)
    if not isinstance(fraction, int | float) or not 0 < fraction < 1:
        fraction = VAL_FRACTION
    return _token_models(_key(source), float(fraction), bundle.tokenizer.sha256, final_id)


@cache.per_model(spinner="Indexing the text as letters and words…", keep=8)
def _symbols(source_key: str, unit: str) -> ng.SymbolIndex | None:
    text = _text(source_key)
    return None if text is None else ng.symbol_index(text, unit)


def symbols(bundle: Bundle, unit: str) -> ng.SymbolIndex | None:
    source = source_of(bundle)
    return None if source is None else _symbols(_key(source), unit)


def gpt_bits_per_char(bundle_id: str) -> float | None:
    """A bundle's last recorded validation loss in bits per character of its validation text."""

    bundle = cache.bundle(bundle_id)
    loss = val_loss(bundle)
    found = token_models(bundle_id) if loss is not None else None
    if found is None or not math.isfinite(loss):
        return None
    return ng.bits_per_char(loss, found.chars_per_token)


def same_corpus_models(bundle: Bundle) -> dict[str, str]:
    """Name -> bundle id of every model found whose training text is this bundle's."""
    source = source_of(bundle)
    out = {}
    for name, path in models.discover().items():
        bid = models.bundle_id(path)
        try:
            other = cache.bundle(bid)
        except CheckpointError:  # a broken bundle elsewhere is the model picker's business
            continue
        if source is not None and source_of(other) == source:
            out[name] = bid
    return out
