"""Bundle files: atomic writes, and reading JSON, tokenizers and weights with every check.

Shared by our own bundle format (checkpoint.py) and GPT-2 folders (gpt2_folder.py); every
failure is one `CheckpointError` with a plain message. Writes are atomic (a temp file, then
os.replace) and give files the mode open() would (not mkstemp's 0600), so an app running as
another user can read them. Nothing is ever unpickled.

Not here: which files a bundle has (checkpoint.py, gpt2_folder.py) and choosing between the two
(load.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from viz_model.model.families import LanguageModel, ModelConfig, build_model
from viz_model.text.tokenization import Tokenizer, TokenizerError

MAX_WEIGHTS_BYTES = 512 * 2**20
MAX_JSON_BYTES = 16 * 2**20


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


# ---- writing ----------------------------------------------------------------------------------


def atomic_write(path: Path, write) -> None:
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


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Write JSON atomically (the job runner's status and control files use it too)."""
    text = json.dumps(data, indent=1, allow_nan=False)
    atomic_write(Path(path), lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 text atomically: a reader sees the old file or the new one, never half."""
    atomic_write(Path(path), lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


# ---- reading ----------------------------------------------------------------------------------


def read_json(path: Path) -> Any:
    """A JSON file of at most MAX_JSON_BYTES (CheckpointError otherwise)."""
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(f"{path.name} is larger than {MAX_JSON_BYTES // 2**20} MB")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path.name} is not valid JSON: {exc}") from exc


def read_tokenizer(path: Path, cfg: ModelConfig, expected_sha: str | None) -> Tokenizer:
    """The tokenizer.json in `path`, checked against the model it belongs to."""
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


def read_weights(file: Path, cfg: ModelConfig) -> LanguageModel:
    """A model of cfg's family built from cfg with the weights in `file`, checked name by name and shape by shape."""
    if file.stat().st_size > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{file.name} is larger than {MAX_WEIGHTS_BYTES // 2**20} MB")
    try:
        tensors = load_file(file)
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{file.name} is not a readable safetensors file ({exc})") from exc
    return model_from_tensors(tensors, cfg, file)


def model_from_tensors(
    tensors: dict[str, torch.Tensor], cfg: ModelConfig, file: Path
) -> LanguageModel:
    """A model of cfg's family (a GPT, or an RNN, LSTM, GRU or CNN) built from cfg with these
    weights (our names), checked name by name and shape by shape; errors name `file`, where the weights came from (gpt2_folder.py renames GPT-2's first)."""
    model = build_model(cfg)
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
