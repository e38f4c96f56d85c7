"""A GPT-2-family model from a local Hugging Face folder, loaded into our GPT.

The folder is what `huggingface-cli download gpt2` or `model.save_pretrained(dir,
safe_serialization=True)` plus `tokenizer.save_pretrained(dir)` write:

    config.json         {"model_type": "gpt2", "n_embd", "n_layer", "n_head", "n_positions", ...}
    model.safetensors   wte, wpe, h.{l}.ln_1 / attn.c_attn / attn.c_proj / ln_2 / mlp.c_fc /
                        mlp.c_proj, ln_f (maybe under "transformer."), lm_head when untied
    tokenizer.json      the byte-level BPE (the "fast" tokenizer file)

GPT-2 is exactly our pre-LN GPT with learned positions and tied embeddings, except for its GELU
(the tanh approximation, config act="gelu_tanh") and its Conv1D layers, which store W as
(in, out): each is transposed into our nn.Linear's (out, in). c_attn's 3*D outputs are q, k, v
for all heads, head by head, the order our Attention.qkv splits them in.

Nothing is downloaded and nothing is unpickled: a folder with only pytorch_model.bin is refused
with the command that converts it. Not here: other architectures (GPT-Neo, GPT-J, Llama...).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError, model_from_tensors, read_json, read_tokenizer
from viz_model.model.config import GPTConfig

# GPT-2 medium (355M parameters, 1.4 GB in float32) fits; large (774M, 3.1 GB) is refused: every
# server process holds its own copy (about 4 bytes per parameter).
MAX_HF_WEIGHTS_BYTES = 2 * 2**30
GPT2_TYPES = ("gpt2",)  # distilgpt2 and fine-tunes of GPT-2 say "gpt2" too
# Hugging Face's activation names -> ours (config.ACTS). gelu_new, gelu_fast and
# gelu_pytorch_tanh are one function: GELU's tanh approximation.
HF_ACTS = {
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
}
# Settings of a GPT-2 config that our GPT cannot honour: (key, the value we need).
_MUST = (
    ("add_cross_attention", False),
    ("scale_attn_by_inverse_layer_idx", False),
    ("scale_attn_weights", True),
)
_BUFFERS = (".attn.bias", ".attn.masked_bias")  # causal masks old files store, not weights

CONVERT_HINT = (
    "On a machine with Python and `transformers`, convert it once: "
    '`python -c "from transformers import AutoModelForCausalLM as M; '
    "M.from_pretrained('FOLDER').save_pretrained('FOLDER', safe_serialization=True)\"` "
    "(only for a file you trust: loading .bin unpickles it). "
    "This app never reads pickled weights."
)


def is_hf_folder(path: str | os.PathLike) -> bool:
    """Does this folder look like a Hugging Face model (config.json with a model_type and no
    bundle 'model' section)? Such a folder loads with load_hf_folder, not load_bundle."""
    file = Path(path) / "config.json"
    try:
        raw = read_json(file)
    except (OSError, CheckpointError):
        return False
    return isinstance(raw, dict) and "model" not in raw and "model_type" in raw


def config_from_hf(raw: dict[str, Any]) -> GPTConfig:
    """Our GPTConfig for a GPT-2 config.json, or a CheckpointError naming what does not fit."""
    kind = raw.get("model_type")
    if kind not in GPT2_TYPES:
        raise CheckpointError(
            f"config.json says model_type {kind!r}: this app loads GPT-2-family models only "
            "(model_type 'gpt2': GPT-2, distilgpt2 and their fine-tunes)"
        )
    act = raw.get("activation_function", "gelu_new")
    if act not in HF_ACTS:
        raise CheckpointError(
            f"config.json: activation_function {act!r} is not one this app has "
            f"({', '.join(HF_ACTS)})"
        )
    for key, needed in _MUST:
        if raw.get(key, needed) != needed:
            raise CheckpointError(f"config.json: {key} = {raw[key]!r}; this app needs {needed}")
    eps = raw.get("layer_norm_epsilon", 1e-5)
    if not isinstance(eps, int | float) or not math.isclose(eps, 1e-5, rel_tol=1e-6):
        raise CheckpointError(f"config.json: layer_norm_epsilon = {eps!r}; this app needs 1e-05")
    fields = {"vocab_size": "vocab_size", "n_ctx": "n_positions", "d_model": "n_embd"}
    fields |= {"n_layer": "n_layer", "n_head": "n_head"}
    missing = [hf for hf in fields.values() if hf not in raw]
    if missing:
        raise CheckpointError(f"config.json has no {', '.join(missing)}: not a GPT-2 config")
    try:
        return GPTConfig(
            **{ours: raw[hf] for ours, hf in fields.items()},
            d_mlp=raw.get("n_inner") or 0,  # None: 4 * d_model
            act=HF_ACTS[act],
            tie_embeddings=bool(raw.get("tie_word_embeddings", True)),
        )
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"config.json: {exc}") from exc


def _layer_names(layer: int) -> dict[str, tuple[str, bool]]:
    """Our name -> (GPT-2's name, transpose?) for one block."""
    h, b = f"h.{layer}.", f"blocks.{layer}."
    names = {}
    for ours, hf, conv in (
        ("ln1", "ln_1", False),
        ("attn.qkv", "attn.c_attn", True),
        ("attn.out", "attn.c_proj", True),
        ("ln2", "ln_2", False),
        ("mlp.fc_in", "mlp.c_fc", True),
        ("mlp.fc_out", "mlp.c_proj", True),
    ):
        names[f"{b}{ours}.weight"] = (f"{h}{hf}.weight", conv)
        names[f"{b}{ours}.bias"] = (f"{h}{hf}.bias", False)
    return names


def weight_names(cfg: GPTConfig) -> dict[str, tuple[str, bool]]:
    """Our parameter name -> (GPT-2's name, whether Conv1D stored it transposed).

    >>> weight_names(GPTConfig(vocab_size=50257, n_layer=1))["blocks.0.attn.qkv.weight"]
    ('h.0.attn.c_attn.weight', True)
    """
    names = {"embed.weight": ("wte.weight", False), "pos_embed.weight": ("wpe.weight", False)}
    for layer in range(cfg.n_layer):
        names |= _layer_names(layer)
    names |= {"ln_final.weight": ("ln_f.weight", False), "ln_final.bias": ("ln_f.bias", False)}
    if not cfg.tie_embeddings:
        names["unembed.weight"] = ("lm_head.weight", False)
    return names


def rename_weights(
    tensors: dict[str, torch.Tensor], cfg: GPTConfig, file: str = "model.safetensors"
) -> dict[str, torch.Tensor]:
    """GPT-2's tensors under our names (Conv1D weights transposed to (out, in)); a missing or
    unexpected tensor is a CheckpointError naming it."""
    plain = {k.removeprefix("transformer."): v for k, v in tensors.items()}
    if cfg.tie_embeddings:
        plain.pop("lm_head.weight", None)  # a tied head saved anyway: the same matrix as wte
    names = weight_names(cfg)
    wanted = {hf for hf, _ in names.values()}
    missing = sorted(wanted - set(plain))
    extra = sorted(k for k in set(plain) - wanted if not k.endswith(_BUFFERS))
    if missing or extra:
        raise CheckpointError(
            f"{file} is not the GPT-2 that config.json describes: "
            f"missing {missing[:3] or 'none'}, unexpected {extra[:3] or 'none'}"
        )
    return {ours: plain[hf].T if conv else plain[hf] for ours, (hf, conv) in names.items()}


def _check_files(path: Path) -> None:
    """Refuse a folder without the three files, saying how to get each."""
    if not (path / "model.safetensors").is_file():
        if any((path / n).is_file() for n in ("pytorch_model.bin", "model.bin", "tf_model.h5")):
            raise CheckpointError(
                f"“{path.name}” has its weights only as a pickled pytorch_model.bin (or a "
                f"TensorFlow file), not model.safetensors. {CONVERT_HINT}"
            )
        if any(path.glob("model-*-of-*.safetensors")):
            raise CheckpointError(
                f"“{path.name}” splits its weights into several model-*-of-*.safetensors; "
                "this app reads one model.safetensors (save_pretrained with a larger "
                "max_shard_size writes one)"
            )
        raise CheckpointError(f"“{path.name}” has no model.safetensors")
    if not (path / "tokenizer.json").is_file():
        raise CheckpointError(
            f"“{path.name}” has no tokenizer.json (the fast tokenizer's file): "
            "`AutoTokenizer.from_pretrained(...).save_pretrained(FOLDER)` writes one"
        )


def load_hf_folder(path: str | os.PathLike) -> Bundle:
    """Load and check a GPT-2-family Hugging Face folder as a Bundle (no history, no snapshots)."""
    path = Path(path)
    raw = read_json(path / "config.json")
    if not isinstance(raw, dict):
        raise CheckpointError("config.json should hold one JSON object")
    cfg = config_from_hf(raw)
    _check_files(path)
    tokenizer = read_tokenizer(path, cfg, None)
    file = path / "model.safetensors"
    if file.stat().st_size > MAX_HF_WEIGHTS_BYTES:
        raise CheckpointError(
            f"{file.name} is larger than {MAX_HF_WEIGHTS_BYTES // 2**30} GB: too large to serve "
            "a class from one machine (GPT-2 small and medium fit)"
        )
    try:
        tensors = load_file(file)
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{file.name} is not a readable safetensors file ({exc})") from exc
    model = model_from_tensors(rename_weights(tensors, cfg), cfg, file)
    meta = {"source": f"Hugging Face folder ({raw['model_type']})"}
    return Bundle(path, model, tokenizer, cfg, None, [], meta)
