"""Tokenization as the lesson shows it: BPE merges walked one at a time, and token counts.

Covers: the byte-level alphabet of GPT-2 style BPE (each byte shown as a printable character, e.g.
a space as "Ġ"), pre-tokenizing text into the words BPE never merges across, applying the first n
merges of a trained BPE to a text (the merge stepper), counting adjacent pairs in a corpus (the
frequency that made the trainer pick each merge), token counts per tokenizer and per vocabulary
size, and the classic pitfall strings.
Not here: training and encoding (tokenization.py does both through HF `tokenizers`), drawing chips
(charts/tokens.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from tokenizers import pre_tokenizers

from viz_model.analysis.claims import Claim, show_controls
from viz_model.text.tokenization import Tokenizer

Merge = tuple[str, str]
Word = tuple[str, ...]


# ---- the byte-level alphabet ----------------------------------------------------------------------


@lru_cache(maxsize=1)
def byte_to_symbol() -> dict[int, str]:
    """GPT-2's map from each of the 256 bytes to a printable character (space -> "Ġ", "\\n" -> "Ċ").

    Printable ASCII and Latin-1 bytes map to themselves; the rest are shifted to 256 + n, so every
    byte has a visible, single-character name and BPE can work on plain strings.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    keep += range(ord("®"), ord("ÿ") + 1)
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def symbol_to_byte() -> dict[str, int]:
    return {s: b for b, s in byte_to_symbol().items()}


def bytes_text(data: bytes) -> str:
    """UTF-8 text, with each byte that is not part of a whole character shown as "<e6>"."""
    out = []
    while data:
        try:
            out.append(data.decode("utf-8"))
            break
        except UnicodeDecodeError as e:
            out.append(data[: e.start].decode("utf-8") + f"<{data[e.start]:02x}>")
            data = data[e.start + 1 :]
    return "".join(out)


def symbol_text(symbol: str) -> str:
    """A byte-level token as readable text: "Ġthe" -> " the"; a partial UTF-8 character -> "<e6>"."""
    return bytes_text(bytes(symbol_to_byte()[c] for c in symbol))


def byte_piece_text(tokenizer: Tokenizer, i: int) -> str | None:
    """'<c3>' (or ' <e6>') for a byte-level token holding only part of a UTF-8 character; None for
    every other token. Such a token decodes to U+FFFD, and its raw form ("Ã") misleads."""
    if tokenizer.kind not in ("bpe", "json") or "\ufffd" not in tokenizer.decode([i]):
        return None
    raw = tokenizer.id_to_token(i)
    return symbol_text(raw) if all(c in symbol_to_byte() for c in raw) else None


def token_text(tokenizer: Tokenizer, i: int) -> str:
    """A vocabulary entry as the chips show it: its text, or its bytes for part of a character;
    an invisible control character (not newline or tab) shows as its code point: "\x0c" -> "<0c>"."""
    return show_controls(byte_piece_text(tokenizer, i) or tokenizer.id_to_token(i))


def display_tokens(tokenizer: Tokenizer, text: str) -> list[tuple[int, str]]:
    """(id, text) per token, for chips. A byte-level token that holds only part of a character
    shows its bytes ("<c3>") rather than the empty or whole-character span `pieces` gives it."""
    return [(p.id, byte_piece_text(tokenizer, p.id) or p.text) for p in tokenizer.pieces(text)]


# ---- pre-tokenizing and applying merges -----------------------------------------------------------

_PRE = pre_tokenizers.ByteLevel(add_prefix_space=False)  # the one tokenization.py's "bpe" uses


def pre_tokenize(text: str) -> list[str]:
    """Split text into the byte-level words BPE merges within (GPT-2's regex: words, numbers,
    punctuation runs, whitespace, each keeping one leading space), line by line like the trainer.

    >>> pre_tokenize("Hi you!\\n")
    ['Hi', 'Ġyou', '!', 'Ċ']
    """
    return [w for line in text.splitlines(keepends=True) for w, _ in _PRE.pre_tokenize_str(line)]


def initial_pieces(text: str) -> list[list[str]]:
    """The text before any merge: each pre-token word as a list of single byte symbols."""
    return [list(word) for word in pre_tokenize(text)]


def _merge_word(word: Sequence[str], ranks: dict[Merge, int], n: int) -> list[str]:
    """Apply merges of rank < n to one word: repeatedly merge the lowest-ranked adjacent pair,
    every occurrence left to right (what HF's BPE does; equal to applying merges 0..n-1 in turn,
    because a merge's two parts only ever come from merges of lower rank)."""
    symbols = list(word)
    while len(symbols) > 1:
        best, best_rank = None, n
        for pair in zip(symbols, symbols[1:], strict=False):
            r = ranks.get(pair)
            if r is not None and r < best_rank:
                best, best_rank = pair, r
        if best is None:
            return symbols
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                out.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def apply_merges(pieces: list[list[str]], merges: Sequence[Merge], n: int) -> list[list[str]]:
    """The first n merges (rank order) applied to pre-tokenized pieces (from `initial_pieces`).

    n=0 gives the bytes back; n=len(merges) gives what the tokenizer itself produces.
    >>> apply_merges([["a", "b", "c"]], [("a", "b"), ("ab", "c")], 1)
    [['ab', 'c']]
    """
    n = max(0, min(n, len(merges)))
    ranks = {tuple(m): r for r, m in enumerate(merges[:n])}
    return [_merge_word(word, ranks, n) for word in pieces]


def flatten(pieces: list[list[str]]) -> list[str]:
    return [s for word in pieces for s in word]


# ---- pair frequencies -----------------------------------------------------------------------------


def word_counts(text: str) -> Counter[Word]:
    """How often each pre-token word occurs in a corpus, as tuples of byte symbols."""
    return Counter(tuple(w) for w in pre_tokenize(text))


def pair_counts(words: dict[Word, int]) -> Counter[Merge]:
    """Adjacent symbol pairs counted over a corpus's words (weighted by each word's count).

    Overlapping pairs count, as in the trainer: ("a", "a", "a") holds ("a", "a") twice.
    """
    counts: Counter[Merge] = Counter()
    for word, c in words.items():
        for pair in zip(word, word[1:], strict=False):
            counts[pair] += c
    return counts


def merged_words(words: dict[Word, int], merges: Sequence[Merge], n: int) -> Counter[Word]:
    """The corpus's words after the first n merges (words that become equal add up)."""
    n = max(0, min(n, len(merges)))
    ranks = {tuple(m): r for r, m in enumerate(merges[:n])}
    out: Counter[Word] = Counter()
    for word, c in words.items():
        out[tuple(_merge_word(word, ranks, n))] += c
    return out


def merge_frequency(words: dict[Word, int], merges: Sequence[Merge], step: int) -> int:
    """How often merge number `step` (1-based) occurred in the corpus when it was learned:
    its pair's count after the first step-1 merges, the count that made it the most frequent."""
    if not 1 <= step <= len(merges):
        raise ValueError(f"step must be between 1 and {len(merges)}, got {step}")
    a, b = merges[step - 1]
    # Only words spelling out a+b can hold the pair: merge just those (about 100x less work).
    candidates = {w: c for w, c in words.items() if a + b in "".join(w)}
    return pair_counts(merged_words(candidates, merges, step - 1))[(a, b)]


@dataclass(frozen=True)
class MergeStep:
    """One step of the merge stepper, for display."""

    step: int  # 1-based; 0 = no merge yet
    pair: tuple[str, str]  # readable text of the two parts ("" at step 0)
    merged: str  # readable text of the new token
    tokens: list[str]  # the sample text's tokens after this step, readable
    symbols: list[str]  # the same tokens as byte-level vocabulary entries (tokenizer.token_to_id)
    changed: bool  # did this merge change the sample text?


def merge_step(text: str, merges: Sequence[Merge], step: int) -> MergeStep:
    """The sample text after `step` merges, and which pair the step merged."""
    step = max(0, min(step, len(merges)))
    pieces = initial_pieces(text)
    after = flatten(apply_merges(pieces, merges, step))
    if step == 0:
        return MergeStep(0, ("", ""), "", [symbol_text(s) for s in after], after, False)
    before = flatten(apply_merges(pieces, merges, step - 1))
    a, b = merges[step - 1]
    return MergeStep(
        step,
        (symbol_text(a), symbol_text(b)),
        symbol_text(a + b),
        [symbol_text(s) for s in after],
        after,
        after != before,
    )


def steps_that_change(text: str, merges: Sequence[Merge]) -> list[int]:
    """The 1-based merge steps that change this text's tokens (most merges never touch it)."""
    pieces = initial_pieces(text)
    ranks = {tuple(m): r for r, m in enumerate(merges)}
    used: set[int] = set()
    for word in pieces:
        symbols = list(word)
        while len(symbols) > 1:
            found = [ranks.get(p) for p in zip(symbols, symbols[1:], strict=False)]
            found = [r for r in found if r is not None]
            if not found:
                break
            r = min(found)
            used.add(r + 1)
            symbols = _merge_word(symbols, {tuple(merges[r]): 0}, 1)
    return sorted(used)


# ---- counts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenCounts:
    chars: int
    tokens: int
    unknown: int  # tokens that are the tokenizer's <unk>
    special: int = 0  # special tokens (a chat template's <|user|>), one id each

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0


def token_counts(tokenizer: Tokenizer, text: str) -> TokenCounts:
    ids = tokenizer.encode(text)
    unk = tokenizer.unk_id
    special = tokenizer.special_ids - {unk}
    return TokenCounts(
        len(text),
        len(ids),
        sum(i == unk for i in ids) if unk is not None else 0,
        sum(i in special for i in ids),
    )


def corpus_token_count(tokenizer: Tokenizer, text: str) -> int:
    """Tokens in a whole corpus, encoded line by line (about 2.5x faster than one string)."""
    return sum(len(ids) for ids in tokenizer.encode_batch(text.splitlines(keepends=True)))


def vocab_curve(text: str, vocab_sizes: Iterable[int]) -> list[tuple[int, int]]:
    """(vocabulary size, tokens the text needs) for BPEs trained on `text` at each size."""
    return [
        (v, corpus_token_count(Tokenizer.train(text, "bpe", v), text)) for v in sorted(vocab_sizes)
    ]


# ---- the pitfalls -----------------------------------------------------------------------------------

LETTERS, SPACING, NUMBERS = "Counting letters", "Spacing changes everything", "Numbers"
LEADING, SCRIPTS = "Leading spaces", "Unseen characters and other scripts"
DIGITS = "0123456789"

# The pitfalls and their strings; what each does on the tokenizers shown is `pitfall_claim`.
PITFALLS: list[tuple[str, list[str]]] = [
    (LETTERS, ["strawberry", " strawberry"]),
    (SPACING, ["http://", "http: //"]),
    (NUMBERS, ["1234567", "3.14159", "2024"]),
    (LEADING, [" hello", "hello", "Hello"]),
    (SCRIPTS, ["日本語", "🙂", "naïve"]),
]


def missing_digits(tokenizer: Tokenizer) -> list[str]:
    """The digits this tokenizer has no token for: each encodes to <unk> (never for byte BPE)."""
    unk = tokenizer.unk_id
    return [] if unk is None else [d for d in DIGITS if unk in tokenizer.encode(d)]


def digit_groups(tokenizer: Tokenizer, texts: Iterable[str]) -> list[str]:
    """The tokens of `texts` that hold two or more digits, distinct, in order of appearance.

    >>> digit_groups(Tokenizer.train("ab", "char"), ["2024"])  # a char model never groups
    []
    """
    found = [
        t
        for text in texts
        for token_id, t in display_tokens(tokenizer, text)
        if token_id != tokenizer.unk_id  # "2024" read as <unk> is not a group the model has
    ]
    return list(dict.fromkeys(t for t in found if sum(c.isdigit() for c in t) >= 2))


def _listed(items: list[str]) -> str:
    """'0, 6 or 9' from ['0', '6', '9']."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def numbers_note(
    named: list[tuple[str, Tokenizer]],
    texts: list[str],
    corpus_digits: int,
    corpus: str = "training",
) -> str:
    """What the shown tokenizers really do with the digits of `texts`, in words (the pitfall's
    explanation must be true of the chips beside it, whichever tokenizers they are)."""
    parts, any_group = [], False
    for name, tokenizer in named:
        groups, missing = digit_groups(tokenizer, texts), missing_digits(tokenizer)
        any_group = any_group or bool(groups)
        said = (
            f"{name} groups digits ({', '.join(f'`{g}`' for g in groups)})"
            if groups
            else f"{name} cuts every digit into its own token"
        )
        if missing:
            said += f" and has no token for {_listed(missing)}: they become `<unk>`"
        parts.append(said + ".")
    why = (
        "The groups are the ones that were frequent in the training text, not units of place "
        "value, which makes arithmetic hard to learn."
        if any_group
        else f"The {corpus} corpus holds only {corpus_digits} digits, too few for BPE to learn a merge "
        "that joins these; a BPE trained on text full of numbers (GPT-2's, say) does merge digits, into groups "
        "chosen by how often they occurred rather than by place value, which makes arithmetic "
        "hard to learn."
    )
    return " ".join([*parts, why])


def digit_count(text: str) -> int:
    return sum(text.count(d) for d in DIGITS)


# ---- claims (docs/ARCHITECTURE.md, Claims): each pitfall, as the tokenizers shown really cut its strings -----


def _chips(tokenizer: Tokenizer, text: str) -> str:
    return "|".join(t.replace(" ", "␣") for _, t in display_tokens(tokenizer, text))


def _has_unk(tokenizer: Tokenizer, text: str) -> bool:
    return tokenizer.unk_id is not None and tokenizer.unk_id in tokenizer.encode(text)


def _unknown_chars(tokenizer: Tokenizer, texts: list[str]) -> list[str]:
    """The distinct characters of `texts` this tokenizer reads as <unk>, in order."""
    chars = dict.fromkeys(c for text in texts for c in text)
    return [c for c in chars if _has_unk(tokenizer, c)]


def _shown(chars: list[str]) -> str:
    return ", ".join(f"`{c}`" if c.strip() else "the space" for c in chars)


def letters_claim(named: list[tuple[str, Tokenizer]], texts: list[str]) -> Claim:
    """Does each tokenizer hide the letters of these words inside multi-letter tokens?"""
    parts, hidden = [], 0
    for name, tok in named:
        unknown = _unknown_chars(tok, texts)
        pieces = [t for text in texts for i, t in display_tokens(tok, text) if i != tok.unk_id]
        letters_lost = [c for c in unknown if c.isalpha()]
        unk_note = f" ({_shown(unknown)} it reads as `<unk>`)" if unknown else ""
        if letters_lost:
            hidden += 1
            parts.append(
                f"{name} has no token for {_shown(letters_lost)}: it reads them as the unknown "
                "token `<unk>`, so those letters are lost."
            )
        elif all(len(t.strip()) <= 1 for t in pieces):
            parts.append(
                f"{name} gives every letter its own token{unk_note}, so it does see the letters: "
                "counting the r's is a matter of attending to them."
            )
        else:
            hidden += 1
            parts.append(
                f"{name} cuts it into pieces (`{_chips(tok, texts[0])}`): the model never sees the "
                "letters inside a piece, so to count the r's it has to have learned what each "
                "piece spells."
            )
    return Claim(" ".join(parts), hidden > 0, {"hiding": hidden, "tokenizers": len(named)})


def spacing_claim(named: list[tuple[str, Tokenizer]], texts: list[str]) -> Claim:
    """Do the two spellings (one extra space) give each tokenizer different token sequences?"""
    parts, differ = [], 0
    for name, tok in named:
        a, b = (tok.encode(t) for t in texts[:2])
        if a != b:
            differ += 1
            parts.append(f"{name} gives {len(a)} and {len(b)} tokens, different sequences.")
        else:
            parts.append(f"{name} drops the space: both read as the same tokens.")
    if differ:
        parts.append(
            "One extra space changes the tokens, so text that looks nearly the same to you is a "
            "different input to the model."
        )
    return Claim(" ".join(parts), differ > 0, {"differ": differ, "tokenizers": len(named)})


def leading_space_claim(named: list[tuple[str, Tokenizer]], texts: list[str]) -> Claim:
    """Is each spelling (with a leading space, without, capitalised) one token of its own?"""
    parts, whole = [], 0
    for name, tok in named:
        ids = [tok.encode(t) for t in texts]
        unknown = _unknown_chars(tok, texts)
        if unknown:  # a model that has never seen a space or a capital cannot tell them apart
            parts.append(
                f"{name} has no token for {_shown(unknown)}: it reads "
                f"{'it' if len(unknown) == 1 else 'them'} as `<unk>`, so these spellings lose "
                "what makes them differ."
            )
        elif all(len(x) == 1 for x in ids) and len({x[0] for x in ids}) == len(ids):
            whole += 1
            parts.append(
                f"{name} has a different single token for each, with its own embedding, learned "
                "separately: nothing tells the model they are the same word."
            )
        elif all(len(t.strip()) <= 1 for text in texts for _, t in display_tokens(tok, text)):
            parts.append(
                f"{name} spells them letter by letter: the space is a token of its own and H and "
                "h are different letters; the other letters are the same tokens."
            )
        else:
            parts.append(
                f"{name} builds them from pieces (`"
                + "`, `".join(_chips(tok, t) for t in texts)
                + "`): the space and the capital change which pieces, each with its own "
                "embedding."
            )
    return Claim(" ".join(parts), whole > 0, {"whole": whole, "tokenizers": len(named)})


def scripts_claim(named: list[tuple[str, Tokenizer]], texts: list[str]) -> Claim:
    """Do rare characters fall apart into byte tokens or become unknown?"""
    parts, costly = [], 0
    for name, tok in named:
        unknown = _unknown_chars(tok, texts)
        split = [(t, len(tok.encode(t))) for t in texts if len(tok.encode(t)) > len(t)]
        said = []
        if unknown:
            said.append(
                f"has no token for {_shown(unknown)}: each becomes `<unk>`, one token for every "
                "unknown character, so the model cannot tell them apart"
            )
        if split:
            said.append(
                "spends "
                + ", ".join(
                    f"{n} tokens on the {len(t)} character{'s' * (len(t) != 1)} of {t}"
                    for t, n in split
                )
            )
        if said:
            costly += 1
            parts.append(f"{name} " + " and ".join(said) + ".")
        else:
            parts.append(f"{name} has a token for each of these characters.")
    if costly:
        parts.append(
            "Characters rare in the training text fall apart into byte tokens or become unknown, "
            "so other languages cost more tokens and carry less learned meaning per token."
        )
    return Claim(" ".join(parts), costly > 0, {"costly": costly, "tokenizers": len(named)})


def pitfall_claim(
    pitfall: str,
    texts: list[str],
    named: list[tuple[str, Tokenizer]],
    corpus_digits: int,
    corpus: str = "training",
) -> Claim:
    """The explanation printed under a pitfall, true of the chips beside it."""
    if pitfall == NUMBERS:
        text = numbers_note(named, texts, corpus_digits, corpus)
        groups = sum(bool(digit_groups(tok, texts)) for _, tok in named)
        return Claim(text, groups > 0, {"grouping": groups, "corpus_digits": corpus_digits})
    claim = {
        LETTERS: letters_claim,
        SPACING: spacing_claim,
        LEADING: leading_space_claim,
        SCRIPTS: scripts_claim,
    }[pitfall]
    return claim(named, texts)


def vocab_curve_claim(sizes: list[int], counts: list[int]) -> Claim:
    """Does each doubling of the vocabulary save less? The saving of each doubling present in
    `sizes` (v -> 2v): 1 - tokens(2v) / tokens(v). Claimed when they shrink steadily."""
    n_of = dict(zip(sizes, counts, strict=True))
    pairs = [(v, 1 - n_of[2 * v] / n_of[v]) for v in sizes if 2 * v in n_of and n_of[v] > 0]
    numbers = {f"saving_{v}": saving for v, saving in pairs}
    if len(pairs) < 2:
        return Claim("", False, numbers)
    shrinking = all(b[1] < a[1] for a, b in zip(pairs, pairs[1:], strict=False))
    (v0, s0), (v1, s1) = pairs[0], pairs[-1]
    said = (
        f"Doubling the vocabulary from {v0} to {2 * v0} saves {s0:.0%} of the tokens; from {v1} "
        f"to {2 * v1}, {s1:.0%}"
    )
    if shrinking:
        text = (
            said
            + ": each doubling saves less, while the embedding table (one vector per token) keeps growing."
        )
        return Claim(text, True, numbers)
    listed = ", ".join(f"{v}→{2 * v}: {x:.0%}" for v, x in pairs)
    return Claim(f"{said} (each doubling: {listed}).", False, numbers)
