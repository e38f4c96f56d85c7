"""Training speed of the block variants (issue 25) against the GPT-2 block of the same shape.

    python -m benchmarks.bench_variants [--threads 1]

One training step (forward, backward, AdamW) of the quick preset's shape (2 x 128, context 64,
batch 16) for each variant, timed in alternation (benchmarks/common.alternate) so machine noise
falls on all alike. Target: every variant within 15% of the GPT-2 block (ratio <= 1.15). The
parameter counts are printed too: a gated MLP keeps about as many weights with 8/3 x d_model
neurons, grouped-query attention has fewer.
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.bench_engine import train_step_fn
from benchmarks.common import alternate, emit
from viz_model.model.config import BLOCK_VARIANTS, GPTConfig
from viz_model.model.gpt import GPT

SHAPE = dict(vocab_size=65, n_ctx=64, d_model=128, n_layer=2, n_head=4)
BATCH = 16
VARIANTS = {"gpt2": {}, **BLOCK_VARIANTS, "mqa": {"n_kv_heads": 1}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.randint(0, SHAPE["vocab_size"], (BATCH, SHAPE["n_ctx"]))
    y = torch.randint(0, SHAPE["vocab_size"], (BATCH, SHAPE["n_ctx"]))
    models = {name: GPT(GPTConfig(**SHAPE, **v)).train() for name, v in VARIANTS.items()}
    steps = {name: train_step_fn(model, x, y) for name, model in models.items()}
    seconds = alternate(steps, rounds=args.rounds, repeats=5)
    base = seconds["gpt2"]
    emit(
        "variants",
        {
            "shape": SHAPE,
            "batch": BATCH,
            "step_ms": {k: round(v * 1e3, 2) for k, v in seconds.items()},
            "ratio_to_gpt2": {k: round(v / base, 3) for k, v in seconds.items()},
            "params": {k: m.n_params() for k, m in models.items()},
            "within_15_percent": all(v / base <= 1.15 for v in seconds.values()),
        },
    )


if __name__ == "__main__":
    main()
