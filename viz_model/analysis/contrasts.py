"""Architecture contrasts: pairs of small bundled models that differ in one design choice, and the
numbers that show what the choice does.

- `CONTRASTS`: each lesson's two bundles (the usual design first) and how to measure them; every
  Shakespeare pair has `shakespeare-tiny` (pre-LN, learned positions, untied, masked) as its first.
- `look_ahead(model, ids)`: the loss at each position two ways: reading the whole window at once,
  as in training (a model without a causal mask sees the answer there), and as generated, from
  the tokens so far only (the future is not there yet). For a causal model the two are equal.
- `position_losses(model, ids)`: the ordinary loss at each position (the whole window at once).
- `closest_twin(own, others, field)`: the model to set beside one, for a page comparing `field`.
- `like_pair(own_name, configs, field)`: two models that differ in `field` and in nothing else of
  their shape, starting from one (its own twin, or failing that its twin's twin), with whatever
  else differs between them said plainly (`differences`).
- `shape_configs(raws)`: the model configs a like-with-like pair may be drawn from: bundles
  trained from scratch, not one fine-tuned from another (its weights are that model's, trained on).
- `next_token_weight(patterns)`: how much of each head's attention goes to the very next token,
  the one it is asked to predict (zero for any head under a causal mask).
- `look_ahead_claim(...)`, `next_token_claim(...)`: what the mask contrast may say about its
  numbers (docs/ARCHITECTURE.md, Claims), each against its baseline: the masked twin, and even attention.
- `copy_profile(model, ids)`: the mean loss at each position of repeated random sequences (the
  Training dynamics probe), with that page's summary numbers (`dynamics.measure`).

Not here: charts (charts/contrasts.py), streamlit, caching, training (the bundles' commands).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.analysis.dynamics import Measures, measure
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT


@dataclass(frozen=True)
class Contrast:
    """One lesson: two bundles by name (the usual design first), what differs, how to measure."""

    title: str
    models: tuple[str, str]
    differs: str  # the one config field that differs, e.g. "causal"
    # "look_ahead", "copy" or "loss" (validation loss, parameters, curves); "extrapolate" and
    # "kv" are "loss" and then the loss past the context, or the KV cache's memory.
    measure: str
    # fields that change with `differs` by design (a SwiGLU MLP's SiLU and its 8/3 x width)
    with_it: tuple[str, ...] = ()


CONTRASTS: dict[str, Contrast] = {
    "mask": Contrast(
        "Looking ahead is cheating: no causal mask",
        ("shakespeare-tiny", "shakespeare-nomask"),
        "causal",
        "look_ahead",
    ),
    "layers": Contrast(
        "Induction needs two layers",
        ("induction-2l", "induction-1l"),
        "n_layer",
        "copy",
    ),
    "norm": Contrast(
        "Post-LN beside pre-LN",
        ("shakespeare-tiny", "shakespeare-postln"),
        "norm",
        "loss",
    ),
    "sinusoidal": Contrast(
        "Sine-wave positions",
        ("shakespeare-tiny", "shakespeare-sinusoidal"),
        "pos",
        "loss",
    ),
    "nopos": Contrast(
        "No positions at all",
        ("shakespeare-tiny", "shakespeare-nopos"),
        "pos",
        "loss",
    ),
    "tied": Contrast(
        "Tied embeddings",
        ("shakespeare-tiny", "shakespeare-tied"),
        "tie_embeddings",
        "loss",
    ),
    # The parts modern models changed (issue 25); analysis/variants.py measures the last three.
    "rmsnorm": Contrast(
        "RMSNorm beside LayerNorm",
        ("shakespeare-tiny", "shakespeare-rmsnorm"),
        "norm_kind",
        "loss",
    ),
    "swiglu": Contrast(
        "A gated (SwiGLU) MLP",
        ("shakespeare-tiny", "shakespeare-swiglu"),
        "mlp",
        "loss",
        ("act", "d_mlp"),
    ),
    "rope": Contrast(
        "Rotary positions (RoPE), and past the context",
        ("shakespeare-tiny", "shakespeare-rope"),
        "pos",
        "extrapolate",
    ),
    "alibi": Contrast(
        "ALiBi, and past the context",
        ("shakespeare-tiny", "shakespeare-alibi"),
        "pos",
        "extrapolate",
    ),
    "llama": Contrast(
        "A Llama-style block beside GPT-2's, at equal parameters",
        ("shakespeare-tiny", "shakespeare-llama"),
        "norm_kind",
        "loss",
        ("mlp", "act", "d_mlp", "pos", "bias"),
    ),
    "mqa": Contrast(
        "Multi-query attention and the KV cache",
        ("shakespeare-tiny", "shakespeare-mqa"),
        "n_kv_heads",
        "kv",
    ),
}


def with_defaults(config: dict) -> dict:
    """A GPTConfig dict as GPTConfig reads it: the fields an older bundle's lacks take their
    defaults (a config written before RMSNorm existed is a LayerNorm model) and the derived
    ones their values (n_kv_heads 0 is n_head). A config GPTConfig refuses is kept as it is."""
    try:
        return GPTConfig.from_dict(config).to_dict()
    except (TypeError, ValueError):
        return dict(config)


def closest_twin(own: dict, others: dict[str, dict], field: str) -> str | None:
    """The name of the model config (a GPTConfig dict) in `others` whose `field` differs from
    `own`'s and that differs in the fewest other fields (the first such, in order; a field a
    config lacks, from an older bundle, takes its default); None if no config differs in
    `field`. E.g. for a pre-LN model its post-LN twin of the same shape."""
    own = with_defaults(own)
    others = {n: with_defaults(c) for n, c in others.items()}
    differing = {n: c for n, c in others.items() if c.get(field) != own.get(field)}
    if not differing:
        return None
    keys = set(own) - {field}
    return min(differing, key=lambda n: sum(differing[n].get(k, own[k]) != own[k] for k in keys))


def differences(a: dict, b: dict, field: str) -> list[str]:
    """The config fields (a GPTConfig dict) other than `field` in which a and b differ, as
    'n_layer 4 against 2', in a's key order; a field one lacks takes its default."""
    a, b = with_defaults(a), with_defaults(b)
    return [f"{k} {a[k]} against {b[k]}" for k in a if k != field and k in b and a[k] != b[k]]


@dataclass(frozen=True)
class Pair:
    """Two models to compare in `field`: `first` is the model on screen when it has a twin."""

    first: str
    second: str
    differs: list[str]  # every other config field that differs (empty: like with like)


def shape_configs(raws: dict[str, dict]) -> dict[str, dict]:
    """name -> GPTConfig dict of the bundles whose shape alone tells them apart from their twins:
    raws maps a name to its whole config.json. A bundle fine-tuned from another (meta "base", e.g.
    shakespeare-tiny-hyperfit, tuned to recite a few pages) has its base's exact shape but not its
    training, so it is no twin to set beside anything; left out."""
    return {n: r["model"] for n, r in raws.items() if not (r.get("meta") or {}).get("base")}


def like_pair(own_name: str, configs: dict[str, dict], field: str) -> Pair | None:
    """A pair differing in `field`, like with like when the models allow it: the model on screen
    and its closest twin when that twin differs in `field` alone; else that twin and its own
    closest twin (e.g. shakespeare-char, 4 layers of 128, has no post-LN twin; the post-LN
    shakespeare-postln has shakespeare-tiny); else the model on screen and its closest twin with
    what else differs. None when no model differs in `field`. configs: name -> GPTConfig dict,
    the model on screen included; other families' (an LSTM's) are left out: they have no "norm"
    or "pos" to differ in."""
    configs = {n: c for n, c in configs.items() if c.get("family", "gpt") == "gpt"}
    if own_name not in configs:
        return None
    own = configs[own_name]
    others = {n: c for n, c in configs.items() if n != own_name}
    twin = closest_twin(own, others, field)
    if twin is None:
        return None
    if not differences(own, configs[twin], field):
        return Pair(own_name, twin, [])
    rest = {n: c for n, c in configs.items() if n != twin}
    back = closest_twin(configs[twin], rest, field)
    if back is not None and not differences(configs[back], configs[twin], field):
        return Pair(back, twin, [])
    return Pair(own_name, twin, differences(own, configs[twin], field))


@dataclass(frozen=True)
class LookAhead:
    """Loss in nats predicting token t+1 at each position t = 0..T-2 of one sequence."""

    seen: np.ndarray  # (T-1,) from the whole window at once, as in training
    generated: np.ndarray  # (T-1,) from tokens 0..t only, as when generating

    @property
    def mean_seen(self) -> float:
        return float(self.seen.mean())

    @property
    def mean_generated(self) -> float:
        return float(self.generated.mean())


@torch.no_grad()
def position_losses(model: GPT, ids: Sequence[int]) -> np.ndarray:
    """(T-1,) loss in nats predicting token t+1 at each position t, from one forward pass."""
    x = torch.as_tensor(list(ids), dtype=torch.long)  # (T,)
    return F.cross_entropy(model(x)[:-1], x[1:], reduction="none").numpy()


@torch.no_grad()
def look_ahead(model: GPT, ids: Sequence[int]) -> LookAhead:
    """Both losses on `ids` (at least 2 tokens, at most n_ctx): T-1 forward passes for the second,
    one per prefix, since without a mask each prefix's last position reads differently."""
    if not 2 <= len(ids) <= model.cfg.n_ctx:
        raise ValueError(f"look_ahead needs 2 to {model.cfg.n_ctx} tokens, got {len(ids)}")
    x = torch.as_tensor(list(ids), dtype=torch.long)  # (T,)
    last = torch.stack([model(x[: t + 1])[-1] for t in range(len(x) - 1)])  # (T-1, V)
    generated = F.cross_entropy(last, x[1:], reduction="none")
    return LookAhead(position_losses(model, ids), generated.numpy())


def next_token_weight(patterns: Sequence[np.ndarray]) -> np.ndarray:
    """(L, H): each head's mean weight on key t+1 from query t, over t = 0..T-2, from each
    layer's pattern (H, T, T). Example: a head that always looks one ahead scores 1."""
    stacked = np.stack(list(patterns))  # (L, H, T, T)
    ahead = np.diagonal(stacked, offset=1, axis1=-2, axis2=-1)  # (L, H, T-1)
    return ahead.mean(-1) if ahead.shape[-1] else np.zeros(stacked.shape[:2])


@dataclass(frozen=True)
class CopyProfile:
    """A model on B random sequences of k tokens written twice."""

    loss: np.ndarray  # (2k-1,) mean loss in nats predicting token i+1 at position i
    measures: Measures  # the Training dynamics page's numbers (loss on each copy, accuracy)

    @property
    def k(self) -> int:
        return (len(self.loss) + 1) // 2


@torch.no_grad()
def copy_profile(model: GPT, ids: np.ndarray) -> CopyProfile:
    """Per-position loss on the probe ids (B, 2k), and dynamics.measure's summary of it."""
    x = torch.as_tensor(ids, dtype=torch.long)
    logits = model(x).reshape(*x.shape, -1)  # (B, 2k, V)
    loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), x[:, 1:], reduction="none")
    return CopyProfile(loss.mean(0).numpy(), measure(model, ids))


LOOK_AHEAD_MARGIN = 0.1  # nats: a loss is "lower" or "higher" than the twin's beyond this


def look_ahead_claim(masked: tuple[str, LookAhead], unmasked: tuple[str, LookAhead]) -> Claim:
    """Does the model without a mask do better than its masked twin when it sees the whole window
    (it can read the answer) and worse as generated (the answer is not there yet)?"""
    (m, lm), (u, lu) = masked, unmasked
    numbers = dict(
        masked_seen=lm.mean_seen,
        masked_generated=lm.mean_generated,
        unmasked_seen=lu.mean_seen,
        unmasked_generated=lu.mean_generated,
        margin=LOOK_AHEAD_MARGIN,
    )
    cheats = lu.mean_seen < lm.mean_seen - LOOK_AHEAD_MARGIN
    fails = lu.mean_generated > lm.mean_generated + LOOK_AHEAD_MARGIN
    said = (
        f"On your prompt, {u} scores {lu.mean_seen:.2f} nats per token when it sees the whole "
        f"window and {lu.mean_generated:.2f} as generated; {m} scores {lm.mean_seen:.2f} and "
        f"{lm.mean_generated:.2f}."
    )
    if cheats and fails:
        return Claim(
            f"{said} Seeing the answer, {u} does better than its masked twin; writing, worse: "
            "what it learned does not carry over to generation.",
            True,
            numbers,
        )
    return Claim(
        f"{said} On this prompt the difference is not that clear-cut (a margin of "
        f"{LOOK_AHEAD_MARGIN} nats either way).",
        False,
        numbers,
    )


def next_token_claim(name: str, weights: np.ndarray, n_keys: int) -> Claim:
    """Does some head of a model without a mask look at the next token, the answer, more than
    attention spread evenly over all `n_keys` keys would (1 / n_keys), by at least twice?"""
    best = float(np.max(weights)) if np.size(weights) else 0.0
    chance = 1.0 / max(n_keys, 1)
    numbers = dict(best=best, chance=chance, factor=2.0)
    if best > 2 * chance:
        return Claim(
            f"One head of {name} puts {best:.0%} of its attention, on average, on the token "
            "right after its query, the one it is asked to predict; attention spread evenly "
            f"over the {n_keys} tokens would put {chance:.0%} there.",
            True,
            numbers,
        )
    return Claim(
        f"No head of {name} looks at the next token much more than even attention would "
        f"({best:.0%} at most, against {chance:.0%}).",
        False,
        numbers,
    )
