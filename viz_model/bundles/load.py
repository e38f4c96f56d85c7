"""One way to open a model: `load_bundle(path)` for our own bundles and GPT-2 folders alike.

Not here: the two formats themselves (checkpoint.py, gpt2_folder.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from viz_model.bundles.checkpoint import Bundle, load_checkpoint
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.gpt2_folder import is_hf_folder, load_hf_folder


def load_bundle(path: str | os.PathLike) -> Bundle:
    """Load and validate a model folder (ours or GPT-2's); CheckpointError with a plain message."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"no model bundle at {path}")
    if is_hf_folder(path):
        return load_hf_folder(path)
    return load_checkpoint(path)
