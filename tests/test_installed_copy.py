"""An installed copy, for real (issue 43): the wheel built from this checkout and installed into a
fresh virtual environment, then used from a folder outside the repository as a new user would.

The environment is made with `--system-site-packages`, so torch and the rest come from this
machine's Python rather than a download, and without pip of its own (this Python's pip installs
into it; a venv's own old setuptools would hide the newer one torch asks for). The checkout is
never on its import path: the commands run outside it, with no PYTHONPATH, and the first test
checks that `viz_model` is the installed one. The tests run in order and share the environment;
the last one checks that nothing they did wrote inside the installed packages (a model exported
for transformers and a page's notebook executed among them). Not here: the pins
and ranges of pyproject.toml (tests/test_install.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from serving import class_server

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("viz_gpt", "viz_model")  # what the wheel installs (pyproject.toml)
LEFT_OUT = ("PYTHONPATH", "VIZ_RUNS_DIR", "VIZ_MODEL_DIRS", "VIZ_LESSONS_DIR", "VIZ_CLASS_DB")


class Installed:
    """The fresh environment: its python, its bin folder, a working folder outside the checkout,
    and the files of the installed packages right after the install."""

    def __init__(self, venv: Path, work: Path):
        self.bin = venv / "bin"
        self.python = self.bin / "python"
        self.work = work
        self.site = Path(self.run("import sysconfig; print(sysconfig.get_path('purelib'))"))
        self.files_at_install = self.files()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in LEFT_OUT}
        return {**env, "PYTHONNOUSERSITE": "1", "VIZ_JOB_THREADS": "1"}

    def command(self, *args: str, timeout: float = 300) -> str:
        """A command of the environment run in the working folder: its output (it must succeed)."""
        done = subprocess.run(
            [str(a) for a in args], cwd=self.work, env=self.env(), text=True,
            capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
        return done.stdout

    def run(self, code: str, timeout: float = 300) -> str:
        return self.command(self.python, "-c", code, timeout=timeout).strip()

    def files(self) -> dict[str, tuple[int, int]]:
        """Every file of the installed packages: its size and modification time."""
        return {
            str(path.relative_to(self.site)): (path.stat().st_size, path.stat().st_mtime_ns)
            for name in PACKAGES
            for path in (self.site / name).rglob("*")
            if path.is_file()
        }


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("installed")
    wheels, venv, work = tmp / "wheels", tmp / "venv", tmp / "work"
    work.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = wheels.glob("viz_gpt-*.whl")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True, timeout=120,
    )  # fmt: skip
    # this Python's pip, run by the new environment's python, installs into that environment;
    # --no-index: every dependency must already be met by the ranges, nothing is downloaded
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "-q", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return Installed(venv, work)


def test_the_library_works_in_a_notebook_of_the_installed_copy(installed):
    code = (
        "import json, viz_model\n"
        "from viz_model import GPT, load_bundle\n"
        "bundle = load_bundle('shakespeare-char')\n"
        "tokens = bundle.to_tokens('To be, or not')\n"
        "logits, cache = bundle.model.run_with_cache(tokens)\n"
        "print(json.dumps([viz_model.__file__, isinstance(bundle.model, GPT), tokens.shape[1],\n"
        "    bundle.model.cfg.n_head, list(cache['blocks.0.attn.hook_pattern'].shape),\n"
        "    bundle.generate('ROMEO:', 8)]))"
    )
    where, is_gpt, n_tokens, n_heads, shape, text = json.loads(installed.run(code))
    assert Path(where).is_relative_to(installed.site)  # the installed copy, not the checkout
    assert is_gpt and shape == [1, n_heads, n_tokens, n_tokens]  # (1, H, T, T)
    assert text.startswith("ROMEO:") and len(text) > len("ROMEO:")


@pytest.mark.parametrize("name", ["ui", "serving", "scripts"])
def test_the_apps_own_packages_are_not_on_everyones_import_path(installed, name):
    code = f"import importlib.util; print(importlib.util.find_spec({name!r}))"
    assert installed.run(code) == "None"
    code = f"import viz_gpt, importlib.util; print(importlib.util.find_spec({name!r}).origin)"
    found = installed.run(code)
    assert Path(found).is_relative_to(installed.site / "viz_gpt")  # inside the app's processes


def test_the_console_commands_answer_for_the_app_and_the_trainer(installed):
    assert installed.command(installed.bin / "viz-gpt", "--version") == "viz-gpt 0.1.0\n"
    assert installed.command(installed.bin / "viz-gpt", "--help").startswith("usage: viz-gpt ")
    trainer = installed.command(installed.bin / "viz-train", "--help")
    assert trainer.startswith("usage: viz-train ") and "--preset" in trainer


def test_viz_gpt_serves_the_app_on_the_port_it_is_given(installed):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [installed.bin / "viz-gpt", "--port", str(port), "--server.address", "127.0.0.1"],
        cwd=installed.work, env=installed.env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + class_server.STARTUP_S
        while not class_server.healthy(f"http://127.0.0.1:{port}"):
            assert proc.poll() is None and time.monotonic() < deadline, "never answered"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_viz_train_trains_and_writes_a_bundle(installed):
    out = installed.work / "trained"
    installed.command(
        installed.bin / "viz-train", "--corpus", "shakespeare", "--preset", "quick",
        "--steps", "3", "--quiet", "--out", out,
    )  # fmt: skip
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()


def test_a_lesson_sheet_is_written_to_the_runs_folder_of_the_current_folder(installed):
    sheets_module = "viz_gpt.scripts.lesson_sheets"  # python -m scripts.lesson_sheets in a checkout
    printed = installed.command(installed.python, "-m", sheets_module, "2_attention")
    sheets = installed.work / "runs" / "sheets" / "2_attention"
    assert {Path(line) for line in printed.split()} == {
        sheets / name for name in ("student.md", "teacher.md", "student.html", "teacher.html")
    }


def test_a_training_job_of_the_app_runs_and_keeps_its_run_in_the_runs_folder(installed):
    """The app's job runner starts `python -m serving.job_worker` from the app's folder."""
    code = (
        "import time, viz_gpt\n"
        "from serving import jobs\n"
        "from viz_model.training.settings import RunSettings\n"
        "settings = RunSettings(task='repeat', task_examples=300, preset='tiny',\n"
        "    model={'n_ctx': 32, 'd_model': 32}, train=dict(max_steps=5, eval_every=5,\n"
        "    eval_batches=1, sample_every=5, sample_tokens=4))\n"
        "jobs.start('job', settings, auth=jobs.Auth())\n"
        "deadline = time.monotonic() + 240\n"
        "while (view := jobs.read('job')).live and time.monotonic() < deadline:\n"
        "    time.sleep(0.5)\n"
        "print(view.state, view.path)"
    )
    state, path = installed.run(code).split()
    assert state == "finished" and Path(path) == installed.work / "runs" / "job"
    assert (Path(path) / "model.safetensors").is_file()


def test_an_export_opens_in_transformers_and_a_pages_notebook_runs_in_the_installed_copy(
    installed,
):
    """The two ways a model leaves the app, from the installed copy: a GPT-2 folder transformers
    opens with the same logits, and the Next token page's notebook, executed in a Jupyter kernel
    of this environment (so it imports the installed viz_model), printing the model's numbers."""
    code = (
        "import json, nbformat, torch, viz_gpt\n"
        "from nbclient import NotebookClient\n"
        "from transformers import AutoModelForCausalLM\n"
        "from serving.notebooks import View, build, to_json\n"
        "from viz_model import export_gpt2, load_bundle\n"
        "bundle = load_bundle('shakespeare-char')\n"
        "ids = bundle.to_tokens('ROMEO: But soft')\n"
        "theirs = AutoModelForCausalLM.from_pretrained(export_gpt2(bundle, 'hf')).eval()\n"
        "with torch.no_grad():\n"
        "    ours = bundle.model(ids)\n"
        "    diff = (theirs(ids).logits - ours).abs().max().item()\n"
        "top = torch.softmax(ours[0, -1], -1).max().item()\n"
        "view = View('Next_token', 'Next token', 'shakespeare-char', True, 'ROMEO: But soft', 128)\n"
        "nb = nbformat.reads(to_json(build(view)), as_version=4)\n"
        "NotebookClient(nb, timeout=300, kernel_name='python3').execute()\n"
        "printed = ''.join(o.get('text', '') for c in nb.cells if c.cell_type == 'code'\n"
        "    for o in c.outputs if o.output_type == 'stream')\n"
        "print(json.dumps([diff, ours.std().item(), top, printed]))"
    )
    diff, spread, top, printed = json.loads(installed.run(code, timeout=600))
    assert spread > 0.1 and diff < 1e-4  # logits that vary, matched by transformers
    assert (installed.work / "hf" / "config.json").is_file()  # written where the user works
    assert f"  1  p = {top:.6f}" in printed  # the notebook's most likely token: the model's


def test_nothing_was_written_inside_the_installed_packages(installed):
    """Last: after the library, the commands, training, a sheet and a job, the packages hold the
    files the install put there, unchanged."""
    assert installed.files() == installed.files_at_install
