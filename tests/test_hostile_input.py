"""Hostile input: one table, one row per case, run on every page that takes it.

A row names the case, the pages, how the input arrives (the URL, as in a shared link; an upload,
a paste or a click; a broken bundle on disk; a disk that refuses a write) and the words the
student must see. Every row also checks that the page finishes with no exception (the app keeps
running), that the input never reaches the browser as live HTML (a <script> or an <img onerror>
stays text), and that nothing saved is lost: no file of any model folder changes, a broken bundle
included (the app reads bundles, it never repairs or deletes them).

The engine's own refusals behind these rows are tested where they live: bundles in
test_checkpoint.py, text in test_data.py, run names, caps and a disk that fills during a job's
save in test_jobs.py, the command line in test_train.py.
"""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from serving import jobs
from tests.apptest_util import open_link
from tests.test_checkpoint import corrupt
from tests.test_jobs import tiny
from ui import nav
from ui.state import widget_key
from viz_model.bundles import files as bundle_files
from viz_model.bundles.load import load_bundle
from viz_model.text.data import MAX_UPLOAD_BYTES

HOME = None  # app_test's page for Home
PAGES = tuple(page.file for page in nav.lesson_pages())
EVERY = (HOME, *PAGES)
TRAINING = ("pages/09_training.py",)
DANGEROUS = ("<script", "onerror=")
# Pages that draw the prompt's own tokens as HTML (st.html chips): there the escaped prompt must
# be found, so the check is known to look at the right elements.
DRAW_PROMPT_AS_HTML = {
    "pages/01_tokenization.py",
    "pages/07_next_token.py",
    "pages/08_generation.py",
}
MARKUP = '<script>alert("x")</script><img src=x onerror=alert(1)> **ROMEO**'
GOOD = "test-char"  # the models folder's good bundle: n_ctx 64, characters of Shakespeare
# Broken copies of the good bundle (tests/test_checkpoint.py's corrupt() breaks them)
BROKEN = {
    "corrupted weights": ("garbage_weights", "not a readable safetensors file"),
    "truncated weights": ("truncated_weights", "not a readable safetensors file"),
    "missing weights file": ("missing_weights", "has no model.safetensors"),
    "missing tokenizer file": ("missing_tokenizer", "has no tokenizer.json"),
    "mismatched tokenizer": ("other_tokenizer", "not the tokenizer this model was trained with"),
    "mismatched weight shape": ("wrong_shape", "has shape"),
    "a NaN weight": ("nan_weights", "NaN or infinite"),
    "config from a future format version": ("future_version", "format version 99"),
    "config that is not JSON": ("bad_json", "config.json is not valid JSON"),
}
SNAPSHOT_STEP = 37  # one of the good bundle's snapshots (tests/bundles.py)


@dataclass(frozen=True)
class Row:
    case: str
    pages: tuple[str | None, ...]
    query: dict[str, str] = field(default_factory=dict)  # the URL (a shared link)
    says: str | tuple[str, ...] = ()  # shown on the page: in an error, info, caption or text
    act: Callable | None = None  # act(at): what the student does once the page is open
    prepare: Callable | None = None  # prepare(runs, monkeypatch): the server's state first
    check: Callable | None = None  # check(at, runs): what else must hold afterwards


def _upload(name: str, data: bytes) -> Callable:
    return lambda at: at.file_uploader(key="t_upload").set_value((name, data, "text/plain")).run()


def _paste(text: str) -> Callable:
    return lambda at: at.text_area(key="t_paste").set_value(text).run()


def _start_disabled(at, runs) -> None:
    assert at.button(key="t_start").disabled
    assert not list(runs.glob("*/settings.json"))  # no run was made


def _layernorm_kept(at, runs) -> None:
    # a value the form does not offer falls back to the default, said by the widget itself
    assert at.selectbox(key=widget_key("t_norm_kind")).value == "layernorm"
    assert at.selectbox(key=widget_key("t_mlp")).value == "standard"
    assert at.selectbox(key=widget_key("t_pos")).value == "learned"


def _one_layer(at, runs) -> None:
    assert at.number_input(key=widget_key("t_n_layer")).value == 1  # the lowest the field allows


def _earlier_run(runs: Path, name: str, status: dict) -> Path:
    """A run folder holding the good bundle, as a job leaves it, with this status."""
    path = runs / name
    shutil.copytree(_good_bundle, path, ignore=shutil.ignore_patterns("snapshots"))
    (path / "settings.json").write_text(json.dumps(tiny().to_dict()))
    (path / "status.json").write_text(json.dumps(status))
    return path


def _read_only_disk(runs: Path, monkeypatch) -> None:
    _earlier_run(runs, "earlier", {"state": "finished", "step": 150, "saved_step": 150})

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(bundle_files, "tempfile", SimpleNamespace(mkstemp=refuse))


def _start(at) -> None:
    at.button(key="t_start").click().run()


def _nothing_half_made(at, runs) -> None:
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == ["earlier"]
    assert load_bundle(runs / "earlier").meta == load_bundle(_good_bundle).meta


def _disk_filled_during_a_save(runs: Path, monkeypatch) -> None:
    message = "CheckpointError: could not write model.safetensors: No space left on device"
    _earlier_run(runs, "disk-full", {"state": "failed", "message": message, "saved_step": 150})


def _resume_offered(at, runs) -> None:
    assert not at.button(key="t_relaunch").disabled
    assert len(load_bundle(runs / "disk-full").history) == 150  # the last save is whole


TINY = {"t_preset": "tiny", "t_data": "task", "t_task": "count", "t_batch": "4"}
CUSTOM = {**TINY, "t_custom": "true"}
UPLOAD = {"t_data": "own", "t_own": "upload", "t_preset": "tiny"}
PASTE = {"t_data": "own", "t_own": "paste", "t_preset": "tiny"}
TEXT = "To be, or not to be, that is the question. " * 60

ROWS = [
    # ---- prompts, in the URL as a shared link carries them ----
    Row("empty prompt", EVERY, {"prompt": ""}, "Type a prompt"),
    Row("whitespace only", EVERY, {"prompt": " \t \n "}),
    Row("100,000 characters", EVERY, {"prompt": "to be or not " * 7_700}, "keeps the first 5,000"),
    Row("longer than the context", EVERY, {"prompt": "ROMEO: " * 20}, "reads at most 64"),
    Row("characters outside the vocabulary", EVERY, {"prompt": "ROMEO € ∑ 中"}, "not in this"),
    Row("emoji, right-to-left, combining marks", EVERY, {"prompt": "🙂 שָׁלוֹם مرحبا e\u0301 👨‍👩‍👧"}),
    Row("control characters", EVERY, {"prompt": "RO\x00ME\x07O\x1b[31m:\x7f\u200b\ufeff"}),
    Row("markup and script in the prompt", EVERY, {"prompt": MARKUP}),
    # ---- what the Training page takes: run names, text, model settings ----
    Row("markup in a run name", TRAINING, {**TINY, "t_name": MARKUP}, "is not", check=_start_disabled),
    Row("markup in pasted text", TRAINING, PASTE, "2,600 characters", _paste(MARKUP * 40)),
    Row("markup in uploaded text", TRAINING, UPLOAD, "2,600 characters", _upload("a.txt", MARKUP.encode() * 40)),
    Row("markup in an upload's name", TRAINING, UPLOAD, "2,580 characters", _upload(f"{MARKUP}.txt", TEXT.encode())),
    Row("binary upload", TRAINING, UPLOAD, "binary data", _upload("a.txt", bytes(range(256)) * 40), check=_start_disabled),
    Row("non-UTF-8 upload", TRAINING, UPLOAD, "not UTF-8", _upload("a.txt", ("Ça va très bien. " * 200).encode("latin-1")), check=_start_disabled),
    Row("empty upload", TRAINING, UPLOAD, ("Give at least 2,000 characters", "A file may be at most 2 MB"), _upload("a.txt", b""), check=_start_disabled),
    Row("oversized upload", TRAINING, UPLOAD, "too large", _upload("a.txt", b"a " * (MAX_UPLOAD_BYTES // 2 + 1)), check=_start_disabled),
    Row("zero layers", TRAINING, {**CUSTOM, "t_n_layer": "0"}, check=_one_layer),
    Row("huge layers and width", TRAINING, {**CUSTOM, "t_n_layer": "100000", "t_d_model": "100000"}, "VIZ_MAX_PARAMS", check=_start_disabled),
    Row("heads not dividing the width", TRAINING, {**CUSTOM, "t_n_head": "5", "t_d_model": "64"}, "must be divisible by n_head", check=_start_disabled),
    Row("key-value heads not dividing the heads", TRAINING, {**CUSTOM, "t_n_kv_heads": "3"}, "multiple of n_kv_heads", check=_start_disabled),
    Row("an unknown block part in a link", TRAINING, {**CUSTOM, "t_norm_kind": "<b>batch</b>", "t_mlp": "moe", "t_pos": "xpos"}, check=_layernorm_kept),
    # ---- bundles on disk: every page opens a model ----
    *(
        Row(f"bundle with {case}", EVERY, {"model": f"bad-{how}"}, (f"Could not open the model “bad-{how}”", words, "Still showing"))
        for case, (how, words) in BROKEN.items()
    ),
    Row("bundle with a truncated snapshot", EVERY, {"model": "bad-snapshot", "train_step": str(SNAPSHOT_STEP)}, f"Could not open the weights saved at step {SNAPSHOT_STEP}"),
    Row("a model path outside the models folder", EVERY, {"model": f"../{GOOD}"}, f"There is no model called “../{GOOD}”"),
    Row("an absolute model path", EVERY, {"model": "/etc/passwd"}, "There is no model called “/etc/passwd”"),
    # ---- a disk that refuses a write ----
    Row("read-only disk at Start", TRAINING, TINY, "Read-only file system", _start, _read_only_disk, _nothing_half_made),
    Row("full disk during a job's save", TRAINING, {"t_run": "disk-full"}, "resume continues from step 150, its last save", prepare=_disk_filled_during_a_save, check=_resume_offered),
]  # fmt: skip

_good_bundle: Path = Path()  # set by the hostile_models fixture


@pytest.fixture(scope="module")
def hostile_models(models_dir, tmp_path_factory) -> Path:
    """The good bundle and a broken copy of it per BROKEN case, side by side."""
    global _good_bundle
    root = tmp_path_factory.mktemp("hostile_models")
    _good_bundle = models_dir / GOOD
    (root / GOOD).symlink_to(_good_bundle, target_is_directory=True)
    for how, _ in [*BROKEN.values(), ("snapshot", "")]:
        bad = root / f"bad-{how}"
        shutil.copytree(_good_bundle, bad)
        if how == "missing_tokenizer":
            (bad / "tokenizer.json").unlink()
        elif how == "snapshot":
            snap = bad / "snapshots" / f"step_{SNAPSHOT_STEP:06d}.safetensors"
            snap.write_bytes(snap.read_bytes()[:300])
        else:
            corrupt(bad, how)
    return root


@pytest.fixture
def runs(tmp_path, monkeypatch) -> Path:
    """An empty runs folder, no teacher password, the default caps."""
    monkeypatch.setenv(jobs.RUNS_ENV, str(tmp_path / "runs"))
    for name in ("VIZ_MAX_PARAMS", "VIZ_MAX_MINUTES", "VIZ_MAX_JOBS", jobs.PASSWORD_ENV):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "runs").mkdir()
    return tmp_path / "runs"


def _live_html(at) -> list[str]:
    """The bodies of every element the browser renders as HTML: st.html, and markdown or
    captions drawn with unsafe_allow_html."""
    # the app's own script that closes the legacy router's notice (ui/nav.py) is no user input
    bodies = [e.proto.body for e in at.get("html") if e.proto.body != nav.CLOSE_NOT_FOUND]
    for kind in ("markdown", "caption"):
        bodies += [e.proto.body for e in at.get(kind) if getattr(e.proto, "allow_html", False)]
    return bodies


def _shown(at) -> str:
    kinds = ("error", "warning", "info", "success", "caption", "markdown")
    return " | ".join(str(e.value) for kind in kinds for e in at.get(kind))


def _files(root: Path) -> dict[str, str]:
    """Every file of every bundle under root (the good one through its link) and its sha256."""
    folders = {p.name: p.resolve() for p in root.iterdir()}
    return {
        f"{name}/{f.relative_to(folder).as_posix()}": hashlib.sha256(f.read_bytes()).hexdigest()
        for name, folder in folders.items()
        for f in sorted(folder.rglob("*"))
        if f.is_file()
    }


CELLS = [(row, page) for row in ROWS for page in row.pages]


@pytest.mark.parametrize(
    ("row", "page"),
    CELLS,
    ids=[
        f"{row.case}-{(page or 'Home').split('/')[-1].removesuffix('.py')}" for row, page in CELLS
    ],
)
def test_hostile_input(hostile_models, runs, monkeypatch, row, page):
    before = _files(hostile_models)
    if row.prepare:
        row.prepare(runs, monkeypatch)
    at = open_link(hostile_models, page, {"model": GOOD, **row.query})
    if row.act:
        row.act(at)
    assert not at.exception, f"{row.case} on {page}: {at.exception[0].value}"
    bodies = _live_html(at)
    for body in bodies:
        assert not any(bad in body.lower() for bad in DANGEROUS), f"{row.case}: live HTML"
    if "<script" in json.dumps(row.query) and page in DRAW_PROMPT_AS_HTML:
        assert any("&lt;" in body for body in bodies), f"the escaped prompt is not on {page}"
    for words in (row.says,) if isinstance(row.says, str) else row.says:
        assert words in _shown(at), f"{row.case} on {page}: {_shown(at)[:600]}"
    if row.check:
        row.check(at, runs)
    assert _files(hostile_models) == before  # nothing saved was changed or lost
