"""What a training run is made of, and the one place that turns it into a run.

    settings = RunSettings(corpus="shakespeare", preset="quick", train={"max_steps": 500})
    run = new_run(settings, Path("runs/x"), command="...")   # data, tokenizer, model, TrainConfig
    for record in run.steps(): ...                          # training/loop.train, step by step

`RunSettings` is plain data (JSON round trip: to_dict / from_dict), so the command line
(`viz_model/training/cli.py`) and the job runner (`serving/jobs.py`, which keeps it in a run's
settings.json) describe a run the same way and build it with the same `new_run`; `resumed_run`
continues a bundle. Problems a user can cause raise ValueError (DataError, TokenizerError) or
CheckpointError with a plain message. Not here: the loop (loop.py), flags (cli.py).
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from viz_model.bundles.files import CheckpointError
from viz_model.model.config import (
    OPTIMIZER_TRAINING,
    PRESET_TRAINING,
    GPTConfig,
    TrainConfig,
    preset,
)
from viz_model.model.families import ModelConfig, build_model
from viz_model.model.lora import DEFAULT_TARGETS, TARGETS, check_rank
from viz_model.model.recurrent_config import (
    FAMILIES,
    FAMILY_LABELS,
    RecurrentConfig,
    recurrent_preset,
)
from viz_model.text import ngram
from viz_model.text.data import (
    VAL_FRACTION,
    TokenData,
    example_prompts,
    load_text,
)
from viz_model.text.tokenization import DEFAULT_VOCAB, Tokenizer
from viz_model.training.estimate import n_params
from viz_model.training.loop import resume_state
from viz_model.training.run import Run, timed

DEFAULT_PRESET = "small"
TOKENIZERS = ("char", "bpe", "word")
PROG = "python -m viz_model.training"  # how a bundle's meta records its command
SOURCES = ("corpus", "task", "text_file")
_MODEL_FIELDS = {f.name for f in dataclasses.fields(GPTConfig)} - {"vocab_size"}
# What an RNN, LSTM, GRU or CNN may be given (recurrent_config.py); the GPT's other fields are
# about heads, MLPs and positions, which these models do not have.
_FAMILY_FIELDS = {f.name for f in dataclasses.fields(RecurrentConfig)} - {"vocab_size", "family"}
_TRAIN_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)} - {"time_limit"}


@dataclass(frozen=True)
class RunSettings:
    """A new run: exactly one data source, a tokenizer, a preset with field overrides, and the
    training settings over the preset's own (`train` uses TrainConfig's names: max_steps,
    batch_size, lr, seed, threads, ...). `minutes` > 0 puts the run on the clock; without
    max_steps the clock alone ends it."""

    corpus: str | None = None
    task: str | None = None
    text_file: str | None = None
    task_examples: int = 20_000
    task_len: int = 32
    val_fraction: float = VAL_FRACTION
    tokenizer: str = "char"
    vocab_size: int | None = None  # bpe and word only
    preset: str = DEFAULT_PRESET
    model: dict[str, Any] = field(default_factory=dict)  # GPTConfig fields over the preset
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig fields over the preset's
    minutes: float | None = None
    device: str = "auto"
    # "gpt", or "rnn", "lstm", "gru", "cnn" (recurrent_config.py): `model` then takes that
    # family's fields, over its shape for the preset (recurrent_config.preset_shape)
    family: str = "gpt"
    # A fine-tune (training/finetune.py): `base` is the bundle folder it starts from, whose
    # tokenizer and shape it keeps (tokenizer, preset, model and family above are then unused);
    # the source above is the new text. lora_rank 0: full fine-tuning (every weight trains);
    # r > 0: LoRA of rank r on lora_targets (lora.TARGETS), scale lora_alpha / r (alpha: r).
    base: str | None = None
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = DEFAULT_TARGETS
    lora_alpha: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lora_targets", tuple(self.lora_targets))  # JSON gives a list
        if self.lora_rank and self.base is None:
            raise ValueError("LoRA fine-tunes a model: give the bundle to start from (--finetune)")
        if self.lora_rank:
            check_rank(self.lora_rank)
            if not self.lora_targets or set(self.lora_targets) - set(TARGETS):
                raise ValueError(
                    f"LoRA's matrices must be some of {', '.join(TARGETS)}, "
                    f"got {', '.join(self.lora_targets) or 'none'}"
                )
        chosen = [name for name in SOURCES if getattr(self, name) is not None]
        if len(chosen) != 1:
            raise ValueError("choose exactly one of a corpus, a task or a text file")
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}")
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if self.family != "gpt" and isinstance(self.model, dict):
            gpt_only = sorted(set(self.model) - _FAMILY_FIELDS)
            if gpt_only:
                raise ValueError(
                    f"{', '.join(gpt_only)}: a GPT's settings; an {FAMILY_LABELS[self.family]} "
                    "has no attention heads, MLPs or positions (it takes "
                    f"{', '.join(sorted(_FAMILY_FIELDS))})"
                )
        for name, given, known in (
            ("model", self.model, _MODEL_FIELDS | _FAMILY_FIELDS),
            ("training", self.train, _TRAIN_FIELDS),
        ):
            if not isinstance(given, dict):
                raise ValueError(f"the {name} settings must be a mapping of names to values")
            unknown = sorted(set(given) - known)
            if unknown:
                raise ValueError(f"unknown {name} settings: {', '.join(unknown)}")

    def to_dict(self) -> dict[str, Any]:
        """Plain data as JSON gives it back (lora_targets a list)."""
        return {**dataclasses.asdict(self), "lora_targets": list(self.lora_targets)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSettings:
        """Build from a dict (e.g. a run's settings.json), refusing unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown run settings: {', '.join(unknown)}")
        return cls(**data)

    def data_source(self) -> dict[str, Any]:
        """The data as a bundle's meta["data"] records it, e.g. {"corpus": "shakespeare",
        "val_fraction": 0.1}."""
        split = {"val_fraction": self.val_fraction}
        if self.corpus is not None:
            return {"corpus": self.corpus, **split}
        if self.task is not None:
            return {
                "task": self.task,
                "task_examples": self.task_examples,
                "task_len": self.task_len,
                "task_seed": 0,
                **split,
            }
        return {"text_file": str(self.text_file), **split}

    def train_config(self) -> TrainConfig:
        """The preset's training settings, then the optimiser's (config.OPTIMIZER_TRAINING: SGD's
        learning rate and weight decay), then `train`, then the clock (ValueError if invalid).
        A fine-tune's: training/finetune.train_config (the base's batch, the fine-tune defaults)."""
        if self.base is not None:
            from viz_model.bundles.checkpoint import read_config
            from viz_model.training.finetune import train_config

            return train_config(self, read_config(self.base)[1].get("train"))
        return TrainConfig(
            **{
                **PRESET_TRAINING.get(self.preset, {}),
                **OPTIMIZER_TRAINING.get(self.train.get("optimizer", ""), {}),
                **timed(self.train, self.minutes, True),
            }
        )

    def model_config(self, vocab_size: int) -> ModelConfig:
        """The preset's shape (for another family: its shape matched to the GPT preset's weights)
        with `model` over it (ValueError if the combination is invalid)."""
        if self.family != "gpt":
            return recurrent_preset(self.family, self.preset, vocab_size, **self.model)
        gpt_only = sorted(set(self.model) - _MODEL_FIELDS)
        if gpt_only:
            raise ValueError(
                f"{', '.join(gpt_only)}: the CNN's setting (--family cnn), not a GPT's"
            )
        return preset(self.preset, vocab_size, **self.model)


def pick_device(name: str) -> torch.device:
    """ "auto": a GPU when there is one (cuda, then mps), else the CPU; or the device named."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(name)


def model_shape(settings: RunSettings, text: str) -> ModelConfig:
    """The model a run of `settings` on `text` will build, before its tokenizer is trained: the
    vocabulary is exact for char (every distinct character of `text` plus <unk>) and the size asked
    for (an upper bound) for bpe and word. ValueError for an invalid shape."""
    if settings.base is not None:  # a fine-tune keeps its base's shape
        from viz_model.bundles.checkpoint import read_config

        return read_config(settings.base)[0]
    if settings.tokenizer == "char":
        vocab = len(set(text)) + 1
    else:
        vocab = settings.vocab_size or DEFAULT_VOCAB[settings.tokenizer]
    return settings.model_config(vocab)


def estimate_params(settings: RunSettings, text: str) -> int:
    """The parameter count of model_shape(settings, text), built on the meta device (no memory);
    for a fine-tune, the base's (ValueError when the base cannot encode the text)."""
    if settings.base is not None:
        from viz_model.training.finetune import check_base

        return check_base(settings, text)
    return n_params(model_shape(settings, text))


def new_run(settings: RunSettings, out: Path, command: str) -> Run:
    """Load the text, train the tokenizer, build the model (seeded) and the TrainConfig; for a
    fine-tune, the base model and its tokenizer on the new text (training/finetune.py)."""
    if settings.base is not None:
        from viz_model.training.finetune import finetune_run

        return finetune_run(settings, Path(out), command)
    source = settings.data_source()
    cfg = settings.train_config()
    text = load_text(source)
    kind = settings.tokenizer
    tokenizer = Tokenizer.train(text, kind, settings.vocab_size if kind != "char" else None)
    torch.manual_seed(cfg.seed)
    model = build_model(settings.model_config(tokenizer.vocab_size))
    meta = {
        "command": command,
        "data": source,
        "corpus": source.get("corpus") or source.get("task") or source.get("text_file"),
        "tokenizer": tokenizer.kind,
        "vocab_size": tokenizer.vocab_size,
        "preset": settings.preset,
        "family": settings.family,
        "example_prompts": example_prompts(text, source.get("task")),
    }
    data = TokenData.from_text(text, tokenizer, source["val_fraction"])
    # What counting alone scores on this split: the Training page's "better than counting" lines.
    meta["baselines"] = ngram.baselines(
        data.train.numpy(), data.val.numpy(), tokenizer.vocab_size
    ).as_dict()
    return Run(model, tokenizer, data, cfg, Path(out), meta, [], 0)


def resumed_run(
    bundle_path: Path,
    out: Path,
    train: dict[str, Any],
    minutes: float | None,
    command: str,
) -> Run:
    """Continue a bundle with its data, tokenizer, split and model; `train` and `minutes` change
    the training settings (e.g. a larger max_steps). ValueError when there is nothing left to do."""
    bundle, start_step, history = resume_state(bundle_path)
    source = bundle.meta.get("data")
    if source is None:
        raise CheckpointError(f"{bundle_path} does not say what it was trained on (meta.data)")
    cfg = TrainConfig.from_dict({**(bundle.train_config or {}), **timed(train, minutes, False)})
    meta = dict(bundle.meta)
    meta["command"] = meta.get("command", "") + " && " + command
    used = float(history[-1]["elapsed"]) if history else 0.0
    if cfg.time_limit > 0 and used >= cfg.time_limit:
        raise ValueError(
            f"{bundle_path} has already trained for its {cfg.time_limit / 60:g} minutes; "
            "give a larger --minutes (or --minutes 0 for no limit) to continue"
        )
    if start_step >= cfg.max_steps:
        raise ValueError(
            f"{bundle_path} has already trained {start_step} steps; give a larger --steps to continue"
        )
    text = load_text(source)
    # the split the bundle was trained with, so the curve stays comparable across the resume
    data = TokenData.from_text(text, bundle.tokenizer, source.get("val_fraction", VAL_FRACTION))
    run = Run(bundle.model, bundle.tokenizer, data, cfg, Path(out), meta, history, start_step)
    if meta.get("finetune"):  # LoRA's A and B back on, and the base's text for forgetting
        from viz_model.training.finetune import continue_finetune

        continue_finetune(run, Path(bundle_path))
    return run


# ---- settings <-> the command line's flags (cli.py parses them) -------------------------------

MODEL_FLAGS = {
    "n_ctx": "n_ctx",
    "d_model": "d_model",
    "n_layer": "n_layer",
    "n_head": "n_head",
    "d_mlp": "d_mlp",
    "act": "act",
    "pos": "pos",
    "norm": "norm",
    "tie_embeddings": "tie_embeddings",
    "attn_only": "attn_only",
    "dropout": "dropout",
    "norm_kind": "norm_kind",
    "mlp": "mlp",
    "n_kv_heads": "n_kv_heads",
    "kernel_size": "kernel_size",
}
TRAIN_FLAGS = {
    "steps": "max_steps",
    "batch_size": "batch_size",
    "lr": "lr",
    "min_lr": "min_lr",
    "warmup": "warmup_steps",
    "weight_decay": "weight_decay",
    "grad_clip": "grad_clip",
    "optimizer": "optimizer",
    "momentum": "momentum",
    "health_every": "health_every",
    "eval_every": "eval_every",
    "eval_batches": "eval_batches",
    "sample_every": "sample_every",
    "sample_tokens": "sample_tokens",
    "snapshots": "n_snapshots",
    "snapshot_at": "snapshot_at",
    "seed": "seed",
    "threads": "threads",
}


def settings_to_argv(settings: RunSettings, out: Path | str) -> list[str]:
    """The flags that train `settings` into `out` (settings_from_args reads them back), e.g.
    ["--corpus", "shakespeare", "--tokenizer", "char", "--preset", "quick", "--out", "runs/x"]."""
    argv: list[str] = []
    for name in ("corpus", "task", "text_file"):
        if getattr(settings, name) is not None:
            argv += [f"--{name.replace('_', '-')}", str(getattr(settings, name))]
    if settings.task is not None:
        argv += [
            "--task-examples",
            str(settings.task_examples),
            "--task-len",
            str(settings.task_len),
        ]
    if settings.val_fraction != VAL_FRACTION:
        argv += ["--val-fraction", str(settings.val_fraction)]
    if settings.base is not None:  # the base's tokenizer and shape
        argv += ["--finetune", settings.base]
        if settings.lora_rank:
            argv += ["--lora-rank", str(settings.lora_rank)]
            argv += ["--lora-targets", ",".join(settings.lora_targets)]
            if settings.lora_alpha is not None:
                argv += ["--lora-alpha", f"{settings.lora_alpha:g}"]
    else:
        argv += ["--tokenizer", settings.tokenizer]
        if settings.vocab_size is not None:
            argv += ["--vocab-size", str(settings.vocab_size)]
        if settings.family != "gpt":
            argv += ["--family", settings.family]
        argv += ["--preset", settings.preset]
    for flags, given in ((MODEL_FLAGS, settings.model), (TRAIN_FLAGS, settings.train)):
        for flag, name in flags.items():
            argv += _flag(flag, given.get(name))
    if settings.model.get("bias") is False:
        argv.append("--no-bias")
    if settings.model.get("causal") is False:
        argv.append("--no-causal-mask")
    if settings.model.get("residual") is False:
        argv.append("--no-residual")
    if settings.minutes is not None:
        argv += ["--minutes", str(settings.minutes)]
    if settings.device != "auto":
        argv += ["--device", settings.device]
    return [*argv, "--out", str(out)]


def _flag(flag: str, value: Any) -> list[str]:
    name = f"--{flag.replace('_', '-')}"
    if value is None or value is False or value == ():
        return []
    if isinstance(value, tuple | list):
        return [name, ",".join(str(v) for v in value)]
    return [name] if value is True else [name, str(value)]


def command(argv: list[str]) -> str:
    """The command line that `argv` makes, as a bundle's meta["command"] records it."""
    return f"{PROG} " + shlex.join(argv)
