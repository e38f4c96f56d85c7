"""One way to open a model: `load_bundle(path)` for our own bundles and GPT-2 folders alike.

Not here: the two formats themselves (checkpoint.py, gpt2_folder.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from viz_model.bundles.checkpoint import Bundle, load_checkpoint
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.gpt2_folder import is_hf_folder, load_hf_folder
from viz_model.text.data import ASSETS_DIR

BUNDLED_DIR = ASSETS_DIR / "models"  # the models that ship with the app


def load_bundle(path: str | os.PathLike) -> Bundle:
    """Load and validate a model folder (ours or GPT-2's), or a bundled model by its name
    ("shakespeare-char"); CheckpointError with a plain message."""
    path = Path(path)
    if not path.is_dir() and (BUNDLED_DIR / path).is_dir() and path.name == str(path):
        path = BUNDLED_DIR / path
    if not path.is_dir():
        names = ", ".join(sorted(p.name for p in BUNDLED_DIR.iterdir() if p.is_dir())[:4])
        raise CheckpointError(
            f"no model bundle at {path} (nor a bundled model of that name, such as {names})"
        )
    if is_hf_folder(path):
        return load_hf_folder(path)
    return load_checkpoint(path)
