"""Why the transformer won, measured: one training step's and one forward pass's time against
the context length T for a GPT and an LSTM of about the same weights (the `tiny` preset's shapes,
random weights), and the memory that grows with T, counted from the shapes (issue 41). The same
measurement as the Sequence models page's `cost` section (viz_model/analysis/cost_curves.py),
with more repeats and longer contexts.

    python -m benchmarks.bench_cost_curves [--threads 1] [--batch 2] [--repeats 9] [--max-t 2048]

Each time is the median of `repeats` calls after two warm-up calls (time.perf_counter); the
sentences are the page's claims of the same numbers.
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.common import emit
from viz_model.analysis import cost_curves as cc

VOCAB = 77  # the bundled Shakespeare character models'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--max-t", type=int, default=2048)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lengths = [t for t in (64, 128, 256, 512, 1024, 2048) if t <= args.max_t]
    c = cc.measure(VOCAB, lengths, batch=args.batch, repeats=args.repeats)
    emit(
        "cost_curves",
        {
            "batch": c.batch,
            "repeats": c.repeats,
            "lengths": list(c.lengths),
            "weights": c.weights,
            "shapes": c.shapes,
            "step_ms": {k: [round(s * 1e3, 3) for s in v] for k, v in c.step_s.items()},
            "forward_ms": {k: [round(s * 1e3, 3) for s in v] for k, v in c.forward_s.items()},
            "attention_bytes": list(c.attention_bytes),
            "state_bytes": list(c.state_bytes),
            "recorded_pattern_bytes": list(c.recorded_bytes),
            "seconds": round(c.seconds, 1),
            "step_claim": cc.step_claim(c).text,
            "memory_claim": cc.memory_claim(c).text,
        },
    )


if __name__ == "__main__":
    main()
