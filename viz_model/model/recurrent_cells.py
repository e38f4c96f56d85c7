"""The RNN, LSTM, GRU and causal CNN written out by hand, step by step, reading a RecurrentLM's
own weights: what the fused PyTorch modules compute, with every intermediate kept.

    RNN   h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh)
    LSTM  i, f, g, o = sigma, sigma, tanh, sigma of (W_ih x_t + b_ih + W_hh h_(t-1) + b_hh), in
          PyTorch's row order (i, f, g, o);  c_t = f * c_(t-1) + i * g;  h_t = o * tanh(c_t)
    GRU   r, z = sigma(W_i. x_t + b_i. + W_h. h_(t-1) + b_h.), rows (r, z, n);
          n = tanh(W_in x_t + b_in + r * (W_hn h_(t-1) + b_hn));  h_t = (1 - z) * n + z * h_(t-1)
    CNN   y_t = x_t + GELU(b + sum_j W_j LN(x)_(t - (k-1-j) d)), zeros before the start

`inspect(model, ids)` returns the logits (equal to model(ids) to float tolerance; a test holds
them equal) and, per layer, the hidden states and the gates: the LSTM's input, forget and output
gates and cell state, the GRU's update and reset gates. One sequence, (T,) ids, no batch.

Not here: the fused modules used for training and generation (recurrent.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from viz_model.model.recurrent import RecurrentLM


@dataclass
class LayerTrace:
    """One layer along a sequence: `hidden` (T, D) is what it passes up; `gates` name (T, D)
    tensors: LSTM "input", "forget", "output", "cell"; GRU "update", "reset"; none otherwise."""

    hidden: torch.Tensor
    gates: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class Inspection:
    logits: torch.Tensor  # (T, V)
    embedded: torch.Tensor  # (T, D), the embeddings the first layer reads
    layers: list[LayerTrace]


def _weights(cell: torch.nn.Module) -> tuple[torch.Tensor, ...]:
    return cell.weight_ih_l0, cell.weight_hh_l0, cell.bias_ih_l0, cell.bias_hh_l0


def rnn_layer(cell: torch.nn.Module, x: torch.Tensor) -> LayerTrace:
    """x (T, D) -> the tanh RNN's hidden states (T, D), from h_0 = 0."""
    w_ih, w_hh, b_ih, b_hh = _weights(cell)
    h = x.new_zeros(w_hh.shape[1])
    out = []
    for x_t in x:
        h = torch.tanh(w_ih @ x_t + b_ih + w_hh @ h + b_hh)
        out.append(h)
    return LayerTrace(torch.stack(out))


def lstm_layer(cell: torch.nn.Module, x: torch.Tensor) -> LayerTrace:
    """x (T, D) -> hidden states and the input, forget, output gates and cell state, each (T, D)."""
    w_ih, w_hh, b_ih, b_hh = _weights(cell)
    h = c = x.new_zeros(w_hh.shape[1])
    keep: dict[str, list[torch.Tensor]] = {
        k: [] for k in ("hidden", "input", "forget", "output", "cell")
    }
    for x_t in x:
        i, f, g, o = (w_ih @ x_t + b_ih + w_hh @ h + b_hh).chunk(4)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
        for name, value in (("hidden", h), ("input", i), ("forget", f), ("output", o), ("cell", c)):
            keep[name].append(value)
    stacked = {k: torch.stack(v) for k, v in keep.items()}
    return LayerTrace(stacked.pop("hidden"), stacked)


def gru_layer(cell: torch.nn.Module, x: torch.Tensor) -> LayerTrace:
    """x (T, D) -> hidden states and the update and reset gates, each (T, D)."""
    w_ih, w_hh, b_ih, b_hh = _weights(cell)
    h = x.new_zeros(w_hh.shape[1])
    hidden, update, reset = [], [], []
    for x_t in x:
        xr, xz, xn = (w_ih @ x_t + b_ih).chunk(3)
        hr, hz, hn = (w_hh @ h + b_hh).chunk(3)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        hidden.append(h)
        update.append(z)
        reset.append(r)
    gates = {"update": torch.stack(update), "reset": torch.stack(reset)}
    return LayerTrace(torch.stack(hidden), gates)


def conv_layer(layer: torch.nn.Module, x: torch.Tensor) -> LayerTrace:
    """x (T, D) -> x + GELU(causal dilated convolution of LN(x)), tap by tap."""
    h = F.layer_norm(x, x.shape[-1:], layer.ln.weight, layer.ln.bias, layer.ln.eps)
    w, b, d = layer.conv.weight, layer.conv.bias, layer.dilation  # w (D_out, D_in, k)
    k = w.shape[2]
    out = b.expand(x.shape[0], -1).clone()  # (T, D)
    for j in range(k):
        shift = (k - 1 - j) * d  # tap j reads the input `shift` tokens back
        if shift >= x.shape[0]:
            continue
        past = torch.cat([h.new_zeros(shift, h.shape[1]), h[: h.shape[0] - shift]])
        out = out + past @ w[:, :, j].T
    return LayerTrace(x + F.gelu(out))


_LAYERS = {"rnn": rnn_layer, "lstm": lstm_layer, "gru": gru_layer}


@torch.no_grad()
def inspect(model: RecurrentLM, ids: torch.Tensor) -> Inspection:
    """Run one sequence (T,) through the hand-written cells (no dropout: call it in eval mode)."""
    if ids.dim() != 1:
        raise ValueError(f"inspect takes one sequence of ids (T,), got shape {tuple(ids.shape)}")
    x = model.embed(ids)  # (T, D)
    embedded = x
    layers = []
    for block in model.blocks:
        if model.family == "cnn":
            trace = conv_layer(block, x)
        else:
            trace = _LAYERS[model.family](block.cell, x)
        layers.append(trace)
        x = trace.hidden
    logits = model.unembed(model.ln_final(x))
    return Inspection(logits, embedded, layers)
