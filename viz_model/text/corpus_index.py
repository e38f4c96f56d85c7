"""An index of a token stream for "where in the training text?" questions, built with numpy.

Covers: a stream of ids in two segments (the training split, then the validation split, as
`data.TokenData` cuts them), the lexicographic rank of every position's first k tokens (`ranks`,
shared with the n-gram counts of `ngram.py`), a suffix array sorted by the first `depth` tokens,
and look-ups through it by binary search: where a context occurs, what followed it, a random
follower (Shannon's way of sampling an n-gram model from a book), snippets around an occurrence,
and the stretches of a text that occur verbatim in the stream (the memorisation check).

Nothing crosses the seam between the two segments: a context at the end of the training split is
never continued by the first validation token.

    >>> index = CorpusIndex.build([0, 1, 2, 0, 1, 3], n_train=6)
    >>> index.followers([0, 1]).tolist()   # "0 1" was followed once by 2 and once by 3
    [0, 0, 1, 1]

Not here: smoothing and perplexity (ngram.py), tokenizers (tokenization.py).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np

DEPTH = 8  # the suffix array orders positions by their first DEPTH tokens (longer: checked)
CHECK_CHUNK = 65_536  # candidates compared at once for a pattern longer than DEPTH


def segment_ends(n: int, n_train: int) -> np.ndarray:
    """(n,) the end (exclusive) of each position's segment: n_train in training, n in validation."""
    return np.where(np.arange(n) < n_train, n_train, n).astype(np.int64)


def _dense(codes: np.ndarray) -> np.ndarray:
    """Dense ranks 0..U-1 in sorted order of codes (equal codes, equal rank)."""
    return np.unique(codes, return_inverse=True)[1].astype(np.int32).reshape(-1)


def _packed_ranks(dense: np.ndarray, ends: np.ndarray, per: int, bits: int) -> dict:
    """rank[1..per] from one sort: each position's first `per` tokens packed into one int64
    (token + 1, 0 past the segment end, so a shorter string sorts first); the rank of the first
    k tokens then counts where the top k fields change along the sorted keys."""
    n = dense.size
    idx = np.arange(n)
    key = np.zeros(n, dtype=np.int64)
    for j in range(per):
        ok = idx + j < ends
        field = np.zeros(n, dtype=np.int64)
        field[ok] = dense[idx[ok] + j] + 1
        key |= field << (bits * (per - 1 - j))
    order = np.argsort(key)
    sorted_key = key[order]
    out = {}
    for k in range(1, per + 1):
        prefix = sorted_key >> (bits * (per - k))
        rank = np.empty(n, dtype=np.int32)
        rank[order] = np.concatenate([[0], np.cumsum(prefix[1:] != prefix[:-1])])
        out[k] = rank
    return out


def ranks(tokens: np.ndarray, n_train: int, lengths) -> dict[int, np.ndarray]:
    """rank[k][i]: the lexicographic rank of tokens[i : min(i + k, segment end)] (shorter first),
    for k = 1 .. min(top, 8) and then 16, 32, ... up to top = max(lengths) (a power of two past
    8). Equal k-grams get equal ranks, so rank[k][i] is also a dense id of the k-gram starting at
    i. As many tokens as fit in 63 bits come from one sort of packed keys; then one token is added
    at a time up to 8, then the length doubles (rank[2k] from rank[k] at i and at i + k).

    >>> ranks([2, 1, 2, 1], 4, [2])[2].tolist()   # "21" "12" "21" "1": 1 < 12 < 21
    [2, 1, 2, 0]
    """
    top = max(lengths)
    if top > 8 and top & (top - 1):
        raise ValueError(f"lengths past 8 must be powers of two; got {top}")
    tokens = np.asarray(tokens, dtype=np.int64)
    n = tokens.size
    ends = segment_ends(n, n_train)
    dense = _dense(tokens).astype(np.int64)
    bits = max(1, int(dense.max(initial=0) + 1).bit_length())  # values 0..U, U = distinct
    per = max(1, min(8, top, 63 // bits))
    out = _packed_ranks(dense, ends, per, bits)
    idx = np.arange(n)
    k = per
    while k < top:
        source, step = (tokens, 1) if k < 8 else (out[k], k)  # the next token, or the next k
        ok = idx + k < ends
        nxt = np.full(n, -1, dtype=np.int64)
        nxt[ok] = source[idx[ok] + k]
        base = int(source.max(initial=0)) + 2
        out[k + step] = _dense(out[k].astype(np.int64) * base + (nxt + 1))
        k += step
    return out


@dataclass
class CorpusIndex:
    """A stream (training split, then validation split) and its suffix array."""

    tokens: np.ndarray  # (N,) int32
    n_train: int
    sa: np.ndarray  # (N,) int32: positions ordered by their first `depth` tokens
    depth: int

    @classmethod
    def build(cls, tokens, n_train: int, depth: int = DEPTH, rank: dict | None = None):
        """Index `tokens`, whose first n_train are the training split. `rank` may pass ranks()
        already computed (with `depth` among its lengths), to sort only once."""
        tokens = np.asarray(tokens, dtype=np.int32)
        if not 0 <= n_train <= tokens.size:
            raise ValueError(f"n_train must be in [0, {tokens.size}]; got {n_train}")
        depth = max(1, min(depth, max(tokens.size, 1)))
        if tokens.size == 0:
            return cls(tokens, 0, np.zeros(0, np.int32), depth)
        rank = rank if rank is not None and depth in rank else ranks(tokens, n_train, [depth])
        sa = np.argsort(rank[depth], kind="stable").astype(np.int32)
        return cls(tokens, int(n_train), sa, depth)

    @property
    def nbytes(self) -> int:
        return int(self.tokens.nbytes + self.sa.nbytes)

    def segment_end(self, pos: int) -> int:
        return self.n_train if pos < self.n_train else self.tokens.size

    def _prefix(self, pos: int, m: int) -> list[int]:
        return self.tokens[pos : min(pos + m, self.segment_end(pos))].tolist()

    def find(self, pattern) -> np.ndarray:
        """Every position where `pattern` starts (both splits), in suffix-array order."""
        pattern = [int(t) for t in pattern]
        if not pattern:
            return np.arange(self.tokens.size, dtype=np.int32)
        head = pattern[: self.depth]
        sa = self.sa

        def key(j: int) -> list[int]:
            return self._prefix(int(sa[j]), len(head))

        lo = bisect_left(range(sa.size), head, key=key)
        hi = bisect_right(range(sa.size), head, lo=lo, key=key)
        found = sa[lo:hi]
        if len(pattern) > self.depth:  # the order says nothing past depth: compare the rest
            found = np.concatenate(
                [
                    self._check(found[i : i + CHECK_CHUNK], pattern)
                    for i in range(0, found.size, CHECK_CHUNK)
                ]
                or [found]
            )
        return found

    def _check(self, starts: np.ndarray, pattern: list[int]) -> np.ndarray:
        """The starts whose next len(pattern) tokens, within their segment, equal the pattern."""
        m = len(pattern)
        starts = starts.astype(np.int64)
        ends = np.where(starts < self.n_train, self.n_train, self.tokens.size)
        starts = starts[starts + m <= ends]
        window = self.tokens[starts[:, None] + np.arange(m)]  # (candidates, m)
        return starts[(window == np.asarray(pattern)).all(axis=1)].astype(np.int32)

    def occurs(self, pattern) -> bool:
        return self.find(pattern).size > 0

    def follower_positions(self, context, split: str = "train", sort: bool = True) -> np.ndarray:
        """Positions of the token that followed each occurrence of `context` in one split
        ("train", "val" or "all"), sorted unless sort=False; never across the seam."""
        m = len(context)
        starts = self.find(context).astype(np.int64)
        nxt = starts + m
        ends = np.where(starts < self.n_train, self.n_train, self.tokens.size)
        keep = nxt < ends
        if split == "train":
            keep &= starts < self.n_train
        elif split == "val":
            keep &= starts >= self.n_train
        return np.sort(nxt[keep]) if sort else nxt[keep]

    def followers(self, context, vocab_size: int | None = None, split: str = "train") -> np.ndarray:
        """(V,) counts of each token right after `context` in the split (all zero when unseen)."""
        nxt = self.tokens[self.follower_positions(context, split)]
        size = vocab_size or int(self.tokens.max(initial=-1)) + 1
        return np.bincount(nxt, minlength=size)

    def sample_next(self, context, rng: np.random.Generator) -> tuple[int, int]:
        """Shannon's method: open the training text at a random occurrence of the context and
        take the token after it. Backs off to a shorter context (dropping its first token) when
        the context never occurs; returns (token, the context length used)."""
        context = list(context)
        while context:
            nxt = self.follower_positions(context, sort=False)
            if nxt.size:
                return int(self.tokens[nxt[rng.integers(nxt.size)]]), len(context)
            context = context[1:]
        if not self.n_train:
            raise ValueError("the training split is empty")
        return int(self.tokens[rng.integers(self.n_train)]), 0  # any token, by its frequency

    def match_lengths(self, query, cap: int = 512) -> np.ndarray:
        """L[i]: the length of the longest stretch query[i : i + L] that occurs in the stream
        (either split), at most `cap`. Matching statistics: L[i + 1] >= L[i] - 1, so each i starts
        from there and only extends: about 2 look-ups per query token."""
        query = [int(t) for t in query]
        out = np.zeros(len(query), dtype=np.int64)
        m = 0
        for i in range(len(query)):
            m = max(m - 1, 0)
            while i + m < len(query) and m < cap and self.occurs(query[i : i + m + 1]):
                m += 1
            out[i] = m
        return out
