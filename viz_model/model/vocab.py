"""Growing a trained GPT's vocabulary: new rows in the token embedding and the unembedding.

A tokenizer that gains special tokens (tokenization.Tokenizer.with_special_tokens) numbers them
after the old ids, so the model needs one new row per token at the end of its embedding (V, D) and
of its unembedding (V, D); every old row stays as it was. The new rows start at the mean of the old
rows. In the embedding that puts a new token where an average token sits (a typical size and
direction, so the layer norms and attention see nothing out of range), not at a random point the
network never saw. In the unembedding it makes each new token's logit the mean of the old logits,
well below the top ones, so before tuning the model gives the new tokens little probability and
its old predictions hardly move (Hewitt, "Initializing new word embeddings for pretrained language
models", 2021); a random row of the old rows' size could instead outscore the right answer.

Not here: the tokenizer (text/tokenization.py), recurrent models (their embedding is grown the
same way but no lesson needs it yet).
"""

from __future__ import annotations

import dataclasses

import torch

from viz_model.model.gpt import GPT


def _grown(rows: torch.Tensor, n_new: int) -> torch.Tensor:
    """rows (V, D) followed by n_new copies of their mean: (V + n_new, D)."""
    mean = rows.mean(dim=0, keepdim=True)  # (1, D)
    return torch.cat([rows, mean.expand(n_new, -1)], dim=0)


@torch.no_grad()
def extend_vocab(model: GPT, n_new: int) -> GPT:
    """A new GPT with n_new more tokens, rows at the mean embedding; `model` is left unchanged.

    On a prompt of old tokens the new model's logits for the old tokens equal the old model's
    (the new rows only add columns of logits). Tied embeddings grow once and stay tied.
    """
    if not isinstance(model, GPT):
        raise TypeError("extend_vocab grows a GPT's vocabulary; this model is not a GPT")
    if isinstance(n_new, bool) or not isinstance(n_new, int) or n_new < 0:
        raise ValueError(f"n_new must be a whole number >= 0, got {n_new!r}")
    cfg = dataclasses.replace(model.cfg, vocab_size=model.cfg.vocab_size + n_new)  # checks range
    state = dict(model.state_dict())
    state["embed.weight"] = _grown(state["embed.weight"], n_new)
    if "unembed.weight" in state:  # absent when tied: the embedding is the unembedding
        state["unembed.weight"] = _grown(state["unembed.weight"], n_new)
    grown = GPT(cfg)
    grown.load_state_dict({k: v.clone() for k, v in state.items()})
    device = next(model.parameters()).device
    return grown.to(device).train(model.training)
