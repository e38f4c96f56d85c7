"""The sidebar's "Precision" select: look at any page on a copy of the model whose weights are stored
in fewer bits (float16, int8, int4, ...; viz_model/model/quantize.py), carried in the URL as quant.

Choosing a precision swaps the page context's bundle id for the quantised copy's ("...#q=int4",
after any "#step": the training step's weights, quantised); every page loads its model through
ui.cache.bundle, so every page then shows the quantised copy. The model card says which, and its
bytes. A value in the URL that names no precision is said, and float32 is shown.

Not here: the quantisation (viz_model/model/quantize.py), the Quantization page (pages/21_quantization.py).
"""

from __future__ import annotations

import streamlit as st

from serving import models
from ui import cache, state
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.model.quantize import FLOAT32, all_specs, parse_spec

KEY = "quant"


def options() -> list[str]:
    """float32 (the weights as trained) first, then every precision quantize.py offers."""
    return [FLOAT32] + [spec.name for spec in all_specs()]


def label(name: str) -> str:
    """What the select shows (the model card gives the long form)."""
    return "float32 (as trained)" if name == FLOAT32 else parse_spec(name).short


def _bad_url_value() -> str:
    """A sentence about a precision in the URL (or session) that names none here, else ""."""
    raw = st.session_state.get(KEY, st.query_params.get(KEY))
    if raw is None or str(raw) in options():
        return ""
    shown = "".join("\\" + c if c in "\\`*_[]<>$~|:#" else c for c in str(raw)[:40])
    return (
        f"There is no precision called “{shown}”; showing the model in float32. "
        f"The Precision select in the sidebar lists them ({', '.join(options()[1:4])}, ...)."
    )


def pick_precision(bundle_id: str, bundle: Bundle) -> tuple[str, Bundle, str | None, list[str]]:
    """Draw the select (GPT models only); return (bundle id, bundle, precision or None for
    float32, messages for the page)."""
    if getattr(bundle, "family", "gpt") != "gpt":
        return bundle_id, bundle, None, []
    messages = [message] if (message := _bad_url_value()) else []
    name = state.selectbox(
        "Precision",
        KEY,
        options(),
        FLOAT32,
        container=st.sidebar,
        format_func=label,
        help="Look at every page on a copy of this model whose weights are rounded to fewer bits "
        "(the Quantization page explains and measures each).",
    )
    if name == FLOAT32:
        return bundle_id, bundle, None, messages
    quantized_id = models.with_precision(bundle_id, name)
    try:
        return quantized_id, cache.bundle(quantized_id), name, messages
    except CheckpointError as exc:
        return bundle_id, bundle, None, [*messages, f"Could not quantise this model: {exc}."]


def card_rows(bundle: Bundle, after_losses: bool = False) -> list[tuple[str, str]]:
    """The model card's rows about how the weights on screen are stored (after_losses: the card
    shows losses, which were measured on the float32 weights)."""
    stored = bundle.meta.get("precision")
    if not isinstance(stored, dict):
        return []
    ratio = stored["float32_bytes"] / stored["bytes"]
    return [
        ("precision", f"{stored['label']}"),
        (
            "stored in",
            f"{stored['bytes']:,} bytes ({ratio:.1f}× fewer than float32's "
            f"{stored['float32_bytes']:,})"
            + ("; the losses above are float32's" if after_losses else ""),
        ),
    ]
