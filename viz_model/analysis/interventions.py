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

from viz_model.hooks import HookFn, ablate_heads, custom
from viz_model.model import GPT
from viz_model.sampling import SamplingSettings, generate

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
        pairs += custom(mlp_out_name(layer), lambda x, _n, v=value: _replace(x, v, None))
    neurons: dict[int, list[int]] = {}
    for layer, n in ablation.neurons:
        neurons.setdefault(layer, []).append(n)
    for layer, cols in sorted(neurons.items()):
        value = None if mean else torch.zeros(model.cfg.d_mlp)
        if mean and means:
            value = means[post_name(layer)]
        pairs += custom(post_name(layer), lambda x, _n, v=value, c=cols: _replace(x, v, c))
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
    """The next token after `ids` and the loss on `windows`, without and with `hooks`."""
    return Effect(
        last_probs(model, ids),
        last_probs(model, ids, hooks),
        loss(model, windows),
        loss(model, windows, hooks),
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

    def fn(z: torch.Tensor, _name: str) -> torch.Tensor:
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


@torch.no_grad()
def head_sweep(
    model: GPT,
    windows: torch.Tensor,
    how: str = "zero",
    means: dict[str, torch.Tensor] | None = None,
) -> np.ndarray:
    """The validation loss increase when each head alone is ablated: (L, H).

    One clean run records the residual stream entering each block; then, per layer, H copies of
    it (a batch of H * N windows, copy h with head h ablated) run from that block on. The sweep
    costs about (L + 1) / 2 forward passes of H * N windows instead of L.
    """
    L, H = model.cfg.n_layer, model.cfg.n_head
    x, y = windows[:, :-1], windows[:, 1:]
    N = x.shape[0]
    logits, cache = model.run_with_cache(x, names=_resid_names(model)[:L])
    base = float(F.cross_entropy(logits.flatten(0, 1), y.flatten()))
    resid = {name: cache[name].view(N, *x.shape[1:], -1) for name in cache}  # (N, T, D) each
    out = np.zeros((L, H))
    for layer in range(L):
        mean = None if how == "zero" else (means or {}).get(z_name(layer))
        with model.intervene(custom(z_name(layer), _head_fn(how, H, N, mean))):
            logits = run_from(model, layer, resid[resid_pre_name(layer)].repeat(H, 1, 1))
        ce = F.cross_entropy(logits.flatten(0, 1), y.repeat(H, 1).flatten(), reduction="none")
        out[layer] = ce.view(H, -1).mean(1).numpy() - base
    return out


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

        def fn(z: torch.Tensor, _name: str, clean_z=clean_z) -> torch.Tensor:  # (H, T, H, E)
            z = z.clone()
            for h in range(H):
                z[h, :, h] = clean_z[:, h]
            return z

        x = bad[rows[layer]].expand(H, T, -1)
        with model.intervene(custom(z_name(layer), fn)):
            heads[layer] = restored(run_from(model, layer, x, last_only=True))
    return Patching(answer, wrong, ld_clean, ld_corrupt, rows, resid, heads)


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
    return custom(resid_pre_name(layer), lambda x, _n: x + strength * vector.to(x))


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
    if model.cfg.pos == "none":
        return []
    if mode == "remove":
        return custom("hook_pos_embed", lambda x, _n: torch.zeros_like(x))
    if mode != "shuffle":
        raise ValueError(f"mode must be one of {POSITION_MODES}, got {mode!r}")
    order = shuffled_positions(T, seed)
    return custom("hook_pos_embed", lambda x, _n: x[:, order])


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
    from viz_model.run_settings import load_text  # the data layer; only this helper needs it

    source = meta.get("data")
    if not source:
        return None
    try:
        return load_text(source)[-VAL_CHARS:]
    except (OSError, ValueError):
        return None


SUGGEST_POSITIONS = 12  # the suggestion tries the last this many positions before the last token
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
    """(position, token): the one-token change to a candidate that moves the last prediction most
    (the largest LD_clean - LD_corrupted), among the positions before the last token; the last
    token itself only when no earlier change moves LD by MIN_SPAN (its map is then one column)."""
    T = len(ids)
    best = _best_change(model, ids, _earlier_options(ids, candidates))
    if best is None or best[0] < MIN_SPAN:
        last = _best_change(model, ids, [(T - 1, c) for c in candidates if c != ids[-1]])
        if last is not None and (best is None or last[0] > best[0]):
            best = last
    return best[1] if best else (T - 1, ids[-1])


def suggest_experiment(
    model: GPT, ids: list[int], candidates: list[int], max_ends: int = 3
) -> tuple[int, int, int]:
    """(end, position, token): a patching experiment worth drawing. The prompt is cut after token
    `end`, the latest of the last max_ends tokens whose prediction some earlier one-token change
    moves by MIN_SPAN (so the map shows information travelling); else the whole prompt."""
    T = len(ids)
    for end in range(T - 1, max(0, T - 1 - max_ends), -1):
        cut = ids[: end + 1]
        best = _best_change(model, cut, _earlier_options(cut, candidates))
        if best is not None and best[0] >= MIN_SPAN:
            return (end, *best[1])
    return (T - 1, *suggest_corruption(model, ids, candidates))


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
