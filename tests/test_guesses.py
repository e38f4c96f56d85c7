"""Wrong teacher passwords counted per browser across processes (serving/guesses.py), and the
password check (jobs.Auth) refusing a browser that guessed too often, the right password too."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from serving import guesses, jobs
from serving.jobs import JobError

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.RUNS_ENV, str(tmp_path))
    return tmp_path


def _guess(password: str, client: str) -> str:
    try:
        jobs.Auth("sesame", password, client=client).check()
    except JobError as error:
        return str(error)
    return "ok"


def test_a_browser_that_guessed_too_often_waits_the_right_password_too(runs):
    said = [_guess(f"guess{i}", "10.0.0.7") for i in range(guesses.FAILURES_MAX)]
    assert said == ["wrong teacher password"] * guesses.FAILURES_MAX
    assert "too many wrong teacher passwords" in _guess("guess-again", "10.0.0.7")
    assert "too many wrong teacher passwords" in _guess("sesame", "10.0.0.7")  # the right one
    assert _guess("sesame", "10.0.0.8") == "ok"  # another browser is not limited
    later = guesses.wait_s("10.0.0.7", now=time.time() + guesses.WINDOW_S + 1)
    assert later == 0.0  # a minute on, it may try again


def test_fewer_wrong_guesses_than_the_limit_leave_the_right_password_working(runs):
    for i in range(guesses.FAILURES_MAX - 1):
        assert _guess(f"typo{i}", "10.0.0.9") == "wrong teacher password"
    assert _guess("sesame", "10.0.0.9") == "ok"


def test_a_caller_that_is_not_a_browser_is_not_limited(runs):
    """The command line and scripts name no client: their checks count nothing."""
    for i in range(guesses.FAILURES_MAX + 2):
        assert _guess(f"guess{i}", "") == "wrong teacher password"
    assert _guess("sesame", "") == "ok"
    assert not (runs / guesses.FILE).exists()


def test_every_server_process_sees_the_others_counts(runs):
    script = (
        "from serving import guesses\n"
        f"for _ in range({guesses.FAILURES_MAX}): guesses.failed('10.0.0.5')\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, timeout=60)
    assert 0 < guesses.wait_s("10.0.0.5") <= guesses.WINDOW_S


def test_a_broken_counts_file_counts_nothing_and_is_written_anew(runs):
    (runs / guesses.FILE).write_text("not json")
    assert guesses.wait_s("10.0.0.6") == 0.0
    guesses.failed("10.0.0.6")
    assert guesses.wait_s("10.0.0.6") == 0.0  # one wrong password is below the limit
    for _ in range(guesses.FAILURES_MAX - 1):
        guesses.failed("10.0.0.6")
    assert guesses.wait_s("10.0.0.6") > 0


@pytest.mark.parametrize(
    "peer, forwarded, trusted, key",
    [
        (
            None,
            "6.6.6.6, 10.0.0.7",
            "",
            "10.0.0.7",
        ),  # the class server's HAProxy (loopback) wrote it
        (
            "10.0.0.9",
            "6.6.6.6",
            "",
            "10.0.0.9",
        ),  # a browser talking directly: its header is ignored
        ("172.18.0.5", "10.0.0.7", "172.18.0.5", "10.0.0.7"),  # a proxy named as trusted
        ("172.18.0.5", "10.0.0.7", "172.18.0.6", "172.18.0.5"),  # ... and one that is not
        (None, "", "", "local"),  # this machine's own browser
    ],
)
def test_a_browser_is_named_by_its_address_or_by_a_trusted_proxys_word_for_it(
    peer, forwarded, trusted, key
):
    """Issue 39: X-Forwarded-For was trusted from any client (a new value per connection
    escaped the limits), and behind the proxy every browser had one key."""
    from ui.teacher import browser_key

    assert browser_key(peer, forwarded, trusted) == key
