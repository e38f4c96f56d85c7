"""Live training in a real browser: a job trains beside the app, and the Training page follows it
by itself (the fragment's timer), with no reload and no click; a screenshot for a person to see.

Uses the fixtures of tests/test_browser.py (the system Chromium; skipped outside CI without one).
"""

from __future__ import annotations

import os
import re
import signal

import pytest

from serving import jobs
from serving.models import ENV_VAR
from tests.test_browser import (  # noqa: F401 (browser and page are fixtures)
    CHARTS,
    TIMEOUT_MS,
    browser,
    free_port,
    page,
    screenshot,
    start_server,
    stop_server,
    wait_drawn,
    wait_healthy,
)
from viz_model.training.settings import RunSettings

pytestmark = pytest.mark.browser
RUN = "browser-run"


@pytest.fixture(scope="module")
def live_server(models_dir, tmp_path_factory):
    """A server and a long tiny run sharing one runs folder; the run is killed at the end."""
    runs = tmp_path_factory.mktemp("runs")
    env = {**os.environ, ENV_VAR: str(models_dir), jobs.RUNS_ENV: str(runs)}
    env["VIZ_JOB_THREADS"] = "1"
    settings = RunSettings(
        task="repeat",
        task_examples=300,
        preset="tiny",
        model={"n_ctx": 32, "d_model": 32},
        train={"max_steps": 1_000_000, "eval_every": 20, "eval_batches": 2, "sample_tokens": 0},
    )
    old = os.environ.get(jobs.RUNS_ENV)
    os.environ[jobs.RUNS_ENV] = str(runs)
    view = jobs.start(RUN, settings, auth=jobs.Auth())
    port = free_port()
    proc = start_server(port, env, tmp_path_factory.mktemp("log") / "streamlit.log")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)
        if jobs.worker_alive(view.pid, view.path, view.pid_started):
            os.kill(view.pid, signal.SIGKILL)
        if old is None:
            os.environ.pop(jobs.RUNS_ENV, None)
        else:
            os.environ[jobs.RUNS_ENV] = old


def _step_shown(p) -> int:
    text = p.locator("[data-testid='stProgress']").first.inner_text()
    return int(re.search(r"step ([\d,]+)", text).group(1).replace(",", ""))


def test_the_training_page_follows_a_running_job_by_itself(live_server, page):  # noqa: F811
    page.goto(f"{live_server}/Training?t_run={RUN}")
    wait_drawn(page)
    page.wait_for_selector("[data-testid='stProgress']", timeout=TIMEOUT_MS)
    first = _step_shown(page)
    # No reload, no click: the fragment's timer redraws the run about once a second.
    page.wait_for_function(
        """(first) => {
            const bar = document.querySelector("[data-testid='stProgress']");
            const m = bar && bar.innerText.match(/step ([\\d,]+)/);
            return m && parseInt(m[1].replace(/,/g, "")) > first + 20;
        }""",
        arg=first,
        timeout=TIMEOUT_MS,
    )
    assert _step_shown(page) > first
    assert page.locator(CHARTS).count() >= 1
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "training-live")


def test_a_page_opened_before_a_run_starts_notices_it(live_server, page):  # noqa: F811
    """Students often open the page before the teacher presses Start: the page must pick the run
    up by itself (a slow check while nothing live is watched), without a reload."""
    jobs.stop(RUN, auth=jobs.Auth())
    deadline = 600
    while jobs.read(RUN, history=False).live and deadline:
        page.wait_for_timeout(100)
        deadline -= 1
    page.goto(f"{live_server}/Training?t_run={RUN}")
    wait_drawn(page)
    page.wait_for_function(
        f"() => document.body.innerText.includes('{RUN} is stopped')", timeout=TIMEOUT_MS
    )
    jobs.train_more(RUN, steps=100_000, auth=jobs.Auth())  # as another laptop's "Train more" would
    page.wait_for_function(
        f"() => document.body.innerText.includes('{RUN} is running')", timeout=TIMEOUT_MS
    )
    assert page.locator("[data-testid='stException']").count() == 0
    jobs.stop(RUN, auth=jobs.Auth())
