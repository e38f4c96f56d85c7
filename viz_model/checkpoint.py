"""Model bundles: a folder with everything needed to rebuild and explain a trained model.

    NAME/
      model.safetensors   the weights (float32)
      config.json         {"format_version", "model": GPTConfig, "train": TrainConfig | null,
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

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from viz_model.config import GPTConfig
from viz_model.model import GPT
from viz_model.tokenization import Tokenizer, TokenizerError

FORMAT_VERSION = 1
MAX_WEIGHTS_BYTES = 512 * 2**20
MAX_JSON_BYTES = 16 * 2**20
REQUIRED = ("model.safetensors", "config.json", "tokenizer.json")
_SNAPSHOT = re.compile(r"step_(\d+)\.safetensors$")


def _file_mode() -> int:
    """The mode open() gives a new file: 0o666 minus the umask (read by setting it, then back)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


# Read once, at import: os.umask can only be read by changing it, which would race with a thread
# creating files at the same moment (the app trains and serves on several threads).
_FILE_MODE = _file_mode()


class CheckpointError(Exception):
    """A bundle could not be saved or loaded; the message says what is wrong, in plain words."""


@dataclass
class Bundle:
    path: Path
    model: GPT
    tokenizer: Tokenizer
    config: GPTConfig
    train_config: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    def snapshot_steps(self) -> list[int]:
        return list_snapshots(self.path)

    def load_snapshot(self, step: int) -> GPT:
        """A new model with the weights saved at `step` of training."""
        return load_snapshot(self.path, step, self.config)


# ---- writing ----------------------------------------------------------------------------------


def _atomic_write(path: Path, write) -> None:
    """write(tmp_path) into a temp file beside `path`, then move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        # mkstemp makes the file 0600; without this, an app running as another user could not
        # read the models in runs/ or VIZ_MODEL_DIRS.
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise CheckpointError(f"could not write {path.name}: {exc.strerror or exc}") from exc
    except SafetensorError as exc:  # safetensors' own I/O errors (a full disk) are not OSErrors
        Path(tmp).unlink(missing_ok=True)
        reason = str(exc).removeprefix("Error while serializing: ")
        raise CheckpointError(f"could not write {path.name}: {reason}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=1, allow_nan=False)
    _atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Write JSON atomically (the job runner's status and control files use it too)."""
    _write_json(Path(path), data)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 text atomically: a reader sees the old file or the new one, never half."""
    _atomic_write(Path(path), lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _weights(model: GPT, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    sd = model.state_dict()
    return {k: (v.to(dtype) if dtype else v).detach().cpu().contiguous() for k, v in sd.items()}


def save_weights(path: Path, model: GPT, dtype: torch.dtype | None = None) -> None:
    tensors = _weights(model, dtype)
    _atomic_write(Path(path), lambda tmp: save_file(tensors, tmp))


def save_bundle(
    path: str | os.PathLike,
    model: GPT,
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
    _atomic_write(path / "tokenizer.json", lambda t: Path(t).write_text(tok_text, encoding="utf-8"))
    config = {
        "format_version": FORMAT_VERSION,
        "model": model.cfg.to_dict(),
        "train": train_config,
        "tokenizer_sha256": tokenizer.sha256,
        "meta": meta or {},
    }
    _write_json(path / "config.json", config)
    save_history(path, history or [])
    return path


def save_history(path: str | os.PathLike, history: list[dict[str, Any]]) -> None:
    _write_json(Path(path) / "history.json", history)


def save_snapshot(path: str | os.PathLike, model: GPT, step: int) -> Path:
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


def _read_json(path: Path) -> Any:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(f"{path.name} is larger than {MAX_JSON_BYTES // 2**20} MB")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path.name} is not valid JSON: {exc}") from exc


def _read_config(path: Path) -> tuple[GPTConfig, dict[str, Any]]:
    raw = _read_json(path / "config.json")
    if not isinstance(raw, dict) or "model" not in raw:
        raise CheckpointError("config.json has no 'model' section")
    if raw.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"config.json has format version {raw.get('format_version')!r}; "
            f"this app reads version {FORMAT_VERSION}"
        )
    try:
        return GPTConfig.from_dict(raw["model"]), raw
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"config.json: {exc}") from exc


def read_config(path: str | os.PathLike) -> tuple[GPTConfig, dict[str, Any]]:
    """A bundle's model config and its whole config.json (meta included), without reading the
    weights or the tokenizer: cheap enough to look over every bundle (CheckpointError, OSError)."""
    return _read_config(Path(path))


def _read_tokenizer(path: Path, cfg: GPTConfig, expected_sha: str | None) -> Tokenizer:
    if (path / "tokenizer.json").stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(f"tokenizer.json is larger than {MAX_JSON_BYTES // 2**20} MB")
    try:
        tok = Tokenizer.load(path / "tokenizer.json")
    except TokenizerError as exc:
        raise CheckpointError(f"tokenizer.json: {exc}") from exc
    if expected_sha and tok.sha256 != expected_sha:
        raise CheckpointError("tokenizer.json is not the tokenizer this model was trained with")
    if tok.vocab_size != cfg.vocab_size:
        raise CheckpointError(
            f"tokenizer.json has {tok.vocab_size} tokens but the model embeds {cfg.vocab_size}"
        )
    return tok


def _read_weights(file: Path, cfg: GPTConfig) -> GPT:
    """A GPT built from cfg with the weights in `file`, checked name by name and shape by shape."""
    if file.stat().st_size > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{file.name} is larger than {MAX_WEIGHTS_BYTES // 2**20} MB")
    try:
        tensors = load_file(file)
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{file.name} is not a readable safetensors file ({exc})") from exc
    return model_from_tensors(tensors, cfg, file)


def model_from_tensors(tensors: dict[str, torch.Tensor], cfg: GPTConfig, file: Path) -> GPT:
    """A GPT built from cfg with these weights (our names), checked name by name and shape by
    shape; errors name `file`, where the weights came from (hf_folder.py renames GPT-2's first)."""
    model = GPT(cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise CheckpointError(
            f"{file.name} does not match config.json: "
            f"missing {missing[:3] or 'none'}, unexpected {extra[:3] or 'none'}"
        )
    for name, t in tensors.items():
        if t.shape != expected[name].shape:
            raise CheckpointError(
                f"{file.name}: {name} has shape {tuple(t.shape)}, config.json implies "
                f"{tuple(expected[name].shape)}"
            )
        if not torch.isfinite(t).all():
            raise CheckpointError(f"{file.name}: {name} contains NaN or infinite values")
    model.load_state_dict({k: v.float() for k, v in tensors.items()})
    return model.eval()


def load_bundle(path: str | os.PathLike) -> Bundle:
    """Load and validate a bundle folder; raises CheckpointError with a plain message."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"no model bundle at {path}")
    from viz_model import hf_folder  # imports this module: a GPT-2 folder from Hugging Face

    if hf_folder.is_hf_folder(path):
        return hf_folder.load_hf_folder(path)
    for name in REQUIRED:
        if not (path / name).is_file():
            raise CheckpointError(f"the bundle {path.name!r} has no {name}")
    cfg, raw = _read_config(path)
    tokenizer = _read_tokenizer(path, cfg, raw.get("tokenizer_sha256"))
    model = _read_weights(path / "model.safetensors", cfg)
    history = _read_json(path / "history.json") if (path / "history.json").is_file() else []
    if not isinstance(history, list):
        raise CheckpointError("history.json should hold a list of step records")
    return Bundle(path, model, tokenizer, cfg, raw.get("train"), history, raw.get("meta") or {})


def load_snapshot(path: str | os.PathLike, step: int, cfg: GPTConfig) -> GPT:
    file = Path(path) / "snapshots" / f"step_{step:06d}.safetensors"
    if not file.is_file():
        raise CheckpointError(f"no snapshot at step {step} in {Path(path).name}")
    return _read_weights(file, cfg)
