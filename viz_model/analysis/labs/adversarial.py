"""An adversarial suffix: a few tokens appended to a prompt, searched so that the model predicts a
chosen target next (Zou et al. 2023, "Universal and Transferable Adversarial Attacks", GCG).

Greedy coordinate gradient, one step:
1. the gradient of -log p(target | prompt + suffix) with respect to the one-hot vector of each
   suffix token (through the embedding matrix: e = onehot @ W_E), shape (L, V);
2. for each suffix position, the `top_k` tokens whose swap the gradient says lowers the loss most;
3. every one of those L x top_k single-token swaps run for real (a batch of forward passes), and
   the best one kept if it beats the current suffix; otherwise the search stops (a local optimum
   for single swaps among the candidates).
The gradient only proposes; the forward passes decide, so p(target) never goes down.

Also `suffix_attention`: how much of its attention the last position puts on the suffix, per
layer; compared with the starting suffix's, since the most recent tokens draw attention anyway.

Shapes: T tokens, L suffix length, V vocabulary, B candidates. GPT models only (the gradient
reaches the embeddings through the hook `hook_embed`). Not here: sampling (model/sampling.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.model.hooks import custom

BATCH = 256  # candidate sequences per forward pass
LIFT_FACTOR = 2.0  # a "raised" claim needs p(target) at least this many times higher


@dataclass(frozen=True)
class SuffixSearch:
    prompt: tuple[int, ...]  # the prompt as read (cropped on the left to leave room for L)
    suffixes: tuple[tuple[int, ...], ...]  # the suffix before the first step and after each
    p_target: tuple[float, ...]  # p(target | prompt + suffix) for each of them
    evaluated: int  # candidate sequences run forward
    stopped_early: bool  # no candidate swap beat the suffix before the last step

    @property
    def final(self) -> tuple[int, ...]:
        return self.prompt + self.suffixes[-1]


@torch.no_grad()
def target_log_probs(model, batch: torch.Tensor, target: int) -> torch.Tensor:
    """(B,) log p(target) after each sequence of `batch` (B, T), in chunks of BATCH."""
    out = []
    for chunk in batch.split(BATCH):
        logits = model(chunk)[:, -1].float()  # (b, V)
        out.append(F.log_softmax(logits, dim=-1)[:, target])
    return torch.cat(out)


def suffix_gradient(model, prompt: Sequence[int], suffix: Sequence[int], target: int) -> np.ndarray:
    """(L, V) d(-log p(target)) / d(one-hot of each suffix token): the first-order change of the
    loss if position i took token v (relative to its current token). The shared model's weights
    get no gradient (autograd.grad on the one-hot only)."""
    ids = torch.tensor([*prompt, *suffix])[None]  # (1, T)
    W_E = model.W_E.detach()  # (V, D)
    onehot = F.one_hot(torch.tensor(list(suffix)), W_E.shape[0]).float().requires_grad_(True)
    start = len(prompt)

    def embed_suffix(act: torch.Tensor, hook) -> torch.Tensor:  # act (1, T, D)
        return torch.cat([act[:, :start], (onehot @ W_E)[None]], dim=1)

    with torch.enable_grad():
        logits = model.run_with_hooks(ids, fwd_hooks=custom("hook_embed", embed_suffix))
        loss = -F.log_softmax(logits[0, -1].float(), dim=-1)[target]
        (grad,) = torch.autograd.grad(loss, onehot)
    return grad.numpy()


def search(
    model,
    prompt: Sequence[int],
    target: int,
    suffix_len: int = 6,
    steps: int = 15,
    top_k: int = 8,
    init_id: int = 0,
) -> SuffixSearch:
    """Greedy coordinate gradient from a suffix of `init_id`s; deterministic (no sampling: every
    proposed swap is tried). The prompt is cropped on the left to fit the model's context."""
    room = model.cfg.n_ctx - suffix_len
    if room < 1:
        raise ValueError(
            f"a suffix of {suffix_len} leaves no room in a context of {model.cfg.n_ctx}"
        )
    prompt = tuple(prompt)[-room:]
    suffix = (init_id,) * suffix_len
    best = float(target_log_probs(model, torch.tensor([prompt + suffix]), target)[0])
    suffixes, probs, evaluated, early = [suffix], [float(np.exp(best))], 1, False
    for _ in range(steps):
        grad = suffix_gradient(model, prompt, suffix, target)  # (L, V)
        candidates = []
        for i in range(suffix_len):
            order = np.argsort(grad[i])  # most negative first: the loss should fall most
            picks = [int(v) for v in order if v != suffix[i]][:top_k]
            candidates += [suffix[:i] + (v,) + suffix[i + 1 :] for v in picks]
        scores = target_log_probs(model, torch.tensor([prompt + c for c in candidates]), target)
        evaluated += len(candidates)
        j = int(scores.argmax())
        if float(scores[j]) <= best:
            early = True
            break
        suffix, best = candidates[j], float(scores[j])
        suffixes.append(suffix)
        probs.append(float(np.exp(best)))
    return SuffixSearch(prompt, tuple(suffixes), tuple(probs), evaluated, early)


def probability_text(p: float) -> str:
    """A probability readable at any size: 88.0%, 1.2%, 0.034%, 2.1e-05."""
    if p >= 0.01:
        return f"{p:.1%}"
    if p >= 1e-4:
        return f"{p:.3%}"
    return f"{p:.1e}"


LIKELY = 0.1  # the target "made likely" from here on; below it the climb is said as a failure


def search_claim(result: SuffixSearch, target_label: str) -> Claim:
    """What the search did to p(target), in numbers. Made when p rose LIFT_FACTOR times or more
    and reached LIKELY; a rise that leaves the target unlikely is said as the failure it is."""
    first, last = result.p_target[0], result.p_target[-1]
    steps = len(result.suffixes) - 1
    numbers = {
        "p before": first,
        "p after": last,
        "steps": float(steps),
        "factor": LIFT_FACTOR,
        "likely": LIKELY,
    }
    how = (
        f"after {steps} accepted swap{'s' * (steps != 1)}"
        + (" (then no proposed swap helped)" if result.stopped_early else "")
        + f", {result.evaluated:,} candidate texts run"
    )
    moved = f"from {probability_text(first)} to {probability_text(last)}"
    if last >= LIFT_FACTOR * first and last >= LIKELY:
        return Claim(f"**The suffix raised p({target_label}) {moved}**, {how}.", True, numbers)
    if last >= LIFT_FACTOR * first:
        return Claim(
            f"The search failed to make {target_label} likely: p rose {moved} "
            f"({last / first:.0f} times), {how}, but stays under {LIKELY:.0%}. Try a longer "
            "suffix or more steps.",
            False,
            numbers,
        )
    return Claim(
        f"The search moved p({target_label}) only {moved}, {how}: less than {LIFT_FACTOR:g} "
        "times. Try a longer suffix or more steps.",
        False,
        numbers,
    )


@torch.no_grad()
def suffix_attention(model, ids: Sequence[int], suffix_len: int) -> np.ndarray:
    """(n_layer,) the share of the last position's attention (mean over heads) on the suffix's
    positions, per layer."""
    names = [f"blocks.{i}.attn.hook_pattern" for i in range(model.cfg.n_layer)]
    _, cache = model.run_with_cache(torch.tensor(list(ids)), names=names)
    return np.array([float(cache[n][:, -1, -suffix_len:].sum(-1).mean()) for n in names])


ATTENTION_MARGIN = 0.10  # a change of attention share worth a sentence: 10 percentage points
ATTENTION_RATIO = 1.5  # ... or half as much again, when it moved 5 points or more


def layer_list(layers: list[int]) -> str:
    """ "layer 2", "layers 0 and 3", "layers 0, 1 and 3"."""
    names = [str(x) for x in layers]
    if len(names) == 1:
        return f"layer {names[0]}"
    return f"layers {', '.join(names[:-1])} and {names[-1]}"


def attention_claim(before: np.ndarray, after: np.ndarray) -> Claim:
    """Per layer, the last position's attention share on the suffix with the starting suffix
    (`before`) and the one found (`after`), every layer said: where it rose, where it fell and
    where it stayed. The suffix is the most recent tokens, which many heads look at anyway, so
    the baseline is the starting suffix, not uniform attention. A change counts when it is
    ATTENTION_MARGIN or more, or 5 points and ATTENTION_RATIO times."""
    change = after - before
    ratio = np.maximum(after, before) / np.maximum(np.minimum(after, before), 1e-9)
    counts = (np.abs(change) >= ATTENTION_MARGIN) | (
        (np.abs(change) >= 0.05) & (ratio >= ATTENTION_RATIO)
    )
    more = [i for i in range(len(change)) if counts[i] and change[i] > 0]
    less = [i for i in range(len(change)) if counts[i] and change[i] < 0]
    same = [i for i in range(len(change)) if not counts[i]]
    numbers = {
        "n_more": float(len(more)),
        "n_less": float(len(less)),
        "margin": ATTENTION_MARGIN,
        "ratio": ATTENTION_RATIO,
    }
    numbers |= {f"before_{i}": float(b) for i, b in enumerate(before)}
    numbers |= {f"after_{i}": float(a) for i, a in enumerate(after)}
    shares = ", ".join(
        f"layer {i} {b:.0%} to {a:.0%}" for i, (b, a) in enumerate(zip(before, after, strict=True))
    )
    said = (
        "The last position's attention on the suffix, from the starting suffix to the one "
        f"found: {shares}."
    )
    rule = (
        f"(a change counts at {ATTENTION_MARGIN * 100:.0f} points, or 5 points and "
        f"{ATTENTION_RATIO:g} times)"
    )
    if not more and not less:
        return Claim(
            f"{said} In no layer did it change {rule}: the most recent tokens get much attention "
            "whatever they are, so what changed is what they carry.",
            False,
            numbers,
        )
    parts = [f"more of it in {layer_list(more)}"] if more else []
    parts += [f"less in {layer_list(less)}"] if less else []
    parts += [f"about as much in {layer_list(same)}"] if same else []
    joined = " and ".join(parts) if len(parts) < 3 else f"{parts[0]}, {parts[1]}, and {parts[2]}"
    return Claim(f"{said} The tokens found draw {joined} {rule}.", True, numbers)
