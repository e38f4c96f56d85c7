"""A bundle saved as a Hugging Face GPT-2 folder, so a model the class trained opens in the tools
it will use next (`transformers.AutoModelForCausalLM.from_pretrained(folder)`):

    export_gpt2(bundle, "runs/my-model-hf")   # config.json, model.safetensors, tokenizer files

The inverse of gpt2_folder.py: the same weight names (weight_names), Conv1D weights transposed
back to (in, out), a config.json with `model_type: "gpt2"`. Only a GPT whose architecture is
GPT-2's can go: learned positions added to the embeddings, pre-LN with LayerNorm, biases, the
standard MLP with GELU (exact or tanh) or ReLU, one key and value per head, a causal mask and a
residual stream. why_not_gpt2 names what stands in the way for any other (RoPE, RMSNorm, SwiGLU,
an RNN...): transformers has other classes for those, with other weight layouts.

The tokenizer goes as our own tokenizer.json (the `tokenizers` library's file) with a
tokenizer_config.json naming PreTrainedTokenizerFast, which is what AutoTokenizer needs to read it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import atomic_write, write_json
from viz_model.bundles.gpt2_folder import weight_names
from viz_model.model.config import GPTConfig
from viz_model.model.families import ModelConfig, family_of
from viz_model.model.recurrent_config import FAMILY_LABELS

# our activation -> GPT-2's activation_function (gpt2_folder.HF_ACTS reads these back)
GPT2_ACTS = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}
# What a GPT may have that GPT-2 has not: (field, its value, what to say)
_NOT_GPT2 = {
    ("pos", "sinusoidal"): "fixed sine-wave positions, where GPT-2 learns a position table",
    ("pos", "rope"): "rotary positions (RoPE), where GPT-2 adds a learned position vector",
    ("pos", "alibi"): "ALiBi's distance penalty, where GPT-2 adds a learned position vector",
    ("pos", "none"): "no positions at all, where GPT-2 adds a learned position vector",
    ("norm", "post"): "post-LN blocks, where GPT-2 normalizes before each sublayer (pre-LN)",
    ("norm_kind", "rmsnorm"): "RMSNorm, where GPT-2 has LayerNorm",
    ("norm_kind", "none"): "no normalization, where GPT-2 has LayerNorm",
    ("mlp", "gated"): "a gated MLP (SwiGLU-style: three matrices), where GPT-2's has two",
    ("bias", False): "no biases, where every GPT-2 layer has one",
    ("causal", False): "no causal mask, where GPT-2 never looks ahead",
    ("residual", False): "no residual stream, where GPT-2 adds every sublayer's output",
    ("attn_only", True): "no MLPs, where every GPT-2 block has one",
}


def why_not_gpt2(cfg: ModelConfig) -> str | None:
    """None when `cfg` is GPT-2's architecture (export_gpt2 can save it), else why not."""
    if not isinstance(cfg, GPTConfig):
        return (
            f"it is not a transformer but a model of the {FAMILY_LABELS[family_of(cfg)]} family: "
            "GPT-2's folder has no place for its weights"
        )
    for (name, value), why in _NOT_GPT2.items():
        if getattr(cfg, name) == value:
            return f"it has {why}"
    if cfg.act not in GPT2_ACTS:
        return f"its MLP uses {cfg.act}, an activation GPT-2's does not offer"
    if cfg.n_kv_heads != cfg.n_head:
        return (
            f"it shares {cfg.n_kv_heads} key and value head(s) among {cfg.n_head} query heads, "
            "where GPT-2 gives every head its own"
        )
    return None


def gpt2_config(cfg: GPTConfig) -> dict[str, Any]:
    """The config.json of GPT2LMHeadModel with `cfg`'s shape (no dropout: it is for reading)."""
    return {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": cfg.vocab_size,
        "n_positions": cfg.n_ctx,
        "n_embd": cfg.d_model,
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "n_inner": cfg.d_mlp,
        "activation_function": GPT2_ACTS[cfg.act],
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": cfg.tie_embeddings,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        # GPT-2's own defaults name token 50256; our vocabularies are smaller and have no
        # beginning- or end-of-text token, so generation must not look for one.
        "bos_token_id": None,
        "eos_token_id": None,
    }


def gpt2_tensors(model: torch.nn.Module, cfg: GPTConfig) -> dict[str, torch.Tensor]:
    """The model's weights under GPT-2's names, as GPT2LMHeadModel's state dict has them
    ("transformer.h.0.attn.c_attn.weight" (D, 3D): Conv1D keeps W as (in, out))."""
    ours = model.state_dict()
    out = {}
    for name, (hf, conv) in weight_names(cfg).items():
        tensor = ours[name].detach().float().cpu()
        prefix = "" if hf == "lm_head.weight" else "transformer."
        out[prefix + hf] = (tensor.T if conv else tensor).contiguous()
    return out


def export_gpt2(bundle: Bundle, out: str | os.PathLike) -> Path:
    """Write `bundle` into folder `out` as a GPT-2 folder transformers opens; ValueError saying
    why when its architecture is not GPT-2's. Returns the folder."""
    reason = why_not_gpt2(bundle.config)
    if reason is not None:
        raise ValueError(f"“{bundle.name}” cannot be saved as a GPT-2 folder: {reason}")
    cfg = bundle.config
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = gpt2_tensors(bundle.model, cfg)
    atomic_write(
        folder / "model.safetensors",
        lambda tmp: save_file(tensors, str(tmp), metadata={"format": "pt"}),
    )
    write_json(folder / "config.json", gpt2_config(cfg))
    bundle.tokenizer.save(folder / "tokenizer.json")
    write_json(
        folder / "tokenizer_config.json",
        {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": cfg.n_ctx},
    )
    return folder
