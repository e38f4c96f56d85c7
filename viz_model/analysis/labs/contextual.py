"""Contextual embeddings: one token in many contexts of the corpus, its residual vector layer by layer.

At the bottom (layer 0, the token embedding plus a position) every occurrence of a token has almost
the same vector; each block then mixes in what came before, so higher up the same token has a
different vector in each context. `token_contexts` finds the occurrences in corpus windows
(analysis/neurons.py's `corpus_windows`) and keeps the residual stream at each station
(embed = resid_pre of block 0, after each block); `context_profile` measures, per station, the
cosine similarity of each occurrence to its own layer-0 vector, and the mean similarity between
different occurrences (the "self-similarity" of Ethayarajh, 2019); `layer_projections` puts each
station's vectors in 2D by its own PCA (analysis/embeddings.py's `pca`).

`corpus_text(meta)` is the text a bundle's tokens are best looked at in: its synthetic task's text
for a task model, else the bundled Shakespeare.

Not here: charts (charts/block/context.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim, as_printed
from viz_model.analysis.embeddings import pca
from viz_model.analysis.neurons import Windows, corpus_windows
from viz_model.model.gpt import GPT
from viz_model.text.data import load_corpus, task_text
from viz_model.text.tokenization import Tokenizer

MIN_LEFT = 8  # an occurrence needs this many tokens before it: some context to be read
PER_WINDOW = 2  # at most this many occurrences from one window, so contexts vary


def corpus_text(meta: dict) -> str:
    """The bundle's synthetic task as text when it was trained on one, else Shakespeare."""
    data = (meta or {}).get("data") or {}
    if data.get("task"):
        return task_text(
            data["task"], n_examples=400, seed=1, seq_len=int(data.get("task_len", 32))
        )
    return load_corpus("shakespeare")


MAX_WINDOWS = 120
RESID_BUDGET = 8_000_000  # numbers kept for every station of every window (32 MB of float32)


def windows_for(model: GPT, tokenizer: Tokenizer, text: str) -> Windows:
    """Corpus windows as long as the model's context allows (at most 64 tokens); fewer than
    MAX_WINDOWS when keeping every station of every window would pass RESID_BUDGET numbers
    (a 12-layer, 768-wide model keeps 12 windows), never fewer than 12."""
    length = min(64, model.cfg.n_ctx)
    per_window = (model.cfg.n_layer + 1) * length * model.cfg.d_model
    n = int(min(MAX_WINDOWS, max(12, RESID_BUDGET // per_window)))
    return corpus_windows(text, tokenizer, n, length)


def stations(model: GPT) -> list[str]:
    """The residual stream before block 0 (the embeddings) and after each block."""
    n = model.cfg.n_layer
    return ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post" for i in range(n)]


def resid_by_station(model: GPT, ids: np.ndarray, batch_size: int = 32) -> np.ndarray:
    """(S, N, W, D): the residual stream at every station for a batch of windows (N, W)."""
    names = stations(model)
    out = []
    for i in range(0, len(ids), batch_size):
        _, cache = model.run_with_cache(torch.as_tensor(ids[i : i + batch_size]), names=names)
        out.append(np.stack([cache[n].float().numpy() for n in names]))  # (S, B, W, D)
    return np.concatenate(out, axis=1)


def frequent_tokens(windows: Windows, n: int = 30) -> list[int]:
    """The n most frequent tokens at positions that have MIN_LEFT tokens before them."""
    counts = Counter(windows.ids[:, MIN_LEFT:].ravel().tolist())
    return [t for t, _ in counts.most_common(n)]


@dataclass(frozen=True)
class Contexts:
    """One token's occurrences: vectors (S stations, n, D); where: (window, position) per
    occurrence; snippets: the text before and including it; previous: the token before it."""

    token: int
    vectors: np.ndarray
    where: list[tuple[int, int]]
    snippets: list[str]
    previous: np.ndarray


def token_contexts(
    resid: np.ndarray, windows: Windows, token: int, max_contexts: int = 80
) -> Contexts:
    """The residual vectors of `token` wherever it occurs (after MIN_LEFT tokens) in the windows;
    resid from resid_by_station on windows.ids."""
    where = []
    for w, row in enumerate(windows.ids):
        found = [p for p in np.flatnonzero(row == token) if p >= MIN_LEFT][:PER_WINDOW]
        where += [(w, int(p)) for p in found]
    where = where[:max_contexts]
    vectors = (
        np.stack([resid[:, w, p] for w, p in where], axis=1)
        if where
        else np.zeros((resid.shape[0], 0, resid.shape[-1]))
    )
    snippets = ["".join(windows.texts[w][max(0, p - 24) : p + 1]) for w, p in where]
    previous = np.array([windows.ids[w, p - 1] for w, p in where], dtype=np.int64)
    return Contexts(token, vectors, where, snippets, previous)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class Profile:
    """Per station (S,): mean cosine of each occurrence to its own layer-0 vector (to_layer0),
    its min over occurrences, and the mean cosine between two different occurrences (between)."""

    to_layer0: np.ndarray
    to_layer0_min: np.ndarray
    between: np.ndarray


def cosines_to_layer0(vectors: np.ndarray) -> np.ndarray:
    """(S, n): the cosine of each occurrence's vector at each station to its own layer-0 vector."""
    unit = _unit(vectors.astype(np.float64))
    return (unit * unit[:1]).sum(-1)


def context_profile(vectors: np.ndarray) -> Profile:
    """Similarities by station for vectors (S, n, D), n >= 2."""
    unit = _unit(vectors.astype(np.float64))
    to0 = cosines_to_layer0(vectors)
    n = unit.shape[1]
    gram = unit @ unit.transpose(0, 2, 1)  # (S, n, n)
    between = (gram.sum((1, 2)) - n) / (n * (n - 1))  # the mean off the diagonal
    return Profile(to0.mean(1), to0.min(1), between)


ANISOTROPY_PAIRS = 400  # random pairs of different tokens for the baseline


def anisotropy(resid: np.ndarray, windows_ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """(S,) the mean cosine between the vectors of two *different* tokens at random places of the
    windows (after MIN_LEFT tokens), per station: what any two vectors share at that layer
    (Ethayarajh 2019's baseline). resid (S, N, W, D) from resid_by_station on windows_ids (N, W).
    """
    rng = np.random.default_rng(seed)
    N, W = windows_ids.shape
    first = min(MIN_LEFT, W - 1)

    def places() -> np.ndarray:  # (2P, 2): (window, position) rows
        count = ANISOTROPY_PAIRS * 2
        return np.stack([rng.integers(0, N, count), rng.integers(first, W, count)], 1)

    a, b = places(), places()
    differ = windows_ids[a[:, 0], a[:, 1]] != windows_ids[b[:, 0], b[:, 1]]
    a, b = a[differ][:ANISOTROPY_PAIRS], b[differ][:ANISOTROPY_PAIRS]
    if len(a) == 0:  # a text of one token: no two different tokens to compare
        return np.full(resid.shape[0], np.nan)
    va = _unit(resid[:, a[:, 0], a[:, 1]].astype(np.float64))  # (S, P, D)
    vb = _unit(resid[:, b[:, 0], b[:, 1]].astype(np.float64))
    return (va * vb).sum(-1).mean(1)


def anisotropy_claim(between: np.ndarray, baseline: np.ndarray, name: str) -> Claim:
    """Why similarity can rise toward the last layer: every vector drifts toward a shared
    direction. Made when the baseline (any two different tokens) rises by more than APART from
    the embedding to the last block; the token's contexts are then read against it."""
    b0, bl, mine = float(baseline[0]), float(baseline[-1]), float(between[-1])
    above = as_printed(mine) - as_printed(bl)  # as the page prints the two cosines
    numbers = {"baseline_embed": b0, "baseline_last": bl, "between_last": mine, "apart": APART}
    start = (
        f"Any two different tokens have cosine {b0:.2f} at `embed` and {bl:.2f} after the last "
        "block (the dashed line)"
    )
    if bl - b0 > APART:
        return Claim(
            f"{start}: all vectors drift toward a shared direction as they go up (*anisotropy*), "
            f"so a high cosine there says less than it seems. Against that baseline the contexts "
            f"of {name} are {above:+.2f} above any two tokens at the last layer.",
            True,
            numbers,
        )
    return Claim(
        f"{start}: no shared drift of more than {APART}, so the cosines above compare with "
        f"about the same baseline at every layer ({name}'s contexts: {above:+.2f} above it "
        "at the last).",
        False,
        numbers,
    )


def layer_projections(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S, n, 2) each station's vectors by that station's own PCA, and (S, 2) the variance
    shares of its two directions."""
    results = [pca(v, 2) for v in vectors]
    points = np.stack(
        [np.pad(r.projected, ((0, 0), (0, 2 - r.projected.shape[1]))) for r in results]
    )
    shares = np.stack([np.pad(r.explained, (0, 2 - len(r.explained))) for r in results])
    return points, shares


def previous_groups(previous: np.ndarray, n: int = 6) -> list[int]:
    """Each occurrence's token before it when that is one of the n most common, else -1 ("other")."""
    common = {t for t, _ in Counter(previous.tolist()).most_common(n)}
    return [int(t) if t in common else -1 for t in previous]


# A drop in the mean cosine between contexts larger than this says the context pulled the
# occurrences apart; a smaller one is a move every context shares.
APART = 0.1


# What a model without a position vector at `embed` does instead (GPTConfig.pos).
POSITIONS_INSIDE = {
    "rope": "its positions are given inside attention, by rotating queries and keys (RoPE)",
    "alibi": "its positions are given inside attention, by a penalty on distant scores (ALiBi)",
    "none": "it has no position encoding at all",
}


def embed_sentence(n: int, first: float, pos: str) -> str:
    """What the `embed` station holds for n occurrences of one token: the token's vector plus a
    position vector when the model adds one (GPTConfig.pos learned or sinusoidal), else the
    token's one vector, the same in every context."""
    if pos in POSITIONS_INSIDE:
        return (
            f"At `embed` the {n} vectors are one and the same, the token's embedding (cosine "
            f"{first:.2f} between two contexts): this model adds no position vector there, "
            f"{POSITIONS_INSIDE[pos]}"
        )
    return (
        f"At `embed` the {n} vectors differ only by their position (cosine {first:.2f} between "
        "two contexts)"
    )


def context_claim(between: np.ndarray, to_layer0: np.ndarray, n: int, pos: str) -> Claim:
    """Did the blocks make the token's vectors differ by context? between[s]: mean cosine between
    two contexts at station s; to_layer0[s]: mean cosine to its own layer-0 vector; pos: the
    model's GPTConfig.pos (what `embed` holds besides the token). Claimed when at some station
    after the embedding the contexts are more than APART less alike than at the embedding (the
    least alike station is named; a later return toward alike is said too).

    >>> context_claim(np.array([0.95, 0.92]), np.array([1.0, 0.32]), 80, "learned").made
    False
    """
    first, last, home = float(between[0]), float(between[-1]), float(to_layer0[-1])
    low = 1 + int(np.argmin(between[1:])) if len(between) > 1 else 0
    least = float(between[low])
    numbers = {
        "between_embed": first,
        "between_least": least,
        "least_station": float(low),
        "between_last": last,
        "to_layer0_last": home,
        "apart": APART,
    }
    start = (
        f"{embed_sentence(n, first, pos)}. After the last block that cosine is {last:.2f}, and "
        f"each vector is on average {home:.2f} like its own starting vector"
    )
    if first - least > APART:
        where = "after the last block" if low == len(between) - 1 else f"after block {low - 1}"
        back = (
            f", then they grow alike again ({last:.2f} at the end)" if last - least > APART else ""
        )
        return Claim(
            f"{start}. The contexts pulled the occurrences apart: the cosine fell to "
            f"{least:.2f} {where}, more than {APART} below the embedding's{back}. The same token "
            "has a different vector in each context.",
            True,
            numbers,
        )
    return Claim(
        f"{start}. The vectors moved, but all in about the same direction: at no layer did the "
        f"cosine between contexts fall more than {APART} below the embedding's (its lowest "
        f"{least:.2f}), so this model's blocks add much the same to this token whatever "
        "surrounds it.",
        False,
        numbers,
    )


# ---- prompts from a template ------------------------------------------------------------------

SLOT = "{}"
MAX_FILLERS = 30
SHUFFLES = 200  # label shuffles for the chance level of the separation


def parse_groups(text: str) -> list[list[str]]:
    """ "kind, noble | cruel, base" -> [["kind", "noble"], ["cruel", "base"]]: groups split by
    "|", fillers by commas or new lines, blanks dropped."""
    groups = []
    for part in text.split("|"):
        words = [w.strip() for w in part.replace("\n", ",").split(",")]
        groups.append([w for w in words if w])
    return [g for g in groups if g]


def fill(template: str, filler: str) -> str:
    """The template with its first SLOT replaced by the filler."""
    return template.replace(SLOT, filler, 1)


def filler_ends(tokenizer, template: str, fillers: list[str]) -> list[tuple[list[int], int]]:
    """(the filled prompt's ids, the position of the filler's last token) for each filler: the
    prompt's ids up to the slot plus the filler are encoded alone, and their last token is the
    filler's (for a character or BPE tokenizer the prompt's ids begin the same way)."""
    before = template.split(SLOT, 1)[0]
    out = []
    for filler in fillers:
        ids = list(tokenizer.encode(fill(template, filler)))
        end = len(tokenizer.encode(before + filler)) - 1
        out.append((ids, min(max(end, 0), len(ids) - 1)))
    return out


def template_vectors(
    model: GPT, prompts: list[list[int]], at: list[int] | None = None
) -> np.ndarray:
    """(S, n, D): each prompt's residual vector at position `at[i]` (default its last token), at
    every station. Prompts longer than the context keep their last n_ctx tokens."""
    names = stations(model)
    out = []
    for i, ids in enumerate(prompts):
        cut = max(0, len(ids) - model.cfg.n_ctx)
        where = (len(ids) - 1 if at is None else at[i]) - cut
        _, cache = model.run_with_cache(torch.as_tensor(ids[cut:]), names=names)
        out.append(np.stack([cache[n][max(where, 0)].float().numpy() for n in names]))
    return np.stack(out, axis=1)


def separation(vectors: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(S,) leave-one-out accuracy of the nearest group mean (cosine), per station: how well the
    last token's vector tells the groups apart, on prompts it was not given."""
    unit = _unit(vectors.astype(np.float64))  # (S, n, D)
    groups = np.unique(labels)
    right = np.zeros(unit.shape[0])
    for i in range(unit.shape[1]):
        keep = np.arange(unit.shape[1]) != i
        means = np.stack([unit[:, keep & (labels == g)].mean(1) for g in groups], 1)  # (S, G, D)
        guess = groups[np.argmax((_unit(means) * unit[:, i : i + 1]).sum(-1), axis=1)]
        right += guess == labels[i]
    return right / unit.shape[1]


def separation_chance(
    vectors: np.ndarray, labels: np.ndarray, shuffles: int = SHUFFLES, seed: int = 0
) -> np.ndarray:
    """(S,) the 95th percentile of `separation` with the group labels shuffled: what telling
    random groups apart reaches by luck on these prompts."""
    rng = np.random.default_rng(seed)
    runs = np.stack([separation(vectors, rng.permutation(labels)) for _ in range(shuffles)])
    return np.quantile(runs, 0.95, axis=0)


def template_claim(stations_: list[str], accuracy: np.ndarray, chance: np.ndarray, n: int) -> Claim:
    """The station whose vectors tell the groups apart best, claimed only above the shuffled
    labels' 95th percentile there."""
    best = int(np.argmax(accuracy - chance))
    numbers = {"accuracy": float(accuracy[best]), "chance95": float(chance[best]), "n": float(n)}
    where = f"`{stations_[best]}`"
    if accuracy[best] > chance[best]:
        return Claim(
            f"**At {where} the filler's vector tells the groups apart**: the nearest group "
            f"mean is right for {accuracy[best]:.0%} of the {n} prompts, each left out of its "
            f"group's mean, where shuffled groups reach {chance[best]:.0%} (95th percentile).",
            True,
            numbers,
        )
    return Claim(
        f"No layer tells these groups apart better than shuffled groups do (best: {where}, "
        f"{accuracy[best]:.0%} right against {chance[best]:.0%} for shuffled groups, 95th "
        "percentile). Try more fillers, or groups that differ in what the model has read.",
        False,
        numbers,
    )
