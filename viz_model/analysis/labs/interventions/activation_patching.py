"""Activation patching: clean activations patched into a run on a corrupted prompt (one token
changed), one cell at a time, the residual stream at each layer and position and each head's
output, each scored by the share of the logit difference it restores.

Shapes: L layers, H heads, E d_head, D d_model, V vocab, T tokens.
Not here: choosing which token to change (suggest.py), the sentences (claims.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.labs.interventions.forward import resid_names, run_from, z_name
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookPoint, custom


def corrupt(ids: list[int], position: int, token: int) -> list[int]:
    """The prompt with the token at `position` replaced: same length, one token different."""
    if not 0 <= position < len(ids):
        raise ValueError(f"position {position} is outside the prompt's {len(ids)} tokens")
    out = list(ids)
    out[position] = int(token)
    return out


@dataclass(frozen=True)
class Patching:
    """How much of the clean answer each patch restores: (LD_patched - LD_corrupt) /
    (LD_clean - LD_corrupt), with LD = logit[answer] - logit[wrong] after the last token."""

    answer: int
    wrong: int
    ld_clean: float
    ld_corrupt: float
    rows: list[
        str
    ]  # the patched hook of each row: resid_pre of each layer, then the last resid_post
    resid: np.ndarray  # (L + 1, T)
    heads: np.ndarray  # (L, H): each head's z patched at every position
    p_clean: np.ndarray  # (V,) the clean run's next-token probabilities
    p_corrupt: np.ndarray  # (V,) the corrupted run's

    @property
    def corrupt_top(self) -> int:
        """The corrupted run's own favourite (not necessarily `wrong`)."""
        return int(np.argmax(self.p_corrupt))


def logit_diff(logits: torch.Tensor, answer: int, wrong: int) -> torch.Tensor:
    """logit[answer] - logit[wrong] at the last position; logits (..., T, V) -> (...)."""
    return logits[..., -1, answer] - logits[..., -1, wrong]


def pick_answers(clean_logits: torch.Tensor, corrupt_logits: torch.Tensor) -> tuple[int, int]:
    """(answer, wrong): the clean run's top next token, and the corrupted run's (or, when both
    runs agree, the clean run's second choice). Logits (T, V)."""
    answer = int(clean_logits[-1].argmax())
    wrong = int(corrupt_logits[-1].argmax())
    if wrong == answer:
        wrong = int(clean_logits[-1].topk(2).indices[1])
    return answer, wrong


@torch.no_grad()
def patching(
    model: GPT,
    clean_ids: list[int],
    corrupt_ids: list[int],
    answer: int | None = None,
    wrong: int | None = None,
) -> Patching:
    """Patch clean activations into the corrupted run, one cell at a time: the residual stream
    at each (layer, position) (T copies of the corrupted stream entering that layer, copy t with
    position t clean, run from that layer on) and each head's z at every position (H copies)."""
    if len(clean_ids) != len(corrupt_ids):
        raise ValueError("the clean and the corrupted prompt must have the same number of tokens")
    L, H, T = model.cfg.n_layer, model.cfg.n_head, len(clean_ids)
    rows = resid_names(model)
    names = rows + [z_name(layer) for layer in range(L)]
    clean_logits, clean = model.run_with_cache(torch.tensor(clean_ids), names=names)
    corrupt_logits, bad = model.run_with_cache(torch.tensor(corrupt_ids), names=rows)
    if answer is None or wrong is None:
        answer, wrong = pick_answers(clean_logits, corrupt_logits)
    ld_clean = float(logit_diff(clean_logits, answer, wrong))
    ld_corrupt = float(logit_diff(corrupt_logits, answer, wrong))
    span = ld_clean - ld_corrupt
    scale = 1.0 / span if abs(span) > 1e-6 else float("nan")

    def restored(logits: torch.Tensor) -> np.ndarray:  # logits (K, 1, V) -> (K,)
        return ((logit_diff(logits, answer, wrong) - ld_corrupt) * scale).numpy()

    resid = np.zeros((L + 1, T))
    for layer, name in enumerate(rows):
        x = bad[name].expand(T, T, -1).clone()  # (T copies, T, D)
        idx = torch.arange(T)
        x[idx, idx] = clean[name]  # copy t: position t from the clean run
        resid[layer] = restored(run_from(model, layer, x, last_only=True))
    heads = np.zeros((L, H))
    for layer in range(L):
        clean_z = clean[z_name(layer)]  # (T, H, E)

        def fn(z: torch.Tensor, hook: HookPoint, clean_z=clean_z) -> torch.Tensor:  # (H, T, H, E)
            z = z.clone()
            for h in range(H):
                z[h, :, h] = clean_z[:, h]
            return z

        x = bad[rows[layer]].expand(H, T, -1)
        with model.intervene(custom(z_name(layer), fn)):
            heads[layer] = restored(run_from(model, layer, x, last_only=True))
    p_clean, p_corrupt = (
        torch.softmax(x[-1].float(), -1).numpy() for x in (clean_logits, corrupt_logits)
    )
    return Patching(answer, wrong, ld_clean, ld_corrupt, rows, resid, heads, p_clean, p_corrupt)
