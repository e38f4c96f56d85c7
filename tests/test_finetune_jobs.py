"""Fine-tune jobs: a LoRA run from a tiny base through jobs.start, stopped and resumed like any
job, its bundle a plain one whose history records forgetting; the password and the base check."""

from __future__ import annotations

import os
import signal

import pytest
from safetensors.torch import load_file

from serving import jobs
from serving.jobs import JobError
from tests.test_jobs import LONG, root, wait_for  # noqa: F401  (root is a fixture)
from tests.test_lora import tiny_base
from viz_model.bundles.load import load_bundle
from viz_model.training.finetune import LORA_FILE
from viz_model.training.settings import RunSettings


def lora_job(base, **train) -> RunSettings:
    over = dict(max_steps=40, eval_every=5, eval_batches=2, sample_tokens=0, threads=1)
    return RunSettings(
        task="brackets",
        task_examples=300,
        base=str(base),
        lora_rank=2,
        lora_targets=("qkv", "out"),
        train={**over, **train},
    )


def test_a_lora_job_stops_resumes_and_saves_a_plain_bundle_with_forgetting(root):  # noqa: F811
    base = tiny_base(root / "tiny-base")  # in the runs folder: a model of this server
    view = jobs.start("lora", lora_job(base, **LONG), auth=jobs.Auth())
    assert view.params == load_bundle(base).model.n_params()  # the cap counts the base
    first = wait_for("lora", lambda v: (v.saved_step or 0) >= 5, "a first save")
    os.kill(first.pid, signal.SIGKILL)  # a crash: resumed from the last save, LoRA and all
    wait_for("lora", lambda v: v.state == "interrupted", "the crash to show")
    jobs.resume("lora", auth=jobs.Auth())
    saved = jobs.read("lora").saved_step
    wait_for("lora", lambda v: v.state == "running" and v.step > saved + 3, "steps after resume")
    jobs.stop("lora", auth=jobs.Auth())
    stopped = wait_for("lora", lambda v: v.state == "stopped", "the stop")
    jobs.train_more("lora", steps=5, auth=jobs.Auth())
    more = wait_for("lora", lambda v: v.state == "finished", "five more steps")
    assert more.step == stopped.step + 5
    bundle = load_bundle(root / "lora")
    assert bundle.meta["finetune"]["mode"] == "lora" and bundle.meta["step"] == more.step
    assert "--finetune" in bundle.meta["command"] and "--lora-rank 2" in bundle.meta["command"]
    evals = [r for r in bundle.history if "val_loss" in r]
    assert evals and all("old_val_loss" in r for r in evals)
    tensors = load_file(root / "lora" / LORA_FILE)
    assert tensors["blocks.0.attn.qkv.lora_B"].abs().sum() > 0


def test_a_fine_tune_needs_the_password_and_a_model_of_this_server(root, monkeypatch, tmp_path):  # noqa: F811
    base = tiny_base(root / "tiny-base")
    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    with pytest.raises(JobError, match="password"):
        jobs.start("nope", lora_job(base), auth=jobs.Auth.resolve("wrong"))
    assert not (root / "nope").exists()
    elsewhere = tiny_base(tmp_path / "elsewhere")
    with pytest.raises(JobError, match="not a model of this server"):
        jobs.start("far", lora_job(elsewhere), auth=jobs.Auth.resolve("sesame"))
    bad = RunSettings(task="count", task_examples=300, base=str(base), lora_rank=2)
    with pytest.raises(JobError, match="are not in tiny-base's vocabulary"):
        jobs.start("count", bad, auth=jobs.Auth.resolve("sesame"))
