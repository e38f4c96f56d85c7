"""Which family a model is, and building one from its config: the one place that chooses
between the GPT (gpt.py) and the RNN, LSTM, GRU and causal CNN (recurrent.py).

A config dict without "family" (every bundle made before the families) is a GPT's.

Not here: the models themselves (gpt.py, recurrent.py).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT
from viz_model.model.recurrent import RecurrentLM, state_floats
from viz_model.model.recurrent import macs_per_token as recurrent_macs
from viz_model.model.recurrent_config import FAMILIES, FAMILY_LABELS, RecurrentConfig

ModelConfig = GPTConfig | RecurrentConfig
LanguageModel = GPT | RecurrentLM


def family_of(thing: nn.Module | ModelConfig) -> str:
    """ "gpt", "rnn", "lstm", "gru" or "cnn", of a model or its config."""
    cfg = getattr(thing, "cfg", thing)
    return cfg.family if isinstance(cfg, RecurrentConfig) else "gpt"


def is_gpt(thing: nn.Module | ModelConfig) -> bool:
    return family_of(thing) == "gpt"


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    """A config from a bundle's "model" entry (ValueError with a plain message otherwise)."""
    if not isinstance(data, dict):
        raise ValueError("the model config should be a mapping of names to values")
    family = data.get("family", "gpt")
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; this app knows {', '.join(FAMILIES)}")
    if family == "gpt":
        return GPTConfig.from_dict({k: v for k, v in data.items() if k != "family"})
    return RecurrentConfig.from_dict(data)


def config_to_dict(cfg: ModelConfig) -> dict[str, Any]:
    """The "model" entry of config.json: a GPT's as it always was (no "family"), the others with
    their family first."""
    return cfg.to_dict()


def build_model(cfg: ModelConfig) -> LanguageModel:
    """A freshly initialised model of cfg's family."""
    return RecurrentLM(cfg) if isinstance(cfg, RecurrentConfig) else GPT(cfg)


def describe_shape(cfg: ModelConfig, n_params: int) -> str:
    """The shape in a few words, e.g. "118,144 parameters, 2 layers, 64 dims, 4 heads, context
    128" or "LSTM, 105,885 parameters, 2 layers of 80, trained on windows of 128"."""
    if isinstance(cfg, RecurrentConfig):
        text = (
            f"{FAMILY_LABELS[cfg.family]}, {n_params:,} parameters, {cfg.n_layer} layers of "
            f"{cfg.d_model}, trained on windows of {cfg.n_ctx}"
        )
        if cfg.receptive_field is not None:
            text += f", reads the last {cfg.receptive_field} tokens"
        return text
    return (
        f"{n_params:,} parameters, {cfg.n_layer} layers, {cfg.d_model} dims, {cfg.n_head} heads, "
        f"context {cfg.n_ctx}"
    )


def macs_per_token(cfg: ModelConfig, context: int) -> int:
    """Multiply-adds to read one more token after `context` earlier ones, with the cache or state
    (generation). A GPT's per layer: its projections (q, k, v, out: d(d + 2 kv) + d^2), its MLP
    (2 d d_mlp, 3 when gated) and attention over the context (scores and the weighted sum of
    values: 2 context d); the others' is constant (recurrent.macs_per_token). Plus the
    unembedding, d V. E.g. a GPT's grows by 2 n_layer d a token of context; an LSTM's never."""
    if isinstance(cfg, RecurrentConfig):
        return recurrent_macs(cfg)
    d, kv = cfg.d_model, cfg.n_kv_heads * cfg.d_head
    attention = d * (d + 2 * kv) + d * d + 2 * (context + 1) * d
    mlp = 0 if cfg.attn_only else (3 if cfg.mlp == "gated" else 2) * d * cfg.d_mlp
    return cfg.n_layer * (attention + mlp) + d * cfg.vocab_size


def carried_floats(cfg: ModelConfig, context: int) -> int:
    """Numbers kept from the tokens read so far to read the next one: a GPT's KV cache (keys and
    values of every layer for `context` tokens: 2 n_layer context kv), the others' state
    (recurrent.state_floats: constant)."""
    if isinstance(cfg, RecurrentConfig):
        return state_floats(cfg)
    return 2 * cfg.n_layer * context * cfg.n_kv_heads * cfg.d_head
