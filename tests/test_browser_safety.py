"""The server's locks in a real browser, not only in AppTest: the teacher password, the job cap and
the upload cap hold when a student clicks, types and uploads in Chromium.

One server (VIZ_TEACHER_PASSWORD=sesame, VIZ_MAX_JOBS=1) beside one live run that fills the cap.
Uses the fixtures of tests/test_browser.py (skipped outside CI without Chromium).
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from serving import jobs
from serving.models import ENV_VAR
from tests.test_browser import (  # noqa: F401 (browser and page are fixtures)
    DONE,
    TIMEOUT_MS,
    browser,
    free_port,
    open_home_once,
    page,
    screenshot,
    start_server,
    stop_server,
    wait_drawn,
    wait_healthy,
)
from tests.test_jobs import LONG, tiny

pytestmark = pytest.mark.browser
RUN = "locked-run"
PASSWORD = "sesame"


@pytest.fixture(scope="module")
def locked_server(models_dir, tmp_path_factory):
    """A password-locked server with a cap of one job, which a live run already uses."""
    runs = tmp_path_factory.mktemp("runs")
    env = {**os.environ, ENV_VAR: str(models_dir), jobs.RUNS_ENV: str(runs)}
    env |= {jobs.PASSWORD_ENV: PASSWORD, "VIZ_MAX_JOBS": "1", "VIZ_JOB_THREADS": "1"}
    view = jobs.start(
        RUN, tiny(**LONG), root=runs, auth=jobs.Auth()
    )  # this process has no password set
    port = free_port()
    proc = start_server(port, env, tmp_path_factory.mktemp("log") / "streamlit.log")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        open_home_once(port)
        yield f"http://127.0.0.1:{port}", runs
    finally:
        stop_server(proc)
        if jobs.worker_alive(view.pid, view.path, view.pid_started):
            os.kill(view.pid, signal.SIGKILL)


def _button(p, label: str):
    return p.locator("[data-testid='stMain'] button", has_text=label).first


def _type_password(p, password: str) -> None:
    field = p.locator("input[type='password']").first
    field.fill(password)
    field.press("Enter")
    p.wait_for_timeout(500)
    wait_drawn(p)


def test_without_the_teacher_password_a_student_can_watch_but_not_change_a_run(
    locked_server,
    page,  # noqa: F811
):
    url, runs = locked_server
    page.goto(f"{url}/Training?model=test-char&t_run={RUN}")
    wait_drawn(page)
    page.wait_for_selector("[data-testid='stProgress']", timeout=TIMEOUT_MS)  # watching is free
    assert _button(page, "Pause").is_disabled() and _button(page, "Stop").is_disabled()
    assert "needed to change a run" in page.inner_text("[data-testid='stMain']")
    # A student who guesses gets the buttons, and a refusal when pressing one.
    _type_password(page, "guess")
    _button(page, "Pause").click()
    page.wait_for_function(
        "() => document.body.innerText.includes('Refused: wrong teacher password')",
        timeout=TIMEOUT_MS,
    )
    screenshot(page, "safety-teacher-lock")
    assert jobs.read(RUN, runs).state == "running"
    control = json.loads((runs / RUN / "control.json").read_text())
    assert control["paused"] is False and control["stop"] is False


def _open_setup(p, url: str, query: str) -> None:
    p.goto(f"{url}/Training?model=test-char&t_run={RUN}&{query}")
    wait_drawn(p)
    p.get_by_text("Set up a new run").click()
    p.wait_for_timeout(300)


def test_the_job_cap_holds_in_the_browser_even_for_the_teacher(locked_server, page):  # noqa: F811
    url, runs = locked_server
    _open_setup(page, url, "t_preset=tiny&t_data=task&t_task=count&t_batch=4")
    _type_password(page, PASSWORD)
    page.wait_for_function(
        "() => document.body.innerText.includes('(VIZ_MAX_JOBS=1)')", timeout=TIMEOUT_MS
    )
    assert f"running now: {RUN}" in page.inner_text("[data-testid='stMain']")
    assert _button(page, "Start training").is_disabled()
    screenshot(page, "safety-job-cap")
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == [RUN]


def test_the_upload_cap_holds_in_the_browser(locked_server, page):  # noqa: F811
    url, _ = locked_server
    _open_setup(page, url, "t_data=own&t_own=upload&t_preset=tiny")
    # A file over the upload cap (2 MB) is refused in the browser, before the server sees it.
    big = {"name": "big.txt", "mimeType": "text/plain", "buffer": b"to be or not to be\n" * 160_000}
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(files=[big])
    refused = page.locator("[data-testid='stFileChip'][aria-invalid='true']").first
    refused.wait_for(timeout=TIMEOUT_MS)
    screenshot(page, "safety-upload-cap")
    alert = page.locator("[data-testid='stFileUploader'] [role='alert']").first.inner_text()
    assert "File must be 2.0MB or smaller" in alert
    page.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    # the form still asks for text: nothing reached the server
    shown = page.inner_text("[data-testid='stMain']")
    assert "Give at least 2,000 characters" in shown and "at most 2 MB" in shown


def test_a_password_typed_and_left_with_tab_reaches_the_server(locked_server, page):  # noqa: F811
    """Issue 37: a lecturer typed the password and pressed Tab, which lands on the field's own
    "show password" button, and the password never arrived (only Enter worked). The field
    sends what is typed as it is typed."""
    url, _ = locked_server
    _open_setup(page, url, "t_preset=tiny&t_data=task&t_task=count&t_batch=4")
    needs = "Starting a run needs the teacher password"
    assert needs in page.inner_text("[data-testid='stMain']")
    field = page.locator("input[type='password']").first
    field.click()
    field.press_sequentially(PASSWORD)
    field.press("Tab")
    page.wait_for_function(
        f"() => !document.querySelector(\"[data-testid='stMain']\").innerText.includes('{needs}')",
        timeout=TIMEOUT_MS,
    )
    assert field.input_value() == PASSWORD
