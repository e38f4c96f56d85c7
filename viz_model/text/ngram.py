"""Counting models of text (Shannon's n-grams) as yardsticks for a GPT's loss.

Covers: the cross-entropy on the validation split, in nats per token, of the simplest models of
the same token stream, so a training curve can show "better than counting":
- a blind guess: every token equally likely, loss ln V;
- unigram: each token with its frequency in the training split;
- bigram: each token given the one before, from counts of pairs in the training split.
Counts are smoothed by adding k to every count (k chosen on a slice of the training split held
out from the counts, never on the validation split), so a pair never seen costs a finite loss.

Also, for the N-grams page, models of every order n = 1..MAX_ORDER on a stream split into
training and validation (`order_scores`): add-k with k picked on the training split's tail as
above, and interpolated Kneser-Ney (absolute discounting that backs off to how many different
contexts a token follows, not how often it occurs); and how sparse the contexts get
(`unseen_contexts`). Both are evaluated on the same validation positions for every n (those with
MAX_ORDER - 1 tokens of validation text before them), so the orders compare fairly. The n-gram
ids come from `corpus_index.ranks`: rank[n][t - n + 1] names the n tokens ending at t.
`kn_distribution` gives the whole smoothed distribution after one context, through the index.

Not here: sampling from counts and finding contexts in the text (corpus_index.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from viz_model.text.corpus_index import CorpusIndex

SMOOTHING_GRID = (1e-3, 1e-2, 0.1, 0.3, 1.0)
TUNE_FRACTION = 0.1  # the end of the training split that picks k


@dataclass(frozen=True)
class Baselines:
    """Validation loss in nats per token of each counting model, and the k each one used."""

    blind: float
    unigram: float
    bigram: float
    k_unigram: float
    k_bigram: float

    def as_dict(self) -> dict[str, float]:
        return {"blind guess": self.blind, "unigram": self.unigram, "bigram": self.bigram}


def unigram_loss(counts: np.ndarray, targets: np.ndarray, k: float) -> float:
    """Mean -ln p(target) with p = (count + k) / (N + kV). counts: (V,), targets: (n,) ints."""
    V = counts.shape[0]
    p = (counts[targets] + k) / (counts.sum() + k * V)
    return float(-np.log(p).mean())


def pair_counts(ids: np.ndarray, vocab_size: int) -> dict[int, int]:
    """Counts of each (previous, next) pair, keyed by previous * V + next (sparse: V^2 is big)."""
    codes = ids[:-1].astype(np.int64) * vocab_size + ids[1:]
    keys, counts = np.unique(codes, return_counts=True)
    return dict(zip(keys.tolist(), counts.tolist(), strict=True))


def bigram_loss(
    pairs: dict[int, int], prev_counts: np.ndarray, ids: np.ndarray, vocab_size: int, k: float
) -> float:
    """Mean -ln p(next | previous) over the pairs of `ids`, p = (c(prev, next) + k) / (c(prev) + kV).

    prev_counts[a] counts the pairs that start with a (the training tokens but the last).
    """
    codes = ids[:-1].astype(np.int64) * vocab_size + ids[1:]
    c_pair = np.array([pairs.get(code, 0) for code in codes.tolist()], dtype=np.float64)
    c_prev = prev_counts[ids[:-1]]
    return float(-np.log((c_pair + k) / (c_prev + k * vocab_size)).mean())


def _best_k(loss_of_k) -> float:
    return min(SMOOTHING_GRID, key=loss_of_k)


def baselines(train_ids, val_ids, vocab_size: int) -> Baselines:
    """Blind, unigram and bigram validation losses for a stream split into train and val ids.

    >>> b = baselines([0, 1] * 50, [0, 1] * 10, vocab_size=4)
    >>> round(b.blind, 3), b.bigram < b.unigram < b.blind
    (1.386, True)
    """
    train = np.asarray(train_ids, dtype=np.int64)
    val = np.asarray(val_ids, dtype=np.int64)
    if train.size < 2 or val.size < 2:
        raise ValueError("Baselines need at least 2 training and 2 validation tokens.")
    n_tune = max(2, int(train.size * TUNE_FRACTION))
    fit, tune = train[:-n_tune], train[-n_tune:]
    if fit.size < 2:
        fit, tune = train, train

    def unigram_on(ids: np.ndarray, source: np.ndarray, k: float) -> float:
        return unigram_loss(np.bincount(source, minlength=vocab_size), ids, k)

    def bigram_on(ids: np.ndarray, source: np.ndarray, k: float) -> float:
        prev = np.bincount(source[:-1], minlength=vocab_size).astype(np.float64)
        return bigram_loss(pair_counts(source, vocab_size), prev, ids, vocab_size, k)

    k_uni = _best_k(lambda k: unigram_on(tune, fit, k))
    k_bi = _best_k(lambda k: bigram_on(tune, fit, k))
    return Baselines(
        blind=math.log(vocab_size),
        unigram=unigram_on(val, train, k_uni),
        bigram=bigram_on(val, train, k_bi),
        k_unigram=k_uni,
        k_bigram=k_bi,
    )


# ---- every order: add-k and interpolated Kneser-Ney -------------------------------------------

MAX_ORDER = 6
MAX_CONTEXT = 8  # sparsity is measured for contexts of 1..MAX_CONTEXT tokens


def gram_ids(rank: dict[int, np.ndarray], n_train: int, n: int) -> np.ndarray:
    """(N,) the id of the n tokens ending at each position t (rank[n][t - n + 1]); -1 where they
    would start before t's segment. n = 0 is the empty context: id 0 everywhere."""
    size = rank[1].size
    if n == 0:
        return np.zeros(size, dtype=np.int32)
    t = np.arange(size)
    start = t - n + 1
    ok = (start >= 0) & ((t < n_train) | (start >= n_train))
    out = np.full(size, -1, dtype=np.int32)  # ids < N; int32 halves the build's memory
    out[ok] = rank[n][start[ok]]
    return out


@dataclass(frozen=True)
class Level:
    """One order's counts for Kneser-Ney: c(h w), sum over w of c(h w), and how many w have c > 0.
    Raw counts at the model's own order, continuation counts (distinct left neighbours) below."""

    counts: np.ndarray  # (U_m,) by m-gram id
    context: np.ndarray  # (U_{m-1},) by context id
    types: np.ndarray  # (U_{m-1},)
    discount: float


def discount(counts: np.ndarray) -> float:
    """Ney's D = n1 / (n1 + 2 n2) from how many counts are 1 and 2, kept in [0.05, 0.95]."""
    n1, n2 = int((counts == 1).sum()), int((counts == 2).sum())
    d = n1 / (n1 + 2 * n2) if n1 + 2 * n2 else 0.5
    return float(min(max(d, 0.05), 0.95))


def _context_of(g: np.ndarray, h: np.ndarray, size: int) -> np.ndarray:
    """(size,) each m-gram id's context id (-1 for ids not in g)."""
    out = np.full(size, -1, dtype=np.int64)
    out[g] = h
    return out


def _level(counts: np.ndarray, ctx_of: np.ndarray, n_ctx: int) -> Level:
    seen = np.flatnonzero(counts)
    context = np.bincount(ctx_of[seen], weights=counts[seen], minlength=n_ctx)
    types = np.bincount(ctx_of[seen], minlength=n_ctx)
    return Level(
        counts.astype(np.float64), context, types.astype(np.float64), discount(counts[seen])
    )


class Counter:
    """n-gram counts of a stream's training positions t < stop (all its n tokens before stop)."""

    def __init__(self, ids: dict[int, np.ndarray], stop: int):
        """ids[n]: gram_ids(rank, n_train, n) for n = 0..max order (shared by both Counters)."""
        self.ids = ids
        self.sizes = {n: int(v.max(initial=0)) + 1 for n, v in ids.items()}
        self.stop = stop
        self._raw: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def positions(self, n: int) -> np.ndarray:
        t = np.arange(max(n - 1, 0), self.stop)
        return t[self.ids[n][t] >= 0]

    def raw(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(counts by n-gram id, each id's context id); computed once per n."""
        if n not in self._raw:
            t = self.positions(n)
            g = self.ids[n][t]
            h = self.ids[n - 1][t - 1] if n > 1 else np.zeros(t.size, np.int64)
            self._raw[n] = np.bincount(g, minlength=self.sizes[n]), _context_of(g, h, self.sizes[n])
        return self._raw[n]

    def level(self, n: int, top: bool) -> Level:
        """Level n: raw counts when it is the model's order, else continuation counts:
        cc(g) = how many different tokens came right before the n-gram g."""
        counts, ctx_of = self.raw(n)
        if not top:
            t = self.positions(n + 1)
            big = np.unique(self.ids[n + 1][t])  # each distinct (n+1)-gram once
            suffix = _context_of(self.ids[n + 1][t], self.ids[n][t], self.sizes[n + 1])
            counts = np.bincount(suffix[big], minlength=self.sizes[n])
        return _level(counts, ctx_of, self.sizes[n - 1])


def kn_probs(levels: list[Level], ids: dict[int, np.ndarray], at: np.ndarray, vocab: int):
    """P_KN(token at t | the len(levels) - 1 tokens before it) for each t in `at`, (len(at),):
    p_m = max(c(h w) - D, 0) / c(h) + D * types(h) / c(h) * p_{m-1}, and p_{m-1} alone when
    c(h) = 0; p_0 = 1 / vocab."""
    p = np.full(at.size, 1.0 / vocab)
    for m, lev in enumerate(levels, start=1):
        g = ids[m][at]
        h = ids[m - 1][at - 1] if m > 1 else np.zeros(at.size, np.int64)
        c_hw, c_h, n_h = lev.counts[g], lev.context[h], lev.types[h]
        safe = np.maximum(c_h, 1.0)
        smoothed = np.maximum(c_hw - lev.discount, 0) / safe + lev.discount * n_h / safe * p
        p = np.where(c_h > 0, smoothed, p)
    return p


@dataclass(frozen=True)
class OrderScores:
    """Validation cross-entropy (nats per token) of the n-gram models of orders 1..MAX_ORDER."""

    orders: tuple[int, ...]
    add_k: tuple[float, ...]
    k: tuple[float, ...]  # the add-k constant each order used (picked on the training tail)
    kneser_ney: tuple[float, ...]
    discounts: dict  # (m, "raw" | "cont") -> D
    n_eval: int  # validation tokens scored


def _add_k_losses(counter: Counter, n: int, at: np.ndarray, vocab: int, ks) -> list[float]:
    """Mean -ln p_add-k at the positions `at`, for each k in ks (the counts gathered once)."""
    counts, ctx_of = counter.raw(n)
    seen = np.flatnonzero(counts)
    ctx_counts = np.bincount(ctx_of[seen], weights=counts[seen], minlength=counter.sizes[n - 1])
    g = counter.ids[n][at]
    h = counter.ids[n - 1][at - 1] if n > 1 else np.zeros(at.size, np.int64)
    c_hw, c_h = counts[g], ctx_counts[h]
    return [float(-np.log((c_hw + k) / (c_h + k * vocab)).mean()) for k in ks]


def order_scores(rank: dict[int, np.ndarray], n_train: int, vocab: int) -> OrderScores:
    """Add-k (k picked on the last TUNE_FRACTION of the training split, counted on the rest) and
    interpolated Kneser-Ney (counted on the whole training split; its discounts come from the
    counts, nothing is tuned) for n = 1..MAX_ORDER, on the validation positions that have
    MAX_ORDER - 1 validation tokens before them."""
    size = rank[1].size
    at = np.arange(n_train + MAX_ORDER - 1, size)
    if at.size == 0 or n_train < 2 * MAX_ORDER:
        raise ValueError("The text is too short to score n-gram models on its validation split.")
    fit_stop = n_train - max(MAX_ORDER + 1, int(n_train * TUNE_FRACTION))
    tune_at = np.arange(fit_stop + MAX_ORDER - 1, n_train)
    ids = {n: gram_ids(rank, n_train, n) for n in range(MAX_ORDER + 1)}
    fit, full = Counter(ids, fit_stop), Counter(ids, n_train)
    add_k, ks, kn, discounts = [], [], [], {}
    cont = [full.level(m, top=False) for m in range(1, MAX_ORDER)]
    for n in range(1, MAX_ORDER + 1):
        tuned = _add_k_losses(fit, n, tune_at, vocab, SMOOTHING_GRID)
        k = SMOOTHING_GRID[int(np.argmin(tuned))]
        ks.append(k)
        add_k.append(_add_k_losses(full, n, at, vocab, [k])[0])
        top = full.level(n, top=True)
        discounts[(n, "raw")] = top.discount
        if n < MAX_ORDER:
            discounts[(n, "cont")] = cont[n - 1].discount
        kn.append(float(-np.log(kn_probs([*cont[: n - 1], top], full.ids, at, vocab)).mean()))
    orders = tuple(range(1, MAX_ORDER + 1))
    return OrderScores(orders, tuple(add_k), tuple(ks), tuple(kn), discounts, int(at.size))


def unseen_contexts(rank: dict[int, np.ndarray], n_train: int, max_n: int = MAX_CONTEXT):
    """For n = 1..max_n: the share of validation positions whose n tokens before them never
    occur in the training split followed by a token (an n-gram model has no count for them).
    Scored on the positions with max_n validation tokens before them."""
    size = rank[1].size
    at = np.arange(n_train + max_n, size)
    out = []
    for n in range(1, max_n + 1):
        ids = gram_ids(rank, n_train, n)
        train_ctx = ids[np.arange(n - 1, n_train - 1)]  # contexts ending before the last token
        seen = np.zeros(int(rank[n].max()) + 1, dtype=bool)
        seen[train_ctx[train_ctx >= 0]] = True
        out.append(float(1.0 - seen[ids[at - 1]].mean()) if at.size else float("nan"))
    return tuple(out)


# ---- one context's whole distribution, through the index --------------------------------------


def continuation_counts(index: CorpusIndex, context, vocab: int) -> np.ndarray:
    """(V,) for each w: how many different tokens x came right before `context` + w in the
    training split (Kneser-Ney's count for a lower order)."""
    m = len(context)
    starts = index.find(context).astype(np.int64)
    starts = starts[(starts >= 1) & (starts + m < index.n_train)]
    pairs = np.unique(index.tokens[starts - 1].astype(np.int64) * vocab + index.tokens[starts + m])
    return np.bincount(pairs % vocab, minlength=vocab)


def kn_distribution(
    index: CorpusIndex,
    context,
    order: int,
    discounts: dict,
    vocab: int,
    unigram_cont: np.ndarray | None = None,
) -> np.ndarray:
    """(V,) P_KN(w | the last order - 1 tokens of context), the same recursion as kn_probs but
    for every w at once, counting through the index. A shorter context uses the orders it has.
    unigram_cont: continuation_counts(index, [], vocab), which scans the whole split, if known."""
    context = [int(t) for t in context]
    n = min(order, len(context) + 1)
    p = np.full(vocab, 1.0 / vocab)
    for m in range(1, n + 1):
        h = context[len(context) - (m - 1) :] if m > 1 else []
        top = m == n
        if top:
            counts = index.followers(h, vocab)
        elif m == 1 and unigram_cont is not None:
            counts = unigram_cont
        else:
            counts = continuation_counts(index, h, vocab)
        counts = counts.astype(np.float64)
        d = discounts.get((m, "raw" if top else "cont"), discounts.get((m, "raw"), 0.5))
        total = counts.sum()
        if total > 0:
            p = np.maximum(counts - d, 0) / total + d * (counts > 0).sum() / total * p
    return p
