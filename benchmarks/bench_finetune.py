"""Fine-tuning and LoRA at the training speed of an ordinary job. Prints JSON.

    python -m benchmarks.bench_finetune            # 150 steps of each
    python -m benchmarks.bench_finetune --quick    # 15 steps of each, to check it works

Tokens per second of the real loop (loop.train, TrainConfig's defaults: gradient-health records
every 10 steps, clipping; no bundle written, evaluation only at the end and not timed) on one
thread, for shakespeare-char's shape at its batch (16) and context (128) on the Shakespeare text:

    ordinary     a new model of that shape, every weight trained (what a job does)
    full         shakespeare-char fine-tuned, every weight trained
    lora_qkv_out LoRA r = 8 on attention's qkv and out (the rest frozen)
    lora_all     LoRA r = 8 on qkv, out, mlp_in and mlp_out

The four loops run side by side, one step of each in turn (so a change in the machine's load
falls on all alike); each step is timed, the first 5 and the last (which evaluates) left out, and
tokens/s is batch x context over the median step. Target: each fine-tune within 15% of the ordinary job (ratio >= 0.85). The load average
before and after is printed, since the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch

from benchmarks.common import emit
from viz_model.bundles.load import load_bundle
from viz_model.model.config import TrainConfig
from viz_model.model.families import build_model
from viz_model.model.lora import attach_lora
from viz_model.text.data import TokenData, load_corpus
from viz_model.training.loop import train

BASE = Path(__file__).resolve().parent.parent / "assets" / "models" / "shakespeare-char"
SKIP = 5  # steps before the clock starts (the first ones allocate)
TARGET = 0.85


def build(kind: str):
    """A model for one variant (a fresh copy every round: the optimiser starts anew too)."""
    bundle = load_bundle(BASE)
    if kind == "ordinary":
        torch.manual_seed(0)
        return build_model(bundle.config)
    if kind == "lora_qkv_out":
        attach_lora(bundle.model, 8, ("qkv", "out"))
    elif kind == "lora_all":
        attach_lora(bundle.model, 8, ("qkv", "out", "mlp_in", "mlp_out"))
    return bundle.model


def step_times(kinds: tuple[str, ...], data: TokenData, steps: int, batch: int, tokenizer):
    """{kind: seconds of each step}: one loop per kind, advanced one step at a time in turn, so a
    change in the machine's load falls on every kind alike (the last step, which evaluates, and
    the first SKIP are left out)."""
    cfg = TrainConfig(
        max_steps=steps, batch_size=batch, eval_every=0, eval_batches=1, sample_tokens=0, threads=1
    )
    loops = {k: train(build(k), data, cfg, None, tokenizer) for k in kinds}
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for step in range(1, steps + 1):
        for kind, loop in loops.items():
            t0 = time.perf_counter()
            next(loop)
            if SKIP < step < steps:
                times[kind].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    steps = 15 if args.quick else 150
    torch.set_num_threads(1)
    bundle = load_bundle(BASE)
    batch = int((bundle.train_config or {}).get("batch_size", 16))
    data = TokenData.from_text(load_corpus("shakespeare"), bundle.tokenizer)
    load_before = os.getloadavg()
    kinds = ("ordinary", "full", "lora_qkv_out", "lora_all")
    times = step_times(kinds, data, steps, batch, bundle.tokenizer)
    tokens = batch * bundle.config.n_ctx
    best = {k: tokens / statistics.median(v) for k, v in times.items()}
    ratios = {k: round(best[k] / best["ordinary"], 3) for k in kinds if k != "ordinary"}
    emit(
        "finetune",
        {
            "model": "shakespeare-char",
            "batch": batch,
            "n_ctx": bundle.config.n_ctx,
            "steps": steps,
            "timed_steps_each": steps - SKIP - 1,
            "tokens_per_s": {k: round(v) for k, v in best.items()},
            "ratio_to_ordinary": ratios,
            "target_ratio": TARGET,
            "meets_target": all(r >= TARGET for r in ratios.values()),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
    )


if __name__ == "__main__":
    main()
