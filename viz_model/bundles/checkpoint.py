"""Model bundles: a folder with everything needed to rebuild and explain a trained model.

    NAME/
      model.safetensors   the weights (float32)
      config.json         {"format_version", "model": GPTConfig | RecurrentConfig (with "family";
                           absent means "gpt"), "train": TrainConfig | null,
                           "tokenizer_sha256", "meta": {command, corpus, val_loss, ...}}
      tokenizer.json      the HF tokenizers file
      history.json        the training curve: a list of step records
      snapshots/step_000123.safetensors   weights (float16) at log-spaced steps

Loading validates before it trusts (sizes, config ranges, tensor names and shapes, finite weights,
tokenizer/embedding agreement); every failure is one `CheckpointError` with a plain message.
Writes are atomic (a temp file, then os.replace) and give files the mode open() would (not
mkstemp's 0600), so an app running as another user can read them. Nothing is ever unpickled.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from viz_model.bundles.files import (
    CheckpointError,
    atomic_write,
    read_json,
    read_tokenizer,
    read_weights,
    write_json,
)
from viz_model.model.families import (
    LanguageModel,
    ModelConfig,
    config_from_dict,
    config_to_dict,
    family_of,
)
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.tokenization import Tokenizer

FORMAT_VERSION = 1
REQUIRED = ("model.safetensors", "config.json", "tokenizer.json")
_SNAPSHOT = re.compile(r"step_(\d+)\.safetensors$")


@dataclass
class Bundle:
    path: Path
    model: LanguageModel  # a GPT, or a RecurrentLM (RNN, LSTM, GRU, causal CNN)
    tokenizer: Tokenizer
    config: ModelConfig
    train_config: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # The training step the model's weights are from when they are a snapshot (ui/cache.py loads
    # one as the final bundle with its weights swapped); None for the final weights. Everything
    # else (config, history, meta) is the whole run's: meta["val_loss"] is the final step's.
    step: int | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def family(self) -> str:
        """ "gpt", "rnn", "lstm", "gru" or "cnn": which pages can show this model."""
        return family_of(self.config)

    def snapshot_steps(self) -> list[int]:
        return list_snapshots(self.path)

    def load_snapshot(self, step: int) -> LanguageModel:
        """A new model with the weights saved at `step` of training."""
        return load_snapshot(self.path, step, self.config)

    # ---- text in and out, as TransformerLens's HookedTransformer offers them -----------------

    def to_tokens(self, text: str) -> torch.Tensor:
        """(1, T) token ids of `text` on the model's device (no beginning-of-text token: our
        tokenizers have none), ready for `model(...)` or `model.run_with_cache(...)`."""
        device = next(self.model.parameters()).device
        return torch.tensor([self.tokenizer.encode(text)], dtype=torch.long, device=device)

    def to_str_tokens(self, text: str) -> list[str]:
        """The tokens of `text`, each as its own string: "To be" -> ['T', 'o', ' ', 'b', 'e']."""
        return [self.tokenizer.decode([i]) for i in self.tokenizer.encode(text)]

    def to_string(self, ids: torch.Tensor | list[int]) -> str:
        """The text of token ids ((T,) or (1, T))."""
        flat = torch.as_tensor(ids).reshape(-1).tolist()
        return self.tokenizer.decode(flat)

    def generate(
        self,
        prompt: str,
        max_new_tokens: int = 50,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int | None = 0,
    ) -> str:
        """The prompt and its continuation, as TransformerLens's generate returns them:
        temperature 0 is greedy; a seed makes sampling repeatable (None: a fresh draw)."""
        settings = SamplingSettings(temperature=temperature, top_k=top_k, top_p=top_p)
        new = generate(self.model, self.tokenizer.encode(prompt), max_new_tokens, settings, seed)
        return prompt + self.tokenizer.decode(new)


# ---- writing ----------------------------------------------------------------------------------


def _weights(model: LanguageModel, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    sd = model.state_dict()
    return {k: (v.to(dtype) if dtype else v).detach().cpu().contiguous() for k, v in sd.items()}


def save_weights(path: Path, model: LanguageModel, dtype: torch.dtype | None = None) -> None:
    tensors = _weights(model, dtype)
    atomic_write(Path(path), lambda tmp: save_file(tensors, tmp))


def save_bundle(
    path: str | os.PathLike,
    model: LanguageModel,
    tokenizer: Tokenizer,
    train_config: dict[str, Any] | None = None,
    history: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Path:
    """Write (or overwrite) a bundle folder; returns its path."""
    path = Path(path)
    if tokenizer.vocab_size != model.cfg.vocab_size:
        raise CheckpointError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the model embeds "
            f"{model.cfg.vocab_size}"
        )
    path.mkdir(parents=True, exist_ok=True)
    save_weights(path / "model.safetensors", model)
    tok_text = tokenizer.to_json()
    atomic_write(path / "tokenizer.json", lambda t: Path(t).write_text(tok_text, encoding="utf-8"))
    config = {
        "format_version": FORMAT_VERSION,
        "model": config_to_dict(model.cfg),
        "train": train_config,
        "tokenizer_sha256": tokenizer.sha256,
        "meta": meta or {},
    }
    write_json(path / "config.json", config)
    save_history(path, history or [])
    return path


def save_history(path: str | os.PathLike, history: list[dict[str, Any]]) -> None:
    write_json(Path(path) / "history.json", history)


def save_snapshot(path: str | os.PathLike, model: LanguageModel, step: int) -> Path:
    """Weights at one training step, in float16 (half the size; plenty for looking back)."""
    out = Path(path) / "snapshots" / f"step_{step:06d}.safetensors"
    save_weights(out, model, torch.float16)
    return out


def list_snapshots(path: str | os.PathLike) -> list[int]:
    folder = Path(path) / "snapshots"
    if not folder.is_dir():
        return []
    steps = [int(m.group(1)) for f in folder.iterdir() if (m := _SNAPSHOT.match(f.name))]
    return sorted(steps)


# ---- reading ----------------------------------------------------------------------------------


def _read_config(path: Path) -> tuple[ModelConfig, dict[str, Any]]:
    raw = read_json(path / "config.json")
    if not isinstance(raw, dict) or "model" not in raw:
        raise CheckpointError("config.json has no 'model' section")
    if raw.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"config.json has format version {raw.get('format_version')!r}; "
            f"this app reads version {FORMAT_VERSION}"
        )
    try:
        return config_from_dict(raw["model"]), raw
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"config.json: {exc}") from exc


def read_config(path: str | os.PathLike) -> tuple[ModelConfig, dict[str, Any]]:
    """A bundle's model config and its whole config.json (meta included), without reading the
    weights or the tokenizer: cheap enough to look over every bundle (CheckpointError, OSError)."""
    return _read_config(Path(path))


def load_checkpoint(path: Path) -> Bundle:
    """Load and validate a bundle folder in our own format (CheckpointError otherwise)."""
    for name in REQUIRED:
        if not (path / name).is_file():
            raise CheckpointError(f"the bundle {path.name!r} has no {name}")
    cfg, raw = _read_config(path)
    tokenizer = read_tokenizer(path, cfg, raw.get("tokenizer_sha256"))
    model = read_weights(path / "model.safetensors", cfg)
    history = read_json(path / "history.json") if (path / "history.json").is_file() else []
    if not isinstance(history, list):
        raise CheckpointError("history.json should hold a list of step records")
    return Bundle(path, model, tokenizer, cfg, raw.get("train"), history, raw.get("meta") or {})


def load_snapshot(path: str | os.PathLike, step: int, cfg: ModelConfig) -> LanguageModel:
    file = Path(path) / "snapshots" / f"step_{step:06d}.safetensors"
    if not file.is_file():
        raise CheckpointError(f"no snapshot at step {step} in {Path(path).name}")
    return read_weights(file, cfg)
