"""Instruction-tune a bundled char GPT on the chat template of viz_model/text/instructions.py.

The base bundle's tokenizer gains the template's special tokens (<|user|>, <|assistant|>,
<|end|>, one id each), its model gains a mean-initialised row per token (model/vocab.py), and the
project's one training loop (training/loop.train) fine-tunes every weight on the "instruct" task's
text. The result is a normal bundle whose meta names its base and how its data is made again
({"task": "instruct", "task_examples": N, "task_seed": S}); no snapshots are kept (the "before"
model is the base grown by extend_vocab, which the app rebuilds). Usage:

    python scripts/instruction_tune.py --threads 1      # writes assets/models/shakespeare-instruct
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz_model.analysis.labs.instruct import evaluate_instructions  # noqa: E402
from viz_model.bundles.load import load_bundle  # noqa: E402
from viz_model.model.config import TrainConfig  # noqa: E402
from viz_model.model.vocab import extend_vocab  # noqa: E402
from viz_model.text import ngram  # noqa: E402
from viz_model.text.data import TokenData, load_text  # noqa: E402
from viz_model.text.instructions import SPECIAL_TOKENS, instructions  # noqa: E402
from viz_model.training.run import Run  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="assets/models/shakespeare-char")
    p.add_argument("--out", default="assets/models/shakespeare-instruct")
    p.add_argument("--examples", type=int, default=20_000, help="turns of training text")
    p.add_argument("--seed", type=int, default=0, help="the text's seed and the loop's")
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--minutes", type=float, default=0.0, help="a time limit (0: none)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args(argv)


def tuning_run(args: argparse.Namespace, command: str) -> tuple[Run, str]:
    """The base grown by the template's tokens, the instruct text, the loop's settings."""
    base = load_bundle(ROOT / args.base)
    tokenizer = base.tokenizer.with_special_tokens(SPECIAL_TOKENS)
    model = extend_vocab(base.model, tokenizer.vocab_size - base.tokenizer.vocab_size)
    source = {
        "task": "instruct",
        "task_examples": args.examples,
        "task_len": 32,  # unused by "instruct"; load_text reads it
        "task_seed": args.seed,
        "val_fraction": 0.1,
    }
    data = TokenData.from_text(load_text(source), tokenizer, source["val_fraction"])
    cfg = TrainConfig.from_dict(
        {
            **(base.train_config or {}),
            "max_steps": args.steps,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "min_lr": args.lr / 10,
            "warmup_steps": 50,
            "eval_every": 100,
            "eval_batches": 20,
            "sample_every": 0,
            "n_snapshots": 0,
            "seed": args.seed,
            "threads": args.threads,
            "time_limit": args.minutes * 60.0,
        }
    )
    meta = {
        "command": command,
        "data": source,
        "corpus": "instruct",
        "tokenizer": tokenizer.kind,
        "vocab_size": tokenizer.vocab_size,
        "preset": base.meta.get("preset"),
        "family": "gpt",
        "base": base.name,
        "base_val_loss": base.meta.get("val_loss"),
        "example_prompts": [i.text for i in instructions(4, seed=99, held_out=True)][:3],
        "baselines": ngram.baselines(
            data.train.numpy(), data.val.numpy(), tokenizer.vocab_size
        ).as_dict(),
    }
    run = Run(model, tokenizer, data, cfg, ROOT / args.out, meta, [], 0)
    return run, base.name


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    command = "python scripts/instruction_tune.py " + shlex.join(argv or sys.argv[1:])
    run, _ = tuning_run(args, command.strip())
    for rec in run.steps():
        if rec.val_loss is not None:
            print(json.dumps({"step": rec.step, "val_loss": rec.val_loss, "s": rec.elapsed}))
            sys.stdout.flush()
    tuned = load_bundle(run.out)
    report = evaluate_instructions(tuned.model, tuned.tokenizer, instructions(200, held_out=True))
    print(json.dumps({"held_out_exact": report.exact_by_kind(), "stops": report.stop_share()}))


if __name__ == "__main__":
    main()
