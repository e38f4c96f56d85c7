"""Text to train on, and batches of token ids cut from it.

Covers: the bundled corpora in `assets/corpora/`, synthetic tasks written as text (so the same
char tokenizer handles them), checking text a user uploads, and `TokenData`: a corpus encoded once
into one stream of ids, split into train/validation, from which `batch` cuts random windows.
Does not cover: tokenizers (`tokenization.py`) or the training loop (`viz_model/training/loop.py`).
Every problem a user can cause raises `DataError` with a plain-English message.
"""

from __future__ import annotations

import math
import random
import re
import string
from itertools import chain, pairwise
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from viz_model import ASSETS_DIR
from viz_model.text.instructions import instruct_text

CORPORA_DIR = ASSETS_DIR / "corpora"

CORPORA: dict[str, str] = {
    "shakespeare": "Eight Shakespeare plays (Hamlet to A Midsummer Night's Dream), about 1 MB of "
    "public-domain Project Gutenberg text.",
}

TASKS: dict[str, str] = {
    "repeat": "Random letters written twice: the second half can only be predicted by copying "
    "from the first, which is what induction heads learn to do.",
    "count": "Runs of consecutive numbers from a random start: the model must learn to add one, "
    "carries included.",
    "brackets": "Balanced sequences of (), [] and {}: the model must remember which brackets "
    "are still open and close them in reverse order.",
    "fewshot": "Lines of input>output pairs of short words, all following one rule chosen at "
    "random per line (copy, reverse, or shift each letter): the model must infer the rule from "
    "the pairs before it, few-shot prompting in miniature.",
}

# Tasks for tuning a bundled model, not for training one from scratch (the Training page lists
# TASKS only): their text needs a tokenizer with special tokens (instructions.py).
TUNING_TASKS: dict[str, str] = {
    "instruct": "Chat-template turns (<|user|>reverse: bard<|assistant|>drab<|end|>) over four "
    "word instructions on random letters; the instruction-tuned bundle is tuned on them.",
}

MAX_UPLOAD_BYTES = 2_000_000
MIN_TRAIN_CHARS = 2_000
MIN_TASK_SEQ_LEN = 6
MAX_TASK_SEQ_LEN = 4096
MAX_TASK_EXAMPLES = 1_000_000
MAX_NONPRINTABLE_FRACTION = 0.1  # above this share of control characters, text is "binary"
ENCODE_LINES_PER_BATCH = 4096
VAL_FRACTION = 0.1  # the share of a text held out for validation
VAL_PIECES = 20  # held-out stretches spread over the text (TokenData)
MIN_VAL_PIECE = 1024  # tokens in the smallest held-out stretch

# Control characters other than tab, newline and carriage return (C0, DEL, C1).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class DataError(ValueError):
    """A problem with the data a user chose or supplied; the message says what and what to do."""


class TextEncoder(Protocol):
    """What `TokenData.from_text` needs of a tokenizer (`tokenization.Tokenizer` has it)."""

    def encode(self, text: str) -> list[int]: ...

    def encode_batch(self, texts: list[str]) -> list[list[int]]: ...


def load_corpus(name: str) -> str:
    """The text of a bundled corpus, by name (a key of `CORPORA`)."""
    if name not in CORPORA:
        known = ", ".join(sorted(CORPORA))
        raise DataError(f"Unknown corpus {name!r}. Bundled corpora: {known}.")
    path = CORPORA_DIR / f"{name}.txt"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            f"The bundled corpus {name!r} is missing: {path} does not exist. "
            "Rebuild it with the script named in assets/corpora/PROVENANCE.md."
        ) from None


def task_text(name: str, n_examples: int = 2000, seed: int = 0, seq_len: int = 32) -> str:
    """A synthetic task as text: one example per line, each line ending in "\\n"; same seed, same text.

    Formats (seq_len=12):
      "repeat":   k random lowercase letters written twice, k varying per line from
                  max(3, seq_len//8) to seq_len//2                        "qzkfbw" + "qzkfbw"
                  -> "qzkfbwqzkfbw"
      "count":    consecutive numbers from a random start in 0..99, space-separated, as many as fit
                  in seq_len characters (always at least two)           "8 9 10 11 12"
      "brackets": a random balanced sequence of ()[]{} of length seq_len rounded down to even
                                                                        "([]){[()]}()"
      "fewshot":  fewshot_pairs(seq_len) "input>output" pairs of FEWSHOT_WORD_LEN letters of
                  FEWSHOT_LETTERS, space-separated, one rule of FEWSHOT_RULES per line
                  (seq_len=16, rule "reverse")                          "abc>cba hed>deh"
      "instruct": one chat-template turn a line (instructions.py; seq_len unused)
                                              "<|user|>first: cab<|assistant|>c<|end|>"
    """
    if name not in TASKS and name not in TUNING_TASKS:
        known = ", ".join([*TASKS, *TUNING_TASKS])
        raise DataError(f"Unknown task {name!r}. Tasks: {known}.")
    if not 1 <= n_examples <= MAX_TASK_EXAMPLES:
        raise DataError(f"Number of examples must be 1 to {MAX_TASK_EXAMPLES:,}; got {n_examples}.")
    if not MIN_TASK_SEQ_LEN <= seq_len <= MAX_TASK_SEQ_LEN:
        raise DataError(
            f"Sequence length must be {MIN_TASK_SEQ_LEN} to {MAX_TASK_SEQ_LEN}; got {seq_len}."
        )
    if name == "instruct":  # seq_len is not used: each turn is as long as its word makes it
        return instruct_text(n_examples, seed)
    make = {
        "repeat": _repeat_line,
        "count": _count_line,
        "brackets": _brackets_line,
        "fewshot": _fewshot_line,
    }[name]
    rng = random.Random(f"{name}:{seed}")
    return "".join(make(rng, seq_len) + "\n" for _ in range(n_examples))


def repeat_copy_lengths(seq_len: int) -> tuple[int, int]:
    """The shortest and longest half of a "repeat" line: (4, 16) for seq_len 32.

    The copy distance a repeat-task model was trained on, so an induction test can stay within it.
    """
    return max(3, seq_len // 8), seq_len // 2


def _repeat_line(rng: random.Random, seq_len: int) -> str:
    # The length varies from line to line, so the copy sits at no fixed distance: a model must
    # find the earlier occurrence of the current letter and copy what came next (induction), not
    # learn "look back 16".
    k = rng.randint(*repeat_copy_lengths(seq_len))
    half = "".join(rng.choices(string.ascii_lowercase, k=k))
    return half + half


def _count_line(rng: random.Random, seq_len: int) -> str:
    return _count_from(rng.randrange(100), seq_len)


def _count_from(n: int, seq_len: int) -> str:
    words = [str(n), str(n + 1)]
    while len(" ".join(words)) + 1 + len(str(n + len(words))) <= seq_len:
        words.append(str(n + len(words)))
    return " ".join(words)


def _brackets_line(rng: random.Random, seq_len: int) -> str:
    length = seq_len - seq_len % 2
    pairs = {"(": ")", "[": "]", "{": "}"}
    out: list[str] = []
    stack: list[str] = []
    for i in range(length):
        remaining = length - i
        # Open when nothing is open; close when only enough room is left to close what is open.
        if not stack or (remaining > len(stack) and rng.random() < 0.5):
            stack.append(rng.choice("([{"))
            out.append(stack[-1])
        else:
            out.append(pairs[stack.pop()])
    return "".join(out)


# ---- few-shot: the rule is given only by the examples --------------------------------------
FEWSHOT_LETTERS = "abcdefgh"
FEWSHOT_WORD_LEN = 3


def _shift(word: str) -> str:
    """Each letter one further along FEWSHOT_LETTERS, the last wrapping to the first."""
    n = len(FEWSHOT_LETTERS)
    return "".join(FEWSHOT_LETTERS[(FEWSHOT_LETTERS.index(c) + 1) % n] for c in word)


FEWSHOT_RULES: dict[str, Any] = {
    "copy": lambda word: word,
    "reverse": lambda word: word[::-1],
    "shift": _shift,
}


def fewshot_pair(rule: str, word: str) -> str:
    """One example of a rule: fewshot_pair("reverse", "abc") -> "abc>cba"."""
    return f"{word}>{FEWSHOT_RULES[rule](word)}"


def fewshot_pairs(seq_len: int) -> int:
    """How many pairs fit a line of seq_len characters (a pair and its space: 2 x word + 2)."""
    return max(1, (seq_len + 1) // (2 * FEWSHOT_WORD_LEN + 2))


def fewshot_word(rng: random.Random) -> str:
    return "".join(rng.choices(FEWSHOT_LETTERS, k=FEWSHOT_WORD_LEN))


def _fewshot_line(rng: random.Random, seq_len: int) -> str:
    rule = rng.choice(list(FEWSHOT_RULES))
    return " ".join(fewshot_pair(rule, fewshot_word(rng)) for _ in range(fewshot_pairs(seq_len)))


# What a perfect model of each task still cannot predict, in words (the model card shows it).
TASK_UNPREDICTABLE: dict[str, str] = {
    "repeat": "the first copy of each line is random letters and only the second copy can be "
    "predicted",
    "count": "the first number of each line is random and every later one follows from it",
    "brackets": "whether to open a bracket, and which kind, is left to chance and only the closing "
    "ones follow",
    "fewshot": "each line's rule and every input word are random, and only the outputs follow",
}


def task_loss_floor(name: str, seq_len: int = 32) -> float:
    """The lowest loss any model can reach on a task, in nats per character: the entropy of the
    generator per line (what is random in it) over the characters in a line, newline included.

    repeat: k uniform in [lo, hi], then k letters: ln(hi - lo + 1) + E[k] ln 26 over 2 E[k] + 1.
    count: the start, ln 100, over the mean line length. brackets: see _brackets_entropy.
    fewshot: the rule, ln 3, and n words of 3 letters of 8, over n pairs of 8 characters.
    """
    if name == "repeat":
        lo, hi = repeat_copy_lengths(seq_len)
        ks = range(lo, hi + 1)
        mean_k = sum(ks) / len(ks)
        return (math.log(len(ks)) + mean_k * math.log(26)) / (2 * mean_k + 1)
    if name == "count":
        mean_len = sum(len(_count_from(n, seq_len)) + 1 for n in range(100)) / 100
        return math.log(100) / mean_len
    if name == "brackets":
        length = seq_len - seq_len % 2
        return _brackets_entropy(length) / (length + 1)
    if name == "fewshot":
        n = fewshot_pairs(seq_len)
        random_nats = math.log(len(FEWSHOT_RULES)) + n * FEWSHOT_WORD_LEN * math.log(
            len(FEWSHOT_LETTERS)
        )
        return random_nats / (n * (2 * FEWSHOT_WORD_LEN + 2))  # the line and its newline
    raise DataError(f"Unknown task {name!r}. Tasks: {', '.join(TASKS)}.")


def _brackets_entropy(length: int) -> float:
    """Expected entropy (nats) of one _brackets_line: walk the distribution of the stack depth.
    Depth 0 forces an opening (ln 3 for its kind); room to spare is a coin flip (ln 2) and half
    the time an opening (ln 3); otherwise the closing bracket is forced (0)."""
    depth = {0: 1.0}
    total = 0.0
    for i in range(length):
        remaining, nxt = length - i, {}
        for d, p in depth.items():
            if d == 0:
                total += p * math.log(3)
                nxt[1] = nxt.get(1, 0.0) + p
            elif remaining > d:
                total += p * (math.log(2) + 0.5 * math.log(3))
                nxt[d + 1] = nxt.get(d + 1, 0.0) + p / 2
                nxt[d - 1] = nxt.get(d - 1, 0.0) + p / 2
            else:
                nxt[d - 1] = nxt.get(d - 1, 0.0) + p
        depth = nxt
    return total


def validate_user_text(
    data: str | bytes, max_bytes: int = MAX_UPLOAD_BYTES, min_chars: int = MIN_TRAIN_CHARS
) -> str:
    """Check text a user uploaded or pasted, and return it with \\r\\n and \\r turned into \\n.

    Rejects (with `DataError`) anything over `max_bytes`, UTF-16 files, binary data, bytes that
    are not UTF-8, and text shorter than `min_chars` characters.
    """
    if isinstance(data, bytes | bytearray):
        raw = bytes(data)
        size = len(raw)
    elif isinstance(data, str):
        raw = None
        size = len(data.encode("utf-8", errors="replace"))
    else:
        raise DataError(f"Expected text or bytes, got {type(data).__name__}.")
    if size > max_bytes:
        raise DataError(
            f"The text is too large: {_size(size)}; the limit is {_size(max_bytes)}. "
            "Upload a shorter excerpt."
        )
    if raw is not None:
        # Before the NUL check: UTF-16 text is full of NUL bytes but is not binary data.
        if _looks_utf16(raw):
            raise DataError(
                'The file is saved as UTF-16 (what Windows Notepad calls "Unicode"), not UTF-8. '
                "Save it as UTF-8 (plain text) and try again."
            )
        if b"\x00" in raw:
            raise DataError("This looks like binary data (it contains NUL bytes), not text.")
        try:
            data = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            bad = raw[err.start : err.start + 1].hex()
            raise DataError(
                f"The file is not UTF-8 text: byte 0x{bad} at position {err.start:,} is not valid "
                "UTF-8. Save it as UTF-8 (plain text) and try again."
            ) from None
    text = data.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        raise DataError("This looks like binary data (it contains NUL characters), not text.")
    n_control = len(_CONTROL.findall(text))
    if text and n_control > MAX_NONPRINTABLE_FRACTION * len(text):
        raise DataError(
            f"This looks like binary data, not text: {n_control:,} of its {len(text):,} "
            "characters are non-printable control characters."
        )
    if not text.strip():
        raise DataError(
            f"The text is empty; training needs at least {min_chars:,} characters of text."
        )
    if len(text) < min_chars:
        raise DataError(
            f"The text is too short: it has {len(text):,} characters; training needs at least "
            f"{min_chars:,}."
        )
    return text


def _looks_utf16(raw: bytes) -> bool:
    """True for UTF-16 bytes: a byte-order mark (FF FE or FE FF, never valid UTF-8), or, without
    one, NUL bytes at every other position only, as in Latin text: "To" is b"T\\x00o\\x00"."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    half = len(raw) // 2
    if half == 0:
        return False
    even, odd = raw[0::2].count(0), raw[1::2].count(0)
    # Binary data has NULs at both parities; a character like U+0100 puts a few at the other one.
    return max(even, odd) >= half / 2 and min(even, odd) <= half / 20


def _size(n_bytes: int) -> str:
    """A byte count for people: '2.5 MB (2,500,000 bytes)'."""
    if n_bytes >= 1_000_000:
        return f"{n_bytes / 1_000_000:.1f} MB ({n_bytes:,} bytes)"
    if n_bytes >= 1_000:
        return f"{n_bytes / 1_000:.1f} kB ({n_bytes:,} bytes)"
    return f"{n_bytes:,} bytes"


class TokenData:
    """A corpus encoded once into a 1-D LongTensor of ids, split into train/validation."""

    SPLITS = ("train", "val")

    def __init__(self, ids: torch.Tensor | list[int], val_fraction: float = VAL_FRACTION):
        """Hold out `val_fraction` of the stream for validation, the rest for training.

        The stream is cut into `pieces` equal stretches (up to VAL_PIECES, fewer so that each
        held-out piece has at least MIN_VAL_PIECE tokens) and the end of each stretch is held out:
        for the Shakespeare corpus that is 20 pieces of about 5,000 characters, two or three from
        every play, so the validation loss measures unseen passages of the same plays rather than
        one play the model never saw. A text with fewer than 2 * MIN_VAL_PIECE validation tokens
        keeps just its end for validation. `train` and `val` are the pieces joined in order, so a
        window that crosses a seam joins two passages (for the corpus, one in 40 at context 128).
        """
        ids = torch.as_tensor(ids, dtype=torch.long).flatten()
        if ids.numel() < 2:
            raise DataError(f"The text encodes to {ids.numel()} token(s); training needs more.")
        if (ids < 0).any():
            raise DataError("Token ids must be non-negative.")
        if not 0.0 <= val_fraction < 1.0:
            raise DataError(f"The validation fraction must be in [0, 1); got {val_fraction}.")
        n_val = round(ids.numel() * val_fraction)
        pieces = max(1, min(VAL_PIECES, n_val // MIN_VAL_PIECE))
        bounds = [round(i * ids.numel() / pieces) for i in range(pieces + 1)]
        held = [round(i * n_val / pieces) for i in range(pieces + 1)]  # n_val in all
        train, val = [], []
        for i, (start, end) in enumerate(pairwise(bounds)):
            cut = end - (held[i + 1] - held[i])
            train.append(ids[start:cut])
            val.append(ids[cut:end])
        self.train: torch.Tensor = torch.cat(train)
        self.val: torch.Tensor = torch.cat(val)
        self.pieces = pieces

    def __repr__(self) -> str:
        return (
            f"TokenData(train={self.train.numel():,} tokens, val={self.val.numel():,} tokens "
            f"in {self.pieces} piece{'s' if self.pieces > 1 else ''})"
        )

    def batch(
        self,
        split: str,
        batch_size: int,
        n_ctx: int,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Random windows of the split: x (B, T) and the next tokens y (B, T), y[:, t] = x[:, t+1]."""
        if split not in self.SPLITS:
            raise DataError(f"Unknown split {split!r}; use 'train' or 'val'.")
        if batch_size < 1 or n_ctx < 1:
            raise DataError(
                f"Batch size and context must be at least 1; got {batch_size} and {n_ctx}."
            )
        stream = self.train if split == "train" else self.val
        if stream.numel() < n_ctx + 1:
            name = "training" if split == "train" else "validation"
            raise DataError(
                f"The {name} split has {stream.numel():,} tokens, but a context of {n_ctx} needs "
                f"at least {n_ctx + 1:,}. Use a longer text, a larger validation fraction, or a "
                "smaller context."
            )
        starts = torch.randint(0, stream.numel() - n_ctx, (batch_size,), generator=generator)
        windows = stream[starts[:, None] + torch.arange(n_ctx + 1)]  # (B, T+1)
        return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()

    @classmethod
    def from_text(
        cls, text: str, tokenizer: TextEncoder, val_fraction: float = VAL_FRACTION
    ) -> TokenData:
        """Encode `text` line by line (newlines kept, so no token spans a line break) and split it.

        For a char tokenizer the stream equals `tokenizer.encode(text)`; encoding lines in batches
        is what makes a 1 MB corpus quick to encode.
        """
        if not text:
            raise DataError("The text is empty; there is nothing to train on.")
        # One id per character, a table lookup; special tokens (<|user|>) need the library.
        if getattr(tokenizer, "kind", None) == "char" and not getattr(
            tokenizer, "special_tokens", ()
        ):
            return cls(_char_ids(text, tokenizer), val_fraction)
        lines = text.split("\n")
        pieces = [line + "\n" for line in lines[:-1]]
        if lines[-1]:
            pieces.append(lines[-1])
        encoded = chain.from_iterable(
            chain.from_iterable(tokenizer.encode_batch(pieces[i : i + ENCODE_LINES_PER_BATCH]))
            for i in range(0, len(pieces), ENCODE_LINES_PER_BATCH)
        )
        return cls(torch.tensor(list(encoded), dtype=torch.long), val_fraction)


def _char_ids(text: str, tokenizer) -> torch.Tensor:
    """A char tokenizer's encode(text) as one table lookup per distinct character (about 50x
    quicker than the library on a 1 MB corpus: most of a job's start before this)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    distinct, where = np.unique(codes, return_inverse=True)
    unk = getattr(tokenizer, "unk_id", None) or 0
    table = [tokenizer.token_to_id(chr(c)) for c in distinct.tolist()]
    table = np.array([unk if i is None else i for i in table], dtype=np.int64)
    return torch.from_numpy(table[where])


# ---- example prompts --------------------------------------------------------------------------

N_EXAMPLE_PROMPTS = 3
MAX_EXAMPLE_CHARS = 120  # fits the smallest bundled context (64 tokens) once a task line is used


def example_prompts(text: str, task: str | None = None, n: int = N_EXAMPLE_PROMPTS) -> list[str]:
    """A few prompts that suit a model trained on `text`, taken from the text itself; same text,
    same prompts. The app offers them when a prompt is mostly unknown to the model.

    For a task (`task` names it): the n longest of the first 200 lines, without their newline
    (for "repeat", the longest repeated sequences, where copying is easiest to see). For prose:
    n short speeches spread evenly over the text, each a block between blank lines whose first
    line is short (a speaker, "Ber.") and that fits MAX_EXAMPLE_CHARS; without such blocks, the
    first lines of evenly spread blocks, cut to fit.
    """
    if task is not None:
        lines = [line for line in text.split("\n")[:200] if line.strip()]
        return sorted(lines, key=len, reverse=True)[:n]
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text) if b.strip()]
    speeches = [
        b
        for b in blocks
        if "\n" in b and len(b.split("\n", 1)[0]) <= 20 and 40 <= len(b) <= MAX_EXAMPLE_CHARS
    ]
    chosen = _spread(speeches, n) or [_first_lines(b) for b in _spread(blocks, n)]
    return [c for c in chosen if c]


def _spread(items: list[str], n: int) -> list[str]:
    """n items evenly spaced over the list (all of them when there are n or fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[(2 * i + 1) * len(items) // (2 * n)] for i in range(n)]


def _first_lines(block: str) -> str:
    """The whole lines of block that fit MAX_EXAMPLE_CHARS (else its first line, cut)."""
    kept = ""
    for line in block.split("\n"):
        if len(kept) + len(line) + 1 > MAX_EXAMPLE_CHARS:
            break
        kept = f"{kept}\n{line}" if kept else line
    return kept or block[:MAX_EXAMPLE_CHARS]


def load_text(source: dict[str, Any]) -> str:
    """The training text of a data source as stored in a bundle's meta["data"]; "first_chars"
    keeps only a corpus's first characters (a hyperfitted model's few pages, scripts/hyperfit.py)."""
    if "corpus" in source:
        text = load_corpus(source["corpus"])
        return text[: source["first_chars"]] if "first_chars" in source else text
    if "task" in source:
        return task_text(
            source["task"], source["task_examples"], source.get("task_seed", 0), source["task_len"]
        )
    return validate_user_text(Path(source["text_file"]).read_bytes())
