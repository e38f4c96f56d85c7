"""Sparse autoencoder: train one on shakespeare-char's middle residual stream and measure it.

    python -m benchmarks.bench_sae                       # 500k tokens, 1,024 features, top-16
    python -m benchmarks.bench_sae --tokens 1000000 --threads 2

The activations are `blocks.1.hook_resid_post` (after 2 of the 4 blocks, d_model 128) over seeded
random windows of the model's training split; the metrics are on 64 held-out windows (8,192 tokens)
of the validation split. Reports wall time (collecting activations and training apart), tokens/s,
the fraction of variance explained, L0, dead features, and the next-token loss clean, with the SAE
spliced in, and with the hook mean-ablated (its mean over the training tokens at every position).

Target (issue 27): training under 2 minutes on this 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from benchmarks.common import emit
from viz_model.analysis.labs.sae.activations import collect, hook_name, random_windows
from viz_model.analysis.labs.sae.metrics import evaluate
from viz_model.analysis.labs.sae.training import SAEConfig, train_sae
from viz_model.bundles.load import load_bundle
from viz_model.text.data import ASSETS_DIR, TokenData, load_text

MODEL, LAYER = "shakespeare-char", 1
EVAL_TOKENS = 8192


def run(tokens: int, features: int, k: int, seed: int) -> dict:
    bundle = load_bundle(ASSETS_DIR / "models" / MODEL)
    model = bundle.model.eval()
    data = TokenData.from_text(load_text(bundle.meta["data"]), bundle.tokenizer)
    name = hook_name(LAYER)
    start = time.perf_counter()
    windows = random_windows(data.train, tokens, model.cfg.n_ctx, seed)
    acts = collect(model, windows[:, :-1], name)
    collected = time.perf_counter()
    cfg = SAEConfig(n_features=features, k=k, seed=seed)
    sae, log = train_sae(acts, cfg)
    trained = time.perf_counter()
    held_out = random_windows(data.val, EVAL_TOKENS, model.cfg.n_ctx, seed + 1)
    m = evaluate(model, sae, name, held_out, acts.mean(0), log.dead)
    wall = trained - start
    return {
        "model": MODEL,
        "hook": name,
        "d_model": model.cfg.d_model,
        "features": features,
        "sparsity": f"top-{k}" if k else f"L1 {cfg.l1_coeff}",
        "batch_size": cfg.batch_size,
        "lr": cfg.lr,
        "train_tokens": int(acts.shape[0]),
        "steps": len(log.mse),
        "collect_s": round(collected - start, 1),
        "train_s": round(trained - collected, 1),
        "wall_s": round(wall, 1),
        "tokens_per_s": round(acts.shape[0] / wall),
        "resampled": log.resampled,
        "eval_tokens": m.tokens,
        "dead_window_tokens": log.dead_window_tokens,
        **quality(m),
    }


def quality(m) -> dict:
    """An SAE's measured quality (SAEMetrics), and the machine's load while it was measured."""
    return {
        "fve": round(m.fve, 4),
        "l0": round(m.l0, 2),
        "dead": m.n_dead,
        "clean_loss": round(m.clean_loss, 4),
        "spliced_loss": round(m.spliced_loss, 4),
        "mean_ablated_loss": round(m.ablated_loss, 4),
        "loss_recovered": round(m.loss_recovered, 4),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=500_000)
    parser.add_argument("--features", type=int, default=1024)
    parser.add_argument("--k", type=int, default=16, help="top-k; 0 for the L1 penalty")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    emit("sae", run(args.tokens, args.features, args.k, args.seed))


if __name__ == "__main__":
    main()
