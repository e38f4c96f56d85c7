"""viz_model: the engine of an instrumented GPT you can see inside (PyTorch, NumPy, tokenizers,
safetensors; never Streamlit, never plotly), and the library a notebook starts from:

    from viz_model import load_bundle

    bundle = load_bundle("shakespeare-char")        # a bundled model by name, or any folder
    tokens = bundle.to_tokens("To be, or not")      # (1, T)
    logits, cache = bundle.model.run_with_cache(tokens)
    cache["blocks.0.attn.hook_pattern"].shape       # (1, H, T, T)
    bundle.generate("ROMEO:", 40, temperature=0)

docs/LIBRARY.md walks through it (a test runs its code). The public names below load their
module on first use, so importing one subpackage (viz_model.text, say) stays as light as before.

Subpackages, lowest first; a module imports only from its own subpackage or those above it in
this list (docs/ARCHITECTURE.md; import-linter checks it, pyproject.toml [tool.importlinter]):

    model/      the GPT, its config, the attention mask, hooks, the activation cache, sampling
    text/       tokenizers, corpora and user text, n-gram counts and the corpus index
    bundles/    saved models: our bundle format, GPT-2 folders, one `load_bundle()`
    training/   the training loop, run settings, the speed estimate, `python -m viz_model.training`
    analysis/   what the pages measure: one module per concept, and the claims they print
"""

import importlib
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# The bundled models, corpora, lessons and sweeps: assets/ beside this package in a checkout,
# inside it in an installed copy (the wheel puts them at site-packages/viz_model/assets).
ASSETS_DIR = _HERE / "assets" if (_HERE / "assets").is_dir() else _HERE.parent / "assets"

# name -> the module that defines it
_PUBLIC = {
    "GPT": "viz_model.model.gpt",
    "GPTConfig": "viz_model.model.config",
    "ActivationCache": "viz_model.model.cache",
    "SamplingSettings": "viz_model.model.sampling",
    "Tokenizer": "viz_model.text.tokenization",
    "Bundle": "viz_model.bundles.checkpoint",
    "load_bundle": "viz_model.bundles.load",
    "export_gpt2": "viz_model.bundles.hf_export",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """`from viz_model import GPT` imports GPT's module then, not when viz_model is imported."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'viz_model' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
