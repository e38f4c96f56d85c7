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
from viz_model.model.recurrent import RecurrentLM
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
