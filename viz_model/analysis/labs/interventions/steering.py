"""Steering: a direction (the difference of two sets' mean residual streams) added entering a
block while generating; how far it pushes the model towards one set's texts, against random
directions of the same length; and what it says straight through the unembedding.

Shapes: D d_model, V vocab, T tokens, K directions, S strengths.
Not here: the sentence about the push (claims.py), the default sets (texts.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.labs.interventions.forward import resid_pre_name
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, custom
from viz_model.model.sampling import SamplingSettings, generate


@torch.no_grad()
def mean_resid(model: GPT, prompts: list[list[int]], layer: int) -> torch.Tensor:
    """The residual stream entering block `layer`, averaged over every token of every prompt (D,)."""
    name = resid_pre_name(layer)
    rows = []
    for ids in prompts:
        _, cache = model.run_with_cache(torch.tensor(ids[-model.cfg.n_ctx :]), names=[name])
        rows.append(cache[name])  # (T, D)
    return torch.cat(rows).mean(0)


def steering_vector(
    model: GPT, prompts_a: list[list[int]], prompts_b: list[list[int]], layer: int
) -> torch.Tensor:
    """mean residual over the prompts of A minus that over B, entering block `layer` (D,)."""
    if not prompts_a or not prompts_b:
        raise ValueError("each set needs at least one prompt")
    return mean_resid(model, prompts_a, layer) - mean_resid(model, prompts_b, layer)


def steering_hooks(layer: int, vector: torch.Tensor, strength: float) -> list[tuple[str, HookFn]]:
    """Add strength * vector to the residual stream entering block `layer`, at every position."""
    return custom(resid_pre_name(layer), lambda x, hook: x + strength * vector.to(x))


def steered_generation(
    model: GPT,
    ids: list[int],
    layer: int,
    vector: torch.Tensor,
    strength: float,
    n_tokens: int,
    seed: int,
    settings: SamplingSettings | None = None,
) -> tuple[list[int], list[int]]:
    """(new tokens without steering, new tokens with it), same seed: any difference is the push."""
    settings = settings or SamplingSettings()
    plain = generate(model, ids, n_tokens, settings, seed)
    with model.intervene(steering_hooks(layer, vector, strength)):
        steered = generate(model, ids, n_tokens, settings, seed)
    return plain, steered


STEER_ALPHAS = (-10.0, -5.0, 0.0, 5.0, 10.0)  # the push is measured across these
N_RANDOM = 8  # random directions of the same length: what steering by chance does


@dataclass(frozen=True)
class SteeringPush:
    """How far steering pushes the model towards the A texts rather than the B texts.

    score = mean log p(A text) - mean log p(B text), each text's log p its mean per token (each
    token given those before it): positive = the model finds A likelier.
    push[i] = score with alphas[i] * v added minus score without steering (nats per token).
    random[k, i]: the same push when the direction is the k-th random vector of v's length, the
    chance baseline: any vector added to the stream moves the score a little.
    """

    alphas: np.ndarray  # (S,)
    push: np.ndarray  # (S,)
    random: np.ndarray  # (K, S)
    score_plain: float  # the score without steering

    @property
    def chance(self) -> np.ndarray:
        """(S,) the largest |push| of a random direction at each alpha."""
        return np.abs(self.random).max(0, initial=0.0)

    def at(self, alpha: float) -> tuple[float, float]:
        """(push, chance) at `alpha`: chance = the largest |push| of a random direction."""
        i = int(np.argmin(np.abs(self.alphas - alpha)))
        return float(self.push[i]), float(self.chance[i])


def random_directions(vector: torch.Tensor, k: int, seed: int = 0) -> torch.Tensor:
    """k seeded random directions with the length of `vector`: (k, D)."""
    gen = torch.Generator().manual_seed(seed)
    r = torch.randn(k, vector.shape[-1], generator=gen)
    return r / r.norm(dim=-1, keepdim=True) * vector.norm()


@torch.no_grad()
def steering_push(
    model: GPT,
    texts_a: list[list[int]],
    texts_b: list[list[int]],
    layer: int,
    vector: torch.Tensor,
    alphas: Iterable[float] = STEER_ALPHAS,
    n_random: int = N_RANDOM,
    seed: int = 0,
    context: list[int] = (),
) -> SteeringPush:
    """Measure the push of `vector` (and of n_random random vectors of its length) at each alpha
    (and 0): every text of A and B scored (after `context`, if given), with alpha * direction added entering block
    `layer`. One forward per text, all directions and alphas as one batch."""
    if not texts_a or not texts_b:
        raise ValueError("each set needs at least one text")
    alphas = np.array(sorted({0.0, *(float(a) for a in alphas)}))
    dirs = torch.cat([vector[None].float(), random_directions(vector.float(), n_random, seed)])
    K, S = dirs.shape[0], len(alphas)
    add = (torch.tensor(alphas, dtype=torch.float32)[None, :, None] * dirs[:, None]).flatten(0, 1)

    def mean_logp(texts: list[list[int]]) -> torch.Tensor:  # -> (K * S,)
        out = []
        for text in texts:
            seq = (list(context) + list(text))[-model.cfg.n_ctx :]
            n = min(len(text), len(seq) - 1)
            if n < 1:
                continue
            ids = torch.tensor(seq).expand(K * S, -1)
            push = custom(resid_pre_name(layer), lambda x, hook: x + add[:, None].to(x))
            with model.intervene(push):
                logits = model(ids)[:, -n - 1 : -1]  # (K * S, n, V)
            logp = torch.log_softmax(logits.float(), -1)
            target = torch.tensor(seq[-n:]).expand(K * S, -1)
            out.append(logp.gather(-1, target[..., None])[..., 0].mean(-1))
        if not out:
            raise ValueError("no text has a token to score")
        return torch.stack(out).mean(0)

    score = (mean_logp(texts_a) - mean_logp(texts_b)).view(K, S).numpy()
    zero = int(np.argmin(np.abs(alphas)))
    push = score - score[:, zero : zero + 1]
    return SteeringPush(alphas, push[0], push[1:], float(score[0, zero]))


def direction_logits(model: GPT, vector: torch.Tensor) -> np.ndarray:
    """What a direction says directly about the next token: vector @ W_U (V,), no LayerNorm."""
    with torch.no_grad():
        return (vector @ model.W_U).numpy()


@dataclass(frozen=True)
class DirectionReport:
    """A steering direction in numbers: its length, and the tokens it raises and lowers most
    when read straight through the unembedding (id, logit change), largest change first."""

    norm: float
    raised: list[tuple[int, float]]
    lowered: list[tuple[int, float]]


def direction_report(model: GPT, vector: torch.Tensor, k: int = 10) -> DirectionReport:
    logits = direction_logits(model, vector)
    order = np.argsort(-logits, kind="stable")
    pairs = [(int(i), float(logits[i])) for i in order]
    return DirectionReport(float(vector.norm()), pairs[:k], pairs[::-1][:k])
