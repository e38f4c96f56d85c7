"""The training job's process (serving/job_worker.py), run in this process on a folder made as
jobs.start makes it, where a test can make the disk fill up: the run then fails and its status
says the disk is full and what to do, instead of reading as "interrupted" with no cause; or
delete the folder at the worst moment: the worker ends and leaves nothing behind."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from serving import job_worker, jobs
from viz_model.bundles import files as bundle_files
from viz_model.training import loop
from viz_model.training.settings import RunSettings


def tiny_run(root: Path, name: str) -> Path:
    """A run folder as jobs.start leaves it for its worker: settings, plan, control."""
    settings = RunSettings(
        task="repeat",
        task_examples=300,
        preset="tiny",
        model={"n_ctx": 32, "d_model": 32},
        train=dict(max_steps=1_000, eval_every=10, eval_batches=2, sample_every=0),
    )
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "settings.json").write_text(json.dumps(settings.to_dict()))
    (folder / "plan.json").write_text(json.dumps({"mode": "new", "threads": 1, "max_minutes": 0}))
    control = {"paused": False, "stop": False, "lr": None, "steps": 0}
    (folder / "control.json").write_text(json.dumps(control))
    return folder


class FullDisk:
    """From the run's second save of its weights on, no file can be made (ENOSPC), until a file
    that was on the disk when it filled up is deleted."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.saves, self.there = folder, 0, None

    def mkstemp(self, dir=None, prefix="", suffix=""):
        self.saves += prefix.startswith(".model.safetensors.")
        if self.saves >= 2:
            if self.there is None:
                self.there = [p for p in self.folder.rglob("*") if p.is_file()]
            if all(p.exists() for p in self.there):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return tempfile.mkstemp(dir=dir, prefix=prefix, suffix=suffix)


@pytest.fixture
def root(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv(jobs.RUNS_ENV, str(runs))
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # the worker's own handlers
    threads = torch.get_num_threads()
    yield runs
    torch.set_num_threads(threads)  # the worker sets its plan's


def test_a_disk_that_fills_during_a_save_says_the_disk_is_full_and_what_to_do(root, monkeypatch):
    folder = tiny_run(root, "full")
    disk = FullDisk(folder)
    monkeypatch.setattr(bundle_files, "tempfile", SimpleNamespace(mkstemp=disk.mkstemp))
    with pytest.raises(OSError, match="No space left on device"):
        job_worker.run(folder)
    assert disk.there  # the disk did fill up, after the first save
    view = jobs.read("full")
    assert view.state == "failed", view.message  # not "interrupted", with no cause
    assert "the server's disk is full (No space left on device)" in view.message
    assert "free some space on it" in view.message
    assert "resume continues from step 10, its last save" in view.message
    assert not (folder / job_worker.RESERVE_FILE).exists()  # the reserve went with the worker


def test_a_run_that_ends_leaves_no_reserve_behind(root):
    folder = tiny_run(root, "done")
    settings = json.loads((folder / "settings.json").read_text())
    settings["train"]["max_steps"] = 5
    (folder / "settings.json").write_text(json.dumps(settings))
    assert job_worker.run(folder) == 0
    assert jobs.read("done").state == "finished"
    assert not (folder / job_worker.RESERVE_FILE).exists()


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        bundle_files.CheckpointError("could not write model.safetensors: No space left on device"),
        bundle_files.CheckpointError("could not write model.safetensors: I/O error: (os error 28)"),
    ],
    ids=["OSError", "CheckpointError", "safetensors"],
)
def test_every_way_a_full_disk_arrives_is_named_as_one(error):
    assert job_worker.disk_full(error)
    assert "disk is full" in job_worker.why_failed(error, saved=True)


def test_other_errors_are_shown_as_they_are():
    error = ValueError("bad text")
    assert not job_worker.disk_full(error)
    assert job_worker.why_failed(error, saved=True) == "ValueError: bad text"


def test_a_folder_deleted_just_before_a_save_ends_the_worker_and_is_not_made_again(
    root, monkeypatch
):
    """rm -rf lands between the worker's last check and a save of the bundle, which makes the
    folder again: the worker sees another folder at its next step, removes what it made (no
    settings.json: no run's) and ends, writing nothing (issue 39: the orphan trained on)."""
    folder = tiny_run(root, "deleted")
    real_save, saves = loop.save_bundle, []

    def save_into_a_deleted_folder(out, *args, **kwargs):
        saves.append(out)
        if len(saves) == 2:
            shutil.rmtree(out)
        real_save(out, *args, **kwargs)

    monkeypatch.setattr(loop, "save_bundle", save_into_a_deleted_folder)
    assert job_worker.run(folder) == job_worker.GONE
    assert len(saves) == 2  # it ended at the step after the save
    assert not folder.exists()
    assert not root.exists() or list(root.iterdir()) in ([], [root / jobs.LOCK_FILE])


def test_a_folder_made_anew_by_a_run_of_the_same_name_is_not_removed(root, monkeypatch):
    """A new run's folder (settings.json in it) where the worker's was: the old worker ends and
    does not remove it."""
    folder = tiny_run(root, "reused")
    real_save, saves = loop.save_bundle, []

    def replace_the_folder(out, *args, **kwargs):
        saves.append(out)
        if len(saves) == 2:
            shutil.rmtree(out)
            tiny_run(root, "reused")  # another run of the name, as jobs.start leaves it
        real_save(out, *args, **kwargs)

    monkeypatch.setattr(loop, "save_bundle", replace_the_folder)
    assert job_worker.run(folder) == job_worker.GONE
    assert (folder / "settings.json").is_file() and (folder / "control.json").is_file()
