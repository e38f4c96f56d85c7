"""`viz-gpt`: start the app with `streamlit run` on the app.py beside this package.

The console command of an installed copy (`pip install .`) and of a checkout alike
(`python -m serving.launch`). Streamlit runs in the app's folder, so it reads the app's own
`.streamlit/config.toml`; runs are kept in `./runs` of the folder the command was started in
(unless VIZ_RUNS_DIR says otherwise), never inside the installed package. `--help` and
`--version` answer for the app, `--port N` is Streamlit's `--server.port N`, and every other
argument goes to `streamlit run` (`viz-gpt --server.address 0.0.0.0`). Not here: serving a class
on several processes (serving/class_server.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from serving.jobs import REPO, RUNS_ENV

DIST = "viz-gpt"
USAGE = """\
usage: viz-gpt [--port N] [streamlit options]
       viz-gpt --help | --version

Inside GPT: a small GPT you can see inside, as a Streamlit teaching app (attention, the residual
stream, logits, training). Starts the app with `streamlit run`; open the address it prints,
http://localhost:8501 unless --port says otherwise.

  --port N              serve on port N (Streamlit's --server.port N)
  streamlit options     passed on to `streamlit run`, e.g. --server.address 0.0.0.0
  -h, --help            this text
  --version             the version

Runs (models trained in the app, class state, exercise sheets) go to ./runs of the folder the
command is started in, or to VIZ_RUNS_DIR; nothing is written inside the installed package.

To serve a class: viz-gpt --server.address 0.0.0.0 --port 8501 and give the students
http://<this machine's address>:8501; a teacher password in VIZ_TEACHER_PASSWORD unlocks the
class tools. To use every core, run several processes behind HAProxy with the class server
(`python -m serving.class_server start` in a checkout; docs/OPERATING.md).

Environment:
  VIZ_RUNS_DIR   the runs folder (default: ./runs of the folder viz-gpt is started in)
  VIZ_CLASS_DB   the class database (default: SQLite in the runs folder);
                 postgresql+psycopg://user@host/db needs pip install 'viz-gpt[postgres]'

To train a model from the command line: viz-train --help.
"""


def version() -> str:
    """The installed distribution's version; in a checkout, the one pyproject.toml gives."""
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:
        with open(REPO / "pyproject.toml", "rb") as f:
            return tomllib.load(f)["project"]["version"]


def streamlit_args(args: list[str]) -> list[str]:
    """The arguments for `streamlit run`: `--port N` (or `--port=N`) as `--server.port N`."""
    out = []
    for arg in args:
        if out[-1:] == ["--port"]:
            out[-1] = "--server.port"
        out.append(
            arg.replace("--port=", "--server.port=", 1) if arg.startswith("--port=") else arg
        )
    return out


def command(args: list[str]) -> list[str]:
    """The `streamlit run` command line for the app, with `args` after it."""
    return [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), *streamlit_args(args)]


def main(argv: list[str] | None = None) -> int:
    """Run the app until it stops (Ctrl-C reaches Streamlit too); its exit code. `--help` and
    `--version` print and return at once."""
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(USAGE, end="")
        return 0
    if "--version" in argv:
        print(f"{DIST} {version()}")
        return 0
    env = dict(os.environ)
    if not env.get(RUNS_ENV, "").strip():
        env[RUNS_ENV] = str(Path.cwd() / "runs")
    proc = subprocess.Popen(command(argv), cwd=REPO, env=env)
    # a service manager's SIGTERM stops Streamlit too (it then stops its jobs with a save)
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    try:
        return proc.wait()
    except KeyboardInterrupt:  # Streamlit got the same Ctrl-C: let it stop its jobs and exit
        return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
