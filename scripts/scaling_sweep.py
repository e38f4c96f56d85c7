"""Train a sweep of small shapes on Shakespeare (characters) with the project's training CLI, one
after another on one thread, and write what the Scaling page plots to
assets/scaling/shakespeare-char.json: per run its command, shape, parameter counts, tokens seen
and validation-loss curve. Only these results are kept (a few kB), not the weights.

    python scripts/scaling_sweep.py [--work runs/scaling-sweep]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz_model.bundles.load import load_bundle  # noqa: E402

OUT = ROOT / "assets" / "scaling" / "shakespeare-char.json"
# (n_layer, d_model, n_head): from 10 k to 0.8 M parameters, every run the same steps and batch
SHAPES = [(1, 32, 2), (2, 48, 4), (2, 64, 4), (3, 96, 4), (4, 128, 4)]
COMMON = [
    "--corpus",
    "shakespeare",
    "--tokenizer",
    "char",
    "--n-ctx",
    "128",
    "--steps",
    "1500",
    "--batch-size",
    "16",
    "--lr",
    "3e-3",
    "--warmup",
    "50",
    "--eval-every",
    "250",
    "--sample-every",
    "0",
    "--snapshots",
    "1",
    "--threads",
    "1",
    "--quiet",
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "scaling-sweep")
    args = p.parse_args()
    runs = []
    for n_layer, d_model, n_head in SHAPES:
        name = f"L{n_layer}-d{d_model}"
        shape = ["--n-layer", str(n_layer), "--d-model", str(d_model), "--n-head", str(n_head)]
        out = args.work / name
        cmd = [sys.executable, "-m", "viz_model.training", *COMMON, *shape, "--out", str(out)]
        subprocess.run(cmd, check=True, cwd=ROOT)
        b = load_bundle(out)
        runs.append(
            {
                "name": name,
                "command": b.meta["command"],
                "model": b.config.to_dict(),
                "n_params": b.model.n_params(),
                "tokens_seen": b.meta["tokens_seen"],
                "val_loss": b.meta["val_loss"],
                "curve": [[r["step"], r["val_loss"]] for r in b.history if "val_loss" in r],
                "tokens_per_step": 16 * 128,
            }
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"corpus": "shakespeare", "tokenizer": "char", "runs": runs}, indent=1)
    )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
