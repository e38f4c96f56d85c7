"""The Architecture contrasts page's cached measures of one model: on the prompt
(`cache.per_prompt`) or of the model alone (`cache.per_model`), shared by every student on the
same view.

Not here: the measures themselves (viz_model/analysis/contrasts.py, layernorm.py, variants.py).
"""

from __future__ import annotations

import numpy as np

from ui import cache
from viz_model.analysis import contrasts as ct
from viz_model.analysis import dynamics as dyn
from viz_model.analysis import layernorm as lnx
from viz_model.analysis import variants as vr
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.data import TokenData, load_text

CONTINUATION = 120  # tokens each model writes after the prompt
SAMPLING = SamplingSettings(temperature=0.8)


@cache.per_prompt
def look_ahead(bundle_id: str, ids: tuple[int, ...]) -> ct.LookAhead:
    return ct.look_ahead(cache.bundle(bundle_id).model, ids)


@cache.per_prompt
def continuation(bundle_id: str, ids: tuple[int, ...]) -> str:
    """What the model writes after the prompt: CONTINUATION tokens at SAMPLING, seed 0."""
    b = cache.bundle(bundle_id)
    return b.tokenizer.decode(generate(b.model, list(ids), CONTINUATION, SAMPLING, seed=0))


@cache.per_prompt
def prompt_losses(bundle_id: str, ids: tuple[int, ...]):
    """(T - 1,) the loss at each position of the prompt."""
    return ct.position_losses(cache.bundle(bundle_id).model, ids)


@cache.per_prompt
def stream_lengths(bundle_id: str, ids: tuple[int, ...]) -> lnx.StreamLengths:
    return lnx.stream_lengths(cache.bundle(bundle_id).model, list(ids))


@cache.per_prompt
def copying(bundle_id: str) -> ct.CopyProfile:
    """The loss on random letters written twice (the Training dynamics page's probe)."""
    b = cache.bundle(bundle_id)
    return ct.copy_profile(b.model, dyn.probe(b.tokenizer, b.meta, b.config.n_ctx))


@cache.per_model
def val_profile(bundle_id: str, length: int) -> np.ndarray:
    """The loss at each position of validation windows `length` long (analysis/variants.py)."""
    b = cache.bundle(bundle_id)
    val = TokenData.from_text(
        load_text(b.meta["data"]), b.tokenizer, b.meta["data"]["val_fraction"]
    )
    return vr.extrapolation(b.model, val.val, length)


@cache.per_model
def kv_per_token(bundle_id: str) -> float:
    """Bytes the model's KV cache holds per token (a forward with a real cache, once a model)."""
    return vr.kv_bytes_per_token(cache.bundle(bundle_id).model)
