"""`viz-gpt` (serving/launch.py): streamlit run on the app beside the package, runs in ./runs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from serving import class_server, launch

ROOT = Path(__file__).resolve().parents[1]


def test_the_command_runs_streamlit_on_the_app_py_beside_the_package():
    cmd = launch.command(["--server.port", "8600"])
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == ROOT / "app.py"
    assert cmd[-2:] == ["--server.port", "8600"]


def test_the_launcher_serves_keeps_runs_where_started_and_stops_streamlit_on_sigterm(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k != "VIZ_RUNS_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "serving.launch", "--server.port", port,
         "--server.address", "127.0.0.1"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + class_server.STARTUP_S
        while not class_server.healthy(url):
            assert proc.poll() is None and time.monotonic() < deadline, "never answered"
            time.sleep(0.5)
        (child,) = psutil.Process(proc.pid).children()
        assert child.environ()["VIZ_RUNS_DIR"] == str(tmp_path / "runs")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    child.wait(timeout=60)  # Streamlit itself stopped, not orphaned
    assert not class_server.healthy(url)
