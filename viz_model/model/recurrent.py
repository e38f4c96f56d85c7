"""Character-level language models of other families than the GPT: RNN (tanh), LSTM, GRU, causal CNN.

Each is embedding -> n_layer layers of width D -> final LayerNorm -> unembedding, with GPT's
forward signature: ids (B, T) -> logits (B, T, V), or (T,) -> (T, V). Training runs PyTorch's fused
modules (nn.RNN, nn.LSTM, nn.GRU: one single-layer module per layer, so each layer's weights are
named `blocks.{l}.cell.*` and gradient health reads them per layer; nn.Conv1d for the CNN).
recurrent_cells.py writes the same cells out by hand, reading these weights, to show what happens
inside (hidden states, gates, the cell state); a test holds the two paths equal.

Generation token by token is cheap in every family: `forward(ids, state)` continues from a
`RecurrentState` and updates it in place (the recurrent families carry each layer's hidden state,
and the LSTM its cell state; the CNN keeps each layer's last (kernel_size - 1) x dilation inputs,
its receptive field). Shapes: B batch, T tokens, D d_model, V vocab.

Not here: the config (recurrent_config.py), hand-written cells (recurrent_cells.py), sampling
(sampling.py), the GPT (gpt.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.model.recurrent_config import RecurrentConfig

_CELLS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


class RecurrentState:
    """What a model carries from one call to the next: per layer, the recurrent hidden state
    (1, B, D) (an LSTM's is the pair (h, c)), or the CNN's last inputs (B, D, pad). `length` counts
    the tokens read so far."""

    def __init__(self, n_layer: int) -> None:
        self.layers: list = [None] * n_layer
        self.length = 0


class CellLayer(nn.Module):
    """One recurrent layer: a fused single-layer nn.RNN / nn.LSTM / nn.GRU (batch first)."""

    def __init__(self, cfg: RecurrentConfig) -> None:
        super().__init__()
        self.cell = _CELLS[cfg.family](cfg.d_model, cfg.d_model, batch_first=True)

    def forward(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, object]:
        """x (B, T, D) -> (outputs (B, T, D), the state after the last step)."""
        return self.cell(x, state)


class ConvLayer(nn.Module):
    """One causal convolution layer, pre-LN and residual: x + GELU(conv(pad_left(LN(x)))).

    Left padding of (kernel_size - 1) x dilation zeros means output t reads inputs t - (k-1)d ..
    t only: the convolution never sees the future."""

    def __init__(self, cfg: RecurrentConfig, layer: int) -> None:
        super().__init__()
        self.dilation = cfg.dilations[layer]
        self.pad = (cfg.kernel_size - 1) * self.dilation
        self.ln = nn.LayerNorm(cfg.d_model)
        self.conv = nn.Conv1d(cfg.d_model, cfg.d_model, cfg.kernel_size, dilation=self.dilation)

    def forward(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D) -> (outputs (B, T, D), the last `pad` normalized inputs (B, D, pad))."""
        h = self.ln(x).transpose(1, 2)  # (B, D, T)
        past = h.new_zeros(h.shape[0], h.shape[1], self.pad) if state is None else state
        h = torch.cat([past, h], dim=2)  # (B, D, pad + T)
        out = self.conv(h).transpose(1, 2)  # (B, T, D)
        return x + F.gelu(out), h[:, :, h.shape[2] - self.pad :]


class RecurrentLM(nn.Module):
    """An RNN, LSTM, GRU or causal-CNN character model with the GPT's forward signature."""

    def __init__(self, cfg: RecurrentConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        if cfg.family == "cnn":
            self.blocks = nn.ModuleList(ConvLayer(cfg, i) for i in range(cfg.n_layer))
        else:
            self.blocks = nn.ModuleList(CellLayer(cfg) for _ in range(cfg.n_layer))
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size)

    @property
    def family(self) -> str:
        return self.cfg.family

    def new_state(self) -> RecurrentState:
        """An empty state, for feeding a sequence in pieces (generation)."""
        return RecurrentState(self.cfg.n_layer)

    def forward(self, ids: torch.Tensor, state: RecurrentState | None = None) -> torch.Tensor:
        """Logits for every position: ids (B, T) -> (B, T, V), or (T,) -> (T, V). With a state,
        continue from it (the first call starts from zeros) and leave it after the last token."""
        if ids.dim() == 1:
            return self.forward(ids[None], state)[0]
        x = self.drop(self.embed(ids))  # (B, T, D)
        for i, block in enumerate(self.blocks):
            x, last = block(x, None if state is None else state.layers[i])
            if state is not None:
                state.layers[i] = last
            if i < len(self.blocks) - 1:
                x = self.drop(x)  # between layers, as nn.LSTM's own dropout
        if state is not None:
            state.length += ids.shape[1]
        return self.unembed(self.ln_final(x))  # (B, T, V)

    # ---- what the pages and the model card read -------------------------------------------------

    @property
    def W_E(self) -> torch.Tensor:
        """(V, D)"""
        return self.embed.weight

    @property
    def W_U(self) -> torch.Tensor:
        """(D, V)"""
        return self.unembed.weight.T

    def param_counts(self) -> dict[str, int]:
        """Parameters by component: embed, the layers (under the family's name: "lstm", "cnn",
        ...; cells or convolutions), layernorm, unembed."""
        counts = dict.fromkeys(("embed", self.family, "layernorm", "unembed"), 0)
        for name, p in self.named_parameters():
            if name.startswith("embed."):
                key = "embed"
            elif name.startswith("unembed."):
                key = "unembed"
            elif ".ln." in name or name.startswith("ln_final."):
                key = "layernorm"
            else:
                key = self.family
            counts[key] += p.numel()
        return counts

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def state_floats(cfg: RecurrentConfig) -> int:
    """Numbers carried from one token to the next, per sequence: a recurrent layer's hidden
    vector (D; an LSTM's also its cell state, 2D), a CNN layer's last (k-1) x dilation inputs.
    The same whatever the context's length (a GPT's KV cache grows with it)."""
    if cfg.family == "cnn":
        return sum((cfg.kernel_size - 1) * d * cfg.d_model for d in cfg.dilations)
    return cfg.n_layer * cfg.d_model * (2 if cfg.family == "lstm" else 1)


def macs_per_token(cfg: RecurrentConfig) -> int:
    """Multiply-adds to read one more token with a state (generation): each layer's matrices
    once, plus the unembedding. Constant in the context's length."""
    d = cfg.d_model
    if cfg.family == "cnn":
        per_layer = cfg.kernel_size * d * d
    else:
        per_layer = {"rnn": 1, "lstm": 4, "gru": 3}[cfg.family] * 2 * d * d
    return cfg.n_layer * per_layer + d * cfg.vocab_size
