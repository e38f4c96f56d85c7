"""Tokenizers: one `Tokenizer` type over HF `tokenizers` for every kind the lessons contrast.

Kinds: "char" (one token per distinct character, plus "<unk>"), "bpe" (GPT-2 style byte-level BPE
trained to any vocabulary size, so any text encodes with no unknowns), "word" (whitespace and
punctuation split, the most frequent words, plus "<unk>"), and "json" (a loaded `tokenizer.json` of
unknown origin, e.g. GPT-2's). Every kind is a plain HF tokenizer, so every kind saves as a
`tokenizer.json` that the HF library itself can load, and every encoding carries character offsets
for highlighting. The BPE merge list in rank order is what the merge stepper walks.

Special tokens (`with_special_tokens`): strings such as a chat template's "<|user|>" that always
encode as ONE id of their own, whatever the kind, appended after the learned vocabulary so every old
id keeps its meaning. They decode back to their own text; `special_ids` marks them as standing for
no text of the corpus (like GPT-2's <|endoftext|> in a loaded file).

Not here: a hand-written BPE (the library does the training and encoding; this file is thin glue),
padding and truncation, and the corpora (data.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers, trainers
from tokenizers import Tokenizer as HFTokenizer

from viz_model.model.config import MAX_VOCAB

KINDS = ("char", "bpe", "word", "json")
UNK = "<unk>"
DEFAULT_VOCAB = {"bpe": 512, "word": 2000}
MAX_JSON_BYTES = 32 * 1024 * 1024  # GPT-2's tokenizer.json is ~1.4 MB
_BYTES = 256  # the byte-level alphabet every BPE vocabulary starts from
_LINES_PER_BATCH = 1000


@dataclass(frozen=True)
class Piece:
    """One token of an encoded text: its id and the substring `text[start:end]` it covers."""

    id: int
    text: str
    start: int
    end: int


class TokenizerError(ValueError):
    """A tokenizer could not be trained or loaded; the message says why."""


def _char_pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    # Every character (newlines too, hence [\s\S] rather than ".") becomes its own pre-token.
    return pre_tokenizers.Split(Regex(r"[\s\S]"), "isolated")


def _blank(kind: str) -> HFTokenizer:
    """An untrained HF tokenizer of `kind`: the components that define the kind, an empty vocab."""
    if kind == "char":
        tok = HFTokenizer(models.WordLevel({UNK: 0}, unk_token=UNK))
        tok.pre_tokenizer = _char_pre_tokenizer()
        tok.decoder = decoders.Fuse()  # concatenate characters, no spaces between
    elif kind == "bpe":
        tok = HFTokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    elif kind == "word":
        tok = HFTokenizer(models.WordLevel({UNK: 0}, unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()  # \w+|[^\w\s]+; decode joins with spaces
    else:
        raise TokenizerError(f"unknown tokenizer kind {kind!r}; choose one of char, bpe, word")
    return tok


def _signature(data: dict) -> tuple:
    """The parts of a tokenizer.json that decide its kind (everything but the learned vocab and
    the special tokens added to it: a char tokenizer with "<|user|>" is still a char tokenizer)."""
    keys = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
    added = tuple(
        t.get("content")
        for t in data.get("added_tokens") or []
        if isinstance(t, dict) and (not t.get("special") or t.get("content") == UNK)
    )
    return (data["model"].get("type"), added, *(json.dumps(data.get(k)) for k in keys))


def _expected_signature(kind: str) -> tuple:
    data = json.loads(_blank(kind).to_str())
    added = (UNK,) if kind == "word" else ()  # the word-level trainer adds "<unk>" as special
    return (data["model"]["type"], added, *_signature(data)[2:])


_SIGNATURES = {kind: _expected_signature(kind) for kind in ("char", "bpe", "word")}


def _kind_of(data: dict) -> str:
    """Recognise our own kinds by their exact components; anything else is "json".

    HF refuses unknown keys in tokenizer.json, so a stored marker would make our files unreadable by
    the library itself. The components are the marker: a file that matches one exactly behaves
    exactly like that kind, whoever wrote it. GPT-2's file (a post-processor, <|endoftext|>) is "json".
    """
    for kind, signature in _SIGNATURES.items():
        if _signature(data) == signature:
            return kind
    return "json"


def _check_vocab_size(kind: str, vocab_size: int | None) -> int | None:
    if vocab_size is None:
        return DEFAULT_VOCAB.get(kind)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TokenizerError(f"vocab_size must be a whole number, got {vocab_size!r}")
    lo = {"char": 1, "bpe": _BYTES, "word": 2}[kind]
    if not lo <= vocab_size <= MAX_VOCAB:
        raise TokenizerError(
            f"vocab_size for a {kind} tokenizer must be between {lo} and {MAX_VOCAB}, got {vocab_size}"
        )
    return vocab_size


def _line_batches(text: str):
    """Lines (newlines kept, so they are learned too) in batches, as train_from_iterator likes."""
    lines = text.splitlines(keepends=True)
    for i in range(0, len(lines), _LINES_PER_BATCH):
        yield lines[i : i + _LINES_PER_BATCH]


class Tokenizer:
    """A trained or loaded tokenizer of one kind; immutable once made."""

    def __init__(self, hf: HFTokenizer, kind: str) -> None:
        self._hf = hf
        self.kind = kind
        self._json = hf.to_str(pretty=True)
        self._data = json.loads(self._json)

    # -- making one -------------------------------------------------------------------------------

    @classmethod
    def train(cls, text: str, kind: str, vocab_size: int | None = None) -> Tokenizer:
        """Train a tokenizer of `kind` on `text`; deterministic (same text, same tokenizer.json).

        For "char", vocab_size is only checked for sanity: the vocabulary is every distinct
        character of `text` (sorted) plus "<unk>", e.g. "abba" -> {"<unk>": 0, "a": 1, "b": 2}.
        """
        if kind == "json":
            raise TokenizerError("a json tokenizer is loaded from a tokenizer.json, not trained")
        if not isinstance(text, str):
            raise TokenizerError(f"training text must be a string, got {type(text).__name__}")
        hf = _blank(kind)
        vocab_size = _check_vocab_size(kind, vocab_size)
        if kind == "char":
            chars = sorted(set(text))
            if len(chars) + 1 > MAX_VOCAB:
                raise TokenizerError(f"{len(chars)} distinct characters is more than {MAX_VOCAB}")
            vocab = {UNK: 0} | {c: i for i, c in enumerate(chars, start=1)}
            hf.model = models.WordLevel(vocab, unk_token=UNK)
        elif kind == "bpe":
            trainer = trainers.BpeTrainer(
                vocab_size=vocab_size,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False,
            )
            hf.train_from_iterator(_line_batches(text), trainer=trainer, length=None)
        else:
            trainer = trainers.WordLevelTrainer(
                vocab_size=vocab_size, special_tokens=[UNK], show_progress=False
            )
            hf.train_from_iterator(_line_batches(text), trainer=trainer, length=None)
        return cls(hf, kind)

    @classmethod
    def from_json(cls, data: str) -> Tokenizer:
        """Load from tokenizer.json text; anything the library or our caps refuse -> TokenizerError."""
        if not isinstance(data, str):
            raise TokenizerError(f"tokenizer.json must be text, got {type(data).__name__}")
        if len(data) > MAX_JSON_BYTES:
            raise TokenizerError(f"tokenizer.json is larger than {MAX_JSON_BYTES // 2**20} MB")
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError as e:
            raise TokenizerError(f"tokenizer.json is not valid JSON: {e}") from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("model"), dict):
            raise TokenizerError("tokenizer.json has no tokenizer model in it")
        try:
            hf = HFTokenizer.from_str(data)
        except Exception as e:  # the library raises a bare Exception with serde's message
            raise TokenizerError(f"tokenizer.json could not be read as a tokenizer: {e}") from None
        if hf.get_vocab_size(with_added_tokens=True) > MAX_VOCAB:
            raise TokenizerError(f"tokenizer vocabulary is larger than {MAX_VOCAB}")
        return cls(hf, _kind_of(parsed))

    @classmethod
    def load(cls, path: str | os.PathLike) -> Tokenizer:
        """Read a tokenizer.json file; a missing, huge or non-UTF-8 file -> TokenizerError."""
        path = Path(path)
        try:
            if path.stat().st_size > MAX_JSON_BYTES:
                raise TokenizerError(f"{path.name} is larger than {MAX_JSON_BYTES // 2**20} MB")
            data = path.read_text(encoding="utf-8")
        except OSError as e:
            raise TokenizerError(f"cannot read {path}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise TokenizerError(f"{path.name} is not UTF-8 text") from None
        return cls.from_json(data)

    def with_special_tokens(self, tokens: Sequence[str]) -> Tokenizer:
        """A new tokenizer with `tokens` added as special tokens, each ONE id, numbered on from the
        last id (old ids unchanged); tokens it already has keep theirs. A model of the old
        vocabulary needs new rows for them (model/vocab.py extend_vocab).
        Example: char on "ab" has {<unk>: 0, a: 1, b: 2}; with ["<|end|>"], "a<|end|>" -> [1, 3]."""
        hf = HFTokenizer.from_str(self._json)
        new = [t for t in dict.fromkeys(tokens) if hf.token_to_id(t) is None]
        if any(not isinstance(t, str) or not t for t in new):
            raise TokenizerError("special tokens must be non-empty strings")
        if hf.get_vocab_size(with_added_tokens=True) + len(new) > MAX_VOCAB:
            raise TokenizerError(f"the vocabulary would be larger than {MAX_VOCAB}")
        # normalized=False: matched on the raw text, so nothing (a byte-level prefix) changes them
        hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in new])
        return Tokenizer(hf, self.kind)

    # -- saving -----------------------------------------------------------------------------------

    def to_json(self) -> str:
        """The tokenizer.json text (the HF format, pretty-printed)."""
        return self._json

    def save(self, path: str | os.PathLike) -> None:
        """Write tokenizer.json atomically: a temp file in the same folder, then os.replace."""
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self._json)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @property
    def sha256(self) -> str:
        """Hex sha256 of to_json(): the bundle's config.json records it to catch mismatches."""
        return hashlib.sha256(self._json.encode("utf-8")).hexdigest()

    # -- vocabulary -------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._hf.get_vocab_size(with_added_tokens=True)

    @property
    def unk_id(self) -> int | None:
        """Id of the unknown token, or None when every input encodes (byte-level BPE)."""
        unk = self._data["model"].get("unk_token")
        return None if unk is None else self._hf.token_to_id(unk)

    @property
    def special_ids(self) -> set[int]:
        """Ids that stand for no text: "<unk>" and the file's special tokens (GPT-2's <|endoftext|>)."""
        added = self._data.get("added_tokens") or []
        ids = {t["id"] for t in added if isinstance(t, dict) and t.get("special")}
        return ids | ({self.unk_id} if self.unk_id is not None else set())

    @property
    def special_tokens(self) -> list[str]:
        """The added special tokens in id order (a chat template's "<|user|>", GPT-2's
        "<|endoftext|>"), "<unk>" excluded: each encodes as one id wherever it appears in a text."""
        added = self._data.get("added_tokens") or []
        return [
            t["content"]
            for t in sorted(added, key=lambda t: t.get("id", 0))
            if isinstance(t, dict) and t.get("special") and t.get("content") != UNK
        ]

    def id_to_token(self, i: int) -> str:
        """The token for display: byte-level "Ġthe" shows as " the"; a lone partial byte stays raw."""
        raw = self._hf.id_to_token(i)
        if raw is None:
            raise TokenizerError(f"token id {i} is outside the vocabulary (size {self.vocab_size})")
        if raw == self._data["model"].get("unk_token"):
            return raw
        shown = self._hf.decode([i], skip_special_tokens=False)
        return raw if not shown or "\ufffd" in shown else shown

    def token_to_id(self, token: str) -> int | None:
        """Id of a raw vocabulary entry (byte-level form for BPE, e.g. "Ġthe"), or None."""
        return self._hf.token_to_id(token)

    def merges(self) -> list[tuple[str, str]]:
        """BPE merges in rank order (first = learned first = most frequent pair); [] otherwise."""
        model = self._data["model"]
        if model.get("type") != "BPE":
            return []
        # Newer files store [a, b] pairs; older ones (GPT-2's) store "a b" strings.
        return [
            tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]
        ]

    # -- encoding ---------------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        return self._hf.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._hf.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: list[int]) -> str:
        """Inverse of encode for char (known characters) and bpe (any text); word joins with spaces."""
        return self._hf.decode(list(ids), skip_special_tokens=False)

    def pieces(self, text: str) -> list[Piece]:
        """One Piece per token, in order, never overlapping.

        Byte-level BPE can split one character's bytes over several tokens; the library gives each
        of them the whole character. The first keeps it and the rest get an empty span, so joining
        the pieces' text gives back `text` for char and bpe (word-level skips whitespace).
        Example (bpe): "é" might be two byte tokens -> Piece(a, "é", 0, 1), Piece(b, "", 1, 1).
        """
        enc = self._hf.encode(text, add_special_tokens=False)
        out, done = [], 0
        for i, (s, e) in zip(enc.ids, enc.offsets, strict=True):
            s = max(s, done)
            e = max(e, s)
            out.append(Piece(i, text[s:e], s, e))
            done = e
        return out
