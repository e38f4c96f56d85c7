"""The Dockerfile, built and run for real with buildah (daemonless: vfs storage, chroot isolation).

No container registry is reachable from CI, so the base is a stand-in for python:3.11-slim made
from Debian's packages (deploy/local_base.sh), and torch's CPU wheel comes from pip's own sources
on this machine through a folder served on 127.0.0.1 (the Dockerfile's PIP_OPTIONS; the lock's
sha256 of it must match). Everything
else is the Dockerfile as a user builds it: apt-get, the pins from PyPI, the app, the user, the
entrypoint. Then the image runs (sharing the host's network, on 127.0.0.1), answers
/_stcore/health and draws a page in Chromium.

It needs root, buildah, debootstrap, Debian's mirror and PyPI: it runs under CI=true (.ci/run
installs the tools) and skips elsewhere, saying which of these is missing.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.test_browser import chromium_path, free_port

ROOT = Path(__file__).resolve().parents[1]
BUILDAH = ["buildah", "--storage-driver", "vfs"]
pytestmark = pytest.mark.system


def _unavailable() -> str | None:
    """Why the image cannot be built here, or None."""
    if os.environ.get("CI") != "true":
        return "builds a container image from Debian's mirror and PyPI: run under CI=true"
    if os.geteuid() != 0:
        return "buildah's chroot isolation and debootstrap need root"
    missing = [tool for tool in ("buildah", "debootstrap") if shutil.which(tool) is None]
    if missing:
        return (
            f"not installed: {', '.join(missing)} (Debian: apt-get install -y {' '.join(missing)})"
        )
    return None


def _run(args: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{' '.join(args[:4])}... failed:\n{said}"
    return done


@pytest.fixture(scope="module")
def torch_wheels(tmp_path_factory):
    """A folder holding the torch wheel pip takes on this machine (the CPU build), served on
    127.0.0.1 for the build's `pip install --find-links`."""
    folder = tmp_path_factory.mktemp("wheels")
    pip = [sys.executable, "-m", "pip", "download", "torch==2.13.0", "--no-deps", "-d", str(folder)]
    _run(pip, timeout=600)
    (wheel,) = folder.glob("torch-2.13.0*.whl")
    assert "+cpu" in wheel.name, f"{wheel.name}: not the CPU build (it would pull CUDA packages)"
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def image(request):
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    torch_wheels = request.getfixturevalue("torch_wheels")  # only once the build can happen
    tag = uuid.uuid4().hex[:8]
    base, name = f"localhost/viz-gpt-base-{tag}", f"localhost/viz-gpt-{tag}"
    _run(["sh", str(ROOT / "deploy" / "local_base.sh"), base], timeout=1200)
    try:
        build = [
            *BUILDAH, "bud", "--isolation", "chroot", "--layers=false", "--pull-never",
            "--format", "docker",  # OCI images drop the Dockerfile's HEALTHCHECK
            "--build-arg", f"BASE_IMAGE={base}",
            "--build-arg", f"PIP_OPTIONS=--find-links {torch_wheels} --retries 0",
            "-t", name, str(ROOT),
        ]  # fmt: skip
        _run(build, timeout=2400)
        yield name
    finally:
        subprocess.run([*BUILDAH, "rmi", "-f", name, base], capture_output=True, timeout=300)


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 600) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, f"the container exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except OSError:
            time.sleep(2)
    raise AssertionError(f"{url} did not answer in {timeout:.0f} s")


def test_the_image_builds_runs_and_serves_a_page(image, tmp_path):
    container = _run([*BUILDAH, "from", "--pull-never", image], timeout=600).stdout.strip()
    port = free_port()
    log = (tmp_path / "container.log").open("w")
    proc = subprocess.Popen(
        [
            *BUILDAH,
            "run",
            "--isolation",
            "chroot",
            "--env",
            f"PORT={port}",
            "--env",
            "VIZ_ADDRESS=127.0.0.1",
            container,
            "--",
            "/app/deploy/entrypoint.sh",
        ],  # fmt: skip
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert _wait_healthy(f"{base}/_stcore/health", proc) == "ok"
        whoami = [*BUILDAH, "run", "--isolation", "chroot", container, "--", "id", "-u"]
        user = _run(whoami, timeout=120).stdout.strip()
        assert user == "10001"  # the image's own user, not root
        exe = chromium_path()
        assert exe is not None, "CI must have Chromium (.ci/run installs it)"
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/Attention?model=shakespeare-char", timeout=300_000)
            page.wait_for_selector("[data-testid='stPlotlyChart']", timeout=300_000)
            assert "Attention" in page.locator("h1").first.inner_text()
            assert (
                "About “shakespeare-char”" in page.locator("[data-testid='stSidebar']").inner_text()
            )
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        subprocess.run([*BUILDAH, "rm", container], capture_output=True, timeout=300)
