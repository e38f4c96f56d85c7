"""viz_model: the engine of an instrumented GPT you can see inside (PyTorch, NumPy, tokenizers,
safetensors; never Streamlit, never plotly).

Subpackages, lowest first; a module imports only from its own subpackage or those above it in
this list (docs/ARCHITECTURE.md; import-linter checks it, pyproject.toml [tool.importlinter]):

    model/      the GPT, its config, the attention mask, hooks, the activation cache, sampling
    text/       tokenizers, corpora and user text, n-gram counts and the corpus index
    bundles/    saved models: our bundle format, GPT-2 folders, one `load_bundle()`
    training/   the training loop, run settings, the speed estimate, `python -m viz_model.training`
    analysis/   what the pages measure: one module per concept, and the claims they print
"""
