"""`viz-gpt`: start the app with `streamlit run` on the app.py beside this package.

The console command of an installed copy (`pip install .`) and of a checkout alike
(`python -m serving.launch`). Streamlit runs in the app's folder, so it reads the app's own
`.streamlit/config.toml`; runs are kept in `./runs` of the folder the command was started in
(unless VIZ_RUNS_DIR says otherwise), never inside the installed package. Every argument goes to
`streamlit run` (`viz-gpt --server.port 8600`). Not here: serving a class on several processes
(`python -m serving.class_server`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from serving.jobs import REPO, RUNS_ENV


def command(args: list[str]) -> list[str]:
    """The `streamlit run` command line for the app, with `args` after it."""
    return [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), *args]


def main(argv: list[str] | None = None) -> int:
    """Run the app until it stops (Ctrl-C reaches Streamlit too); its exit code."""
    env = dict(os.environ)
    if not env.get(RUNS_ENV, "").strip():
        env[RUNS_ENV] = str(Path.cwd() / "runs")
    proc = subprocess.Popen(command(sys.argv[1:] if argv is None else argv), cwd=REPO, env=env)
    # a service manager's SIGTERM stops Streamlit too (it then stops its jobs with a save)
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    try:
        return proc.wait()
    except KeyboardInterrupt:  # Streamlit got the same Ctrl-C: let it stop its jobs and exit
        return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
