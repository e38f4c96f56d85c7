"""What the block's figures share: the colours of a step, of QK and OV, of the untrained
baseline, and the symmetric colour range of a signed heatmap.
"""

from __future__ import annotations

import numpy as np

STEP_COLOUR = "#1f77b4"
QK_COLOUR = "#1f77b4"
OV_COLOUR = "#ff7f0e"
UNTRAINED_COLOUR = "#6e6e6e"  # the same shape with random weights: a baseline, so grey


def symmetric_bound(values: np.ndarray) -> float:
    """A symmetric colour range that one outlier cannot wash out: the 99th percentile of |v|."""
    finite = np.abs(values[np.isfinite(values)])
    return float(np.percentile(finite, 99)) if finite.size and finite.max() > 0 else 1.0
