"""The attention mask: which keys each query may read, from the model's config.

One helper for every place that needs it (the model, the analyses that redo attention by hand,
the charts that grey out hidden cells), so a model without a causal mask (`GPTConfig.causal =
False`, e.g. shakespeare-nomask) is drawn and recomputed as it really runs.

    >>> attention_mask(True, 3).astype(int).tolist()    # causal: key j <= query i
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    >>> attention_mask(False, 2).astype(int).tolist()   # no mask: every key is visible
    [[1, 1], [1, 1]]
    >>> attention_mask(True, 1, past=2).astype(int).tolist()   # one new token after two cached
    [[1, 1, 1]]

Not here: applying it (gpt.py adds -inf to the hidden scores; charts draw them grey).
"""

from __future__ import annotations

import numpy as np

from viz_model.model.config import GPTConfig


def is_causal(cfg: GPTConfig | bool) -> bool:
    """True when the model masks the future: a config's `causal` field, or a bool as given."""
    return bool(cfg) if isinstance(cfg, bool) else bool(cfg.causal)


def attention_mask(cfg: GPTConfig | bool, T: int, past: int = 0) -> np.ndarray:
    """(T, past + T) bool, True where query i (at position past + i) may read key j.

    A causal model sees keys j <= past + i (itself and earlier); without a causal mask every
    key is visible. `cfg` is the model's config (or its `causal` flag).
    """
    if not is_causal(cfg):
        return np.ones((T, past + T), dtype=bool)
    return np.arange(past + T)[None, :] <= np.arange(past, past + T)[:, None]


def hidden_keys(cfg: GPTConfig | bool, T: int) -> np.ndarray:
    """(T, T) bool, True where the mask hides key j from query i: the complement of the mask."""
    return ~attention_mask(cfg, T)
