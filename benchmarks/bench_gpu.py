"""Training on a GPU at nanoGPT's shakespeare-char shape, beside the same step on the CPU. Prints JSON.

    python -m benchmarks.bench_gpu            # the full run: raw steps, the loop, time to 1.47
    python -m benchmarks.bench_gpu --quick    # a few steps of each, to check it works

nanoGPT's config/train_shakespeare_char.py: 6 layers, 6 heads, 384 dims, context 256, batch 64,
dropout 0.2, AdamW lr 1e-3 (beta2 0.99, weight decay 0.1), 100 warm-up steps, cosine to 1e-4
over 5,000 steps, gradient clipping 1.0; it reaches a validation loss of 1.4697 in about 3 minutes
on one A100 (its README). Here, on the project's own Shakespeare text and character tokenizer:

1. raw_step: one training step of the engine's GPT (batch, forward, loss, backward, clip, AdamW),
   tokens/s in float32 and under bf16 autocast (training/accel.py), no validation or saving.
2. loop: the real loop (viz_model.training.loop.train, with its evaluations, samples, snapshots
   and bundle saves) on the same shape: tokens/s and its ratio to the raw step in the loop's own
   precision. Target (docs/ARCHITECTURE.md, Budgets: the speed of a plain PyTorch
   GPT of the same shape): >= 0.9.
3. time_to_loss: the loop with nanoGPT's recipe, evaluated every 250 steps on 200 windows as
   nanoGPT does, until the validation loss reaches 1.47 (or the 5,000 steps end): training
   seconds and the step.
4. cpu: the raw float32 step at the same shape on this machine's CPU, for comparison.

Without a CUDA GPU the GPU parts are skipped with their reason; the CPU figure is still measured.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import threading
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.common import emit
from viz_model.model.config import GPTConfig, TrainConfig
from viz_model.model.gpt import GPT
from viz_model.text.data import TokenData, load_corpus
from viz_model.text.tokenization import Tokenizer
from viz_model.training import accel
from viz_model.training.loop import RunControls, lr_at, train
from viz_model.training.optim import make_optimizer

SHAPE = dict(n_ctx=256, d_model=384, n_layer=6, n_head=6, dropout=0.2)
RECIPE = TrainConfig(
    max_steps=5000,
    batch_size=64,
    lr=1e-3,
    min_lr=1e-4,
    warmup_steps=100,
    weight_decay=0.1,
    beta1=0.9,
    beta2=0.99,
    grad_clip=1.0,
    eval_every=250,
    eval_batches=200,
    sample_every=1000,
)
TARGET_LOSS = 1.47  # nanoGPT's 1.4697, rounded as it is quoted


def char_data() -> tuple[Tokenizer, TokenData]:
    text = load_corpus("shakespeare")
    tok = Tokenizer.train(text, "char")
    return tok, TokenData.from_text(text, tok)


def new_model(tok: Tokenizer, device: torch.device) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=tok.vocab_size, **SHAPE)).to(device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def raw_tokens_per_s(
    tok: Tokenizer, data: TokenData, device: torch.device, bf16: bool, steps: int
) -> float:
    """Tokens/s of a bare training step (the loop's own step without its bookkeeping)."""
    model = new_model(tok, device)
    opt = make_optimizer(model, RECIPE)
    gen = torch.Generator().manual_seed(0)
    amp = bf16 and device.type == "cuda"

    def step(i: int) -> None:
        for group in opt.param_groups:
            group["lr"] = lr_at(i, RECIPE)
        x, y = data.batch("train", RECIPE.batch_size, model.cfg.n_ctx, gen)
        x, y = x.to(device), y.to(device)
        with accel.mixed_precision(device) if amp else contextlib.nullcontext():
            logits = model(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), RECIPE.grad_clip)
        opt.step()

    for i in range(1, 4):  # warm-up: kernels chosen, memory allocated
        step(i)
    sync(device)
    start = time.perf_counter()
    for i in range(4, 4 + steps):
        step(i)
    sync(device)
    return steps * RECIPE.batch_size * SHAPE["n_ctx"] / (time.perf_counter() - start)


def loop_tokens_per_s(tok: Tokenizer, data: TokenData, device: torch.device, steps: int) -> float:
    """Tokens/s of the real loop over `steps` steps, evaluations and saves included."""
    model = new_model(tok, device)
    cfg = TrainConfig(**{**RECIPE.to_dict(), "max_steps": steps + 3, "eval_every": 250})
    with tempfile.TemporaryDirectory() as tmp:
        loop = (r for r in train(model, data, cfg, Path(tmp) / "bundle", tok) if r.step > 0)
        for _ in range(3):  # warm-up (the step-0 record, the untrained sample, is not a step)
            next(loop)
        sync(device)
        start = time.perf_counter()
        timed = sum(1 for _ in loop)
        sync(device)
    return timed * RECIPE.batch_size * SHAPE["n_ctx"] / (time.perf_counter() - start)


def time_to_loss(tok: Tokenizer, data: TokenData, device: torch.device, max_steps: int) -> dict:
    """Train with nanoGPT's recipe until the validation loss reaches TARGET_LOSS."""
    model = new_model(tok, device)
    stop = threading.Event()
    cfg = TrainConfig(**{**RECIPE.to_dict(), "max_steps": max_steps})
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        controls = RunControls(stop=stop)
        for record in train(model, data, cfg, Path(tmp) / "bundle", tok, controls=controls):
            if record.val_loss is not None:
                best = {"step": record.step, "val_loss": record.val_loss, "s": record.elapsed}
                if record.val_loss <= TARGET_LOSS:
                    stop.set()
                    return {**best, "reached": True}
    return {**(best or {}), "reached": False}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps of each part")
    args = parser.parse_args()
    steps = 5 if args.quick else 200
    tok, data = char_data()
    results: dict = {
        "shape": {**SHAPE, "batch_size": RECIPE.batch_size},
        "target_loss": TARGET_LOSS,
    }
    cpu = torch.device("cpu")
    results["cpu"] = {
        "raw_step_fp32_tokens_per_s": round(raw_tokens_per_s(tok, data, cpu, False, 2))
    }
    if not torch.cuda.is_available():
        results["gpu"] = {"skipped": "no CUDA GPU on this machine"}
        emit("gpu_training", results)
        return
    gpu = torch.device("cuda")
    accel.allow_fast_matmuls(gpu)
    fp32 = raw_tokens_per_s(tok, data, gpu, False, steps)
    bf16 = raw_tokens_per_s(tok, data, gpu, True, steps)
    loop = loop_tokens_per_s(tok, data, gpu, steps)
    own = bf16 if accel.autocast_dtype(gpu) is not None else fp32
    results["gpu"] = {
        "name": torch.cuda.get_device_name(gpu),
        "raw_step_tf32_tokens_per_s": round(fp32),
        "raw_step_bf16_tokens_per_s": round(bf16),
        "loop_tokens_per_s": round(loop),
        "loop_vs_raw_step": round(loop / own, 3),
        "time_to_loss": time_to_loss(tok, data, gpu, 50 if args.quick else RECIPE.max_steps),
    }
    emit("gpu_training", results)


if __name__ == "__main__":
    main()
