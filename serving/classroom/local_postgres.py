"""A throwaway PostgreSQL server from Debian's package, for the tests and the benchmarks.

    with LocalPostgres() as pg:
        url = pg.new_database("bench")   # postgresql+psycopg://viz@127.0.0.1:PORT/bench

initdb into a temporary folder, pg_ctl on 127.0.0.1 and a free port (its socket in that folder),
trust authentication, fsync off; as the `postgres` user when run as root (initdb refuses root).
Never used by the app: a class past one machine points VIZ_CLASS_DB at a real server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def pg_bin() -> Path:
    """VIZ_PG_BIN, else Debian's newest /usr/lib/postgresql/<version>/bin, else initdb's folder."""
    if os.environ.get("VIZ_PG_BIN"):
        return Path(os.environ["VIZ_PG_BIN"])
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalPostgres:
    """A throwaway PostgreSQL server: data and socket in a temporary folder, 127.0.0.1 only."""

    def __init__(self, max_connections: int = 300):
        self.bin = pg_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="viz-pg-"))
        self.port = free_port()
        self.max_connections = max_connections
        self.as_user: list[str] = []
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            import pwd  # Unix only, and only here: never imported by a page

            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data = self.folder / "data"

    @property
    def installed(self) -> bool:
        return (self.bin / "initdb").is_file()

    def run(self, *argv: str) -> None:
        done = subprocess.run([*self.as_user, *argv], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{argv[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> LocalPostgres:
        self.run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "viz",
            "--auth=trust",
            "-E",
            "UTF8",
        )
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off "
            f"-c max_connections={self.max_connections}"
        )
        self.run(str(self.bin / "pg_ctl"), "start", "-w", "-D", str(self.data), "-o", options,
                 "-l", str(self.folder / "server.log"))  # fmt: skip
        return self

    def stop(self) -> None:
        try:
            self.run(str(self.bin / "pg_ctl"), "stop", "-D", str(self.data), "-m", "fast", "-w")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def new_database(self, name: str) -> str:
        """A new empty database on this server; its SQLAlchemy URL."""
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=viz dbname=postgres",
                             autocommit=True) as conn:  # fmt: skip
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://viz@127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
