"""Train the architecture contrasts too slow to bundle as weights, with the project's training CLI,
one run after another on one thread, and write what the Architecture contrasts page draws to
assets/contrasts/<sweep>.json: per run its exact command, config, training-loss curve (means of
10 steps), validation curve, where it stopped if it stopped early, its final losses, and each
layer's median gradient norm over the run. Only these results are kept (a few kB a run), not
the weights.

    python scripts/contrast_sweeps.py [--only depth] [--work runs/contrast-sweeps]

Every run is Shakespeare by characters at shakespeare-tiny's shape and recipe (its command in
assets/models/shakespeare-tiny/config.json), with fewer steps, and one thing changed:

- depth: 2 against 8 layers, each with and without residual connections.
- layernorm-lr: LayerNorm against no normalization at five peak learning rates, no warm-up.
- dropout: dropout 0 against 0.2 on the first 20,000 characters of the corpus (a file this
  script writes), long enough for the model without dropout to overfit. The training split's
  loss is measured here too, without dropout, from weights kept at every evaluation, so the
  gap between the splits compares like with like.
- optimizers: SGD with momentum against AdamW, each with and without warm-up.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from viz_model.analysis.grad_health import grad_health  # noqa: E402
from viz_model.analysis.labs.sweeps import BIN_STEPS, SWEEPS, final_window  # noqa: E402
from viz_model.bundles.load import load_bundle  # noqa: E402
from viz_model.text.data import TokenData, load_corpus, load_text  # noqa: E402
from viz_model.training.loop import evaluate  # noqa: E402

OUT_DIR = ROOT / "assets" / "contrasts"
# shakespeare-tiny's command without its text, length, samples, snapshots and output
CORPUS = ["--corpus", "shakespeare"]
TINY = shlex.split(
    "--tokenizer char --preset tiny --n-ctx 128 --batch-size 16 --lr 3e-3 --warmup 50 "
    "--sample-every 0 --snapshots 1 --threads 1 --quiet"
)
DROPOUT_CHARS = 20_000  # the small text of the dropout sweep: the corpus's first characters
LRS = ("0.001", "0.003", "0.01", "0.03", "0.1")


def runs_of(sweep: str, work: Path) -> tuple[list[tuple[str, list[str]]], dict]:
    """[(run name, CLI flags)] of a sweep and what its JSON says about the data."""
    if sweep == "depth":
        steps = ["--steps", "300", "--eval-every", "50"]
        return [
            (f"{n} layers{', no residual' if off else ''}", [*steps, "--n-layer", str(n)] + off)
            for n in (2, 8)
            for off in ([], ["--no-residual"])
        ], {}
    if sweep == "layernorm-lr":
        steps = ["--steps", "300", "--eval-every", "50", "--warmup", "0"]
        return [
            (f"{label}, lr {lr}", [*steps, "--lr", lr, "--norm-kind", kind])
            for lr in LRS
            for kind, label in (("layernorm", "LayerNorm"), ("none", "no normalization"))
        ], {}
    if sweep == "dropout":
        text = work / "dropout" / "shakespeare-20k.txt"
        text.parent.mkdir(parents=True, exist_ok=True)
        text.write_text(load_corpus("shakespeare")[:DROPOUT_CHARS], encoding="utf-8")
        every = 100
        steps = ["--steps", "1500", "--eval-every", str(every)]
        keep = ["--snapshot-at", ",".join(str(s) for s in range(every, 1500, every))]
        data = ["--text-file", str(text.relative_to(ROOT) if text.is_relative_to(ROOT) else text)]
        return [(f"dropout {p}", [*data, *steps, *keep, "--dropout", p]) for p in ("0", "0.2")], {
            "text": f"the first {DROPOUT_CHARS:,} characters of the Shakespeare corpus"
        }
    if sweep == "optimizers":
        steps = ["--steps", "400", "--eval-every", "50"]
        sgd = ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9"]
        return [
            (
                f"{name}, {'no warm-up' if w == '0' else f'warm-up {w}'}",
                [*steps, *flags, "--warmup", w],
            )
            for name, flags in (("AdamW", ["--optimizer", "adamw"]), ("SGD", sgd))
            for w in ("50", "0")
        ], {}
    raise ValueError(f"unknown sweep {sweep!r}")


def merged(base: list[str], flags: list[str]) -> list[str]:
    """base's flags with the run's: a flag given in both takes the run's value in base's place,
    so the command reads as one recipe ("--lr 0.1", never "--lr 3e-3 ... --lr 0.1").

    >>> merged(["--lr", "3e-3", "--quiet"], ["--lr", "0.1", "--no-residual"])
    ['--lr', '0.1', '--quiet', '--no-residual']
    """

    def pairs(argv: list[str]) -> dict[str, list[str]]:
        out, i = {}, 0
        while i < len(argv):
            value = (
                argv[i + 1 : i + 2]
                if i + 1 < len(argv) and not argv[i + 1].startswith("--")
                else []
            )
            out[argv[i]] = value
            i += 1 + len(value)
        return out

    combined = pairs(base) | pairs(flags)
    return [x for flag, value in combined.items() for x in (flag, *value)]


def command(flags: list[str], out: Path) -> list[str]:
    """The CLI's argv: the corpus unless the run names a text file, tiny's recipe with the run's
    flags; out relative to the checkout when it is inside it."""
    data = [] if "--text-file" in flags else CORPUS
    where = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    argv = merged([*data, *TINY], flags)
    return [sys.executable, "-m", "viz_model.training", *argv, "--out", str(where)]


def thinned(history: list[dict]) -> dict[str, list]:
    """The training loss as the mean of each BIN_STEPS steps, at the bin's last step."""
    steps, means, bin_ = [], [], []
    for r in history:
        if isinstance(r.get("train_loss"), int | float):
            bin_.append(r["train_loss"])
            if len(bin_) == BIN_STEPS or r is history[-1]:
                steps.append(r["step"])
                means.append(float(f"{sum(bin_) / len(bin_):.5g}"))
                bin_ = []
    if bin_:  # the last records before a stop
        last = [r["step"] for r in history if isinstance(r.get("train_loss"), int | float)][-1]
        steps.append(last)
        means.append(float(f"{sum(bin_) / len(bin_):.5g}"))
    return {"step": steps, "loss": means}


def _num(x: float) -> float | None:
    return float(f"{x:.4g}") if math.isfinite(x) else None


def summary(name: str, out: Path, seconds: float, eval_train: bool) -> dict:
    """What the page needs of one finished run, read from its bundle."""
    b = load_bundle(out)
    history = b.history
    losses = [r["train_loss"] for r in history if isinstance(r.get("train_loss"), int | float)]
    last = history[-1]
    stopped = last.get("stopped") or b.meta.get("stopped")
    h = grad_health(history, float((b.train_config or {}).get("grad_clip", 0.0)))
    grad = {"layers": [], "median": []}
    if h is not None and h.steps.size:
        grad = {
            "layers": list(h.layers),
            "median": [_num(float(np.nanmedian(h.grad[:, i]))) for i in range(len(h.layers))],
        }
    run = {
        "name": name,
        "command": b.meta["command"],
        "model": b.config.to_dict(),
        "train": b.train_config,
        "steps": last["step"],
        "stopped": stopped,
        "stopped_at": last["step"] if stopped else None,
        "initial_loss": losses[0],
        "final_train": float(f"{sum(final_window(losses)) / len(final_window(losses)):.5g}"),
        "final_val": b.meta.get("val_loss"),
        "peak_train": max(losses),
        "curve": thinned(history),
        "val": {
            "step": [r["step"] for r in history if "val_loss" in r],
            "loss": [r["val_loss"] for r in history if "val_loss" in r],
        },
        "grad": grad,
        "baselines": {k: round(v, 5) for k, v in b.meta.get("baselines", {}).items()},
        "seconds": round(seconds, 1),
    }
    if eval_train:
        run["eval"] = both_splits(b)
    return run


def both_splits(b) -> dict[str, list]:
    """Both splits' loss without dropout (eval mode) from each kept snapshot, the same
    windows for both models: {"step", "train", "val"}."""
    data = TokenData.from_text(
        load_text(b.meta["data"]), b.tokenizer, b.meta["data"]["val_fraction"]
    )
    cfg = b.train_config
    out = {"step": [], "train": [], "val": []}
    for step in b.snapshot_steps():
        if step == 0:
            continue
        model = b.load_snapshot(step)
        out["step"].append(step)
        for split in ("train", "val"):
            loss = evaluate(model, data, cfg["batch_size"], cfg["eval_batches"], split=split)
            out[split].append(round(loss, 5))
    return out


def _child_cpu() -> float:
    """CPU seconds the finished child processes used (0 where the system does not say: Windows):
    a run's cost on a shared machine, where its wall time depends on the others."""
    t = os.times()
    return t.children_user + t.children_system


def run_sweep(sweep: str, work: Path) -> Path:
    """Train the sweep's runs one after another and write its JSON; returns the JSON's path."""
    runs, about = runs_of(sweep, work)
    started = time.perf_counter()
    results = []
    for name, flags in runs:
        out = work / sweep / name.replace(", ", "-").replace(" ", "-")
        shutil.rmtree(out, ignore_errors=True)
        t0, cpu0 = time.perf_counter(), _child_cpu()
        done = subprocess.run(command(flags, out), cwd=ROOT)
        if done.returncode not in (0, 2):  # 2: stopped early on a NaN, which is a result here
            raise SystemExit(f"{name}: the training CLI failed ({done.returncode})")
        result = summary(name, out, time.perf_counter() - t0, sweep == "dropout")
        result["cpu_seconds"] = round(_child_cpu() - cpu0, 1)
        results.append(result)
        print(f"{sweep}: {name} done in {result['seconds']} s", flush=True)
    doc = {
        "sweep": sweep,
        "title": SWEEPS[sweep].title,
        "corpus": "shakespeare",
        "tokenizer": "char",
        **about,
        "script": f"python scripts/contrast_sweeps.py --only {sweep}",
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(sum(r["cpu_seconds"] for r in results), 1),
        "runs": results,
    }
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{sweep}.json"
    write_results(path, doc)
    return path


def write_results(path: Path, doc: dict) -> None:
    """The sweep's JSON with one run a line: small (no indentation of the curves) and a diff
    that shows which runs changed."""
    head = {k: v for k, v in doc.items() if k != "runs"}
    runs = ",\n".join(json.dumps(r, allow_nan=False, separators=(",", ":")) for r in doc["runs"])
    text = json.dumps(head, indent=1, allow_nan=False)[:-2] + ',\n "runs": [\n' + runs + "\n ]\n}\n"
    json.loads(text)  # the file must stay JSON
    path.write_text(text, encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=list(SWEEPS), help="run this sweep alone")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "contrast-sweeps")
    args = p.parse_args()
    started = time.perf_counter()
    for sweep in [args.only] if args.only else list(SWEEPS):
        path = run_sweep(sweep, args.work.resolve())
        print(f"wrote {path} ({path.stat().st_size:,} bytes)", flush=True)
    print(f"all done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
