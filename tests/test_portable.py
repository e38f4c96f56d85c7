"""Every module a page imports, and a training job, work without Unix-only modules.

Windows has no `fcntl`, `termios`, `resource`, `pwd` or `grp`. A fresh interpreter (and the job
worker it starts) gets a `sitecustomize` that makes them unimportable, imports what `app.py` and
every page import plus every module of `ui/` and `serving/`, then starts, stops and reads a job.
psutil is imported before the block: its Linux backend is Linux's own (it needs `resource`); on
Windows psutil loads its Windows backend instead.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNIX_ONLY = ("fcntl", "termios", "resource", "pwd", "grp")

BLOCKER = f"""
import sys

import psutil  # noqa: F401  its platform's backend, loaded as on that platform

for name in {UNIX_ONLY!r}:
    sys.modules[name] = None  # `import fcntl` now raises ImportError, as on Windows
"""


def page_imports() -> list[str]:
    """The modules app.py and every script in pages/ import by name (absolute imports)."""
    found: set[str] = set()
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return sorted(found)


def test_the_pages_import_list_names_the_packages_pages_use():
    names = page_imports()
    # the pages' sections live in ui/ (imported in full by the check below, with serving/)
    assert {"ui", "ui.training.page", "ui.classroom", "streamlit"} <= set(names)


def test_pages_and_a_job_work_with_unix_only_modules_unavailable(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    code = f"""
        import importlib, pkgutil, sys, time

        assert sys.modules["fcntl"] is None  # the block is in place
        for name in {page_imports()!r}:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name != name:  # a module it imports is missing: the failure to report
                    raise
                importlib.import_module(name.rpartition(".")[0])  # `from ui import cache`
        for package in ("ui", "serving"):
            for info in pkgutil.walk_packages([package], prefix=package + "."):
                importlib.import_module(info.name)

        from serving import jobs
        from viz_model.training.settings import RunSettings

        settings = RunSettings(
            task="repeat", task_examples=300, preset="tiny",
            model={{"n_ctx": 32, "d_model": 32}},
            train={{"max_steps": 1_000_000, "eval_every": 10, "eval_batches": 2,
                    "sample_every": 0, "sample_tokens": 0}},
        )

        def wait(test):
            deadline = time.monotonic() + 120
            while not test(view := jobs.read("portable")):
                assert view.state not in ("failed", "interrupted"), view
                assert time.monotonic() < deadline, view
                time.sleep(0.05)
            return view

        jobs.start("portable", settings, auth=jobs.Auth())
        running = wait(lambda v: v.state == "running" and v.step >= 3)
        assert jobs.worker_alive(running.pid, running.path, running.pid_started)
        jobs.stop("portable", auth=jobs.Auth())
        stopped = wait(lambda v: v.state == "stopped")
        jobs.delete("portable", auth=jobs.Auth())
        blocked = [n for n in {UNIX_ONLY!r} if sys.modules.get(n) is not None]
        print("stopped at", stopped.step, "blocked modules loaded:", blocked)
        """
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "VIZ_RUNS_DIR": str(tmp_path / "runs"),
        "VIZ_JOB_THREADS": "1",
        "VIZ_MAX_JOBS": "2",
    }
    env.pop("VIZ_TEACHER_PASSWORD", None)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "blocked modules loaded: []" in result.stdout, result.stdout
    assert not (tmp_path / "runs" / "portable").exists()
