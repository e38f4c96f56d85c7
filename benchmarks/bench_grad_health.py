"""What recording gradient health costs a training run. Prints JSON.

    python -m benchmarks.bench_grad_health            # quick and small presets, 300 steps each
    python -m benchmarks.bench_grad_health --quick    # a short run, to check it works

The real loop (viz_model.training.loop.train, no bundle, no evaluations or samples, so the
difference is not diluted) on Shakespeare characters, three times over in alternating chunks of
steps, so machine noise falls on all three alike: health_every 0 (only the whole gradient's norm,
which clipping computes anyway), the default TrainConfig.health_every, and 1 (every step). Each
layer's gradient norm and update ratio cost a copy of the weights and a few norms per record.

On a busy machine the loops' difference drowns in noise, so the cost of one record is also timed
on its own (HealthProbe: the gradient norms, the copy, the update ratios), in alternation with one
bare training step of the same model: overhead at every k steps = record / (k x step).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from benchmarks.common import alternate, emit
from viz_model.model.config import PRESET_TRAINING, TrainConfig, preset
from viz_model.model.gpt import GPT
from viz_model.text.data import TokenData, load_corpus
from viz_model.text.tokenization import Tokenizer
from viz_model.training.health import HealthProbe
from viz_model.training.loop import train
from viz_model.training.optim import make_optimizer

DEFAULT = TrainConfig().health_every


def overhead(tok: Tokenizer, data: TokenData, name: str, steps: int, chunk: int) -> dict:
    everies = (0, DEFAULT, 1)
    recipe = {**PRESET_TRAINING.get(name, {}), "max_steps": steps, "eval_every": 0}
    recipe |= {"sample_tokens": 0, "n_snapshots": 0}
    loops, secs = {}, dict.fromkeys(everies, 0.0)
    for every in everies:
        torch.manual_seed(0)
        model = GPT(preset(name, tok.vocab_size))
        loops[every] = train(model, data, TrainConfig(**recipe, health_every=every), None, tok)
    for loop in loops.values():  # warm up: first-call allocations, the optimiser's state
        next(loop)
    done = 1
    while done < steps:
        n = min(chunk, steps - done)
        for every, loop in loops.items():
            t = time.perf_counter()
            for _ in range(n):
                next(loop)
            secs[every] += time.perf_counter() - t
        done += n
    base = secs[0]
    return {
        "preset": name,
        "steps_timed": steps - 1,
        "steps_per_s": {f"health_every={e}": round((steps - 1) / s, 1) for e, s in secs.items()},
        "overhead": {f"health_every={e}": f"{s / base - 1:+.1%}" for e, s in secs.items() if e},
    }


def record_cost(tok: Tokenizer, data: TokenData, name: str, rounds: int) -> dict:
    """Milliseconds of one health record and of one bare training step, timed in alternation."""
    torch.manual_seed(0)
    model = GPT(preset(name, tok.vocab_size)).train()
    cfg = TrainConfig(**PRESET_TRAINING.get(name, {}))
    opt = make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(0)
    probe = HealthProbe(model)

    def step() -> None:
        x, y = data.batch("train", cfg.batch_size, model.cfg.n_ctx, gen)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()

    def record() -> None:
        probe.grad_norms()
        probe.update_ratios(probe.weights())

    best = alternate({"step": step, "record": record}, rounds, 5)
    return {
        "preset": name,
        "step_ms": round(best["step"] * 1e3, 2),
        "record_ms": round(best["record"] * 1e3, 2),
        f"overhead_every_{DEFAULT}_steps": f"{best['record'] / (DEFAULT * best['step']):.2%}",
        "overhead_every_step": f"{best['record'] / best['step']:.2%}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 steps, to check it runs")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: its default)")
    parser.add_argument("--no-loops", action="store_true", help="time one record and one step only")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    steps, chunk = (40, 10) if args.quick else (300, 25)
    text = load_corpus("shakespeare")
    tok = Tokenizer.train(text, "char")
    data = TokenData.from_text(text, tok)
    presets = ("quick", "small")
    emit(
        "grad_health",
        {
            "record_cost": [
                record_cost(tok, data, name, 3 if args.quick else 10) for name in presets
            ],
            "loops": []
            if args.no_loops
            else [overhead(tok, data, name, steps, chunk) for name in presets],
        },
    )


if __name__ == "__main__":
    main()
