"""Interventions: the per-head ablation sweep, activation patching and the suggested patching experiment on
the bundled models, as the Interventions page runs them (one torch thread, the page's validation
windows: up to 512 tokens of the held-out end of the training text).

    python -m benchmarks.bench_interventions

Target (issue 13): the per-head sweep on a bundled model finishes in well under a second.
"""

from __future__ import annotations

import torch

from benchmarks.common import alternate, emit
from viz_model.analysis.labs import interventions as iv
from viz_model.bundles.load import load_bundle
from viz_model.text.data import ASSETS_DIR

MODELS = ("shakespeare-char", "shakespeare-bpe", "induction-2l")
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"
VAL_TOKENS = 512  # ui/interventions.VAL_TOKENS (not imported: that module imports streamlit)


def bench_model(name: str) -> dict:
    bundle = load_bundle(ASSETS_DIR / "models" / name)
    model = bundle.model.eval()
    text = iv.validation_text(bundle.meta) or PROMPT
    windows = iv.validation_windows(bundle.tokenizer.encode(text), model.cfg.n_ctx, VAL_TOKENS)
    ids = bundle.tokenizer.encode(PROMPT if name != "induction-2l" else text[:40])
    ids = ids[: model.cfg.n_ctx]
    candidates = iv.candidate_tokens(bundle.tokenizer.encode, bundle.tokenizer.decode, ids)
    end, pos, token = iv.suggest_experiment(model, ids, candidates)
    clean = ids[: end + 1]
    corrupted = iv.corrupt(clean, pos, token)
    secs = alternate(
        {
            "head_sweep_zero": lambda: iv.head_sweep(model, windows, "zero"),
            "patching": lambda: iv.patching(model, clean, corrupted),
            "suggest_experiment": lambda: iv.suggest_experiment(model, ids, candidates),
        },
        rounds=3,
        repeats=3,
    )
    return {
        "layers_x_heads": f"{model.cfg.n_layer}x{model.cfg.n_head}",
        "validation_tokens": int(windows[:, :-1].numel()),
        "prompt_tokens": len(ids),
        "patched_tokens": len(clean),
        **{f"{k}_ms": round(v * 1000, 1) for k, v in secs.items()},
    }


def main() -> None:
    torch.set_num_threads(1)  # as one page run in the app (ui/boot.py)
    with torch.no_grad():
        emit("interventions", {name: bench_model(name) for name in MODELS})


if __name__ == "__main__":
    main()
