"""The N-grams page's numbers, and the "in the training text" views of Next token and Generation.

- `token_models(text, tokenizer)`: the corpus in the model's own tokens, split as for training,
  with its index, the add-k and Kneser-Ney scores of every order, and how sparse contexts get.
- `symbol_index(text, "letters" | "words")` and `shannon_text`: Shannon's approximations of
  English (1948), sampled from the corpus the way he did from a book.
- `count_table`: the count-ratio estimate after a context (undefined when it never occurred).
- `in_training_text`: where a prompt's last tokens occur, what followed, and snippets.
- `memorised_spans`: stretches of a text found verbatim in the corpus, and in which split.
- `bits_per_char`: a loss in nats per token as bits per character, to compare tokenizers;
  `validation_chars_per_token`: the characters a token stands for on the validation split.

Not here: the index and the smoothing (corpus_index.py, ngram.py), figures (charts/ngrams.py).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.analysis.training import RecordedLoss, loss_step_label
from viz_model.model.sampling import generate
from viz_model.text import ngram
from viz_model.text.corpus_index import DEPTH, CorpusIndex, ranks
from viz_model.text.data import VAL_FRACTION, TokenData
from viz_model.text.tokenization import Tokenizer

LN2 = math.log(2.0)
WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*|\d+|\n|[^\w\s]")
NO_SPACE_BEFORE = set(".,;:!?')]}\n")
N_SNIPPETS = 4
SNIPPET_TOKENS = 12  # tokens shown on each side of an occurrence (char models: doubled)


@dataclass
class TokenModels:
    """The corpus in the model's tokens (training split, then validation split) and what counting
    makes of it."""

    index: CorpusIndex
    scores: ngram.OrderScores
    unseen: tuple[float, ...]  # share of validation contexts of n = 1..8 tokens never in training
    unigram_cont: np.ndarray  # (V,) Kneser-Ney's unigram continuation counts
    vocab: int
    val_chars: int  # characters of the validation split's text
    val_tokens: int
    seconds: dict  # "encode", "count": the time each part of the build took

    @property
    def chars_per_token(self) -> float:
        return self.val_chars / max(self.val_tokens, 1)

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + self.unigram_cont.nbytes

    def kn_distribution(self, context, order: int) -> np.ndarray:
        """(V,) the Kneser-Ney distribution of order `order` after `context` (token ids)."""
        return ngram.kn_distribution(
            self.index, context, order, self.scores.discounts, self.vocab, self.unigram_cont
        )


def token_models(text: str, tokenizer: Tokenizer, val_fraction: float = VAL_FRACTION):
    """Encode `text` as training did (TokenData), count it, and index it. ValueError when the
    text is too short to score."""
    t0 = time.perf_counter()
    data = TokenData.from_text(text, tokenizer, val_fraction)
    train, val = data.train.numpy(), data.val.numpy()
    t1 = time.perf_counter()
    tokens = np.concatenate([train, val]).astype(np.int32)
    rank = ranks(tokens, train.size, [DEPTH, ngram.MAX_CONTEXT])
    index = CorpusIndex.build(tokens, train.size, DEPTH, rank)
    vocab = tokenizer.vocab_size
    scores = ngram.order_scores(rank, train.size, vocab)
    unseen = ngram.unseen_contexts(rank, train.size)
    cont = ngram.continuation_counts(index, [], vocab)
    val_chars = len(tokenizer.decode(val.tolist()))
    seconds = {"encode": t1 - t0, "count": time.perf_counter() - t1}
    return TokenModels(index, scores, unseen, cont, vocab, val_chars, int(val.size), seconds)


def bits_per_char(nats_per_token: float, chars_per_token: float) -> float:
    """A loss in nats per token as bits per character: / ln 2, / characters per token.

    >>> round(bits_per_char(2 * LN2, 2.0), 6)
    1.0
    """
    return nats_per_token / LN2 / chars_per_token


def validation_chars_per_token(
    text: str, tokenizer: Tokenizer, val_fraction: float = VAL_FRACTION
) -> float:
    """Characters per token on the validation split training holds out of `text` (TokenData), the
    divisor that turns a validation loss per token into one per character (1 for characters, as
    the Compare models page counts them)."""
    if tokenizer.kind == "char":
        return 1.0
    val = TokenData.from_text(text, tokenizer, val_fraction).val
    return len(tokenizer.decode(val.tolist())) / max(val.numel(), 1)


# ---- Shannon's approximations: letters and words ----------------------------------------------


@dataclass
class SymbolIndex:
    """The corpus as letters (every character) or words, indexed for sampling."""

    index: CorpusIndex
    symbols: list[str]  # id -> text
    unit: str  # "letters" or "words"

    def join(self, ids) -> str:
        parts = [self.symbols[i] for i in ids]
        return "".join(parts) if self.unit == "letters" else join_words(parts)


def split_words(text: str) -> list[str]:
    """Words, numbers, single punctuation marks and newlines, in order.

    >>> split_words("Ay, my lord.\\nI'll go")
    ['Ay', ',', 'my', 'lord', '.', '\\n', "I'll", 'go']
    """
    return WORD_RE.findall(text)


def join_words(words: list[str]) -> str:
    """Words back into text: a space between words, none before punctuation or after a newline.

    >>> join_words(['Ay', ',', 'my', 'lord', '.', '\\n', "I'll", 'go'])
    "Ay, my lord.\\nI'll go"
    """
    out, prev = [], None
    for w in words:
        glue = "" if prev is None or w in NO_SPACE_BEFORE or prev in ("\n", "(", "[") else " "
        out.append(glue + w)
        prev = w
    return "".join(out)


def symbol_index(text: str, unit: str) -> SymbolIndex:
    """The whole text as letters or words, indexed (no validation split: Shannon's book)."""
    if unit not in ("letters", "words"):
        raise ValueError(f"unit must be 'letters' or 'words'; got {unit!r}")
    pieces = list(text) if unit == "letters" else split_words(text)
    symbols, ids = np.unique(np.array(pieces, dtype=object), return_inverse=True)
    tokens = np.asarray(ids, dtype=np.int32).reshape(-1)
    return SymbolIndex(CorpusIndex.build(tokens, tokens.size, depth=4), list(symbols), unit)


def shannon_text(source: SymbolIndex, order: int, length: int, seed: int) -> str:
    """`length` symbols from Shannon's approximation of order `order`: 0 draws every symbol
    equally often, 1 with its frequency, n with the frequency it has after the n - 1 before it
    (a random occurrence of them in the text, and what came next)."""
    rng = np.random.default_rng(seed)
    if order == 0:
        return source.join(rng.integers(len(source.symbols), size=length).tolist())
    out: list[int] = []
    for _ in range(length):
        context = out[len(out) - (order - 1) :] if order > 1 else []
        out.append(source.index.sample_next(context, rng)[0])
    return source.join(out)


# ---- the count-ratio estimate -----------------------------------------------------------------


@dataclass(frozen=True)
class CountTable:
    """What followed a context in the training split: P(w | context) = count(context w) / total."""

    context: list[int]
    counts: np.ndarray  # (V,)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def defined(self) -> bool:
        return self.total > 0

    def probs(self) -> np.ndarray:
        """(V,) count ratios; NaN everywhere when the context never occurred (0 / 0)."""
        if not self.defined:
            return np.full(self.counts.shape, np.nan)
        return self.counts / self.total

    def top(self, k: int) -> np.ndarray:
        """The ids of the k most frequent followers (count > 0), most frequent first."""
        order = np.lexsort((np.arange(self.counts.size), -self.counts))[:k]
        return order[self.counts[order] > 0]


def count_table(models: TokenModels, context) -> CountTable:
    context = [int(t) for t in context]
    return CountTable(context, models.index.followers(context, models.vocab))


# ---- the prompt in the training text ----------------------------------------------------------


@dataclass(frozen=True)
class Snippet:
    """One occurrence of a context in the corpus: the text before, the context, what followed."""

    before: str
    match: str
    after: str  # the token that followed
    rest: str  # the text after that
    position: int  # token position in the stream
    split: str  # "training" or "validation"


def snippets(
    models: TokenModels, tokenizer: Tokenizer, context, n: int = N_SNIPPETS, width: int = 0
) -> list[Snippet]:
    """Up to n occurrences of `context` in the training split, evenly spread through it."""
    index, m = models.index, len(context)
    width = width or (2 * SNIPPET_TOKENS if tokenizer.kind == "char" else SNIPPET_TOKENS)
    starts = index.follower_positions(context) - m  # occurrences with a follower, in order
    if starts.size > n:
        starts = starts[(np.arange(n) * 2 + 1) * starts.size // (2 * n)]
    return [_snippet(index, tokenizer, s, m, width) for s in starts.tolist()]


def _snippet(index: CorpusIndex, tokenizer: Tokenizer, s: int, m: int, width: int) -> Snippet:
    lo = 0 if s < index.n_train else index.n_train
    hi = index.segment_end(s)

    def text(a: int, b: int) -> str:
        return tokenizer.decode(index.tokens[max(a, lo) : min(b, hi)].tolist())

    split = "training" if s < index.n_train else "validation"
    after = s + m + 1
    return Snippet(
        text(s - width, s), text(s, s + m), text(s + m, after), text(after, after + width), s, split
    )


# ---- memorisation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """Tokens [start, end) of a text that occur verbatim in the corpus."""

    start: int
    end: int
    in_train: int  # occurrences in the training split
    in_val: int  # occurrences in the validation split

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def source(self) -> str:
        return "training" if self.in_train else "validation only"


def memorised_spans(index: CorpusIndex, seq, min_len: int, first: int = 0) -> list[Span]:
    """Stretches of `seq` of at least min_len tokens found verbatim in the corpus that reach
    past position `first` (the generated part), each with its occurrences per split. Read left
    to right: a stretch is the longest match starting at its first token, and the next one starts
    where it ends (or later), so stretches never overlap."""
    seq = [int(t) for t in seq]
    lengths = index.match_lengths(seq)
    spans, reach = [], 0
    for i, m in enumerate(lengths.tolist()):
        if m < min_len or i < reach or i + m <= first:
            continue
        reach = i + m
        found = index.find(seq[i : i + m])
        n_train = int((found < index.n_train).sum())
        spans.append(Span(i, i + m, n_train, int(found.size) - n_train))
    return spans


def covered(spans: list[Span], n: int) -> np.ndarray:
    """(n,) bool: the positions inside some span."""
    out = np.zeros(n, dtype=bool)
    for s in spans:
        out[s.start : s.end] = True
    return out


# ---- the GPT beside the counts ------------------------------------------------------------------


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities from one position's logits (V,), in float64."""
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max())
    return e / e.sum()


def start_ids(tokenizer: Tokenizer, index: CorpusIndex) -> list[int]:
    """Where a GPT sample starts when it is set beside Shannon's (which start from nothing): a
    newline when the model knows it as one token, else the corpus's first token."""
    newline = tokenizer.encode("\n")
    if len(newline) == 1 and newline[0] not in tokenizer.special_ids:
        return newline
    return [int(index.tokens[0])] if index.tokens.size else [0]


def gpt_sample(model, tokenizer: Tokenizer, start: list[int], n_tokens: int, seed: int) -> str:
    """n_tokens sampled at temperature 1 after `start` (not included), as text."""

    return tokenizer.decode(generate(model, start, n_tokens, seed=seed))


def text_log_probs(model, seq: list[int], start: int) -> np.ndarray:
    """(len(seq) - start,) ln p(seq[t] | the n_ctx tokens before it) for t = start.., temperature
    1: what the model thought of each token when it was generated. Positions within the first
    window share one pass; each later one has its own window (batched)."""

    n_ctx, device = model.cfg.n_ctx, model.embed.weight.device
    start = max(start, 1)
    out = []
    with torch.no_grad():
        head = seq[:n_ctx]
        if start < len(head):
            z = torch.log_softmax(
                model(torch.tensor(head, device=device)).double().cpu(), -1
            )  # (T, V)
            out += [float(z[t - 1, seq[t]]) for t in range(start, len(head))]
        later = range(max(start, n_ctx), len(seq))
        if len(later):
            windows = torch.tensor([seq[t - n_ctx : t] for t in later], device=device)  # (B, n_ctx)
            z = torch.log_softmax(model(windows)[:, -1].double().cpu(), -1)  # (B, V)
            out += z[torch.arange(len(later)), torch.tensor([seq[t] for t in later])].tolist()
    return np.array(out, dtype=np.float64)


# ---- claims (docs/ARCHITECTURE.md, Claims) ------------------------------------------------------------------

CHANCE_CHUNKS, CHANCE_CHUNK = 8, 64  # held-out text measured for the chance overlap: 8 x 64 tokens


def train_match_lengths(index: CorpusIndex, query, cap: int = 512) -> np.ndarray:
    """L[i]: the longest stretch query[i : i + L] that occurs in the *training* split (at most
    cap). As CorpusIndex.match_lengths (L[i + 1] >= L[i] - 1), with occurrences in the training
    split only, so held-out text is never matched against itself."""
    query = [int(t) for t in query]
    out = np.zeros(len(query), dtype=np.int64)

    def in_train(pattern: list[int]) -> bool:
        return bool((index.find(pattern) < index.n_train).any())

    m = 0
    for i in range(len(query)):
        m = max(m - 1, 0)
        while i + m < len(query) and m < cap and in_train(query[i : i + m + 1]):
            m += 1
        out[i] = m
    return out


def chance_match_length(
    index: CorpusIndex, chunks: int = CHANCE_CHUNKS, length: int = CHANCE_CHUNK
) -> int:
    """The longest stretch that held-out text (the validation split, never trained on) shares
    word for word with the training split: what overlap by chance (common words, names, stock
    phrases) reaches in this corpus. Measured on `chunks` stretches of `length` tokens spread
    over the validation split; 0 when there is none."""
    n_val = index.tokens.size - index.n_train
    if n_val <= 0:
        return 0
    length = min(length, n_val)
    starts = np.linspace(index.n_train, index.tokens.size - length, chunks).astype(int)
    best = 0
    for s in sorted(set(starts.tolist())):
        best = max(best, int(train_match_lengths(index, index.tokens[s : s + length]).max()))
    return best


def memorisation_claim(spans: list[Span], min_len: int, chance: int, first: int = 0) -> Claim:
    """Is part of a generated text copied from the training text? Only the generated part of a
    stretch counts (tokens from `first` on: a prompt quoting the corpus is the user's doing).
    Claimed when a stretch found in the training split holds more generated tokens than the
    longest stretch held-out text shares with it by chance (`chance_match_length`); otherwise
    the neutral sentence says what was found."""

    def generated(s: Span) -> int:
        return s.end - max(s.start, first)

    trained = [s for s in spans if s.in_train]
    longest = max(trained, key=generated, default=None)
    n = generated(longest) if longest else 0
    numbers = {"chance": chance, "min_len": min_len, "longest": n, "first": first}
    if longest is None:
        text = (
            f"No stretch of {min_len} tokens or more reaching into the generated text is in the "
            "training split."
        )
        return Claim(text, False, numbers)
    where = f"tokens {longest.start}–{longest.end - 1}"
    if longest.start < first:
        where += f", {longest.length} with the prompt"
    if n > chance:
        text = (
            f"A stretch found in the training split ({where}) holds **{n} generated tokens**, "
            f"more than any stretch held-out text shares with it by chance (up to {chance}): the "
            "model copied it from its training text."
        )
        return Claim(text, True, numbers)
    text = (
        f"The longest stretch found in the training split ({where}) holds {n} generated "
        f"token{'s' * (n != 1)}; held-out text, never trained on, shares stretches of up to "
        f"{chance} tokens with it too (common words and phrases), so this is no evidence of "
        "copying."
    )
    return Claim(text, False, numbers)


def sparsity_claim(unseen: tuple[float, ...]) -> Claim:
    """Do longer contexts go unseen more often? unseen[n - 1]: the share of validation contexts
    of n tokens never in the training split. Claimed when the share never falls as n grows and
    ends higher than it starts."""
    shares = [float(x) for x in unseen if math.isfinite(x)]
    numbers = {
        "first": shares[0] if shares else math.nan,
        "last": shares[-1] if shares else math.nan,
    }
    numbers |= {"n_max": len(shares)}
    rising = len(shares) >= 2 and all(b >= a for a, b in zip(shares, shares[1:], strict=False))
    if rising and shares[-1] > shares[0]:
        text = (
            f"Here: {shares[0]:.1%} of the contexts of 1 token met in the validation text never "
            f"occur in the training text; of {len(shares)} tokens, {shares[-1]:.1%}."
        )
        return Claim(text, True, numbers)
    listed = ", ".join(f"{x:.1%}" for x in shares)
    return Claim(f"Unseen contexts by length here: {listed}.", False, numbers)


def add_k_claim(orders: tuple[int, ...], add_k_bits: list[float]) -> Claim:
    """Does add-k get worse past a few tokens of context? Claimed when its best order is below
    the largest and the largest order scores worse than the best."""
    best = int(np.argmin(add_k_bits))
    numbers = {"best_order": orders[best], "best": add_k_bits[best], "last": add_k_bits[-1]}
    numbers |= {"last_order": orders[-1]}
    if best < len(orders) - 1 and add_k_bits[-1] > add_k_bits[best]:
        text = (
            f"Here add-k is best at n = {orders[best]} ({add_k_bits[best]:.2f} bits per token) "
            f"and worse at n = {orders[-1]} ({add_k_bits[-1]:.2f}): past a few tokens of context "
            "its sparse counts make it worse, not better."
        )
        return Claim(text, True, numbers)
    text = (
        f"Here add-k keeps improving up to n = {orders[best]} ({add_k_bits[best]:.2f} bits per "
        "token): this corpus is large enough for its counts at these orders."
    )
    return Claim(text, False, numbers)


def order_ranges(orders: list[int]) -> str:
    """ "n = 3–6" or "n = 2, 4–5": orders as runs of consecutive numbers."""
    runs: list[list[int]] = []
    for n in orders:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return "n = " + ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


KN_MARGIN = 0.05  # bits per token: Kneser-Ney is better or worse than add-k only beyond this


def kneser_ney_claim(
    orders: tuple[int, ...], add_k_bits: list[float], kn_bits: list[float], vocab: int
) -> Claim:
    """Kneser-Ney against add-k at each order (better or worse beyond KN_MARGIN bits, else
    within it), and against a blind guess over the vocabulary (log2 V bits). The literature's
    verdict (Chen and Goodman, 1998: modified Kneser-Ney is the best of the classic counting
    models) is said only when Kneser-Ney is better at some order and worse at none."""
    blind = math.log2(vocab)
    pairs = list(zip(orders, add_k_bits, kn_bits, strict=True))
    worse = [n for n, a, k in pairs if k > a + KN_MARGIN]
    better = [n for n, a, k in pairs if k < a - KN_MARGIN]
    within = [n for n in orders if n not in worse and n not in better]
    above_blind = [n for n, _, k in pairs if round(k, 2) > round(blind, 2)]
    numbers = {
        "n_worse_than_add_k": len(worse),
        "n_better_than_add_k": len(better),
        "n_worse_than_blind": len(above_blind),
        "blind": blind,
        "margin": KN_MARGIN,
    }
    near = f"within {KN_MARGIN} bits of it at {order_ranges(within)}" if within else ""
    if not worse and better:
        text = f"Here Kneser-Ney beats add-k at {order_ranges(better)}" + (
            f" and is {near}" if near else ""
        )
        text += (
            ", as on most text: in its modified form it is the best of the classic counting "
            "models (Chen and Goodman, 1998)."
        )
        return Claim(text, True, numbers)
    if not worse:
        text = (
            f"Here Kneser-Ney and add-k score within {KN_MARGIN} bits of each other at every order."
        )
        return Claim(text, False, numbers)
    i = orders.index(worse[-1])
    text = (
        f"Here Kneser-Ney scores **worse** than add-k at {order_ranges(worse)}, by more than "
        f"{KN_MARGIN} bits (at n = {worse[-1]}: {kn_bits[i]:.2f} against {add_k_bits[i]:.2f} "
        "bits per token)"
    )
    if above_blind:
        j = orders.index(above_blind[-1])
        text += (
            f", and worse than a blind guess over the {vocab:,} tokens ({blind:.2f} bits) at "
            f"{order_ranges(above_blind)} ({kn_bits[j]:.2f} at n = {above_blind[-1]})"
        )
    text += (
        ". The usual verdict, that in its modified form it is the best of the classic counting "
        "models (Chen and Goodman, 1998), does not hold on this text."
    )
    return Claim(text, False, numbers)


def _loss_where(recorded: RecordedLoss | None, shown: int | None) -> tuple[str, str]:
    """(" at step 300, its last evaluation by step 316" after a loss, a sentence after the claim)
    saying whose a recorded loss is when the page shows the weights at step `shown`."""
    label = "" if recorded is None else loss_step_label(recorded, shown)
    if not label:
        return "", ""
    if recorded.of_final:
        final = "its final step" + ("" if recorded.step is None else f", {recorded.step:,}")
        return (
            f" at {final}",
            f" No validation loss was recorded by step {shown:,}, the step on screen.",
        )
    if recorded.step == shown:
        return f" at step {shown:,}", ""
    return f" at step {recorded.step:,}, its last evaluation by step {shown:,}", ""


def gpt_vs_counts_claim(
    name: str,
    gpt_bits: float | None,
    orders: tuple[int, ...],
    kn_bits: list[float],
    causal: bool,
    recorded: RecordedLoss | None = None,
    shown: int | None = None,
) -> Claim:
    """The GPT beside the best counting model, per token of the same tokenizer, on the same
    validation split: lower bits win. A model without the causal mask saw the token it was scored
    on, so its loss says nothing about prediction and is not compared. `gpt_bits` is `recorded`'s
    loss in bits; on a page showing the weights at training step `shown`, the sentence says which
    step's evaluation it is (the final step's where none was made by then: issue 36)."""
    best = int(np.argmin(kn_bits))
    numbers = {"kn_best": kn_bits[best], "kn_order": orders[best], "causal": float(causal)}
    if gpt_bits is None:
        return Claim(f"“{name}” has no recorded validation loss to compare.", False, numbers)
    numbers["gpt"] = gpt_bits
    if recorded is not None and recorded.step is not None:
        numbers["loss_step"] = recorded.step
    where, note = _loss_where(recorded, shown)
    if not causal:
        text = (
            f"“{name}” has no causal mask: in training and validation it saw the token it was "
            f"scored on, so its loss ({gpt_bits:.2f} bits per token{where}) measures copying, "
            f"not prediction, and is left off the charts.{note}"
        )
        return Claim(text, False, numbers)
    kn = f"the best Kneser-Ney model (n = {orders[best]}, {kn_bits[best]:.2f} bits per token)"
    if gpt_bits < kn_bits[best]:
        text = f"“{name}” ({gpt_bits:.2f} bits per token{where}) beats {kn}.{note}"
        return Claim(text, True, numbers)
    text = (
        f"“{name}” ({gpt_bits:.2f} bits per token{where}) does not beat {kn}: counting wins "
        f"here.{note}"
    )
    return Claim(text, False, numbers)
