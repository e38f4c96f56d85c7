"""The shape of a model of another family than the GPT: an RNN, an LSTM, a GRU or a causal CNN.

A separate small dataclass rather than more GPTConfig options: these models have no heads, no
MLPs and no positions, and a config.json without "family" stays a GPT's (every older bundle
loads unchanged). `n_ctx` is the *training window* here, not a limit: a recurrent model carries
its state past it (its state was trained from zero over at most n_ctx steps, so far beyond it is
extrapolation), and the CNN reads only its receptive field, whatever the length.

Not here: the models (recurrent.py), the GPT's config (config.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from viz_model.model.config import MAX_CTX, MAX_D_MODEL, MAX_LAYERS, MAX_VOCAB, PRESETS

FAMILIES = ("gpt", "rnn", "lstm", "gru", "cnn")  # "gpt" is GPTConfig's; the rest are here
OTHER_FAMILIES = FAMILIES[1:]
FAMILY_LABELS = {"gpt": "GPT", "rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "cnn": "causal CNN"}
# One line each, for the model card and the Training page (true of every model of the family).
FAMILY_TEXT = {
    "gpt": "a transformer, where every position attends to every earlier one in its context",
    "rnn": "a recurrent network carrying one hidden vector from character to character, "
    "h_t = tanh(W_ih x_t + W_hh h_(t-1) + b)",
    "lstm": "a long short-term memory network, carrying a hidden vector and a cell state, with "
    "input, forget and output gates deciding what the cell keeps",
    "gru": "a gated recurrent unit, carrying one hidden vector, with an update gate that mixes "
    "the old state with a new candidate and a reset gate that decides how much of the old it reads",
    "cnn": "a causal convolutional network, stacked 1-D convolutions that read only the past, "
    "dilated (1, 2, 4, ...) so the window they see doubles with each layer",
}
MAX_KERNEL = 16
# Weights of one layer per (d_model ** 2): the fused matrices W_ih and W_hh of each gate.
_GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def _check_int(name: str, value: Any, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")


@dataclass(frozen=True)
class RecurrentConfig:
    """An RNN (tanh), LSTM, GRU or causal CNN language model: embedding (vocab_size x d_model),
    n_layer layers of width d_model, a final LayerNorm, an unembedding. kernel_size is the CNN's
    (layer l is dilated 2**l); the recurrent families ignore it."""

    family: str
    vocab_size: int
    n_ctx: int = 128  # the training window (see the module docstring)
    d_model: int = 128
    n_layer: int = 2
    kernel_size: int = 3
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.family not in OTHER_FAMILIES:
            raise ValueError(
                f"unknown model family {self.family!r}; choose one of {', '.join(FAMILIES)}"
            )
        _check_int("vocab_size", self.vocab_size, 2, MAX_VOCAB)
        _check_int("n_ctx", self.n_ctx, 1, MAX_CTX)
        _check_int("d_model", self.d_model, 1, MAX_D_MODEL)
        _check_int("n_layer", self.n_layer, 1, MAX_LAYERS if self.family != "cnn" else 12)
        _check_int("kernel_size", self.kernel_size, 2, MAX_KERNEL)
        if not isinstance(self.dropout, int | float) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def causal(self) -> bool:
        """Always: every family here reads only the past (tests/test_recurrent.py checks it)."""
        return True

    @property
    def dilations(self) -> tuple[int, ...]:
        """The CNN's dilation per layer: 1, 2, 4, ... (WaveNet's)."""
        return tuple(2**layer for layer in range(self.n_layer))

    @property
    def receptive_field(self) -> int | None:
        """How many tokens (the current one included) the CNN's logits at t read:
        1 + (kernel_size - 1) x (1 + 2 + ... + 2**(n_layer-1)). None for a recurrent model,
        which reads everything before t through its state."""
        if self.family != "cnn":
            return None
        return 1 + (self.kernel_size - 1) * sum(self.dilations)

    @property
    def max_len(self) -> int:
        """The longest sequence a page may feed: MAX_CTX (nothing in the model limits it)."""
        return MAX_CTX

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecurrentConfig:
        """Build from a dict (a bundle's config.json "model"), refusing unknown fields."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown fields for a {data.get('family')} model: {', '.join(sorted(unknown))}"
            )
        return cls(**data)


def layer_params(family: str, d: int, kernel_size: int = 3) -> int:
    """Parameters of one layer of width d: a recurrent cell's W_ih, W_hh and two biases per
    gate; a CNN layer's LayerNorm (2d) and convolution (k d^2 + d)."""
    if family == "cnn":
        return kernel_size * d * d + 3 * d
    return _GATES[family] * (2 * d * d + 2 * d)


def gpt_block_params(d_model: int) -> int:
    """Parameters of one GPT block of width d (attention 4d^2+4d, MLP 8d^2+5d, two LayerNorms)."""
    return 12 * d_model * d_model + 13 * d_model


def cnn_layers_for(n_ctx: int, kernel_size: int) -> int:
    """The fewest dilated layers whose receptive field reaches n_ctx tokens."""
    layers = 1
    while 1 + (kernel_size - 1) * (2**layers - 1) < n_ctx and layers < 12:
        layers += 1
    return layers


def preset_shape(family: str, name: str) -> dict[str, Any]:
    """A family's shape for a named GPT preset: the same training window, the same number of
    layers (the CNN: enough for its receptive field to cover the window), and the width whose
    layers come closest to as many weights as the GPT preset's blocks (the embeddings then match too:
    same vocabulary, similar width). E.g. preset_shape("lstm", "tiny") -> n_layer 2, d_model 80."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    gpt = PRESETS[name]
    n_ctx, n_layer, k = gpt["n_ctx"], gpt["n_layer"], 3
    target = n_layer * gpt_block_params(gpt["d_model"])
    if family == "cnn":
        n_layer = cnn_layers_for(n_ctx, k)
    # the width (a multiple of 4) whose layers come closest to the target
    d = min(
        range(4, MAX_D_MODEL, 4), key=lambda w: abs(n_layer * layer_params(family, w, k) - target)
    )
    shape = dict(n_ctx=n_ctx, d_model=d, n_layer=n_layer)
    return {**shape, "kernel_size": k} if family == "cnn" else shape


def recurrent_preset(family: str, name: str, vocab_size: int, **overrides: Any) -> RecurrentConfig:
    """preset_shape with overrides, e.g. recurrent_preset("gru", "tiny", 77, n_ctx=128)."""
    return RecurrentConfig(family, vocab_size, **{**preset_shape(family, name), **overrides})
