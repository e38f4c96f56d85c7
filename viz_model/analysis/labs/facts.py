"""Facts a model learned from its training text, and which layers hold them: knock out each
attention layer and each MLP layer in turn and count the facts it still recalls (the lectures'
"facts live in the MLPs", Geva et al. 2021 and Meng et al. 2022's ROME, tested here).

A *fact* of a text, for a small model that reads characters: a frequent word whose first letters
the text (almost) always finishes the same way. `corpus_facts` finds them: for each frequent word
of MIN_LEN letters or more, the shortest prefix (of at least MIN_PREFIX letters) after which
SHARE of the text's words that start so are this word. The prompt is " " + prefix (or a new line
before a word that starts lines, such as a speaker's name); recalled = the model's greedy
continuation writes the rest of the word exactly.

Ablations replace a whole layer's attention output (every head's z) or MLP output by its mean
over validation text (analysis/labs/interventions/ablation.py's ablation_hooks), one layer at a
time.

Not here: the hooks (model/hooks.py), the mean references (analysis/labs/interventions/ablation.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.model.hooks import HookFn

MIN_LEN, MIN_PREFIX, SHARE, MIN_COUNT = 5, 2, 0.9, 5
N_FACTS = 30
_WORD = re.compile(r"[A-Za-z']+")


@dataclass(frozen=True)
class Fact:
    prompt: str  # " " or "\n", then the word's first letters
    answer: str  # the rest of the word
    count: int  # how often the word occurs in the text

    @property
    def word(self) -> str:
        return self.prompt.strip() + self.answer


def corpus_facts(text: str, n: int = N_FACTS) -> list[Fact]:
    """Up to n facts of `text`, most frequent words first (see the module docstring)."""
    found = [(m.group(), m.start()) for m in _WORD.finditer(text)]
    counts = Counter(w for w, _ in found)
    line_starts = Counter(w for w, at in found if at == 0 or text[at - 1] == "\n")
    starts: Counter[str] = Counter()  # prefix -> words beginning with it, counted
    for word, c in counts.items():
        for k in range(MIN_PREFIX, len(word)):
            starts[word[:k]] += c
    facts = []
    for word, c in counts.most_common():
        if len(facts) >= n or c < MIN_COUNT:
            break
        if len(word) < MIN_LEN:
            continue
        for k in range(MIN_PREFIX, len(word) - 1):
            if c >= SHARE * starts[word[:k]]:
                lead = "\n" if line_starts[word] > c / 2 else " "
                facts.append(Fact(lead + word[:k], word[k:], c))
                break
    return facts


@torch.no_grad()
def recalls(
    model, encode, decode, facts: Sequence[Fact], hooks: list[tuple[str, HookFn]] = ()
) -> np.ndarray:
    """(n,) bool: does greedy decoding after each fact's prompt write its answer exactly? Facts
    whose prompts have the same number of tokens run as one batch, one forward pass a new token,
    with `hooks` applied to every pass."""
    prompts = [list(encode(f.prompt)) for f in facts]
    out = np.zeros(len(facts), dtype=bool)
    by_length: dict[int, list[int]] = {}
    for i, ids in enumerate(prompts):
        by_length.setdefault(len(ids), []).append(i)
    with model.intervene(hooks):
        for length, members in by_length.items():
            batch = torch.tensor([prompts[i] for i in members])  # (B, length)
            longest = max(len(facts[i].answer) for i in members)
            steps = min(longest, model.cfg.n_ctx - length)  # a token writes one letter or more
            for _ in range(max(steps, 0)):
                nxt = model(batch)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
                batch = torch.cat([batch, nxt], dim=1)
            for row, i in zip(batch.tolist(), members, strict=True):
                written = decode(row[length:])
                out[i] = written[: len(facts[i].answer)] == facts[i].answer
    return out


@torch.no_grad()
def fact_ablations(model, encode, decode, facts: Sequence[Fact], reference_windows: torch.Tensor):
    """Recall with nothing knocked out, then with each layer's attention and (when it has one)
    each layer's MLP mean-ablated, the means taken over the validation windows (N, T + 1; the
    inputs are the first T); and what knocking out layer 0's halves does to the validation loss
    (the general damage, the control for layer 0)."""
    reference = reference_windows[:, :-1]
    from viz_model.analysis.labs.interventions import (
        Ablation,
        ablation_hooks,
        loss,
        reference_means,
    )

    means = reference_means(model, reference)
    L, H = model.cfg.n_layer, model.cfg.n_head

    def knocked(ablation: Ablation) -> np.ndarray:
        return recalls(model, encode, decode, facts, ablation_hooks(model, ablation, means))

    heads = [Ablation(heads=tuple((i, h) for h in range(H)), how="mean") for i in range(L)]
    attention = np.stack([knocked(a) for a in heads])
    mlp, first = None, [heads[0]]
    if not model.cfg.attn_only:
        mlps = [Ablation(mlps=(i,), how="mean") for i in range(L)]
        mlp = np.stack([knocked(a) for a in mlps])
        first.append(mlps[0])
    clean_loss = loss(model, reference_windows)
    damage = tuple(
        loss(model, reference_windows, ablation_hooks(model, a, means)) - clean_loss for a in first
    )
    return FactAblations(recalls(model, encode, decode, facts), attention, mlp, damage)


@dataclass(frozen=True)
class FactAblations:
    clean: np.ndarray  # (n,) recalled with nothing knocked out
    attention: np.ndarray  # (L, n) with layer l's attention replaced by its mean
    mlp: np.ndarray | None  # (L, n) with layer l's MLP replaced by its mean (None: attention only)
    layer0_damage: tuple[float, ...] = ()  # validation loss added by knocking out layer 0's
    # attention (and MLP), nats: how much of everything, not only facts, layer 0 carries


def margin(known: int) -> float:
    """Facts lost that chance could explain: two standard deviations of a binomial count at p
    = 1/2 over the facts the model knew (at least 2)."""
    return max(2.0, 2 * np.sqrt(known * 0.25))


def _lost(rows: np.ndarray, clean: np.ndarray) -> list[int]:
    """Facts recalled clean and not after each row's knock-out."""
    return [int((clean & ~row).sum()) for row in rows]


def lost_counts(result: FactAblations) -> dict[str, list[int]]:
    """Per layer, the facts recalled with nothing knocked out that each knock-out loses (a
    knock-out that makes the model recall a fact it missed does not make up for one lost):
    {"attention": [...], "mlp": [...] when the model has MLPs}."""
    out = {"attention": _lost(result.attention, result.clean)}
    if result.mlp is not None:
        out["mlp"] = _lost(result.mlp, result.clean)
    return out


def ablation_claim(result: FactAblations) -> Claim:
    """Which kind of layer the recalled facts need most: the worst MLP layer against the worst
    attention layer, in facts lost among those recalled clean; made beyond `margin`. With more
    than one layer, layer 0 is left out of the comparison and its general damage is stated:
    knocking out either half of it breaks most predictions, facts or not."""
    known = int(result.clean.sum())
    numbers: dict[str, float] = {"known": float(known), "facts": float(len(result.clean))}
    head = f"With nothing knocked out the model recalls {known} of {len(result.clean)} facts."
    if known == 0:
        return Claim(
            "The model recalls none of these facts, so there is nothing for a knock-out to take.",
            False,
            numbers,
        )
    L = len(result.attention)
    first = 1 if L > 1 else 0
    control = ""
    if first and result.layer0_damage:
        parts = ["attention"] + (["MLP"] if result.mlp is not None else [])
        said = " and ".join(
            f"its {p} {d:+.2f}" for p, d in zip(parts, result.layer0_damage, strict=False)
        )
        control = (
            f" Layer 0 is left out: knocking out {said} nats of validation loss, so it breaks "
            "most predictions, facts or not."
        )
        numbers.update({f"layer0 damage {i}": d for i, d in enumerate(result.layer0_damage)})
    lost_attn = _lost(result.attention, result.clean)[first:]
    a_layer = first + int(np.argmax(lost_attn))
    numbers.update({"attention lost": float(max(lost_attn)), "margin": margin(known)})
    attn_text = f"attention {a_layer} loses {max(lost_attn)}"
    if result.mlp is None:
        return Claim(
            f"{head} This model has no MLPs; the attention layer it needs most, {a_layer}, "
            f"takes {max(lost_attn)} of them.{control}",
            False,
            numbers,
        )
    lost_mlp = _lost(result.mlp, result.clean)[first:]
    m_layer = first + int(np.argmax(lost_mlp))
    numbers["mlp lost"] = float(max(lost_mlp))
    mlp_text = f"MLP {m_layer} loses {max(lost_mlp)} of them"
    gap = max(lost_mlp) - max(lost_attn)
    if gap > margin(known):
        text = (
            f"{head} **Knocking out {mlp_text}; the worst attention layer, {attn_text}: here "
            "the facts need an MLP layer most**, as the lectures' picture of MLPs as a memory "
            "has it."
        )
        made = True
    elif -gap > margin(known):
        text = (
            f"{head} **Knocking out {attn_text}; the worst MLP layer, {mlp_text}: here the "
            "facts need attention most**, not what the picture of MLPs as the memory predicts."
        )
        made = True
    else:
        text = (
            f"{head} Knocking out {mlp_text}, {attn_text}: a difference within "
            f"{margin(known):.0f} facts, which chance could make. Neither kind of layer stands "
            "out."
        )
        made = False
    return Claim(text + control, made, numbers)
