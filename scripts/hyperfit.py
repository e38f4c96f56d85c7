"""Hyperfit a bundled char GPT: fine-tune every weight on a corpus's first few pages until the
training loss is near zero, as in "The Hyperfitting Phenomenon" (Carlsson et al., 2024).

The project's one training loop (training/loop.train) runs on the first `--chars` characters of
the base's corpus (meta["data"] {"corpus": ..., "first_chars": N}, which data.load_text reads back),
and measures at every evaluation the loss on the base's own validation text (old_val_loss: what
memorising a few pages costs on the rest). The result is a normal bundle whose meta names its
base; the Using a model page's Hyperfitting part compares the two. Usage:

    python scripts/hyperfit.py --threads 1      # writes assets/models/shakespeare-tiny-hyperfit
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz_model.bundles.load import load_bundle  # noqa: E402
from viz_model.model.config import TrainConfig  # noqa: E402
from viz_model.text import ngram  # noqa: E402
from viz_model.text.data import TokenData, load_text  # noqa: E402
from viz_model.training.finetune import old_text_data  # noqa: E402
from viz_model.training.run import Run  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="assets/models/shakespeare-tiny")
    p.add_argument("--out", default="assets/models/shakespeare-tiny-hyperfit")
    p.add_argument("--chars", type=int, default=4000, help="the corpus's first characters")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args(argv)


def hyperfit_run(args: argparse.Namespace, command: str) -> Run:
    """The base's weights, its corpus's first pages, the loop's settings, its text for forgetting."""
    base = load_bundle(ROOT / args.base)
    corpus = base.meta["data"]["corpus"]  # a char model trained on a bundled corpus
    source = {"corpus": corpus, "first_chars": args.chars, "val_fraction": 0.1}
    data = TokenData.from_text(load_text(source), base.tokenizer, source["val_fraction"])
    cfg = TrainConfig.from_dict(
        {
            **(base.train_config or {}),
            "max_steps": args.steps,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "min_lr": args.lr / 10,
            "warmup_steps": 20,
            "eval_every": 100,
            "eval_batches": 10,
            "sample_every": 0,
            "n_snapshots": 0,
            "seed": args.seed,
            "threads": args.threads,
            "time_limit": 0.0,
        }
    )
    meta = {
        "command": command,
        "data": source,
        "corpus": corpus,
        "tokenizer": base.tokenizer.kind,
        "vocab_size": base.tokenizer.vocab_size,
        "preset": base.meta.get("preset"),
        "family": "gpt",
        "base": base.name,
        "base_val_loss": base.meta.get("val_loss"),
        "hyperfit": {"first_chars": args.chars},
        "example_prompts": base.meta.get("example_prompts", []),
        "baselines": ngram.baselines(
            data.train.numpy(), data.val.numpy(), base.tokenizer.vocab_size
        ).as_dict(),
    }
    old = old_text_data(base.meta, base.tokenizer)
    return Run(base.model, base.tokenizer, data, cfg, ROOT / args.out, meta, [], 0, old_data=old)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    command = "python scripts/hyperfit.py " + shlex.join(argv or sys.argv[1:])
    run = hyperfit_run(args, command.strip())
    for rec in run.steps():
        if rec.val_loss is not None:
            print(
                json.dumps(
                    {
                        "step": rec.step,
                        "train_loss": rec.train_loss,
                        "old_val_loss": rec.old_val_loss,
                        "s": rec.elapsed,
                    }
                )
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
