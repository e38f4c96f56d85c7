"""Two Streamlit processes behind HAProxy (serving/class_server.py), on 127.0.0.1: a page works
through the proxy, new browsers take turns between the processes, a browser's websocket stays on
the process its cookie names, a run started on disk is listed by both, a student whose process is
killed mid-session reconnects to the other and runs a page there, the killed one comes back
warmed (no "Page not found" notice for its first browser), and `stop` ends them all.

Which process answered is HAProxy's own X-Backend header (serving/haproxy.cfg.template). Outside
CI the module skips when haproxy is not installed; with CI=true it fails instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import websockets

from benchmarks.class_arrival import open_page, stream_url
from serving import class_server, jobs
from serving.student import Student
from tests.test_browser import free_port
from tests.test_jobs import tiny

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ("s1", "s2")
WARM_S = 600  # a restarted app's warming (serving/warm.py's plan), on a busy machine


def _no_haproxy(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but the class-serving tests cannot run: {reason}")
    pytest.skip(reason)


def _start(folder: Path, port: int, backend: int, env: dict[str, str]) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "serving.class_server", "start", "--processes", "2",
        "--port", str(port), "--backend-port", str(backend), "--address", "127.0.0.1",
        "--state-dir", str(folder),
    ]  # fmt: skip
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def free_pair() -> int:
    """A port p with p + 1 free too, for the 2 app processes: free_port() alone says nothing of
    p + 1, which another test (or xdist worker) may hold."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two free ports in a row on 127.0.0.1")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """{url, folder, runs, launcher}: the class server with 2 processes, a runs folder of its own."""
    if class_server.haproxy_path() is None:
        _no_haproxy("haproxy is not installed (apt-get install haproxy)")
    tmp = tmp_path_factory.mktemp("class")
    runs, port = tmp / "runs", free_port()
    env = {**os.environ, jobs.RUNS_ENV: str(runs), "VIZ_JOB_THREADS": "1"}
    backend = free_pair()
    launcher = _start(tmp / "state", port, backend, env)
    url = f"http://127.0.0.1:{port}"
    try:
        said = [launcher.stdout.readline()]  # "starting ...", "warm...", "serving the class at"
        while said[-1] and "serving the class at" not in said[-1]:
            said.append(launcher.stdout.readline())
        assert url in said[-1], f"the class server did not start: {said} {launcher.stdout.read()}"
        yield {"url": url, "folder": tmp / "state", "runs": runs, "launcher": launcher,
               "said": said, "backends": [backend, backend + 1]}  # fmt: skip
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGTERM)  # what `stop` does
            launcher.wait(timeout=60)
        for view in jobs.list_runs(runs):
            if view.live and jobs.worker_alive(view.pid, view.path, view.pid_started):
                os.kill(view.pid, signal.SIGKILL)


def _get(url: str, cookie: str | None = None):
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.read().decode(), r.headers


async def _backends(url: str, count: int, cookie: str | None = None) -> list[str]:
    """The process each of `count` websocket connections (one after another) landed on."""
    found = []
    for _ in range(count):
        headers = {"Cookie": cookie} if cookie else None
        async with websockets.connect(stream_url(url), additional_headers=headers) as ws:
            found.append(ws.response.headers["X-Backend"])
    return found


def _cache_bytes(port: int, function: str) -> float:
    """What one app process's shared cache holds for `function` (Streamlit's /_stcore/metrics)."""
    text, _ = _get(f"http://127.0.0.1:{port}/_stcore/metrics")
    for line in text.splitlines():
        if line.startswith("cache_memory_bytes{") and f'cache="{function}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_every_process_is_warmed_before_the_address_is_given(served):
    # First in the module: no other test has opened a page yet. Each process has run the
    # Attention page (its attention run is cached) though no student has come.
    assert any("every page, every lesson stop" in line for line in served["said"])
    assert any("warmed 2 processes (0 with a failed page)" in line for line in served["said"])
    for port in served["backends"]:
        assert _cache_bytes(port, "run_attention") > 0


def test_a_page_and_the_health_check_work_through_the_proxy(served):
    html, headers = _get(served["url"] + "/")
    assert '<div id="root">' in html and "streamlit" in html.lower()
    cookie = headers["Set-Cookie"].split(";")[0]  # the stickiness cookie HAProxy inserted
    assert cookie in {f"SERVERID={s}" for s in SERVERS} and headers["X-Backend"] in SERVERS
    assert _get(served["url"] + "/_stcore/health", cookie)[0].strip() == "ok"


def test_new_browsers_take_turns_between_the_processes(served):
    assert sorted(asyncio.run(_backends(served["url"], 4))) == ["s1", "s1", "s2", "s2"]


@pytest.mark.parametrize("server", SERVERS)
def test_a_browsers_websockets_stay_on_the_process_of_its_cookie(served, server):
    _, headers = _get(served["url"] + "/_stcore/health", f"SERVERID={server}")
    assert headers["X-Backend"] == server
    assert not [c for c in headers.get_all("Set-Cookie", []) if "SERVERID" in c]  # kept as it is
    assert asyncio.run(_backends(served["url"], 4, f"SERVERID={server}")) == [server] * 4


def test_a_run_started_on_disk_is_listed_by_both_processes(served, monkeypatch):
    monkeypatch.setenv("VIZ_JOB_THREADS", "1")
    jobs.start("proxy-run", tiny(), root=served["runs"], auth=jobs.Auth())
    for server in SERVERS:
        elements: list[str] = []
        view = asyncio.run(
            open_page(
                served["url"],
                "Training",
                "t_run=proxy-run",
                180,
                {"Cookie": f"SERVERID={server}"},
                elements,
            )  # fmt: skip
        )
        assert view["finished"] and not view["exceptions"] and view["backend"] == server
        assert any("proxy-run · " in e for e in elements), f"{server} does not list the run"


async def _session_cut_by_a_kill(url: str, cookie: str, pid: int) -> tuple[str, bool]:
    """(the process a student's open session ran Home on, whether the kill of `pid` closed it)."""
    async with Student(url, {"Cookie": cookie}) as student:
        seen = await student.view("")
        assert seen.finished and not seen.exceptions, seen.exceptions
        os.kill(pid, signal.SIGKILL)
        try:
            while True:  # what the student's process still had to send, then the cut
                await asyncio.wait_for(student.ws.recv(), 60)
        except websockets.ConnectionClosed:
            return student.backend, True
        except TimeoutError:
            return student.backend, False


def test_a_killed_process_s_students_reconnect_to_the_other_and_it_comes_back(served):
    pids = json.loads((served["folder"] / "pids.json").read_text())["apps"]
    port, pid = min(pids.items())  # s1's
    cookie = "SERVERID=s1"
    backend, cut = asyncio.run(_session_cut_by_a_kill(served["url"], cookie, pid))
    assert backend == "s1" and cut, "the open session was not on s1, or outlived its process"
    # The browser reconnects at once with the same cookie: HAProxy retries s1 (its port refuses,
    # or the launcher has taken it out of turn), then redispatches to s2, where the student's
    # next page runs: not on the killed process, and the student carries on.
    query = "prompt=ROMEO%3A%20But%20soft&layer=1"
    view = asyncio.run(open_page(served["url"], "Attention", query, 120, {"Cookie": cookie}))
    assert view["finished"] and not view["exceptions"] and view["backend"] == "s2"
    deadline = time.monotonic() + 120  # the launcher starts a new app on the same port
    while not class_server.healthy(f"http://127.0.0.1:{port}"):
        assert time.monotonic() < deadline, "the killed app process was not restarted"
        time.sleep(0.5)
    assert json.loads((served["folder"] / "pids.json").read_text())["apps"][port] != pid
    # Warmed as at the start before HAProxy gives it a browser again: the first deep link it
    # serves opens its page, without a fresh process's "Page not found" notice.
    deadline = time.monotonic() + WARM_S
    while asyncio.run(_backends(served["url"], 1, cookie)) != ["s1"]:
        assert time.monotonic() < deadline, "the restarted app did not come back in turn"
        time.sleep(2)
    view = asyncio.run(open_page(served["url"], "Attention", query, 120, {"Cookie": cookie}))
    assert view["backend"] == "s1" and view["finished"] and not view["exceptions"], view


def test_stop_says_so_when_no_class_server_runs(tmp_path, capsys):
    with pytest.raises(SystemExit, match="no class server runs on port 8799"):
        class_server.main(["stop", "--port", "8799", "--state-dir", str(tmp_path)])


def test_start_refuses_a_port_in_use_and_starts_nothing(tmp_path):
    if class_server.haproxy_path() is None:
        _no_haproxy("haproxy is not installed (apt-get install haproxy)")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit, match=rf"port\(s\) \[{port}\] already in use"):
            class_server.main(["start", "--port", str(port), "--address", "127.0.0.1",
                               "--processes", "1", "--state-dir", str(tmp_path)])  # fmt: skip
    assert not (tmp_path / "pids.json").exists() and not list(tmp_path.glob("*.log"))


def test_the_config_for_three_processes_passes_haproxy_s_own_check(tmp_path):
    haproxy = class_server.haproxy_path()
    if haproxy is None:
        _no_haproxy("haproxy is not installed (apt-get install haproxy)")
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(class_server.render_config(3, 8790, "0.0.0.0", 8791, tmp_path / "h.pid"))
    check = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "cookie s3 check" in cfg.read_text() and "127.0.0.1:8793" in cfg.read_text()


def test_stop_ends_the_proxy_and_every_process(served):
    pids = json.loads((served["folder"] / "pids.json").read_text())
    folder, port = served["folder"], served["url"].rsplit(":", 1)[1]
    stop = subprocess.run(
        [sys.executable, "-m", "serving.class_server", "stop", "--port", port,
         "--state-dir", str(folder)], cwd=ROOT, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert stop.returncode == 0, stop.stderr
    assert served["launcher"].wait(timeout=10) == 0
    children = [pids["haproxy"], *pids["apps"].values()]
    time.sleep(0.5)  # the launcher reaped them before exiting; their pids are free now
    assert not [p for p in children if Path(f"/proc/{p}").exists()]
    with pytest.raises(OSError):
        _get(served["url"] + "/_stcore/health")
