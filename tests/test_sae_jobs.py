"""SAE jobs (serving/sae_jobs.py, serving/sae_worker.py): a job end to end on a bundled model, read
by the page; the teacher password, the job cap shared with training runs, the minutes cap, Stop,
a killed worker and a model that vanished, each as a state with its reason.

Each test has its own runs root (VIZ_RUNS_DIR in tmp_path) and jobs on one thread.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from serving import jobs, models, sae_jobs, sae_worker
from serving.jobs import JobError
from tests.apptest_util import open_link
from viz_model.analysis.labs.sae.claims import dead_claim, splice_claim
from viz_model.analysis.labs.sae.metrics import SAEMetrics
from viz_model.analysis.labs.sae_files import METRICS_FILE, SAE_FILE, load_lab
from viz_model.training.settings import RunSettings

TIMEOUT = 120  # seconds any one wait may take on a busy 2-core machine
MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
PAGE = "pages/23_sparse_autoencoder.py"
BUNDLE_ID = models.bundle_id((MODELS / "shakespeare-char").resolve())
SMALL = sae_jobs.SAEJob(BUNDLE_ID, layer=1, n_features=64, k=4, tokens=4_000)
LONG = sae_jobs.SAEJob(BUNDLE_ID, layer=1, n_features=1024, k=16, tokens=4_000_000)


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A runs root of its own; every worker still alive at the end is killed."""
    runs = tmp_path / "runs"
    monkeypatch.setenv(jobs.RUNS_ENV, str(runs))
    monkeypatch.setenv("VIZ_JOB_THREADS", "1")
    monkeypatch.setenv("VIZ_MAX_JOBS", "2")
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    monkeypatch.delenv("VIZ_MAX_MINUTES", raising=False)
    yield runs
    for view in sae_jobs.list_jobs(runs) + jobs.list_runs(runs):
        if view.live and jobs.worker_alive(view.pid, view.path, view.pid_started):
            os.kill(view.pid, signal.SIGKILL)


def wait_for(name: str, test, what: str) -> jobs.RunView:
    """Read the job until test(view) holds (or fail after TIMEOUT, saying what was awaited)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        view = sae_jobs.read(name)
        if test(view):
            return view
        assert view.state != "failed", view.message
        assert time.monotonic() < deadline, f"waited for {what}; the job is {view}"
        time.sleep(0.1)


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_a_job_trains_saves_its_lab_and_the_page_shows_what_it_saved(root):
    view = sae_jobs.start("small", SMALL, auth=jobs.Auth())
    assert view.state == "running" and view.path == root / "sae" / "small"
    done = wait_for("small", lambda v: v.state == "finished", "the job to finish")
    assert done.progress == 1.0 and "variance explained" in done.message
    assert json.loads((done.path / "settings.json").read_text()) == SMALL.to_dict()
    assert jobs.list_runs(root) == []  # not a model run: the Training page does not list it
    lab = load_lab(done.path, d_model=128)
    assert lab.name == "blocks.1.hook_resid_post" and lab.sae.n_features == 64 and lab.sae.k == 4
    saved = json.loads((done.path / METRICS_FILE).read_text())["metrics"]
    m = SAEMetrics(**saved)
    assert 0 < m.l0 <= 4 and lab.log.tokens >= 3_000

    query = {"model": "shakespeare-char", "prompt": "ROMEO:\nBut soft", "sae_job": "small"}
    at = open_link(MODELS, PAGE, query, timeout=300)
    assert not at.exception, at.exception[0].value
    assert _metric(at, "Variance explained") == f"{m.fve:.1%}"
    assert _metric(at, "Active per token") == f"{m.l0:.1f}"
    assert _metric(at, "Alive / dead") == f"{m.n_alive:,} / {m.n_dead:,}"
    assert _metric(at, "Loss, SAE spliced in") == f"{m.spliced_loss:.3f}"
    printed = [md.value for md in at.markdown]
    assert splice_claim(m).text in printed
    assert dead_claim(m, lab.log.dead_window_tokens).text in printed
    assert any("Trained as job small on" in c.value for c in at.caption)

    raw = (done.path / SAE_FILE).read_bytes()  # damaged on disk: words, not a traceback
    (done.path / SAE_FILE).write_bytes(raw[:100])
    at = open_link(MODELS, PAGE, query, timeout=300)
    assert not at.exception, at.exception[0].value
    assert any("cannot be opened" in w.value for w in at.warning)

    at.selectbox(key="sae_delete_pick").select("small").run(timeout=300)  # the teacher clears up
    at.button(key="sae_delete").click().run(timeout=300)
    assert not at.exception, at.exception[0].value
    assert not done.path.exists() and sae_jobs.list_jobs(root) == []
    assert at.session_state["sae_job"] == "here"  # the page went back to its own SAE
    assert not any("cannot be opened" in w.value for w in at.warning)


def test_the_teacher_password_guards_starting_and_stopping(root, monkeypatch):
    monkeypatch.setenv(jobs.PASSWORD_ENV, "owl")
    with pytest.raises(JobError, match="needs the teacher password"):
        sae_jobs.start("a", SMALL, auth=jobs.Auth.resolve(None))
    with pytest.raises(JobError, match="wrong teacher password"):
        sae_jobs.start("a", SMALL, auth=jobs.Auth.resolve("cat"))
    with pytest.raises(JobError, match="wrong teacher password"):
        sae_jobs.stop("a", auth=jobs.Auth.resolve("cat"))
    with pytest.raises(JobError, match="wrong teacher password"):
        sae_jobs.delete("a", auth=jobs.Auth.resolve("cat"))
    assert sae_jobs.list_jobs(root) == []


def test_jobs_share_the_cap_and_stop_and_a_killed_worker_reads_as_interrupted(root, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_JOBS", "1")
    sae_jobs.start("long", LONG, auth=jobs.Auth())
    with pytest.raises(JobError, match=r"at most 1 training job.*running now: sae/long"):
        sae_jobs.start("second", SMALL, auth=jobs.Auth())
    tiny_run = RunSettings(task="repeat", task_examples=300, preset="tiny", train={"max_steps": 5})
    with pytest.raises(JobError, match=r"VIZ_MAX_JOBS=1"):  # a model run waits for it too
        jobs.start("model-run", tiny_run, auth=jobs.Auth())
    wait_for("long", lambda v: "reading activations" in v.message, "the worker to start")
    sae_jobs.stop("long", auth=jobs.Auth())
    stopped = wait_for("long", lambda v: v.state == "stopped", "the stop")
    assert "stopped by Stop; nothing was saved" in stopped.message
    assert not (stopped.path / SAE_FILE).exists()
    with pytest.raises(JobError, match="only a running job can be stopped"):
        sae_jobs.stop("long", auth=jobs.Auth())

    running = sae_jobs.start("killed", LONG, auth=jobs.Auth())  # the slot is free again
    wait_for("killed", lambda v: "reading activations" in v.message, "the worker to start")
    with pytest.raises(JobError, match="running; stop it before deleting it"):
        sae_jobs.delete("killed", auth=jobs.Auth())
    os.kill(running.pid, signal.SIGKILL)
    lost = wait_for("killed", lambda v: v.state != "running", "the kill to be noticed")
    assert lost.state == "interrupted" and "worker ended without finishing" in lost.message
    sae_jobs.delete("killed", auth=jobs.Auth())  # an ended job goes, folder and all
    sae_jobs.delete("long", auth=jobs.Auth())
    assert not (root / "sae" / "killed").exists() and sae_jobs.list_jobs(root) == []
    sae_jobs.start("after", SMALL, auth=jobs.Auth())  # an interrupted job holds no slot


def test_the_minutes_cap_stops_a_job(root, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_MINUTES", "0.001")
    sae_jobs.start("capped", LONG, auth=jobs.Auth())
    done = wait_for("capped", lambda v: not v.live, "the cap")
    assert done.state == "stopped" and "VIZ_MAX_MINUTES=0.001" in done.message


def test_a_model_that_vanished_fails_the_job_with_the_reason(root):
    gone = sae_jobs.SAEJob("/nowhere/model@0", layer=0, n_features=64, k=4, tokens=4_000)
    folder = root / "sae" / "orphan"
    folder.mkdir(parents=True)
    (folder / "settings.json").write_text(json.dumps(gone.to_dict()))
    (folder / "plan.json").write_text(json.dumps({"mode": "new", "kind": "sae", "threads": 1}))
    assert sae_worker.run(folder) == 1  # in this process: the worker's own code path
    view = sae_jobs.read("orphan")
    assert view.state == "failed" and "the model at /nowhere/model cannot be loaded" in view.message
    with pytest.raises(JobError, match="cannot be read"):  # and start refuses it up front
        sae_jobs.start("orphan2", gone, auth=jobs.Auth())


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"site": "attn"}, "activation must be one of"),
        ({"n_features": 0}, "dictionary size must be"),
        ({"k": 0, "l1_coeff": -1.0}, "L1 coefficient must be above 0"),
        ({"tokens": 10**9}, "trains on 1,000 to"),
        ({"layer": "1"}, "must be whole numbers"),
        ({"bundle_id": "no-id"}, "is not a model id"),
        ({"unknown": 1}, "do not fit"),
    ],
)
def test_bad_job_settings_are_refused_in_words(change, words):
    with pytest.raises(JobError, match=words):
        sae_jobs.SAEJob.from_dict({**SMALL.to_dict(), **change})


def test_a_block_the_model_lacks_is_refused_and_names_are_free_slugs(root):
    with pytest.raises(JobError, match="no block 9"):
        sae_jobs.start("deep", sae_jobs.SAEJob(BUNDLE_ID, layer=9), auth=jobs.Auth())
    (root / "sae" / "m-b1-1024-L1-0-01").mkdir(parents=True)
    assert sae_jobs.free_name("m-b1-1024-L1 0.01") == "m-b1-1024-L1-0-01-2"
