"""The Training page's live half in AppTest: a run started on this server is watched as it
grows, paused, stepped, given a new learning rate, stopped, and then offered on every page."""

from __future__ import annotations

import json
import os
import shutil
import signal

import pytest
import streamlit as st

from serving import jobs, models
from tests.apptest_util import app_test, plotly_array, plotly_figures
from tests.test_jobs import (  # noqa: F401 (root is a fixture)
    LONG,
    TIMEOUT,
    finished_run,
    look_alike_worker,
    root,
    suspend_process,
    tiny,
    wait_for,
)
from ui import shared_cache
from ui.state import widget_key
from viz_model.analysis.claims import md_escape
from viz_model.bundles.load import load_bundle

PAGE = "pages/09_training.py"


def _live_steps(at) -> float:
    """The last step on the live run's loss chart (the first chart on the page)."""
    return float(plotly_array(plotly_figures(at)[0]["data"][0]["x"])[-1])


def _text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def _lr_field(at):
    return next(n for n in at.number_input if n.label == "Peak learning rate")


def _progress_text(at) -> str:
    return at.get("progress")[0].proto.text


def test_a_run_grows_pauses_steps_and_stops_into_the_model_picker(models_dir, root):  # noqa: F811
    jobs.start("live-one", tiny(**LONG), auth=jobs.Auth())
    view = wait_for("live-one", lambda v: v.step >= 15 and v.has_bundle, "15 steps and a save")
    at = app_test(models_dir, PAGE, query={"t_run": "live-one"})
    assert not at.exception
    assert "live-one" in at.selectbox(key=widget_key("t_run")).value
    where = "on the CPU" if view.device == "cpu" else f"on the GPU ({view.device})"
    assert f"tokens/s {where}" in _progress_text(at)  # the run's device, as its worker said
    first = _live_steps(at)
    health = next(e for e in at.expander if e.label.startswith("Gradient health"))
    drawn = [json.loads(chart.proto.spec) for chart in health.get("plotly_chart")]
    names = {trace.get("name") for fig in drawn for trace in fig["data"]}
    assert {"whole gradient", "block 0", "block 1"} <= names  # the tiny preset's two blocks
    assert any(e.label.startswith("The update it trains with (AdamW,") for e in at.expander)
    wait_for("live-one", lambda v: v.step >= view.step + 20, "20 more steps")
    at.run()
    assert _live_steps(at) > first  # the curve grew between two refreshes

    at.button(key="t_pause").click().run()
    paused = wait_for("live-one", lambda v: v.state == "paused", "the pause")
    at.run()
    # A new peak learning rate while paused takes effect with the next step.
    _lr_field(at).set_value(0.0123)
    at.button(key="t_set_lr").click().run()
    assert not at.exception
    at.button(key="t_step").click().run()
    stepped = wait_for("live-one", lambda v: v.step == paused.step + 1, "one step")
    assert stepped.peak_lr == pytest.approx(0.0123)
    assert stepped.state == "paused"
    at.run()
    assert f"step {stepped.step:,}:" in _text(at)  # the paused view lists the step's loss
    # Another laptop changes the peak (and steps): this page's field must follow, not keep 0.0123.
    jobs.set_lr("live-one", 0.02, auth=jobs.Auth())
    jobs.step("live-one", auth=jobs.Auth())
    wait_for("live-one", lambda v: v.peak_lr == pytest.approx(0.02), "the other laptop's rate")
    at.run()
    assert _lr_field(at).value == pytest.approx(0.02)

    at.button(key="t_stop").click().run()
    wait_for("live-one", lambda v: v.state == "stopped", "the stop")
    at.run()
    assert not at.exception
    assert "trained" in _progress_text(at) and "left" not in _progress_text(at)
    assert "live-one" in at.selectbox(key=widget_key("model")).options
    at.button(key="t_open_Attention").click().run()
    assert not at.exception
    assert at.query_params["model"] in ("live-one", ["live-one"])


def test_a_locked_server_shows_runs_but_disables_their_controls(
    models_dir,
    root,  # noqa: F811
    monkeypatch,
):
    jobs.start("locked-one", tiny(**LONG), auth=jobs.Auth())
    wait_for("locked-one", lambda v: v.step >= 1, "a first step")
    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    at = app_test(models_dir, PAGE, query={"t_run": "locked-one"})
    assert not at.exception
    assert at.button(key="t_pause").disabled
    assert any("teacher password" in c.value for c in at.caption)
    at.text_input(key="t_password").set_value("sesame").run()
    assert not at.button(key="t_pause").disabled
    at.button(key="t_stop").click().run()
    wait_for("locked-one", lambda v: v.state == "stopped", "the stop")


def test_no_run_yet_says_how_to_start_one(models_dir, root):  # noqa: F811
    at = app_test(models_dir, PAGE)
    assert not at.exception
    assert any("No run on this server yet" in i.value for i in at.info)


def test_a_password_in_streamlit_secrets_locks_the_runs_too(models_dir, root, monkeypatch):  # noqa: F811
    from ui import teacher

    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    finished = jobs.start("secret-one", tiny(max_steps=3, eval_every=0), auth=jobs.Auth())
    wait_for(finished.name, lambda v: v.state == "finished", "the run")
    teacher._secret.clear()  # a fresh server process: the secrets are read once, on first use
    try:
        at = app_test(models_dir, None)
        at.secrets["teacher_password"] = "from-secrets"
        at.switch_page(PAGE).run()
        assert not at.exception
        assert at.text_input(key="t_password").label == "Teacher password"
        assert jobs.PASSWORD_ENV not in os.environ  # the page writes no environment variable
        assert teacher.expected() == "from-secrets"
        with pytest.raises(jobs.JobError, match="wrong teacher password"):
            jobs.delete(finished.name, auth=teacher.auth("guess"))
        with pytest.raises(jobs.JobError, match="needs the teacher password"):
            jobs.train_more(finished.name, steps=2, auth=teacher.auth(None))
        jobs.delete(finished.name, auth=teacher.auth("from-secrets"))
    finally:
        teacher._secret.clear()


def test_after_a_job_is_killed_mid_step_a_restarted_server_loads_every_bundle_and_resumes_it(
    models_dir,
    root,  # noqa: F811
):
    jobs.start("killed", tiny(**LONG, eval_every=10), auth=jobs.Auth())
    running = wait_for("killed", lambda v: (v.saved_step or 0) >= 20, "two saves")
    os.kill(running.pid, signal.SIGKILL)  # mid-run, most likely mid-step
    saved = wait_for("killed", lambda v: v.state == "interrupted", "the kill to be noticed")
    # A restarted server: nothing in memory, only what is on disk.
    st.cache_resource.clear()
    st.cache_data.clear()
    shared_cache.CACHE.clear()
    at = app_test(models_dir, PAGE, query={"t_run": "killed"})
    assert not at.exception
    assert f"resume continues from step {saved.saved_step}" in _text(at)
    names = at.selectbox(key=widget_key("model")).options
    assert "killed" in names and {"shakespeare-char", "test-char"} <= set(names)
    for name, path in models.discover().items():  # every bundle the picker offers loads
        assert load_bundle(path).name == name
    at.button(key="t_relaunch").click().run()
    assert not at.exception
    wait_for("killed", lambda v: v.state == "running" and v.step > saved.saved_step + 5, "more")
    jobs.stop("killed", auth=jobs.Auth())
    done = wait_for("killed", lambda v: v.state == "stopped", "the stop")
    assert [r["step"] for r in done.history] == list(range(1, done.step + 1))  # nothing twice


def test_a_refusal_outlives_the_live_refresh_that_follows_it(models_dir, root, monkeypatch):  # noqa: F811
    jobs.start("refused", tiny(**LONG), auth=jobs.Auth())
    wait_for("refused", lambda v: v.step >= 1, "a first step")
    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    at = app_test(models_dir, PAGE, query={"t_run": "refused"})
    at.text_input(key="t_password").set_value("guess").run()
    at.button(key="t_pause").click().run()
    refusal = "Refused: wrong teacher password."
    assert refusal in [e.value for e in at.error]
    at.run()  # the next refresh of the live run (about a second later in a browser)
    assert refusal in [e.value for e in at.error]
    assert jobs.read("refused").state == "running"
    at.text_input(key="t_password").set_value("sesame").run()
    at.button(key="t_stop").click().run()  # a control that works clears the old refusal
    assert refusal not in [e.value for e in at.error]
    wait_for("refused", lambda v: v.state == "stopped", "the stop")


def test_a_run_of_another_family_trains_and_is_watched_without_heads(models_dir, root):  # noqa: F811
    """An LSTM started on this server: its curve, its probe without an attention tab, and links
    to pages that can show it (not Attention)."""
    settings = tiny()
    lstm = type(settings)(**{**settings.to_dict(), "family": "lstm"})
    jobs.start("lstm-one", lstm, auth=jobs.Auth())
    wait_for("lstm-one", lambda v: v.state == "finished" and v.has_bundle, "the LSTM's 40 steps")
    at = app_test(models_dir, PAGE, query={"t_run": "lstm-one"})
    assert not at.exception and not at.error
    assert load_bundle(jobs.run_dir("lstm-one", root)).family == "lstm"
    assert "An LSTM has no attention to show" in " ".join(c.value for c in at.caption)
    assert not [b for b in at.button if b.key == "t_open_Attention"]
    at.button(key="t_open_Generation").click().run()
    assert not at.exception
    assert at.query_params["model"] in ("lstm-one", ["lstm-one"])


def test_a_runs_headline_speed_is_the_run_average_its_speed_claim_states(models_dir, root):  # noqa: F811
    # A finished run whose last step was quick (4,572 tokens/s) but whose average was 2.58
    # steps a second: the headline must say what the speed claim below it says.
    settings = tiny(max_steps=466)
    folder = root / "avg"
    folder.mkdir(parents=True)
    (folder / "settings.json").write_text(json.dumps(settings.to_dict()))
    history = [
        {"step": s, "train_loss": 2.5, "lr": 1e-3, "tokens_per_s": 4572.0, "elapsed": s / 2.58}
        for s in range(1, 467)
    ]
    (folder / jobs.HISTORY_FILE).write_text("".join(json.dumps(r) + "\n" for r in history))
    (folder / jobs.ESTIMATE_FILE).write_text(json.dumps({"steps_per_s": [2.0, 3.0]}))
    status = {"state": "finished", "step": 466, "max_steps": 466, "progress": 1.0}
    (folder / "status.json").write_text(json.dumps({**status, "tokens_per_s": 4572.0}))
    at = app_test(models_dir, PAGE, query={"t_run": "avg"})
    assert not at.exception
    headline = _progress_text(at)
    per_step = settings.train_config().batch_size * settings.model_config(2).n_ctx
    assert "2.58 steps/s" in headline and f"{2.58 * per_step:,.0f} tokens/s" in headline
    assert "4,572" not in headline
    assert "the run did 2.58 over 465 steps" in _text(at)  # the claim: the same statistic


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="SIGSTOP is POSIX")
def test_a_suspended_worker_and_one_whose_folder_is_gone_are_shown_with_a_stop_that_works(
    models_dir,
    root,  # noqa: F811
):
    """Issue 39, item 6: a worker stopped by SIGSTOP read "running" for ever, and one whose folder
    was deleted trained on out of sight. The page says "suspended" (with Stop) and lists the
    other above the runs (with Stop); both Stops end processes that are stopped."""
    path = finished_run(root, "frozen")
    with (
        look_alike_worker(path, as_module=True) as (proc, started),
        look_alike_worker(root / "gone", as_module=True) as (orphan, _),
    ):
        status = {"state": "running", "step": 40, "saved_step": 30, "pid": proc.pid}
        (path / "status.json").write_text(json.dumps({**status, "pid_started": started}))
        suspend_process(proc.pid)
        suspend_process(orphan.pid)
        at = app_test(models_dir, PAGE, query={"t_run": "frozen"})
        assert not at.exception
        assert "**frozen** is **suspended**: its worker process" in _text(at)
        assert "trains no step but holds a job slot; Stop wakes it" in _text(at)
        [warning] = [w.value for w in at.warning if "run folder is gone" in w.value]
        assert f"is suspended (stopped by a signal): gone (pid {orphan.pid})" in warning
        at.button(key=f"t_orphan_{orphan.pid}").click().run()
        assert orphan.wait(TIMEOUT) is not None  # woken and ended
        at.button(key="t_stop").click().run()
        assert proc.wait(TIMEOUT) is not None  # the look-alike dies of the SIGTERM it woke to
        at.run()
    assert not at.exception
    assert "**frozen** is **interrupted**" in _text(at)
    assert not [w for w in at.warning if "run folder is gone" in w.value]


def test_a_model_trained_from_the_command_line_is_named_where_the_runs_are(
    models_dir,
    root,  # noqa: F811
):
    """The CLI writes a bundle, not a job: the run list says where it went instead of 'none'."""
    shutil.copytree(models_dir / "test-char", root / "cli-run")
    at = app_test(models_dir, PAGE)
    assert not at.exception
    (note,) = [c.value for c in at.caption if "command line" in c.value]
    assert f"“{md_escape('cli-run')}”" in note and "model picker" in note  # as Markdown shows it
    assert "cli-run" in at.selectbox(key=widget_key("model")).options
    assert any("No run started on this page yet" in i.value for i in at.info)  # still no job
