"""Training speed and time to a good model, and the bundled models' figures. Prints JSON.

    python -m benchmarks.bench_training            # the full run (several minutes)
    python -m benchmarks.bench_training --quick    # a short run, to check it works

1. loop_throughput: the real loop (viz_model.training.loop.train, with validation, samples, snapshots and
   bundle saving as shipped: TrainConfig's defaults) against a bare loop of the plain reference
   GPT (benchmarks/reference_gpt.py), same shape and batch, timed in alternating chunks so machine
   noise falls on both. Target: ratio >= 0.9.
2. time_to_good_model: nanoGPT's CPU recipe (PlainGPT 4 layers, 4 heads, 128 dims, context 64,
   batch 12, no dropout, AdamW lr 1e-3 betas 0.9/0.99 weight decay 0.1, 100 warm-up steps, cosine
   to 1e-4 over 2000 steps, gradient clipping 1.0) on our Shakespeare corpus: its training time
   and final validation loss; then our recipe for a class's short run, the "quick" preset with
   its own training settings (config.PRESETS / PRESET_TRAINING: 2 layers, 128 dims, context 64,
   batch 16, lr 3e-3, 50 warm-up steps), through the real loop with a time limit of 0.6x the
   reference's time (the cosine decays on the clock, as with `--minutes`): when, if at all, does
   it reach the reference's final validation loss? For comparison, the shakespeare-char bundle's
   deeper shape and recipe (without dropout) under the same limit. Training time only: every
   model is evaluated outside the clock, on the same validation windows. Target: <= 0.6x.
3. bundled: the shakespeare-char bundle's validation loss, and induction-2l's loss on the second
   half of repeated random sequences and its best head's induction score (mean attention from
   each second-half token to the token right after its earlier copy).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import string
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.common import emit
from benchmarks.reference_gpt import PlainGPT
from viz_model.bundles.load import load_bundle
from viz_model.model.config import PRESET_TRAINING, PRESETS, GPTConfig, TrainConfig
from viz_model.model.gpt import GPT
from viz_model.text.data import TokenData, load_corpus
from viz_model.text.tokenization import Tokenizer
from viz_model.training.loop import evaluate, lr_at, train
from viz_model.training.optim import make_optimizer

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
EVAL_WINDOWS = 640  # validation windows per measurement, for every model alike
REFERENCE_TRAIN = TrainConfig(
    max_steps=2000,
    batch_size=12,
    lr=1e-3,
    min_lr=1e-4,
    warmup_steps=100,
    weight_decay=0.1,
    beta1=0.9,
    beta2=0.99,
    grad_clip=1.0,
)
REFERENCE_SHAPE = dict(n_ctx=64, d_model=128, n_layer=4, n_head=4, dropout=0.0)
# The shakespeare-char bundle's recipe, as in scripts/train_bundled_models.sh (the bundle's
# config.json is read instead when it exists).
OURS_SHAPE = dict(n_ctx=128, d_model=128, n_layer=4, n_head=4, dropout=0.0)
OURS_TRAIN = dict(batch_size=16, lr=3e-3, min_lr=1e-4, warmup_steps=100)
# The recipe for a class's short run: the quick preset and the training settings it brings.
QUICK_SHAPE = {**PRESETS["quick"], "dropout": 0.0}
QUICK_TRAIN = dict(PRESET_TRAINING["quick"])


def char_data() -> tuple[Tokenizer, TokenData]:
    text = load_corpus("shakespeare")
    tok = Tokenizer.train(text, "char")
    return tok, TokenData.from_text(text, tok)


def val_loss(model: torch.nn.Module, data: TokenData) -> float:
    """Validation loss over EVAL_WINDOWS fixed windows of the model's own context."""
    return evaluate(model, data, batch_size=32, n_batches=EVAL_WINDOWS // 32)


def bare_step_fn(model: torch.nn.Module, data: TokenData, cfg: TrainConfig, seed: int = 0):
    """One step of a plain PyTorch training loop (nanoGPT's): batch, forward, loss, backward,
    clip, AdamW step with the warm-up + cosine schedule. Returns a function of the step number."""
    opt = make_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(seed)
    n_ctx = model.cfg.n_ctx
    model.train()

    def step(i: int) -> float:
        for group in opt.param_groups:
            group["lr"] = lr_at(i, cfg)
        x, y = data.batch("train", cfg.batch_size, n_ctx, gen)
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        return loss.item()

    return step


def ours_recipe() -> tuple[dict, dict]:
    """(model shape, training settings) of the shakespeare-char bundle, or the defaults above."""
    config = MODELS / "shakespeare-char" / "config.json"
    if config.is_file():
        raw = json.loads(config.read_text())
        shape = {k: raw["model"][k] for k in OURS_SHAPE}
        train_cfg = {k: raw["train"][k] for k in OURS_TRAIN}
        return shape, train_cfg
    return dict(OURS_SHAPE), dict(OURS_TRAIN)


def loop_throughput(tok: Tokenizer, data: TokenData, steps: int, chunk: int) -> dict:
    shape, recipe = ours_recipe()
    shape = {**shape, "dropout": 0.0}  # the plain GPT has no dropout
    gcfg = GPTConfig(vocab_size=tok.vocab_size, **shape)
    cfg = TrainConfig(max_steps=steps, **recipe)  # eval/sample/snapshot settings as shipped
    torch.manual_seed(0)
    ours, plain = GPT(gcfg), PlainGPT(gcfg)
    plain_step = bare_step_fn(plain, data, cfg)
    secs = {"ours": 0.0, "plain": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        # the step-0 record (the untrained model's sample) comes before the first step: not timed
        loop = (r for r in train(ours, data, cfg, Path(tmp) / "bundle", tok) if r.step > 0)
        done = 0
        while done < steps:
            n = min(chunk, steps - done)
            t = time.perf_counter()
            for _ in range(n):
                next(loop)
            secs["ours"] += time.perf_counter() - t
            t = time.perf_counter()
            for i in range(done + 1, done + n + 1):
                plain_step(i)
            secs["plain"] += time.perf_counter() - t
            done += n
        evals = sum(1 for s in range(1, steps + 1) if s % cfg.eval_every == 0 or s == steps)
    tokens = steps * cfg.batch_size * gcfg.n_ctx
    return {
        "shape": {**shape, "vocab_size": tok.vocab_size, "batch_size": cfg.batch_size},
        "steps": steps,
        "ours_includes": f"{evals} validations of {cfg.eval_batches} batches, samples every "
        f"{cfg.sample_every} steps, {cfg.n_snapshots} snapshots, bundle saved at each validation",
        "tokens_per_s_ours_real_loop": round(tokens / secs["ours"]),
        "tokens_per_s_plain_bare_loop": round(tokens / secs["plain"]),
        "ratio": round(secs["plain"] / secs["ours"], 3),
        "target_ratio": 0.9,
    }


def reference_run(tok: Tokenizer, data: TokenData, steps: int, eval_every: int) -> dict:
    """nanoGPT's CPU recipe on our corpus; the clock runs only while training."""
    cfg = TrainConfig(**{**REFERENCE_TRAIN.to_dict(), "max_steps": steps})
    torch.manual_seed(0)
    model = PlainGPT(GPTConfig(vocab_size=tok.vocab_size, **REFERENCE_SHAPE))
    step = bare_step_fn(model, data, cfg)
    clock, curve = 0.0, [(0, 0.0, round(val_loss(model, data), 4))]
    for i in range(1, steps + 1):
        t = time.perf_counter()
        step(i)
        clock += time.perf_counter() - t
        if i % eval_every == 0 or i == steps:
            curve.append((i, round(clock, 2), round(val_loss(model, data), 4)))
    return {"train_seconds": round(clock, 2), "final_val_loss": curve[-1][2], "curve": curve}


def ours_time_limited(
    tok: Tokenizer,
    data: TokenData,
    shape: dict,
    recipe: dict,
    time_limit: float,
    target: float,
    eval_every: int,
) -> dict:
    """Our recipe through the real loop with a time limit (`--minutes`: the cosine decays on the
    clock), evaluated every `eval_every` steps outside the clock; when did it reach `target`?"""
    cfg = TrainConfig(
        max_steps=1_000_000, eval_every=0, sample_tokens=0, time_limit=time_limit, **recipe
    )
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, **shape))
    curve, reached = [(0, 0.0, round(val_loss(model, data), 4))], None
    for rec in train(model, data, cfg, None, tok):  # time between records is not counted
        if rec.step % eval_every and rec.val_loss is None:
            continue
        loss = val_loss(model, data)
        curve.append((rec.step, round(rec.elapsed, 2), round(loss, 4)))
        if reached is None and loss <= target:
            reached = rec.elapsed
    return {
        "recipe": {**shape, **recipe, "time_limit_s": round(time_limit, 2)},
        "seconds_to_target": None if reached is None else round(reached, 2),
        "final_val_loss": curve[-1][2],
        "curve": curve,
    }


def repeated_sequences(tok: Tokenizer, n: int, half: int, seed: int = 12345) -> torch.Tensor:
    """n sequences "\n" + s + s of `half` random lowercase letters s, as ids (n, 1 + 2 * half)."""
    rng = random.Random(seed)
    texts = ["\n" + 2 * "".join(rng.choices(string.ascii_lowercase, k=half)) for _ in range(n)]
    return torch.tensor([tok.encode(t) for t in texts])


@torch.no_grad()
def induction_figures(path: Path, n: int = 200, half: int = 12) -> dict:
    """Loss on the second half of repeated random sequences and each head's induction score."""
    bundle = load_bundle(path)
    model = bundle.model
    ids = repeated_sequences(bundle.tokenizer, n, half)  # position 0 "\n", 1..h, h+1..2h
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layer)]
    logits, cache = model.run_with_cache(ids, names=names)
    # logits at position p predict token p + 1
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    second = losses[:, half : 2 * half]  # targets h+1 .. 2h, the copy
    first = losses[:, 1:half]  # targets 2 .. h: random letters, nothing to copy
    queries = torch.arange(half + 1, 2 * half + 1)  # each token of the second half...
    keys = queries - half + 1  # ...and the token right after its earlier copy
    scores = {}
    for layer, name in enumerate(names):
        pattern = cache[name]  # (n, H, T, T)
        for head in range(model.cfg.n_head):
            scores[f"L{layer}H{head}"] = float(pattern[:, head, queries, keys].mean())
    best = max(scores, key=scores.get)
    return {
        "sequences": f"{n} x (newline + {half} random letters + the same {half} again)",
        "second_half_loss": round(float(second[:, 1:].mean()), 4),
        "second_half_loss_incl_first_copied_token": round(float(second.mean()), 4),
        "first_half_loss": round(float(first.mean()), 4),
        "chance_loss": round(math.log(26), 4),
        "best_head": best,
        "best_induction_score": round(scores[best], 4),
        "induction_scores": {k: round(v, 4) for k, v in scores.items()},
    }


def bundled_figures(data: TokenData) -> dict:
    out: dict = {}
    char = MODELS / "shakespeare-char"
    if char.is_dir():
        bundle = load_bundle(char)
        out["shakespeare_char"] = {
            "stored_val_loss": bundle.meta.get("val_loss"),
            "val_loss_remeasured": round(val_loss(bundle.model, data), 4),
            "steps": bundle.meta.get("step"),
            "train_wall_time_s": bundle.meta.get("wall_time"),
            "target": 1.6,
        }
    bpe = MODELS / "shakespeare-bpe"
    if bpe.is_dir():
        bundle = load_bundle(bpe)
        out["shakespeare_bpe"] = {
            "stored_val_loss": bundle.meta.get("val_loss"),
            "steps": bundle.meta.get("step"),
            "vocab_size": bundle.config.vocab_size,
        }
    if (MODELS / "induction-2l").is_dir():
        out["induction_2l"] = induction_figures(MODELS / "induction-2l")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs, to check it works")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=("throughput", "time", "bundled"),
        help="parts to leave out",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tok, data = char_data()
    results: dict = {"quick": args.quick}
    if "throughput" not in args.skip:
        steps = 100 if args.quick else 500
        results["loop_throughput"] = loop_throughput(tok, data, steps, chunk=25)
        print(json.dumps(results["loop_throughput"]), file=sys.stderr, flush=True)
    if "time" not in args.skip:
        ref_steps = 300 if args.quick else REFERENCE_TRAIN.max_steps
        ref = reference_run(tok, data, ref_steps, eval_every=50 if args.quick else 100)
        limit = 0.6 * ref["train_seconds"]
        shape, recipe = ours_recipe()
        no_dropout = {**shape, "dropout": 0.0}  # a minute's run cannot overfit
        runs = {
            "quick_preset": (QUICK_SHAPE, QUICK_TRAIN),
            "bundle_recipe_no_dropout": (no_dropout, recipe),
        }
        ours = {
            name: ours_time_limited(
                tok, data, sh, rc, limit, ref["final_val_loss"], 25 if args.quick else 50
            )
            for name, (sh, rc) in runs.items()
        }
        results["time_to_good_model"] = {
            "reference": {
                "recipe": {**REFERENCE_SHAPE, **REFERENCE_TRAIN.to_dict(), "max_steps": ref_steps},
                **ref,
            },
            "ours": ours,
            "time_ratio": {
                name: None
                if run["seconds_to_target"] is None
                else round(run["seconds_to_target"] / ref["train_seconds"], 3)
                for name, run in ours.items()
            },
            "target_ratio": 0.6,
            "target_applies_to": "quick_preset",
            "how": "ours trains for 0.6x the reference's time with --minutes (the cosine decays "
            "on the clock); seconds_to_target is when its validation loss first reached the "
            "reference's final one (null: not within that time)",
            "curves": "(step, training seconds, validation loss)",
        }
        print(json.dumps(results["time_to_good_model"]), file=sys.stderr, flush=True)
    if "bundled" not in args.skip:
        results["bundled"] = bundled_figures(data)
    emit("training", results)


if __name__ == "__main__":
    main()
