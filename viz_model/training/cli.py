"""The command line `python -m viz_model.training`: flags -> RunSettings -> the loop, with a progress bar.

    python -m viz_model.training --corpus shakespeare --preset quick --minutes 1 --out runs/x

Flags become a `RunSettings` (viz_model/training/settings.py), which `new_run` turns into a run, the
same way the job runner does; `settings_to_argv` goes back, so a job's bundle records the command
that would train it again. This module prints; the loop (loop.py) does not.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import torch

from viz_model.bundles.files import CheckpointError
from viz_model.bundles.load import load_bundle
from viz_model.model.config import (
    ACTS,
    MLPS,
    NORM_KINDS,
    OPTIMIZER_TRAINING,
    OPTIMIZERS,
    POSITIONS,
    PRESET_TRAINING,
    PRESETS,
    STEPS_WHEN_TIMED,
    TrainConfig,
)
from viz_model.model.families import describe_shape
from viz_model.model.lora import DEFAULT_TARGETS, TARGETS
from viz_model.model.recurrent_config import FAMILIES
from viz_model.text.data import TASKS, VAL_FRACTION
from viz_model.training.loop import RunControls, perplexity
from viz_model.training.settings import (
    DEFAULT_PRESET,
    MODEL_FLAGS,
    PROG,
    TOKENIZERS,
    TRAIN_FLAGS,
    Run,
    RunSettings,
    command,
    new_run,
    pick_device,
    resumed_run,
)

# Flags that describe what a bundle is (its data, tokenizer and shape): a resume keeps the bundle's.
_FIXED_BY_BUNDLE = (
    "corpus",
    "task",
    "text_file",
    "val_fraction",
    "tokenizer",
    "vocab_size",
    "preset",
)

COMMAND = "viz-train"  # the same trainer as the console command of an installed copy
DESCRIPTION = """\
Train a small GPT on a corpus, a synthetic task or your own text file, and save it as a model
bundle (a folder the app can open): weights, tokenizer, config, training curve and snapshots.
In an installed copy (pip install .), `viz-train` is the same command.

Examples:
  python -m viz_model.training --corpus shakespeare --tokenizer char --preset small --out runs/sh
  python -m viz_model.training --corpus shakespeare --tokenizer char --preset quick --minutes 1 --out runs/class
  python -m viz_model.training --task repeat --preset attn-only-2l --steps 1500 --out runs/ind
  python -m viz_model.training --resume runs/sh --steps 4000 --out runs/sh
  python -m viz_model.training --finetune assets/models/shakespeare-tiny --task count --lora-rank 8 --lora-targets qkv,out --out runs/ft
"""


def _preset_training_help(name: str) -> str:
    """', and unless told otherwise batch 16, lr 0.003, ...' for a preset with its own settings."""
    flags = {"batch_size": "batch", "lr": "lr", "min_lr": "min-lr", "warmup_steps": "warm-up"}
    own = PRESET_TRAINING.get(name, {})
    if not own:
        return ""
    return ", and unless told otherwise " + ", ".join(f"{flags[k]} {v:g}" for k, v in own.items())


def build_parser() -> argparse.ArgumentParser:
    """The flags, one argument group a function, in the order --help lists them."""
    p = argparse.ArgumentParser(
        prog=COMMAND if Path(sys.argv[0]).name == COMMAND else PROG,  # the name the user typed
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_flags(p.add_argument_group("what to train on (choose one)"))
    _add_tokenizer_flags(p.add_argument_group("tokenizer"))
    _add_model_flags(p.add_argument_group("model shape (a family, a preset, then any overrides)"))
    _add_training_flags(p.add_argument_group("training"))
    _add_output_flags(p.add_argument_group("output"))
    _add_finetune_flags(p.add_argument_group("fine-tuning (start from a trained model)"))
    return p


def _add_data_flags(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--corpus",
        help="a bundled text corpus by name: shakespeare (about 1 MB of eight plays)",
    )
    g.add_argument(
        "--task",
        choices=sorted(TASKS),
        help="a synthetic task generated from a seed: repeat (random letters written twice; "
        "teaches induction heads), count (runs of consecutive numbers), brackets (balanced "
        "brackets)",
    )
    g.add_argument(
        "--text-file",
        type=Path,
        help="a UTF-8 plain text file of your own (at most 2 MB, at least 2,000 characters)",
    )
    g.add_argument(
        "--task-examples",
        type=int,
        default=20_000,
        help="how many lines of the synthetic task to generate (default 20000)",
    )
    g.add_argument(
        "--task-len",
        type=int,
        default=32,
        help="characters per line of the synthetic task (default 32; for repeat, half of them "
        "are the random letters and half the copy)",
    )
    g.add_argument(
        "--val-fraction",
        type=float,
        help="the share of the text kept aside to measure the validation loss on text the model "
        "never trains on: the end of each of up to 20 equal stretches, so every part of the text "
        "has some (default 0.1)",
    )


def _add_tokenizer_flags(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        help="how text becomes tokens: char (one token per character), bpe (byte-pair "
        "encoding: frequent pieces of words become single tokens) or word (one token per word); "
        "default char",
    )
    g.add_argument(
        "--vocab-size",
        type=int,
        help="how many tokens a bpe or word tokenizer learns (default 512 for bpe, 2000 for word); "
        "ignored for char",
    )


def _add_model_flags(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--family",
        choices=FAMILIES,
        default="gpt",
        help="the kind of model: gpt (a transformer), rnn (tanh), lstm, gru, or cnn (stacked "
        "causal convolutions dilated 1, 2, 4, ...). The others get the preset's context and about "
        "its number of weights (depth and width chosen to match); they take --n-ctx, --d-model, "
        "--n-layer, --dropout and, the CNN, --kernel-size, not the GPT's other flags "
        "(default gpt)",
    )
    g.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="a named model size: "
        + "; ".join(
            f"{name}: {v['n_layer']} layers, {v['d_model']} dims, {v['n_head']} heads, "
            f"context {v['n_ctx']}"
            + (", attention only" if v.get("attn_only") else "")
            + _preset_training_help(name)
            for name, v in PRESETS.items()
        )
        + " (default small)",
    )
    g.add_argument("--n-ctx", type=int, help="context length: how many tokens the model sees")
    g.add_argument(
        "--d-model", type=int, help="width of the residual stream (the size of every token vector)"
    )
    g.add_argument("--n-layer", type=int, help="number of transformer blocks (or layers)")
    g.add_argument(
        "--kernel-size",
        type=int,
        help="the CNN's convolution width (default 3): with n layers dilated 1, 2, 4, ..., its "
        "logits read the last 1 + (kernel - 1) x (2^n - 1) tokens",
    )
    g.add_argument("--n-head", type=int, help="attention heads per block (must divide d-model)")
    g.add_argument("--d-mlp", type=int, help="hidden neurons of each MLP (default 4 x d-model)")
    g.add_argument(
        "--act",
        choices=ACTS,
        help="the MLP's nonlinearity, the bend between its two layers (default gelu)",
    )
    g.add_argument(
        "--pos",
        choices=POSITIONS,
        help="position information: learned vectors or fixed sine waves added to the embeddings, "
        "rope (q and k rotated by position, Llama), alibi (a distance penalty on the attention "
        "scores), or none at all; rope, alibi and none can read past the context (default "
        "learned)",
    )
    g.add_argument(
        "--norm",
        choices=("pre", "post"),
        help="where LayerNorm sits: before attention and the MLP read the stream (pre, as in "
        "GPT-2) or after their output is added back (post, as in the original 2017 Transformer); "
        "default pre",
    )
    g.add_argument(
        "--norm-kind",
        choices=NORM_KINDS,
        help="which normalization: LayerNorm (GPT-2: subtract the mean, divide by the standard "
        "deviation), RMSNorm (Llama: only divide by the root mean square), or none at all, to see "
        "what it was for (default layernorm)",
    )
    g.add_argument(
        "--no-residual",
        action="store_true",
        default=None,
        help="no residual connections: each attention and MLP output replaces the stream instead "
        "of being added to it (train a deep model with and without to see what they are for)",
    )
    g.add_argument(
        "--mlp",
        choices=MLPS,
        help="standard (W_out act(W_in x)) or gated (W_out (act(W_gate x) * W_in x)); gated with "
        "--act silu is Llama's SwiGLU, with d-mlp 8/3 x d-model by default so the weights match "
        "(default standard)",
    )
    g.add_argument(
        "--n-kv-heads",
        type=int,
        help="heads of keys and values, fewer than --n-head for grouped-query attention (1: "
        "multi-query): the KV cache shrinks in proportion (default: one per head)",
    )
    g.add_argument(
        "--tie-embeddings",
        action="store_true",
        default=None,
        help="use the token embedding matrix (transposed) as the unembedding",
    )
    g.add_argument(
        "--attn-only",
        action="store_true",
        default=None,
        help="blocks with attention but no MLP (easier to take apart)",
    )
    g.add_argument(
        "--no-bias",
        action="store_true",
        default=None,
        help="no bias vectors in the linear layers and LayerNorms",
    )
    g.add_argument(
        "--no-causal-mask",
        action="store_true",
        default=None,
        help="for one lesson only: every position also sees the tokens after it, so training "
        "can copy the answer (its loss falls towards zero) while generation, where the future "
        "is not there yet, is nonsense",
    )
    g.add_argument(
        "--dropout",
        type=float,
        help="share of activations zeroed at random while training, so the model cannot lean on "
        "any one of them; helps long runs not to memorise the text (default 0)",
    )


def _add_training_flags(g: argparse._ArgumentGroup) -> None:
    defaults = TrainConfig()
    g.add_argument(
        "--steps",
        type=int,
        help=f"total optimiser steps (default {defaults.max_steps}); when resuming, the total "
        "including the steps already taken",
    )
    g.add_argument(
        "--batch-size",
        type=int,
        help=f"text windows per step (default {defaults.batch_size})",
    )
    sgd = OPTIMIZER_TRAINING["sgd"]
    g.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        help="how a step follows the gradient: adamw (each weight moves by a running mean of its "
        "gradient over the root of a running mean of its square, so every weight takes steps of "
        "about the learning rate; GPT-2's and nanoGPT's choice) or sgd (each weight moves by the "
        "learning rate times its gradient, with momentum); sgd brings its own learning rate "
        f"{sgd['lr']:g}, min-lr {sgd['min_lr']:g} and weight decay {sgd['weight_decay']:g} unless "
        "told otherwise (default adamw)",
    )
    g.add_argument(
        "--momentum",
        type=float,
        help=f"sgd only: the share of the previous step kept in the next (0: plain gradient "
        f"descent; default {defaults.momentum})",
    )
    g.add_argument(
        "--lr",
        type=float,
        help=f"peak learning rate (default {defaults.lr}; with --optimizer sgd {sgd['lr']:g})",
    )
    g.add_argument(
        "--min-lr",
        type=float,
        help=f"learning rate at the end: after the warm-up the rate falls from --lr to this along "
        f"half a cosine wave (default {defaults.min_lr})",
    )
    g.add_argument(
        "--warmup",
        type=int,
        help=f"steps over which the learning rate rises linearly from 0 (default "
        f"{defaults.warmup_steps})",
    )
    g.add_argument(
        "--weight-decay",
        type=float,
        help=f"how strongly each step pulls the weight matrices toward zero, a mild brake on "
        f"memorising: adamw shrinks the weights by lr times this, sgd adds this times the weights "
        f"to the gradient (default {defaults.weight_decay}; with --optimizer sgd "
        f"{OPTIMIZER_TRAINING['sgd']['weight_decay']:g})",
    )
    g.add_argument(
        "--grad-clip",
        type=float,
        help=f"largest allowed gradient norm; 0 turns clipping off (default {defaults.grad_clip})",
    )
    g.add_argument(
        "--health-every",
        type=int,
        help="steps between records of each layer's gradient norm and update size (gradient "
        "health, drawn on the Training page); the whole gradient's norm before clipping is "
        f"recorded at every step; 0: no per-layer records (default {defaults.health_every})",
    )
    g.add_argument(
        "--eval-every",
        type=int,
        help=f"steps between validation-loss measurements, which also save the bundle; 0: only at "
        f"the end (default {defaults.eval_every})",
    )
    g.add_argument(
        "--eval-batches",
        type=int,
        help=f"batches averaged for each validation loss (default {defaults.eval_batches})",
    )
    g.add_argument(
        "--sample-every",
        type=int,
        help=f"steps between generated text samples; 0: only at the end (default "
        f"{defaults.sample_every})",
    )
    g.add_argument(
        "--sample-tokens",
        type=int,
        help=f"tokens per sample (default {defaults.sample_tokens})",
    )
    g.add_argument(
        "--snapshots",
        type=int,
        help=f"about how many copies of the weights to keep at log-spaced steps, plus the "
        f"untrained model (default {defaults.n_snapshots})",
    )
    g.add_argument(
        "--snapshot-at",
        type=_steps,
        metavar="STEPS",
        help="extra steps to keep the weights at, comma-separated (e.g. 1300,1400,1500): dense "
        "snapshots where something forms, for the Training dynamics page",
    )
    g.add_argument(
        "--minutes",
        type=float,
        help="stop after this many minutes of training in all (resumed runs count their earlier "
        "time); the learning rate then decays on time, reaching min-lr at the end. Without "
        "--steps the clock alone ends the run; with --steps, whichever comes first. "
        "0 or unset: no time limit, --steps decides",
    )
    g.add_argument("--seed", type=int, help=f"random seed (default {defaults.seed})")
    g.add_argument(
        "--threads",
        type=int,
        help="CPU threads for PyTorch; 0 leaves PyTorch's default (default 0)",
    )
    g.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda", "mps"),
        help="where to train: auto picks a GPU (cuda, then mps) when there is one, else the CPU",
    )


def _add_output_flags(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--out",
        type=Path,
        help="the bundle folder to write (e.g. runs/my-model); when resuming, the resumed folder "
        "unless given",
    )
    g.add_argument(
        "--resume",
        type=Path,
        help="a bundle folder to continue training: its model, tokenizer, data and validation split "
        "(so those flags cannot be given); the step count and the curve continue, and the "
        "optimiser's memory restarts",
    )
    g.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no samples; the model line, validation losses and summary still "
        "print",
    )


def _add_finetune_flags(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--finetune",
        type=Path,
        metavar="BUNDLE",
        help="a model bundle to start from (e.g. assets/models/shakespeare-tiny): its weights, "
        "tokenizer and shape are kept and it trains on the text given by --corpus, --task or "
        "--text-file; every evaluation also measures the loss on the bundle's own text "
        "(forgetting). Without --lora-rank every weight trains (full fine-tuning)",
    )
    g.add_argument(
        "--lora-rank",
        type=int,
        help="LoRA: freeze the base's weights and train a rank-r update (alpha / r) B A beside "
        "each chosen matrix (B starts at zero, so training starts from the base exactly); "
        "the bundle holds the merged weights, lora.safetensors the A and B",
    )
    g.add_argument(
        "--lora-targets",
        type=lambda text: tuple(t.strip() for t in text.split(",") if t.strip()),
        metavar="NAMES",
        help=f"comma-separated matrices of every block for LoRA: {', '.join(TARGETS)} "
        f"(attention's q/k/v and output projections, the MLP's input and output); default "
        f"{','.join(DEFAULT_TARGETS)}",
    )
    g.add_argument(
        "--lora-alpha",
        type=float,
        help="LoRA's alpha: the update is scaled by alpha / r (default alpha = r, a scale of 1)",
    )


def _given(args: argparse.Namespace, flags: dict[str, str]) -> dict[str, Any]:
    """{field: value} for the flags of `flags` that were given."""
    return {
        field: getattr(args, flag)
        for flag, field in flags.items()
        if getattr(args, flag) is not None
    }


def _model_flags(args: argparse.Namespace) -> dict[str, Any]:
    """{GPTConfig field: value} for the shape flags given, the negated ones included."""
    model = _given(args, MODEL_FLAGS)
    if args.no_bias:
        model["bias"] = False
    if args.no_causal_mask:
        model["causal"] = False
    if args.no_residual:
        model["residual"] = False
    return model


def settings_from_args(args: argparse.Namespace) -> RunSettings:
    """The RunSettings the flags of a new run describe (ValueError with a plain message)."""
    if sum(getattr(args, n) is not None for n in ("corpus", "task", "text_file")) != 1:
        raise SystemExit("choose exactly one of --corpus, --task or --text-file")
    model = _model_flags(args)
    if args.finetune is not None:
        own = [f"--{n}" for n in ("tokenizer", "vocab_size", "preset") if getattr(args, n)]
        own += [f"--{n.replace('_', '-')}" for n in model]
        if own or args.family != "gpt":
            raise SystemExit(
                f"a fine-tune keeps its base's tokenizer and shape (given: "
                f"{', '.join(own or ['--family'])})"
            )
    elif args.lora_rank is not None:
        raise SystemExit("--lora-rank fine-tunes a model: give --finetune BUNDLE too")
    lora = {"lora_rank": args.lora_rank or 0, "lora_alpha": args.lora_alpha}
    if args.lora_targets is not None:
        lora["lora_targets"] = args.lora_targets
    return RunSettings(
        base=None if args.finetune is None else str(args.finetune),
        **lora,
        corpus=args.corpus,
        task=args.task,
        text_file=None if args.text_file is None else str(args.text_file),
        task_examples=args.task_examples,
        task_len=args.task_len,
        val_fraction=VAL_FRACTION if args.val_fraction is None else args.val_fraction,
        tokenizer=args.tokenizer or "char",
        vocab_size=args.vocab_size,
        preset=args.preset or DEFAULT_PRESET,
        model=model,
        train=_given(args, TRAIN_FLAGS),
        minutes=args.minutes,
        device=args.device,
        family=args.family,
    )


def _steps(text: str) -> tuple[int, ...]:
    """ "1300,1400" -> (1300, 1400); argparse turns the ValueError into a plain message."""
    return tuple(int(part) for part in text.split(",") if part.strip())


def _resumed(args: argparse.Namespace, argv: list[str]) -> Run:
    fixed = [f"--{n.replace('_', '-')}" for n in _FIXED_BY_BUNDLE if getattr(args, n) is not None]
    model = _model_flags(args)
    if args.family != "gpt":
        fixed.append("--family")
    if model or fixed:
        given = ", ".join(fixed + sorted(model))
        raise SystemExit(
            f"the data, tokenizer and model shape cannot change when resuming (given: {given}); "
            "they are the bundle's own"
        )
    out = args.out or args.resume
    return resumed_run(args.resume, out, _given(args, TRAIN_FLAGS), args.minutes, command(argv))


def _set_up(args: argparse.Namespace, argv: list[str]) -> Run:
    """The model, data and settings of the run, or SystemExit with a plain message (a missing
    file, text that cannot be trained on, an impossible model shape, a broken bundle)."""
    try:
        if args.resume is not None:
            return _resumed(args, argv)
        if args.out is None:
            raise SystemExit("give --out, the folder to write the model bundle to")
        return new_run(settings_from_args(args), args.out, command(argv))
    except (ValueError, OSError, CheckpointError) as exc:  # DataError, TokenizerError included
        raise SystemExit(f"error: {exc}") from None


def _stop_on_ctrl_c(stop: threading.Event):
    """Make the first Ctrl-C set the stop flag (the run ends after the step in progress and saves
    the bundle); a second one quits at once. Returns the previous handler, or None when this is
    not the main thread (signals can only be caught there)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_sigint(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print(
            "\nCtrl-C: stopping after this step and saving the bundle "
            "(press Ctrl-C again to quit without saving)",
            file=sys.stderr,
            flush=True,
        )

    return signal.signal(signal.SIGINT, on_sigint)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from tqdm import tqdm

    run = _set_up(args, argv)
    model, cfg, out = run.model, run.cfg, run.out
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    device = pick_device(args.device)
    model.to(device)
    run.meta["device"] = str(device)
    print(
        f"model: {describe_shape(model.cfg, model.n_params())}; "
        f"data: {run.data!r}; vocabulary {run.tokenizer.vocab_size} ({run.tokenizer.kind}); "
        f"torch threads {torch.get_num_threads()}; device {device}",
        flush=True,
    )
    stop = threading.Event()
    timed = cfg.time_limit > 0 and cfg.max_steps == STEPS_WHEN_TIMED
    bar = tqdm(
        total=None if timed else cfg.max_steps,
        initial=run.start_step,
        disable=args.quiet,
        unit="step",
        dynamic_ncols=True,
    )
    last = None
    best_val = None
    previous_handler = _stop_on_ctrl_c(stop)
    loop = run.steps(RunControls(stop=stop))
    try:
        for rec in loop:
            last = rec
            if rec.val_loss is not None:
                best_val = rec.val_loss
                bar.write(f"step {rec.step}: val loss {rec.val_loss:.4f}")
            if rec.sample is not None and not args.quiet:
                bar.write(f"--- sample at step {rec.step} ---\n{rec.sample}\n---")
            if rec.step == 0:  # the untrained model's sample: no step taken, no loss yet
                continue
            post = {"loss": f"{rec.train_loss:.3f}" if rec.train_loss is not None else "nan"}
            post["tok/s"] = f"{rec.tokens_per_s:,.0f}"
            if best_val is not None:
                post["val"] = f"{best_val:.3f}"
            bar.set_postfix(post, refresh=False)
            bar.update(rec.step - bar.n)
    except KeyboardInterrupt:
        print("\nquit without saving: the bundle holds the last evaluation, if any", flush=True)
        return 130
    finally:
        bar.close()
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)
    if last is None:
        return 1
    saved = load_bundle(out).meta
    print(
        f"done: step {saved.get('step')}, train loss {last.train_loss}, val loss "
        f"{saved.get('val_loss')} (perplexity "
        f"{_ppl(saved.get('val_loss'))}), "
        f"{saved.get('wall_time')} s, {last.tokens_per_s:,.0f} tokens/s; bundle in {out}"
    )
    if last.stopped:
        print(f"stopped early: {last.stopped}")
        return 130 if stop.is_set() else 2
    return 0


def _ppl(loss: float | None) -> str:
    """A validation loss's perplexity for the summary line: "6.40", or "nan" when there is none,
    "too large" past a float."""
    if not loss:
        return "nan"
    ppl = perplexity(loss)
    return "too large" if ppl is None else f"{ppl:.2f}"
