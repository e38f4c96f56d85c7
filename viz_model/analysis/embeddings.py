"""Token and position embeddings: PCA, cosine neighbours, position similarity, and why positions
are needed at all.

Covers: projecting the token embedding matrix W_E (V x D) to 2D by PCA, the nearest neighbours of a
token by cosine similarity, the position-by-position cosine similarity of a position table, and the
lecture's exercise: without position information, swapping two earlier tokens leaves the last
token's first-layer attention output unchanged.

What exactly holds (causal attention, no position information, last token kept last): the last
token's layer-0 attention output is a function of its own vector and of the *set* of earlier vectors
(a softmax-weighted sum, whose terms can be reordered), so it is unchanged (up to float rounding,
~1e-7) by any shuffle of the earlier tokens; so are its layer-0 MLP output and residual stream, all
computed per position. From layer 1 on it changes in general: the tokens between the two swapped
ones saw a different prefix in layer 0, so the last token attends to different vectors in layer 1.
With bidirectional attention (a model without the causal mask) every token sees the same set at
every layer, so every layer's output at the last token is invariant: `swap_claim` says which holds.
Not here: drawing (charts/embeddings.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.model.gpt import GPT
from viz_model.model.hooks import patch


@dataclass(frozen=True)
class PCAResult:
    components: np.ndarray  # (k, D) orthonormal directions, the first explains the most variance
    projected: np.ndarray  # (N, k) each row's coordinates along the components
    explained: np.ndarray  # (k,) share of the total variance each component explains
    mean: np.ndarray  # (D,) the mean row, subtracted before projecting


def pca(x: torch.Tensor | np.ndarray, k: int = 2) -> PCAResult:
    """Principal components of the rows of x (N, D) by SVD of the centred matrix.

    Centred X = U S V^T: the rows of V^T are the directions of most variance, in order; the
    variance along direction i is S_i^2 / (N - 1), and its share is S_i^2 / sum(S^2).
    """
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    mean = x.mean(0)
    centred = x - mean
    _, s, vt = torch.linalg.svd(centred, full_matrices=False)
    k = min(k, vt.shape[0])
    # Fix each component's sign (largest entry positive) so the picture does not flip between runs.
    signs = torch.sign(vt[:k].gather(1, vt[:k].abs().argmax(1, keepdim=True)))
    comps = vt[:k] * torch.where(signs == 0, 1.0, signs)
    total = (s**2).sum()
    explained = (s[:k] ** 2 / total) if total > 0 else torch.zeros(k, dtype=s.dtype)
    return PCAResult(comps.numpy(), (centred @ comps.T).numpy(), explained.numpy(), mean.numpy())


def cosine_matrix(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows of x (N, D) -> (N, N)."""
    x = torch.as_tensor(np.asarray(x, dtype=np.float32))
    unit = F.normalize(x, dim=-1)
    return (unit @ unit.T).numpy()


@dataclass(frozen=True)
class Neighbours:
    ids: np.ndarray  # (k,) token ids, most similar first (the token itself excluded)
    similarity: np.ndarray  # (k,) cosine similarity to the query token


def nearest_neighbours(
    embeddings: torch.Tensor | np.ndarray, token: int, k: int = 10
) -> Neighbours:
    """The k rows most similar to row `token` by cosine similarity, itself excluded.

    cos(a, b) = a . b / (|a| |b|): 1 means the same direction, 0 unrelated, -1 opposite.
    """
    x = torch.as_tensor(np.asarray(embeddings, dtype=np.float32))
    if not 0 <= token < x.shape[0]:
        raise ValueError(f"token id {token} is outside the vocabulary (size {x.shape[0]})")
    sims = F.normalize(x, dim=-1) @ F.normalize(x[token], dim=0)  # (V,)
    sims[token] = -float("inf")
    k = min(k, x.shape[0] - 1)
    top = torch.topk(sims, k)
    return Neighbours(top.indices.numpy(), top.values.numpy())


def position_table(model: GPT, n: int | None = None) -> np.ndarray | None:
    """The model's position embeddings (n x D, default its whole context); None when it has none."""
    if not model.cfg.adds_positions:
        return None
    n = model.cfg.n_ctx if n is None else min(n, model.cfg.n_ctx)
    with torch.no_grad():
        return model.position_embeddings(0, n)[0].float().numpy()


def swap(ids: list[int], i: int, j: int) -> list[int]:
    out = list(ids)
    out[i], out[j] = out[j], out[i]
    return out


@dataclass(frozen=True)
class SwapResult:
    """The last token's output of one layer's attention, for a prompt and for it with two swapped."""

    original: np.ndarray  # (D,)
    swapped: np.ndarray  # (D,)
    positions_on: bool  # were position embeddings used?

    @property
    def max_diff(self) -> float:
        return float(np.abs(self.original - self.swapped).max())


def swap_experiments(
    model: GPT, ids: list[int], i: int, j: int, positions: bool, layers: tuple[int, ...] = (0,)
) -> dict[int, SwapResult]:
    """Run `ids` and `ids` with tokens i and j swapped (both before the last token); return, for
    each layer in `layers`, the last token's `blocks.{layer}.hook_attn_out` for each, with position
    embeddings zeroed unless `positions` (a model with pos="none" has none to zero).

    Both prompts go through the model as one batch of two, every layer recorded in the same pass.
    """
    T = len(ids)
    if not (0 <= i < T - 1 and 0 <= j < T - 1):
        raise ValueError("both swapped tokens must come before the last token")
    names = {layer: f"blocks.{layer}.hook_attn_out" for layer in layers}
    hooks = []
    if not positions and model.cfg.adds_positions:
        hooks = patch("hook_pos_embed", torch.zeros(T, model.cfg.d_model))
    batch = torch.tensor([list(ids), swap(ids, i, j)])
    _, cache = model.run_with_cache(batch, names=list(names.values()), hooks=hooks)
    on = positions and model.cfg.adds_positions
    out = {}
    for layer, name in names.items():
        last = cache[name][:, -1].float().numpy()  # (2, D): original, swapped
        out[layer] = SwapResult(last[0], last[1], on)
    return out


def swap_experiment(
    model: GPT, ids: list[int], i: int, j: int, positions: bool, layer: int = 0
) -> SwapResult:
    """swap_experiments for one layer: the last token's attention output, original and swapped."""
    return swap_experiments(model, ids, i, j, positions, (layer,))[layer]


# ---- claims (docs/ARCHITECTURE.md, Claims) ------------------------------------------------------------------

ROUNDING = 1e-5  # float32 sums in another order differ by ~1e-7 of their size: 100x that


def rounding_limit(result: SwapResult) -> float:
    """The largest difference float rounding explains: ROUNDING x the size of the output (its
    largest number; a random model's outputs are ~1e-3, a trained one's ~1)."""
    return ROUNDING * max(float(np.abs(result.original).max()), 1e-30)


def swap_claim(
    off: SwapResult,
    on: SwapResult | None,
    off_layer1: SwapResult | None,
    causal: bool,
    same_token: bool,
    pos: str = "learned",
) -> Claim:
    """What swapping two earlier tokens did to the last token's attention output, in words:
    positions zeroed (layer 0, and layer 1 when the model has one), positions on. Each change is
    called a change only past float rounding (`rounding_limit`); the layer-1 sentence depends on
    the causal mask (with it, the tokens between the swapped ones saw another prefix; without it,
    every token sees the same set and nothing changes)."""
    limit = rounding_limit(off)
    numbers = {"off": off.max_diff, "limit": limit, "causal": float(causal)}
    numbers |= {"same_token": float(same_token)}
    if on is not None:
        numbers |= {"on": on.max_diff, "limit_on": rounding_limit(on)}
    if off_layer1 is not None:
        numbers |= {"off_layer1": off_layer1.max_diff, "limit_layer1": rounding_limit(off_layer1)}
    if same_token:
        text = (
            "The two tokens picked are the same token, so swapping them leaves the prompt as it "
            "was: nothing can change. Pick two different tokens."
        )
        return Claim(text, False, numbers)
    if pos in INSIDE_ATTENTION:  # nothing to zero: the positions act inside attention
        numbers["inside_attention"] = 1.0
        moved = off.max_diff > limit
        text = (
            f"This model's positions act inside attention ({pos}), so there are no position "
            f"vectors to zero and the invariance does not apply: the two outputs "
            + (
                f"differ by {off.max_diff:.2g}, more than float rounding ({limit:.0e}) explains, "
                "since attention itself weighs tokens by their distance."
                if moved
                else f"agree to about {off.max_diff:.0e}: this swap does not show the positions "
                "at work."
            )
        )
        return Claim(text, moved, numbers)
    parts, made = [], True
    if off.max_diff <= limit:
        parts.append(
            f"With positions zeroed the two outputs agree to about {off.max_diff:.0e}: float "
            "rounding, since the computer adds the same numbers in a different order."
        )
    else:
        made = False
        parts.append(
            f"With positions zeroed the two outputs differ by {off.max_diff:.2g}, more than float "
            f"rounding ({limit:.0e}) explains."
        )
    if on is None:
        parts.append("This model has no positions at all, so word order never reaches layer 0.")
    elif on.max_diff > numbers["limit_on"]:
        parts.append(f"With positions on they differ by up to {on.max_diff:.2g}.")
    else:
        made = False
        parts.append(
            f"With positions on they differ by only {on.max_diff:.0e}, no more than rounding: "
            "this swap does not show the positions at work."
        )
    if off_layer1 is not None:
        d1, limit1 = off_layer1.max_diff, numbers["limit_layer1"]
        if causal and d1 > limit1:
            parts.append(
                f"From layer 1 on the invariance stops even without positions (a difference of "
                f"{d1:.2g} there): the swapped tokens and the ones between them saw a different "
                "set of earlier tokens in layer 0, and the last token reads their outputs in "
                "layer 1. Causal attention is itself a weak source of order."
            )
        elif not causal and d1 <= limit1:
            parts.append(
                f"This model has no causal mask: every token sees the whole prompt, so in layer "
                f"1 too the output is unchanged ({d1:.0e}). Without positions it could not tell "
                "word order at all."
            )
        else:
            made = False
            parts.append(
                f"In layer 1, with positions zeroed, the outputs differ by {d1:.2g} "
                f"(float rounding explains up to {limit1:.0e})."
            )
    return Claim(" ".join(parts), made, numbers)


# Positions given inside attention (config.POSITIONS), said where position vectors would be.
INSIDE_ATTENTION = {
    "rope": (
        "This model adds no position vectors: it uses rotary positions (RoPE). Inside attention "
        "each query and key is rotated by an angle proportional to its position, so the score "
        "of a query for a key depends on how far apart they are, not on a table of positions."
    ),
    "alibi": (
        "This model adds no position vectors: it uses ALiBi. Inside attention each head "
        "subtracts from a score a penalty proportional to the distance between query and key "
        "(its own slope per head), so nearer tokens are favoured without any table of positions."
    ),
}


def no_positions_note(causal: bool, pos: str = "none") -> Claim:
    """What tells a model without position vectors where a token stands (its config decides)."""
    if pos in INSIDE_ATTENTION:
        return Claim(INSIDE_ATTENTION[pos], True, {"causal": float(causal)})
    if causal:
        text = (
            "This model adds no position vectors, so nothing tells it directly where a token "
            "stands. Only the causal mask carries order: a token sees only the tokens before "
            "it, so later layers can infer, for instance, how many came before."
        )
    else:
        text = (
            "This model adds no position vectors and has no causal mask: every token sees the "
            "whole prompt the same way, so to it the prompt is a bag of tokens with no order."
        )
    return Claim(text, True, {"causal": float(causal)})


def shuffled_table(embeddings: torch.Tensor | np.ndarray, seed: int = 0) -> np.ndarray:
    """The same numbers with each dimension shuffled between tokens on its own: every column keeps
    its values (its mean and spread), but which token has which is random. What the neighbours of
    a table without learned structure look like: the chance baseline of `neighbours_claim`."""
    x = np.asarray(embeddings, dtype=np.float32)
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(x[:, d]) for d in range(x.shape[1])], axis=1)


def chance_similarity(x: np.ndarray, token: int, shuffles: int = 4) -> float:
    """The best cosine similarity row `token` finds among the other rows of `shuffled_table(x)`,
    averaged over `shuffles` seeded shuffles."""
    query = F.normalize(torch.as_tensor(x[token]), dim=0)
    best = []
    for seed in range(shuffles):
        others = np.delete(shuffled_table(x, seed), token, axis=0)
        best.append(float((F.normalize(torch.as_tensor(others), dim=-1) @ query).max()))
    return float(np.mean(best))


def neighbours_claim(
    embeddings: torch.Tensor | np.ndarray, token: int, label: str, k: int = 10
) -> Claim:
    """Are a token's nearest neighbours closer than chance? Compares the mean cosine similarity
    of its k nearest tokens with the best similarity the same vector finds in a table with the
    same numbers shuffled between tokens (`chance_similarity`). Claimed when the mean of the k
    best beats the chance table's single best."""
    x = np.asarray(embeddings, dtype=np.float32)
    near = nearest_neighbours(x, token, k)
    mean = float(np.mean(near.similarity))
    chance = chance_similarity(x, token)
    numbers = {"mean": mean, "chance": chance, "k": k}
    if mean > chance:
        text = (
            f"The {k} nearest tokens to `{label}` have a cosine similarity of {mean:.2f} on "
            f"average; in the same table with its numbers shuffled between tokens (no learned "
            f"grouping) the nearest reaches only {chance:.2f}: this model has placed `{label}` "
            "near these tokens."
        )
        return Claim(text, True, numbers)
    text = (
        f"The {k} nearest tokens to `{label}` (cosine similarity {mean:.2f} on average) are no "
        f"closer than the nearest in the same table with its numbers shuffled between tokens "
        f"({chance:.2f}): these neighbours show no learned grouping."
    )
    return Claim(text, False, numbers)
