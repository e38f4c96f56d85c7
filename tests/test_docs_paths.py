"""Docs as tests (issue 40): every repository path a Markdown file or a Python docstring or comment
names exists, and nothing cites a file kept outside the repository.

What counts as a path: a token ending in a file extension of the tree (`ui/charts/common.py`,
`README.md`, `requirements.txt`), or a token with a `/` whose first part is a folder at the top of
the repository (`viz_model/training/`, `docs/ARCHITECTURE.md`). A token with a `/` and an
extension whose first part is not a top folder is a tail of a path (`training/loop.py`): some file
of the tree must end with it. A bare file name (`loop.py`) exists in the citing file's folder, at
the top, or somewhere in the tree. A dotted name of a project module (`viz_model.training.loop`,
`ui.nav.find`) is a module of the tree, and a name after it a word of its source. Left alone:
addresses (`https://...`), globs and templates (`*`, `{}`, `<>`, `$`, `RUN_DIR/`), absolute and
home paths, paths under the run-time folders (`runs/`, `artifacts/`), and the few names in
ALLOWED below.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import tokenize
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Documents kept outside the repository, which a reader of the repository cannot open.
OUTSIDE = ("DESIGN.md", "STREAMLIT-NOTES.md")

# A source or doc file is checked however it is named; a data file (a job's `settings.json`, a
# model folder's `config.json`, a corpus's `metadata.txt`) only as a path from the top, since a bare
# name or a tail of one names a file the code writes or reads at run time.
SOURCE = ("py", "md", "toml", "cfg", "sh", "template", "pth", "yaml", "yml", "ini")
DATA = ("json", "jsonl", "txt", "lock", "html", "csv", "safetensors")
EXTENSIONS = SOURCE + DATA
RUN_TIME = ("runs/", "artifacts/", "tmp/", ".venv/", "site-packages/")  # made when the app runs
SKIP_FOLDERS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".venv", "runs", "tmp"}

# Names that look like repository paths but are not, each with why. Keep this short: a path that
# moved is fixed where it is cited, not added here.
ALLOWED = {
    "pages/X.py": "a placeholder for any page, in tests/apptest_util.py",
    "pages/3_Attention.py": "in ui/nav.py: a name Streamlit's legacy router would serve at /Attention",
    "student.md": "an exercise sheet scripts/lesson_sheets.py writes",
    "teacher.md": "an exercise sheet scripts/lesson_sheets.py writes",
    "config/train_shakespeare_char.py": "nanoGPT's, named as nanoGPT's in benchmarks/bench_gpu.py",
    ".streamlit/secrets.toml": "the password file an operator writes (docs/OPERATING.md), not kept",
}

URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
TOKEN = re.compile(r"[\w.*?~$<>{}\[\]/-]+")
LEAD = "`'\"([{<*"
TRAIL = "`'\".,:;()!?[]{}<>*"
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*")  # RUNS/, RUN_DIR/: a folder chosen at run time


@cache
def repo_files() -> frozenset[str]:
    """The tree's files, relative to the root: git's (tracked, and untracked ones not ignored), or
    a walk of the folder where git is not there."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = {f for f in out.split("\0") if f and (ROOT / f).exists()}
        if files:
            return frozenset(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = set()
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_FOLDERS and not d.endswith(".egg-info")]
        rel = Path(folder).relative_to(ROOT)
        found.update((rel / n).as_posix() for n in names)
    return frozenset(found)


@cache
def repo_folders() -> frozenset[str]:
    return frozenset(
        "/".join(parts[:i])
        for f in repo_files()
        for parts in [f.split("/")]
        for i in range(1, len(parts))
    )


@cache
def top_names() -> frozenset[str]:
    return frozenset(f.split("/")[0] for f in repo_files())


def _has_extension(token: str) -> bool:
    name = token.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem and ext in EXTENSIONS)


def path_tokens(text: str):
    """Each path-like token of `text`, addresses taken out first."""
    text = URL.sub(lambda m: " " * len(m.group()), text)
    for m in TOKEN.finditer(text):
        token = m.group().lstrip(LEAD).rstrip(TRAIL)
        if not token or any(c in token for c in "*?$<>{}[]~"):
            continue  # a glob or a template
        if token.startswith(("/", "~")) or "//" in token or token.startswith("." * 3):
            continue
        token = token.removeprefix("./")
        if "/" in token and PLACEHOLDER.fullmatch(token.split("/")[0]):
            continue
        if not (_has_extension(token) or ("/" in token and token.split("/")[0] in top_names())):
            continue  # a word such as and/or, pause/step
        if token.startswith(RUN_TIME) or any(f"/{r}" in token for r in RUN_TIME):
            continue
        yield token


def exists(token: str, citing: str) -> bool:
    """Whether `token`, named in the file `citing`, is a file or folder of the tree."""
    if token in ALLOWED:
        return True
    files, folders = repo_files(), repo_folders()
    bare = token.rstrip("/")
    module, dot, name = bare.rpartition(".")
    if (
        dot and "/" in module and name not in EXTENSIONS and f"{module}.py" in files
    ):  # `ui/parts.numbers_behind_it`
        source = (ROOT / f"{module}.py").read_text(encoding="utf-8")
        return re.search(rf"\b{re.escape(name)}\b", source) is not None
    if f"{bare}.py" in files:  # `tests/bundles`: a module named by its path
        return True
    here = str(Path(citing).parent)
    here = "" if here == "." else here + "/"
    for base in ("", here):
        path = os.path.normpath(base + bare).replace(os.sep, "/")
        if path in files or path in folders:
            return True
    if bare.rsplit(".", 1)[-1] in DATA:
        return not (bare.split("/")[0] in top_names() and "/" in bare)  # from the top: checked
    if "/" not in bare:  # a bare name: anywhere in the tree
        return any(f.rsplit("/", 1)[-1] == bare for f in files) or any(
            d.rsplit("/", 1)[-1] == bare for d in folders
        )
    if bare.split("/")[0] in top_names():
        return False  # from the top: only where it says
    tail = "/" + bare  # a tail of a path
    return any(f.endswith(tail) for f in files) or any(d.endswith(tail) for d in folders)


DOTTED = re.compile(r"(?<![\w./-])((?:viz_model|ui|serving|scripts|benchmarks|tests)(?:\.\w+)+)")


def dotted_names(text: str):
    """Each `viz_model.training.loop`-like name of a module of the project (or a name in one)."""
    for m in DOTTED.finditer(text):
        if m.group(1).rsplit(".", 1)[-1] not in EXTENSIONS:
            yield m.group(1)


def module_exists(dotted: str) -> bool:
    """Whether the longest module the name starts with is in the tree, and the next part after it,
    if any, is a word of that module's source (`ui.nav.find`: ui/nav.py says `find`)."""
    files, parts = repo_files(), dotted.split(".")
    for i in range(len(parts), 0, -1):
        stem = "/".join(parts[:i])
        source = next((p for p in (f"{stem}.py", f"{stem}/__init__.py") if p in files), None)
        if source is None:
            continue
        if i == len(parts):
            return True
        text = (ROOT / source).read_text(encoding="utf-8")
        return re.search(rf"\b{re.escape(parts[i])}\b", text) is not None
    return False


def python_prose(source: str):
    """(line, text) for each comment and docstring of a Python file."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                yield body[0].value.lineno, body[0].value.value


def documents():
    """(file, line, text) for the prose of every Markdown file and every Python file's comments
    and docstrings."""
    for f in sorted(repo_files()):
        if f.endswith(".md"):
            text = (ROOT / f).read_text(encoding="utf-8")
            yield from ((f, i, line) for i, line in enumerate(text.splitlines(), 1))
        elif f.endswith(".py"):
            source = (ROOT / f).read_text(encoding="utf-8")
            for line, text in python_prose(source):
                for i, part in enumerate(text.splitlines()):
                    yield f, line + i, part


def broken_paths() -> list[str]:
    broken = []
    for f, line, text in documents():
        named = dict.fromkeys(path_tokens(text))  # once a line, in order
        broken += [f"{f}:{line}: {t}" for t in named if not exists(t, f)]
        broken += [f"{f}:{line}: {d}" for d in dotted_names(text) if not module_exists(d)]
    return broken


def test_the_scan_reads_the_docs_and_knows_the_tree():
    files = repo_files()
    assert {"README.md", "docs/ARCHITECTURE.md", "app.py", "viz_model/training/loop.py"} <= files
    named = {
        t for f, _, text in documents() if f == "docs/ARCHITECTURE.md" for t in path_tokens(text)
    }
    assert len(named) > 20  # the map names the code's files


def test_the_scan_tells_paths_from_words():
    assert [t for t in path_tokens("see `ui/charts/block.py` and training/loop.py.")] == [
        "ui/charts/block.py",
        "training/loop.py",
    ]
    prose = "pause/step and/or train/val, https://example.com/a.py, runs/x/log.json, tests/*.py"
    assert list(path_tokens(prose)) == []
    assert exists("training/loop.py", "README.md")
    assert exists("loop.py", "README.md")
    assert exists("viz_model/training/", "README.md")
    assert not exists("viz_model/train.py", "README.md")
    assert not exists("model.py/x.py", "README.md")
    assert not exists("train_cli.py", "README.md")
    assert exists("ui/parts.numbers_behind_it", "README.md")
    assert not exists("ui/parts.no_such_name", "README.md")
    assert list(dotted_names("viz_model.training.loop.train and ui.py")) == [
        "viz_model.training.loop.train"
    ]
    assert module_exists("viz_model.training.loop.train")
    assert module_exists("ui.charts")
    assert not module_exists("viz_model.train")
    assert not module_exists("viz_model.training.loop.no_such_name")


def test_every_path_named_in_a_doc_or_docstring_exists():
    broken = broken_paths()
    assert broken == [], "paths named in docs that are not in the tree:\n" + "\n".join(broken)


def test_nothing_cites_a_file_kept_outside_the_repository():
    cites = []
    for f in sorted(repo_files()):
        if f == "tests/test_docs_paths.py" or not (ROOT / f).is_file():
            continue
        data = (ROOT / f).read_bytes()
        if b"\0" in data[:8192]:
            continue  # weights, not text
        text = data.decode("utf-8", errors="replace")
        for i, line in enumerate(text.splitlines(), 1):
            cites += [f"{f}:{i}: {name}" for name in OUTSIDE if name in line]
    assert cites == [], "citations of documents not in the repository:\n" + "\n".join(cites)


LOOP_TIME = re.compile(r"\d[\d.,]*\s*(?:minutes?|min|s)\b")


def test_the_default_loop_time_is_stated_in_one_place():
    """How long a plain `pytest` takes is said once, in docs/ARCHITECTURE.md (Tests); every other
    mention of the default loop points there instead of giving a figure of its own."""
    prose = [(f, line, text) for f, line, text in documents()]
    prose += [("pyproject.toml", i, t) for i, t in enumerate(_lines("pyproject.toml"), 1)]
    stated = set()
    by_file: dict[str, list[str]] = {}
    for f, _, text in prose:
        by_file.setdefault(f, []).append(text)
    for f, lines in by_file.items():
        for i, text in enumerate(lines):
            if "plain `pytest`" in text:
                near = " ".join(lines[i : i + 3])
                if LOOP_TIME.search(near.split("plain `pytest`", 1)[1]):
                    stated.add(f)
    assert stated == {"docs/ARCHITECTURE.md"}


def _lines(name: str) -> list[str]:
    return (ROOT / name).read_text(encoding="utf-8").splitlines()
