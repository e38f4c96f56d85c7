"""Interventions: change one part of the model while it runs, and measure what breaks.

Covers: ablation (zero or mean) of attention heads, whole MLP layers and single neurons, with the
next-token distribution and the loss on validation text before and after, and a sweep that ablates
each head in turn; activation patching from a clean prompt into a corrupted one (the residual stream
at each layer and position, and each head's output), scored by the normalised logit difference;
steering by a direction (the difference of two mean residual streams) added while generating;
removing or shuffling the position embeddings; and baking a zero ablation into a copy's weights,
so a damaged model can be trained again.

Every change goes through hooks (model.intervene / run_with_cache(hooks=...)): per call and per
thread, so the shared model is never modified. Shapes: L layers, H heads, E d_head, D d_model,
M d_mlp, V vocab, T tokens, N validation windows.
Not here: the figures (charts/interventions.py), the training job (jobs.start_damaged).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim, as_printed, md_escape
from viz_model.model.gpt import GPT
from viz_model.model.hooks import HookFn, HookPoint, ablate_heads, custom
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.data import load_text

HOW = ("zero", "mean")


def z_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


def mlp_out_name(layer: int) -> str:
    return f"blocks.{layer}.hook_mlp_out"


def post_name(layer: int) -> str:
    return f"blocks.{layer}.mlp.hook_post"


def resid_pre_name(layer: int) -> str:
    return f"blocks.{layer}.hook_resid_pre"


# ---- what to ablate ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ablation:
    """Which parts to knock out, and how: "zero" sets them to 0, "mean" to their mean over a
    reference text (or over the prompt itself when no reference means are given)."""

    heads: tuple[tuple[int, int], ...] = ()  # (layer, head)
    mlps: tuple[int, ...] = ()  # layers whose whole MLP output is removed
    neurons: tuple[tuple[int, int], ...] = ()  # (layer, neuron) of hook_post
    how: str = "zero"

    def __post_init__(self) -> None:
        if self.how not in HOW:
            raise ValueError(f"ablation must be 'zero' or 'mean', got {self.how!r}")

    @property
    def empty(self) -> bool:
        return not (self.heads or self.mlps or self.neurons)

    def describe(self) -> str:
        """Plain words: "heads L0H1, L1H3; MLP 1; neurons L0N5" (or "nothing")."""
        parts = []
        if self.heads:
            parts.append("head" + "s" * (len(self.heads) > 1) + " " + format_heads(self.heads))
        if self.mlps:
            parts.append("MLP " + ", ".join(str(layer) for layer in self.mlps))
        if self.neurons:
            parts.append("neurons " + format_neurons(self.neurons))
        return "; ".join(parts) or "nothing"


def format_heads(heads: Iterable[tuple[int, int]]) -> str:
    """[(0, 1), (1, 3)] -> "L0H1, L1H3"."""
    return ", ".join(f"L{layer}H{head}" for layer, head in heads)


def format_neurons(neurons: Iterable[tuple[int, int]]) -> str:
    return ", ".join(f"L{layer}N{n}" for layer, n in neurons)


_NEURON = re.compile(r"^\s*L?(\d+)\s*[N.:/ ]\s*(\d+)\s*$", re.IGNORECASE)


def parse_neurons(text: str, n_layer: int, d_mlp: int) -> tuple[list[tuple[int, int]], list[str]]:
    """Neurons written "L1N37, L0N5" (or "1.37"), sorted and unique, and a message per entry
    that could not be read or is out of range.

    >>> parse_neurons("L1N3, 0.2, x, L9N1", 2, 8)
    ([(0, 2), (1, 3)], ["'x' is not a neuron: write it like L1N37", 'L9N1: the model has layers 0-1'])
    """
    found, problems = set(), []
    for item in (s for s in re.split(r"[,;\n]+", text) if s.strip()):
        m = _NEURON.match(item)
        if not m:
            problems.append(f"{item.strip()!r} is not a neuron: write it like L1N37")
            continue
        layer, n = int(m.group(1)), int(m.group(2))
        if layer >= n_layer:
            problems.append(f"L{layer}N{n}: the model has layers 0-{n_layer - 1}")
        elif n >= d_mlp:
            problems.append(f"L{layer}N{n}: a layer has neurons 0-{d_mlp - 1}")
        else:
            found.add((layer, n))
    return sorted(found), problems


def parse_heads(text: str, n_layer: int, n_head: int) -> list[tuple[int, int]]:
    """Heads from the URL form "0.1,1.3" (layer.head); unreadable or out-of-range items dropped."""
    out = set()
    for item in str(text).split(","):
        m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", item)
        if m and int(m.group(1)) < n_layer and int(m.group(2)) < n_head:
            out.add((int(m.group(1)), int(m.group(2))))
    return sorted(out)


def parse_ints(text: str, n: int) -> list[int]:
    """The ints 0..n-1 in a comma list ("0,2"), sorted, each once; others dropped."""
    return sorted({int(s) for s in str(text).split(",") if s.strip().isdigit() and int(s) < n})


def heads_to_url(heads: Iterable[tuple[int, int]]) -> str:
    return ",".join(f"{layer}.{head}" for layer, head in sorted(heads))


# ---- running with an ablation -----------------------------------------------------------------


def reference_means(model: GPT, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each head's z (H, E), each MLP output (D,) and each neuron (M,) averaged over every token
    of `ids` ((T,) or (N, T), at most n_ctx long): what mean ablation puts in their place."""
    names = [z_name(layer) for layer in range(model.cfg.n_layer)]
    if not model.cfg.attn_only:
        names += [
            n for layer in range(model.cfg.n_layer) for n in (mlp_out_name(layer), post_name(layer))
        ]
    _, cache = model.run_with_cache(ids, names=names)
    batched = ids.dim() == 2 and ids.shape[0] > 1  # the cache keeps the batch axis then
    return {name: (cache[name].flatten(0, 1) if batched else cache[name]).mean(0) for name in names}


def _replace(x: torch.Tensor, value: torch.Tensor | None, cols: list[int] | None) -> torch.Tensor:
    """x (B, T, C) with columns `cols` (all when None) set to 0 or to value's; value is (C,) or
    None, meaning the mean over this call's own tokens."""
    out = x.clone()
    sel = slice(None) if cols is None else cols
    if value is None:
        out[..., sel] = x[..., sel].mean(dim=1, keepdim=True)
    else:
        out[..., sel] = value.to(x)[sel]
    return out


def ablation_hooks(
    model: GPT, ablation: Ablation, means: dict[str, torch.Tensor] | None = None
) -> list[tuple[str, HookFn]]:
    """The (hook name, fn) pairs that carry out `ablation`; mean ablation uses `means` (from
    reference_means) when given, else each call's own mean over its tokens."""
    mean = ablation.how == "mean"
    pairs: list[tuple[str, HookFn]] = []
    by_layer: dict[int, list[int]] = {}
    for layer, head in ablation.heads:
        by_layer.setdefault(layer, []).append(head)
    for layer, heads in sorted(by_layer.items()):
        m = means.get(z_name(layer)) if mean and means else None
        pairs += ablate_heads(layer, heads, ablation.how, means=m)
    for layer in ablation.mlps:
        value = None if mean else torch.zeros(model.cfg.d_model)
        if mean and means:
            value = means[mlp_out_name(layer)]
        pairs += custom(mlp_out_name(layer), lambda x, hook, v=value: _replace(x, v, None))
    neurons: dict[int, list[int]] = {}
    for layer, n in ablation.neurons:
        neurons.setdefault(layer, []).append(n)
    for layer, cols in sorted(neurons.items()):
        value = None if mean else torch.zeros(model.cfg.d_mlp)
        if mean and means:
            value = means[post_name(layer)]
        pairs += custom(post_name(layer), lambda x, hook, v=value, c=cols: _replace(x, v, c))
    return pairs


def validation_windows(ids: list[int], n_ctx: int, max_tokens: int = 512) -> torch.Tensor:
    """Cut a token list into whole windows of n_ctx + 1 tokens (inputs and their next tokens),
    at most max_tokens in all: (N, min(n_ctx, len - 1) + 1). One shorter window if it is short."""
    width = min(n_ctx, len(ids) - 1, max_tokens) + 1
    if width < 2:
        raise ValueError("the validation text needs at least two tokens")
    n = max(1, min(len(ids) // width, max(1, max_tokens // width)))
    return torch.tensor(ids[: n * width], dtype=torch.long).view(n, width)


@torch.no_grad()
def loss(model: GPT, windows: torch.Tensor, hooks: list[tuple[str, HookFn]] = ()) -> float:
    """Mean cross-entropy (nats per token) of predicting each next token in windows (N, T + 1)."""
    with model.intervene(hooks):
        logits = model(windows[:, :-1])  # (N, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()))


@torch.no_grad()
def token_losses(
    model: GPT, windows: torch.Tensor, hooks: list[tuple[str, HookFn]] = ()
) -> np.ndarray:
    """Cross-entropy of each next token in windows (N, T + 1): (N, T) nats."""
    with model.intervene(hooks):
        logits = model(windows[:, :-1])  # (N, T, V)
    ce = F.cross_entropy(logits.flatten(0, 1).float(), windows[:, 1:].flatten(), reduction="none")
    return ce.view(windows.shape[0], -1).numpy()


N_CHUNKS = 16  # the held-out text is cut into this many stretches to measure the noise
MIN_CHUNK = 8  # tokens: stretches are never shorter (so a short text gives fewer)
NOISE_SE = 2.0  # a change is beyond noise when it is larger than this many standard errors


def chunk_se(diff: np.ndarray) -> tuple[float, int]:
    """(standard error, number of stretches) of the mean of a per-token change (..., n): the
    tokens in order are cut into up to N_CHUNKS stretches of at least MIN_CHUNK tokens, and the
    error is the spread of the stretches' means over sqrt(their number): how much the change
    would differ on another stretch of text. NaN below two stretches. Leading axes are kept."""
    diff = np.asarray(diff, dtype=float)
    n = diff.shape[-1]
    k = min(N_CHUNKS, n // MIN_CHUNK)
    if k < 2:
        return np.full(diff.shape[:-1], np.nan) if diff.ndim > 1 else float("nan"), k
    means = np.stack([c.mean(-1) for c in np.array_split(diff, k, axis=-1)], -1)
    se = means.std(-1, ddof=1) / np.sqrt(k)
    return (se if diff.ndim > 1 else float(se)), k


@torch.no_grad()
def last_probs(model: GPT, ids: list[int], hooks: list[tuple[str, HookFn]] = ()) -> np.ndarray:
    """The next-token probabilities after the prompt (V,)."""
    with model.intervene(hooks):
        logits = model(torch.tensor(ids, dtype=torch.long))[-1]
    return torch.softmax(logits.float(), -1).numpy()


@dataclass(frozen=True)
class Effect:
    """An intervention's effect: the next-token distribution and the validation loss, before and
    after."""

    p_before: np.ndarray  # (V,)
    p_after: np.ndarray  # (V,)
    loss_before: float
    loss_after: float
    change_se: float = float("nan")  # standard error of loss_change across stretches of text
    n_chunks: int = 0  # how many stretches it was measured on

    @property
    def loss_change(self) -> float:
        return self.loss_after - self.loss_before

    def changed_tokens(self, n: int) -> np.ndarray:
        """The n tokens most likely before or after, most likely before first."""
        score = np.maximum(self.p_before, self.p_after)
        top = np.argsort(-score, kind="stable")[:n]
        return top[np.argsort(-self.p_before[top], kind="stable")]

    def total_variation(self) -> float:
        """Half the sum of |p_after - p_before|: the share of probability that moved (0..1)."""
        return float(0.5 * np.abs(self.p_after - self.p_before).sum())


def effect(
    model: GPT, ids: list[int], windows: torch.Tensor, hooks: list[tuple[str, HookFn]]
) -> Effect:
    """The next token after `ids` and the loss on `windows`, without and with `hooks` (and the
    noise of the loss change across stretches of the windows)."""
    return effect_from(model, ids, windows, hooks, hooks)


def effect_from(
    model: GPT,
    ids: list[int],
    windows: torch.Tensor,
    hooks: list[tuple[str, HookFn]],
    window_hooks: list[tuple[str, HookFn]],
) -> Effect:
    """`effect`, with separate hooks for the prompt and the windows (positions depend on length)."""
    before, after = token_losses(model, windows), token_losses(model, windows, window_hooks)
    se, k = chunk_se((after - before).ravel())
    return Effect(
        last_probs(model, ids),
        last_probs(model, ids, hooks),
        float(before.mean()),
        float(after.mean()),
        se,
        k,
    )


def loss_change_claim(eff: Effect, what: str) -> Claim:
    """ "<what> raises the held-out loss by d nats", only when d is beyond NOISE_SE standard
    errors across stretches of the text; a neutral sentence otherwise."""
    d, se = eff.loss_change, eff.change_se
    numbers = {"change": d, "se": se, "n_chunks": eff.n_chunks, "noise_se": NOISE_SE}
    # the change as the two printed losses give it (2.537 to 2.553 is +0.016, whatever the
    # unrounded difference)
    shown = as_printed(eff.loss_after, 3) - as_printed(eff.loss_before, 3)
    fig = f"from {eff.loss_before:.3f} to {eff.loss_after:.3f} nats per token ({shown:+.3f})"
    if not np.isfinite(se):
        return Claim(
            f"{what} changes the loss {fig}; the text is too short to tell that from noise.",
            False,
            numbers,
        )
    noise = (
        f"noise: {NOISE_SE:g} standard errors = {NOISE_SE * se:.3f}, from how the change varies "
        f"over {eff.n_chunks} stretches of the text"
    )
    if abs(d) > NOISE_SE * se:
        verb = "raises" if d > 0 else "lowers"
        return Claim(f"{what} {verb} the loss {fig}, beyond noise ({noise}).", True, numbers)
    return Claim(
        f"{what} changes the loss {fig}, within noise ({noise}): no effect can be claimed.",
        False,
        numbers,
    )


def run_from(model: GPT, layer: int, resid: torch.Tensor, last_only: bool = False) -> torch.Tensor:
    """The rest of the forward pass from the residual stream entering block `layer` (B, T, D):
    blocks layer.. L-1, the final norm, the unembedding -> logits (B, T, V), or (B, 1, V) for the
    last position only. Hooks of the active context still apply. `layer` = L runs no block.

    What the sweep and the patching share: copies that differ only from block `layer` on need
    not recompute the blocks before it."""
    x = resid
    for block in model.blocks[layer:]:
        x = block(x)
    if last_only:
        x = x[:, -1:]
    return model.unembed(model.final_norm(x))


def _resid_names(model: GPT) -> list[str]:
    """The residual stream entering each block, then leaving the last: L + 1 names."""
    L = model.cfg.n_layer
    return [resid_pre_name(layer) for layer in range(L)] + [f"blocks.{L - 1}.hook_resid_post"]


def _head_fn(how: str, H: int, N: int, mean: torch.Tensor | None) -> HookFn:
    """hook_z for H copies of a batch of N: copy h has head h ablated. z: (H * N, T, H, E)."""

    def fn(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        z = z.clone().view(H, N, *z.shape[1:])
        for h in range(H):
            if how == "zero":
                z[h, :, :, h] = 0.0
            elif mean is not None:
                z[h, :, :, h] = mean[h].to(z)
            else:  # each window's own mean over its tokens
                z[h, :, :, h] = z[h, :, :, h].mean(dim=1, keepdim=True)
        return z.flatten(0, 1)

    return fn


@dataclass(frozen=True)
class HeadSweep:
    """Each head's ablation's loss increase (L, H), its standard error across stretches of the
    text (L, H; NaN when the text is too short) and the number of stretches."""

    increase: np.ndarray
    se: np.ndarray
    n_chunks: int


def head_sweep(
    model: GPT,
    windows: torch.Tensor,
    how: str = "zero",
    means: dict[str, torch.Tensor] | None = None,
) -> np.ndarray:
    """The validation loss increase when each head alone is ablated: (L, H)."""
    return head_sweep_stats(model, windows, how, means).increase


@torch.no_grad()
def head_sweep_stats(
    model: GPT,
    windows: torch.Tensor,
    how: str = "zero",
    means: dict[str, torch.Tensor] | None = None,
) -> HeadSweep:
    """The validation loss increase when each head alone is ablated, with its noise.

    One clean run records the residual stream entering each block; then, per layer, H copies of
    it (a batch of H * N windows, copy h with head h ablated) run from that block on. The sweep
    costs about (L + 1) / 2 forward passes of H * N windows instead of L.
    """
    L, H = model.cfg.n_layer, model.cfg.n_head
    x, y = windows[:, :-1], windows[:, 1:]
    N = x.shape[0]
    logits, cache = model.run_with_cache(x, names=_resid_names(model)[:L])
    base = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").numpy()  # (N*T,)
    resid = {name: cache[name].view(N, *x.shape[1:], -1) for name in cache}  # (N, T, D) each
    diff = np.zeros((L, H, base.size))
    for layer in range(L):
        mean = None if how == "zero" else (means or {}).get(z_name(layer))
        with model.intervene(custom(z_name(layer), _head_fn(how, H, N, mean))):
            logits = run_from(model, layer, resid[resid_pre_name(layer)].repeat(H, 1, 1))
        ce = F.cross_entropy(logits.flatten(0, 1), y.repeat(H, 1).flatten(), reduction="none")
        diff[layer] = ce.view(H, -1).numpy() - base
    se, k = chunk_se(diff)
    return HeadSweep(diff.mean(-1), se, k)


def head_sweep_claim(sweep: HeadSweep, k: int = 3, untrained: HeadSweep | None = None) -> Claim:
    """Every head whose ablation raises the loss beyond NOISE_SE standard errors across stretches
    of the text, largest first, each with its noise; past 2k heads, the top k with their noise
    and the rest by name and increase (a sentence names every head it counts). With `untrained`
    (the same sweep on the model's shape with random weights, analysis/untrained.py), a head is
    one the model relies on only when it also beats the most any head of random weights raises
    the loss by its noise: ablating a head of a model that learned nothing moves the loss too."""
    inc, se = sweep.increase, sweep.se
    noisy = np.isfinite(se) & (inc > NOISE_SE * np.nan_to_num(se, nan=np.inf))
    measured = untrained is not None and bool(np.isfinite(untrained.increase).any())
    blank = float(np.nanmax(untrained.increase)) if measured else -np.inf
    beyond = noisy & (inc - blank > NOISE_SE * np.nan_to_num(se, nan=np.inf))
    named = top_heads(np.where(beyond, inc, -np.inf), int(beyond.sum()))
    numbers = {
        "n_beyond": int(beyond.sum()),
        "n_beyond_noise": int(noisy.sum()),
        "n_chunks": sweep.n_chunks,
        "noise_se": NOISE_SE,
        "max_noise": float(np.nanmax(NOISE_SE * se)) if np.isfinite(se).any() else float("nan"),
        **{f"L{a}H{b}": float(inc[a, b]) for a, b in named},
    }
    if measured:
        numbers["untrained_max"] = blank
    if not np.isfinite(se).any():
        return Claim(
            "The text is too short to tell a head's effect from noise, so no head is named.",
            False,
            numbers,
        )
    noise = (
        f"beyond noise (more than {NOISE_SE:g} standard errors of its increase over "
        f"{sweep.n_chunks} stretches of the text)"
    )
    if untrained is not None:
        ((a0, b0),) = top_heads(np.nan_to_num(untrained.increase, nan=-np.inf), 1)
        noise += (
            f" and beyond the most a head of the same shape with random weights raises it "
            f"({blank:+.3f}, its L{a0}H{b0})"
        )
    also = ""
    if measured and noisy.sum() > beyond.sum():
        rest = top_heads(np.where(noisy & ~beyond, inc, -np.inf), int((noisy & ~beyond).sum()))
        also = (
            " Beyond noise but no further than a head of random weights: "
            + ", ".join(f"L{a}H{b} ({inc[a, b]:+.3f})" for a, b in rest)
            + "."
        )
    if not named:
        return Claim(
            f"No head's ablation raises the loss {noise}; none stands out here.{also}",
            False,
            numbers,
        )
    shown = named if len(named) <= 2 * k else named[:k]  # a short list in full
    top = ", ".join(
        f"L{a}H{b} ({inc[a, b]:+.3f}; noise {NOISE_SE * se[a, b]:.3f})" for a, b in shown
    )
    verb = "raises" if len(named) == 1 else "raise"
    text = f"Ablated one at a time, {len(named)} of the {inc.size} heads {verb} the loss {noise}"
    if shown == named:
        text += f": {top}."
    else:
        most = "The one that raises" if k == 1 else f"The {k} that raise"
        rest = ", ".join(f"L{a}H{b} ({inc[a, b]:+.3f})" for a, b in named[k:])
        text += f". {most} it most: {top}; the other {len(named) - k}: {rest}."
    return Claim(text + also, True, numbers)


def top_heads(scores: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The (layer, head) of the k largest scores of an (L, H) grid, largest first."""
    order = np.argsort(-scores, axis=None, kind="stable")[:k]
    return [(int(i) // scores.shape[1], int(i) % scores.shape[1]) for i in order]


# ---- activation patching ----------------------------------------------------------------------


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
    rows = _resid_names(model)
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


# ---- steering ---------------------------------------------------------------------------------


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


def steering_claim(result: SteeringPush, alpha: float) -> Claim:
    """Claim a push towards A (alpha > 0) or B (alpha < 0) only when the measured push has the
    sign of alpha and is larger than every random direction of the same length moves it."""
    push, chance = result.at(alpha)
    numbers = {"alpha": alpha, "push": push, "chance": chance, "n_random": len(result.random)}
    if alpha == 0:
        return Claim("With α = 0 nothing is added: the two texts are the same.", False, numbers)
    towards, away = ("A", "B") if alpha > 0 else ("B", "A")
    measured = (
        f"At α = {alpha:g} the A texts' log-probability per token, minus the B texts', moves by "
        f"{push:+.3f} nats (a random direction of the same length moves it by at most "
        f"{chance:.3f}, over {len(result.random)} tries)"
    )
    if np.sign(push) == np.sign(alpha) and abs(push) > chance:
        return Claim(
            f"{measured}: steering pushes the model towards the {towards} texts, beyond chance.",
            True,
            numbers,
        )
    why = (
        f"it moves towards {away}, the wrong way"
        if np.sign(push) == -np.sign(alpha) and abs(push) > chance
        else "no more than chance"
    )
    return Claim(
        f"{measured}: {why}, so this setting shows no push towards {towards}; any change in "
        "the text is the damage of adding a vector, not the direction.",
        False,
        numbers,
    )


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


# ---- positions --------------------------------------------------------------------------------

POSITION_MODES = ("remove", "shuffle")


def position_hooks(model: GPT, mode: str, T: int, seed: int = 0) -> list[tuple[str, HookFn]]:
    """Zero the position embeddings ("remove"), or give the tokens the rows of the position table
    in a seeded random order ("shuffle"). A model without position embeddings has nothing to change."""
    if not model.cfg.adds_positions:
        return []
    if mode == "remove":
        return custom("hook_pos_embed", lambda x, hook: torch.zeros_like(x))
    if mode != "shuffle":
        raise ValueError(f"mode must be one of {POSITION_MODES}, got {mode!r}")
    order = shuffled_positions(T, seed)
    return custom("hook_pos_embed", lambda x, hook: x[:, order])


def shuffled_positions(T: int, seed: int) -> torch.Tensor:
    """A seeded permutation of 0..T-1 that moves at least one position when T > 1."""
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(T, generator=gen)
    if T > 1 and bool((order == torch.arange(T)).all()):
        order = order.roll(1)
    return order


@torch.no_grad()
def surprisals(model: GPT, ids: list[int], hooks: list[tuple[str, HookFn]] = ()) -> np.ndarray:
    """-log p of each prompt token given those before it (T,), NaN for the first."""
    with model.intervene(hooks):
        logits = model(torch.tensor(ids, dtype=torch.long))
    logp = torch.log_softmax(logits.float(), -1)[:-1]
    out = -logp.gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    return np.concatenate([[np.nan], out.numpy()])


# ---- damage, then retrain ---------------------------------------------------------------------


def damaged_copy(
    model: GPT, ablation: Ablation, means: dict[str, torch.Tensor] | None = None
) -> GPT:
    """A copy of the model whose weights carry out the ablation by themselves, so it can be saved
    and trained: a head's columns of W_O are zeroed (its mean write moves into the bias), an
    MLP layer's W_out and bias are zeroed (its mean becomes the bias), a neuron's column of W_out
    is zeroed (its mean write moves into the bias). Mean ablation needs `means` and biases."""
    if ablation.how == "mean" and (means is None or not model.cfg.bias):
        raise ValueError("mean ablation can be baked in only with reference means and biases")
    out = copy.deepcopy(model)
    E = model.cfg.d_head
    mean = ablation.how == "mean"
    with torch.no_grad():
        for layer, h in ablation.heads:
            lin = out.blocks[layer].attn.out
            cols = lin.weight[:, h * E : (h + 1) * E]  # (D, E)
            if mean:
                lin.bias += cols @ means[z_name(layer)][h]
            cols.zero_()
        for layer, n in ablation.neurons:
            lin = out.blocks[layer].mlp.fc_out
            if mean:
                lin.bias += lin.weight[:, n] * means[post_name(layer)][n]
            lin.weight[:, n] = 0.0
        for layer in ablation.mlps:
            lin = out.blocks[layer].mlp.fc_out
            lin.weight.zero_()
            if lin.bias is not None:
                lin.bias.copy_(means[mlp_out_name(layer)] if mean else torch.zeros_like(lin.bias))
    return out


# ---- texts the page starts from ---------------------------------------------------------------

VAL_CHARS = 3000  # the end of the training text: held out from training (data.TokenData)
REPLACEMENTS = (" ", "e", " the", "a", "x")  # candidate replacements for the corrupted token


def validation_text(meta: dict) -> str | None:
    """The last VAL_CHARS characters of the text a bundle was trained on (its meta["data"]):
    the end of the last held-out stretch, never trained on. None when the bundle does not say."""

    source = meta.get("data")
    if not source:
        return None
    try:
        return load_text(source)[-VAL_CHARS:]
    except (OSError, ValueError):
        return None


SUGGEST_POSITIONS = 16  # the suggestion tries this many positions before the token it cuts at
_VISIBLE = {"␣": " ", "↵": "\n", "⇥": "\t"}


def typed_text(text: str) -> str:
    """What a student typed, with the visible whitespace marks the pages show (␣ ↵ ⇥) turned back
    into the characters they stand for: "␣the" -> " the"."""
    for mark, char in _VISIBLE.items():
        text = text.replace(mark, char)
    return text


def candidate_tokens(encode, decode, prompt: list[int] = (), n_prompt: int = 2) -> list[int]:
    """The REPLACEMENTS that are one token for this tokenizer and read back as themselves (not
    <unk>), then up to n_prompt distinct tokens of the prompt (always in the vocabulary): ids,
    each once."""
    out = []
    for text in REPLACEMENTS:
        ids = encode(text)
        if len(ids) == 1 and ids[0] not in out and decode(ids) == text:
            out.append(ids[0])
    extra = [t for t in dict.fromkeys(prompt) if t not in out]
    return out + extra[:n_prompt]


MIN_SPAN = 1.0  # nats: a change that moves LD less than this leaves the patching scores noisy
SUGGEST_ENDS = 8  # the suggestion tries cutting the prompt after each of its last this many tokens


@torch.no_grad()
def _spans(model: GPT, ids: list[int], options: list[tuple[int, int]]) -> torch.Tensor:
    """LD_clean - LD_corrupted of each one-token change (K,), with the answer and the wrong token
    chosen as `patching` chooses them (pick_answers). The changes run as one batch (K, T)."""
    clean = model(torch.tensor(ids))[-1]  # (V,)
    last = model(torch.tensor([corrupt(ids, p, c) for p, c in options]))[:, -1]  # (K, V)
    answer = int(clean.argmax())
    wrong = last.argmax(-1)
    wrong = torch.where(wrong == answer, clean.topk(2).indices[1], wrong)
    return (clean[answer] - clean[wrong]) - (last[:, answer] - last.gather(1, wrong[:, None])[:, 0])


def _best_change(
    model: GPT, ids: list[int], options: list[tuple[int, int]]
) -> tuple[float, tuple[int, int]] | None:
    if not options:
        return None
    spans = _spans(model, ids, options)
    k = int(spans.argmax())
    return float(spans[k]), options[k]


def _earlier_options(ids: list[int], candidates: list[int]) -> list[tuple[int, int]]:
    first = max(0, len(ids) - 1 - SUGGEST_POSITIONS)
    return [(p, c) for p in range(first, len(ids) - 1) for c in candidates if c != ids[p]]


def suggest_corruption(model: GPT, ids: list[int], candidates: list[int]) -> tuple[int, int]:
    """(position, token): among the changes before the last token that flip the last prediction
    (moving LD by MIN_SPAN), the one that moves LD most. When none flips, the change that moves
    LD most, before the last token; the last token itself only when no earlier change moves LD
    by MIN_SPAN (its map is then one column)."""
    T = len(ids)
    flips = [
        s for s in _suggestions(model, ids, candidates, [T - 1]) if s.flips and s.span >= MIN_SPAN
    ]
    if flips:
        best = max(flips, key=lambda s: s.span)
        return best.position, best.token
    best = _best_change(model, ids, _earlier_options(ids, candidates))
    if best is None or best[0] < MIN_SPAN:
        last = _best_change(model, ids, [(T - 1, c) for c in candidates if c != ids[-1]])
        if last is not None and (best is None or last[0] > best[0]):
            best = last
    return best[1] if best else (T - 1, ids[-1])


@dataclass(frozen=True)
class Suggestion:
    """One candidate patching experiment: cut after `end`, change `position` to `token`."""

    end: int
    position: int
    token: int
    flips: bool  # the corrupted run's favourite differs from the clean run's
    span: float  # LD_clean - LD_corrupted, as patching scores it
    correct: bool  # the clean run's favourite is the prompt's own next token


@torch.no_grad()
def _suggestions(model: GPT, ids: list[int], candidates: list[int], ends: list[int]):
    """Every one-token change (SUGGEST_POSITIONS before each end) scored at each end.

    A causal model's prediction after token e reads only tokens 0..e, so one batch of whole
    corrupted prompts gives every end at once; a model without the mask runs each cut alone."""
    T = len(ids)
    first = max(0, min(ends) - SUGGEST_POSITIONS)
    options = [(p, c) for p in range(first, max(ends)) for c in candidates if c != ids[p]]
    if not options:
        return []
    if model.cfg.causal:
        clean_all = model(torch.tensor(ids))  # (T, V)
        bad_all = model(torch.tensor([corrupt(ids, p, c) for p, c in options]))  # (K, T, V)
        at = {e: (clean_all[e], bad_all[:, e]) for e in ends}
    else:
        at = {}
        for e in ends:
            cut = ids[: e + 1]
            bad = model(torch.tensor([corrupt(cut, p, c) if p <= e else cut for p, c in options]))
            at[e] = (model(torch.tensor(cut))[-1], bad[:, -1])
    out = []
    for e in ends:
        clean, bad = at[e]
        answer = int(clean.argmax())
        top = bad.argmax(-1)
        wrong = torch.where(top == answer, clean.topk(2).indices[1], top)
        span = (clean[answer] - clean[wrong]) - (
            bad[:, answer] - bad.gather(1, wrong[:, None])[:, 0]
        )
        correct = e + 1 < T and ids[e + 1] == answer
        for k, (p, c) in enumerate(options):
            if e - SUGGEST_POSITIONS <= p < e:
                out.append(Suggestion(e, p, c, int(top[k]) != answer, float(span[k]), correct))
    return out


def suggest_experiment(
    model: GPT, ids: list[int], candidates: list[int], max_ends: int = SUGGEST_ENDS
) -> tuple[int, int, int]:
    """(end, position, token): a patching experiment that shows something. Among the last
    max_ends tokens, the prompt is cut after the latest token whose prediction the model gets
    right (the prompt's own next token) and some earlier one-token change flips (the corrupted
    run's favourite differs, LD moving by MIN_SPAN at least); the change is the one that moves
    LD most there. Failing that, the latest end where a change flips the prediction; failing
    that, the whole prompt and its largest change (the page then says nothing flipped)."""
    T = len(ids)
    ends = list(range(max(1, T - max_ends), T))
    found = [
        s for s in _suggestions(model, ids, candidates, ends) if s.flips and s.span >= MIN_SPAN
    ]
    for pick in ([s for s in found if s.correct], found):
        if pick:
            last = max(s.end for s in pick)
            best = max((s for s in pick if s.end == last), key=lambda s: s.span)
            return best.end, best.position, best.token
    return (T - 1, *suggest_corruption(model, ids, candidates))


def patching_claim(result: Patching, label) -> Claim:
    """What the change did to the prediction, from both runs' own distributions: a flip is
    claimed only when the corrupted run's favourite differs from the clean run's and LD moves
    by MIN_SPAN at least. `label(id)` gives a token's text as the page shows it."""
    a, w, top = result.answer, result.wrong, result.corrupt_top
    pa, pc = result.p_clean, result.p_corrupt
    numbers = {
        "answer": a,
        "wrong": w,
        "corrupt_top": top,
        "p_clean_answer": float(pa[a]),
        "p_corrupt_answer": float(pc[a]),
        "p_corrupt_top": float(pc[top]),
        "span": result.ld_clean - result.ld_corrupt,
        "min_span": MIN_SPAN,
    }
    qa, qw, qt = (f"“{md_escape(label(i))}”" for i in (a, w, top))
    if top != a:
        said = (
            f"The change flips the prediction: the clean run's favourite is {qa} "
            f"(p = {pa[a]:.2f}); the corrupted run's is {qt} (p = {pc[top]:.2f}), and {qa} "
            f"falls to {pc[a]:.2f}. The maps score each patch by the logit difference "
            f"logit({qa}) − logit({qw})."
        )
        if numbers["span"] >= MIN_SPAN:
            return Claim(said, True, numbers)
        return Claim(
            f"{said} But it moves that difference by only {numbers['span']:.2f} (less than "
            f"{MIN_SPAN:g}), so the shares below are mostly noise.",
            False,
            numbers,
        )
    return Claim(
        f"The change does not flip the prediction: both runs prefer {qa} (p = {pa[a]:.2f} clean, "
        f"{pc[a]:.2f} corrupted). The maps compare it with the clean run's second choice {qw}, "
        "so they show what makes the model more or less sure, not what it predicts: change "
        "another token, or predict after another one.",
        False,
        numbers,
    )


HALF = 0.5  # a patch "restores the answer" when it brings back at least half of LD


def route_claim(result: Patching, position: int) -> Claim:
    """Where the information travels, read off the residual map: the rows (entering block l)
    where patching the changed token alone restores at least HALF of the answer, and those
    where the last position alone does. Claimed when both happen and the hand-over is inside
    the model (the changed token is not the last one)."""
    R, T = result.resid, result.resid.shape[1]
    at_changed = [int(i) for i in np.flatnonzero(R[:, position] >= HALF)]
    at_last = [int(i) for i in np.flatnonzero(R[:, T - 1] >= HALF)]
    numbers = {
        "position": position,
        "half": HALF,
        "last_row_at_changed": max(at_changed) if at_changed else -1,
        "first_row_at_last": min(at_last) if at_last else -1,
        "max_restored": float(np.nanmax(R)) if np.isfinite(R).any() else float("nan"),
    }
    if position == T - 1:
        return Claim(
            "The changed token is the last one, so there is nowhere for the information to "
            "travel: only the last column can restore anything.",
            False,
            numbers,
        )
    if not at_changed or not at_last:
        return Claim(
            f"No single position restores half of the answer in every layer here: the "
            f"information is spread over several positions or heads (the largest share one "
            f"patch restores is {numbers['max_restored']:.2f}).",
            False,
            numbers,
        )
    k, m = numbers["last_row_at_changed"], numbers["first_row_at_last"]
    if m <= k:
        return Claim(
            f"At “{row_name(m, R.shape[0] - 1)}” the changed token and the last position each "
            "restore half of the answer alone: the information is in both places at once.",
            False,
            numbers,
        )
    blocks = f"block {k}" if m == k + 1 else f"blocks {k}–{m - 1}"
    return Claim(
        f"Patching the changed token alone restores at least half of the answer up to "
        f"“{row_name(k, R.shape[0] - 1)}”; patching the last position alone does from "
        f"“{row_name(m, R.shape[0] - 1)}” on: the information moves from the changed token to "
        f"the last position in {blocks}, through attention.",
        True,
        numbers,
    )


def row_name(row: int, n_layer: int) -> str:
    """The residual map's row names: "into block l" for l < L, then "after block L-1"."""
    return f"into block {row}" if row < n_layer else f"after block {n_layer - 1}"


STEER_DEFAULT_ALPHA = (
    1.5  # the page opens here: with the default sets the push is clear, the text reads
)


def steering_defaults(meta: dict, prompt: str, load_corpus) -> tuple[str, str]:
    """The page's default sets A and B (blocks separated by blank lines): for a model of the
    plays, lines in capitals against the same lines as written (steering_texts); else the
    model's own example prompts split in two; else the prompt in capitals against it in small
    letters. `load_corpus(name)` reads a bundled corpus."""
    if (meta.get("data") or {}).get("corpus") == "shakespeare":
        return steering_texts(load_corpus("shakespeare"))
    examples = list(meta.get("example_prompts") or [])
    if len(examples) >= 2:
        half = len(examples) // 2
        return "\n\n".join(examples[:half]), "\n\n".join(examples[half:])
    return prompt.upper(), prompt.lower()


def steering_texts(corpus: str, n: int = 6) -> tuple[str, str]:
    """The default steering sets for a model of the plays: (A, B) = n of Romeo's lines in
    capitals, and the same lines as written, each set one prompt per blank-line block.

    Why capitals: the plays' speaker names and headings are in capitals, so a model of them
    has a direction for "capitals here" that a small push moves visibly. Romeo's lines against
    Juliet's were tried first; on the bundled models that push was no larger than a random
    direction's (the claims test measures it on every model)."""
    lines = speech_lines(corpus, "Romeo", n)
    return "\n\n".join(s.upper() for s in lines), "\n\n".join(lines)


def speech_lines(text: str, speaker: str, n: int = 6) -> list[str]:
    """The first line of each of the first n speeches of `speaker` in a play text whose speeches
    start with a line "Speaker." (the bundled corpus's layout).

    >>> speech_lines("Romeo.\\nO she doth teach\\nthe torches.\\n\\nJuliet.\\nAy me!\\n", "Romeo")
    ['O she doth teach']
    """
    marker = f"\n{speaker}.\n"
    out, start = [], 0
    while len(out) < n and (i := text.find(marker, start)) >= 0:
        line = text[i + len(marker) :].split("\n", 1)[0].strip()
        if line:
            out.append(line)
        start = i + len(marker)
    return out
