"""The residual stream read layer by layer: its norm, the logit lens, and direct logit attribution.

- `residual_norms`: how long the residual vector of each token is before each block and after the last.
- `growth_claim(mean lengths)`, `spread_claim(norms)`: what the page may say about those lengths.
- `logit_lens`: read the residual after each layer through the final LayerNorm and the unembedding,
  as if the model stopped there (nostalgebraist's "logit lens").
- `direct_logit_attribution`: how much each component (embeddings, each attention layer and head,
  each MLP) pushes one output token's logit up or down at one position.

The attribution linearises the final LayerNorm: its mean and scale (sigma) are taken as recorded at
that position, so LN(x) = (x - mean(x)) / sigma * gamma + beta is linear in x, and each component's
share is (c - mean(c)) / sigma * gamma . W_U[:, token]. The shares plus beta . W_U[:, token] sum to the
logit exactly. Post-LN models end in a LayerNorm inside the last block, after the last MLP, so the
decomposition does not hold for them; `direct_logit_attribution` refuses them.

Not here: charts (charts/residual.py) and anything about a single LayerNorm (analysis/layernorm.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.model.cache import ActivationCache
from viz_model.model.gpt import GPT


def layer_labels(n_layer: int) -> list[str]:
    """Names of the residual stream's stations: 'embed' (before block 0), then 'after block l'."""
    return ["embed"] + [f"after block {i}" for i in range(n_layer)]


def residual_names(model: GPT) -> list[str]:
    """The hook names `ActivationCache.resid_stack` needs."""
    n = model.cfg.n_layer
    return [f"blocks.{i}.hook_resid_pre" for i in range(n)] + [f"blocks.{n - 1}.hook_resid_post"]


def residual_norms(cache: ActivationCache) -> np.ndarray:
    """The L2 norm of each token's residual vector at each station: (n_layer + 1, T)."""
    return cache.resid_stack().norm(dim=-1).float().cpu().numpy()


# ---- logit lens -------------------------------------------------------------------------------


@dataclass
class LogitLens:
    """The residual after each layer read out as a next-token guess.

    top_ids / top_probs: (n_layer + 1, T) the most likely token at each station and its probability.
    final_ids: (T,) the model's real prediction (the argmax of the real logits).
    final_probs: (n_layer + 1, T) the probability each station gives to that real prediction.
    """

    top_ids: np.ndarray
    top_probs: np.ndarray
    final_ids: np.ndarray
    final_probs: np.ndarray


def lens_logits(model: GPT, cache: ActivationCache) -> torch.Tensor:
    """Logits read out of every station: final_norm then unembed, (n_layer + 1, T, V)."""
    with torch.no_grad():
        return model.unembed(model.final_norm(cache.resid_stack()))


def logit_lens(model: GPT, cache: ActivationCache) -> LogitLens:
    """The logit lens of one prompt; the last station's readout equals the model's own logits."""
    probs = torch.softmax(lens_logits(model, cache).float(), dim=-1)  # (L+1, T, V)
    top_probs, top_ids = probs.max(dim=-1)
    final_ids = top_ids[-1]
    final_probs = probs.gather(-1, final_ids[None, :, None].expand(probs.shape[0], -1, 1))[..., 0]
    return LogitLens(
        top_ids=top_ids.cpu().numpy(),
        top_probs=top_probs.cpu().numpy(),
        final_ids=final_ids.cpu().numpy(),
        final_probs=final_probs.cpu().numpy(),
    )


# ---- direct logit attribution -----------------------------------------------------------------


@dataclass
class Attribution:
    """Direct logit attribution of one token's logit at one position.

    labels / values: one entry per component, in forward order: 'embed', 'pos', then per layer
      'attn l' (heads + the output bias) and 'mlp l' (its output, biases included).
    head_values: (n_layer, n_head) each head's share; head_values[l].sum() + attn_bias[l] == attn l.
    attn_bias: (n_layer,) the share of each attention layer's output bias.
    ln_bias: beta . W_U[:, token], the final LayerNorm's bias term (0 without biases).
    logit: the model's real logit for the token; sum(values) + ln_bias == logit.
    """

    position: int
    token: int
    labels: list[str]
    values: np.ndarray
    head_values: np.ndarray
    attn_bias: np.ndarray
    ln_bias: float
    logit: float


def attribution_names(model: GPT) -> list[str]:
    """The hook names `direct_logit_attribution` needs in the cache."""
    cfg = model.cfg
    names = ["hook_embed", "unembed.hook_out"]
    if model.ln_final is not None:
        names.append("ln_final.hook_scale")
    if cfg.adds_positions:
        names.append("hook_pos_embed")
    for i in range(cfg.n_layer):
        names += [f"blocks.{i}.hook_attn_out", f"blocks.{i}.attn.hook_result"]
        if not cfg.attn_only:
            names.append(f"blocks.{i}.hook_mlp_out")
    return names


def stream_is_a_sum(cfg) -> bool:
    """Whether the last residual vector is the plain sum of what each component wrote: residual
    connections, and no LayerNorm on the stream itself (pre-LN, or no normalization)."""
    return cfg.residual and (cfg.norm == "pre" or cfg.norm_kind == "none")


def supports_attribution(model: GPT) -> bool:
    """Direct logit attribution is exact only when the stream is a sum (`stream_is_a_sum`): the
    last norm, if any, comes after every block."""
    return stream_is_a_sum(model.cfg)


def direct_logit_attribution(
    model: GPT, cache: ActivationCache, position: int, token: int
) -> Attribution:
    """Each component's push on `token`'s logit at `position`, through the linearised final LN.

    share(c) = (c - mean(c)) / sigma * gamma . W_U[:, token], sigma = ln_final.hook_scale[position];
    after an RMSNorm c is not centred, and without a final norm share(c) = c . W_U[:, token].
    """
    if not supports_attribution(model):
        raise ValueError(
            "direct logit attribution needs a pre-LN model: in a post-LN model a LayerNorm sits "
            "after the last MLP, inside the block, so the outputs do not add up to the logits"
            if model.cfg.residual
            else "direct logit attribution needs residual connections: without them each block "
            "replaces the stream, so the outputs do not add up to the logits"
        )
    cfg = model.cfg
    ln = model.ln_final
    with torch.no_grad():
        if ln is None:
            direction, centre = model.W_U[:, token], False
        else:
            sigma = cache["ln_final.hook_scale"][position, 0]
            direction = ln.weight * model.W_U[:, token] / sigma  # (D,)
            centre = cfg.norm_kind == "layernorm"

        def share(c: torch.Tensor) -> torch.Tensor:
            return ((c - c.mean(-1, keepdim=True) if centre else c) * direction).sum(-1)

        labels, values = [], []
        for label, out in cache.layer_outputs():
            labels.append(label)
            values.append(share(out[position]))
        heads = torch.stack(
            [share(cache[f"blocks.{i}.attn.hook_result"][position]) for i in range(cfg.n_layer)]
        )  # (L, H)
        biases = []
        for i in range(cfg.n_layer):
            b = model.blocks[i].attn.out.bias
            biases.append(share(b) if b is not None else torch.zeros(()))
        beta = None if ln is None else ln.bias
        ln_bias = float(beta @ model.W_U[:, token]) if beta is not None else 0.0
        logit = float(cache["unembed.hook_out"][position, token])
    return Attribution(
        position=position,
        token=token,
        labels=labels,
        values=torch.stack(values).float().cpu().numpy(),
        head_values=heads.float().cpu().numpy(),
        attn_bias=torch.stack(biases).float().cpu().numpy(),
        ln_bias=ln_bias,
        logit=logit,
    )


# ---- one call per page section (model + token ids in, numpy out) ------------------------------


@dataclass
class LensReport:
    """What the residual stream page draws before any choice: norms (L + 1, T) and the lens."""

    stations: list[str]
    norms: np.ndarray
    lens: LogitLens
    logits: np.ndarray  # (T, V) the model's real logits


def lens_report(model: GPT, ids: list[int]) -> LensReport:
    """Residual norms and the logit lens of one prompt."""
    names = residual_names(model) + ["unembed.hook_out"]
    logits, cache = model.run_with_cache(torch.tensor(ids, dtype=torch.long), names=names)
    return LensReport(
        stations=layer_labels(model.cfg.n_layer),
        norms=residual_norms(cache),
        lens=logit_lens(model, cache),
        logits=logits.float().cpu().numpy(),
    )


def attribution_for(model: GPT, ids: list[int], position: int, token: int) -> Attribution:
    """Direct logit attribution of `token` at `position` of a prompt (pre-LN models only)."""
    _, cache = model.run_with_cache(
        torch.tensor(ids, dtype=torch.long), names=attribution_names(model)
    )
    return direct_logit_attribution(model, cache, position, token)


def attribution_from_activations(
    model: GPT, activations: dict[str, np.ndarray], position: int, token: int
) -> Attribution:
    """`direct_logit_attribution` from activations recorded earlier (numpy, batch dim dropped, the
    names of `attribution_names`), so choosing another position or token needs no forward pass."""
    # torch.tensor copies: the arrays may be a cache's shared read-only ones (ui/shared_cache.py)
    store = {name: torch.tensor(np.asarray(a))[None] for name, a in activations.items()}
    return direct_logit_attribution(
        model, ActivationCache(store, model.cfg.n_layer, model=model), position, token
    )


# ---- claims about the norm (docs/ARCHITECTURE.md, Claims) -----------------------------------------------
# The lengths are measured on the prompt, not sampled: any rise is a rise and any fall a fall.
GROWTH_TOLERANCE = 0.0
SPREAD_TOLERANCE = 0.10  # post-LN: tokens "have about the same norm" when std/mean is below this


def _path(lengths: np.ndarray) -> str:
    return " → ".join(f"{v:.2f}" for v in lengths)


def growth_claim(lengths: np.ndarray, tol: float = GROWTH_TOLERANCE) -> Claim:
    """What each block did to the stream's mean length (embed, after block 0, ...): "grows at every
    block" only when every block lengthens it by more than `tol` (a relative change); otherwise
    each block's change, signed. A block adds a vector: that shortens the stream when the
    addition points partly against it, as well as lengthening it otherwise. For a pre-LN model,
    whose stream is that plain sum.

    >>> growth_claim(np.array([1.0, 5.0, 4.9])).made  # 1.00 → 5.00 → 4.90: block 1 shortened it
    False
    """
    lengths = np.asarray(lengths, dtype=float)
    change = lengths[1:] / lengths[:-1] - 1
    numbers = {f"length_{i}": float(v) for i, v in enumerate(lengths)} | {"tol": tol}
    if change.size and bool(np.all(change > tol)):
        return Claim(f"Here the mean length grows at every block: {_path(lengths)}.", True, numbers)
    each = ", ".join(f"block {i}: {c:+.1%}" for i, c in enumerate(change))
    shrank = [str(i) for i, c in enumerate(change) if c < -tol]
    return Claim(
        f"Here the mean length does not grow at every block: {_path(lengths)} ({each})."
        + (
            f" {'Block' if len(shrank) == 1 else 'Blocks'} {' and '.join(shrank)} added, at "
            "some tokens, a vector pointing partly against the stream, which shortened it."
            if shrank
            else ""
        ),
        False,
        numbers,
    )


def mean_norms(norms: np.ndarray) -> np.ndarray:
    """(L + 1,) the mean over the prompt's tokens of each station's norms (L + 1, T)."""
    return np.asarray(norms, dtype=float).mean(axis=-1)


def spread_claim(norms: np.ndarray, tol: float = SPREAD_TOLERANCE) -> Claim:
    """After every block, do the prompt's tokens have about the same norm (std / mean below
    `tol` at each station after the embedding)? What a post-LN model's LayerNorms would give."""
    norms = np.asarray(norms, dtype=float)[1:]
    spread = norms.std(axis=-1) / norms.mean(axis=-1)
    worst = float(spread.max()) if spread.size else 0.0
    numbers = {f"spread_{i}": float(v) for i, v in enumerate(spread)} | {"tol": tol}
    if worst < tol:
        return Claim(
            "Here, after every block, the tokens' norms differ by less than "
            f"{tol:.0%} of their mean (at most {worst:.1%}): about the same length.",
            True,
            numbers,
        )
    return Claim(
        f"Here the tokens' norms after a block differ by up to {worst:.0%} of their mean "
        "(standard deviation over mean): the gains γ and biases β leave them of different lengths.",
        False,
        numbers,
    )
