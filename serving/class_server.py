"""Serve a class: N Streamlit processes behind HAProxy with sticky sessions, on one public port.

    python -m serving.class_server start [--processes N] [--port 8501] [--address 0.0.0.0]
    python -m serving.class_server stop [--port 8501]

`start` runs N `streamlit run app.py` on 127.0.0.1 (ports port+1 .. port+N; N defaults to the
cores), waits until each answers /_stcore/health, opens on each the views a class opens first
(serving/warm.py: every page on the default model, every lesson stop, Home on every other model but
the runs trained here; --warm-every-model: every page on each; --no-warm: nothing), then HAProxy
(Debian's `haproxy`, run as this user, no root) on address:port with the config filled in from
serving/haproxy.cfg.template. It
prints the address and stays in the foreground, restarting an app process that dies (out of
HAProxy's turn, through its runtime API, until it is warmed again); Ctrl-C, or
`stop` from another shell (through the pid file in the state folder), stops them all. Each app
process is stopped as a Ctrl-C on `streamlit run` would be (SIGINT to its process group), so the
training jobs it started save and stop too. Runs are shared on disk (VIZ_RUNS_DIR passes through),
so every process sees every run; each process loads its own models and uses one torch thread.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).with_name("haproxy.cfg.template")
HEALTH = "/_stcore/health"
MAX_RESTARTS = 5  # of one app process, before the launcher leaves it down
SOCKET = "haproxy.sock"  # HAProxy's runtime API, in the state folder
STARTUP_S = 180  # a cold start imports torch and Streamlit: slow on a busy 2-core machine


class ServeError(Exception):
    """A reason the class server cannot start or stop, worded for the person running it."""


def haproxy_path() -> str | None:
    """The haproxy binary: on PATH, or in /usr/sbin (not on a plain user's PATH on Debian)."""
    found = shutil.which("haproxy")
    return found or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").is_file() else None)


def state_dir(port: int) -> Path:
    """Config, pid file and logs of the class server on `port`."""
    return Path(tempfile.gettempdir()) / f"inside-gpt-class-{port}"


def render_config(processes: int, port: int, address: str, backend_port: int, pidfile: Path) -> str:
    """The HAProxy config for `processes` backends on 127.0.0.1:backend_port+i, cookies s1..sN."""
    servers = "\n".join(
        f"    server s{i + 1} 127.0.0.1:{backend_port + i} cookie s{i + 1} check inter 3s fall 3 rise 1"
        for i in range(processes)
    )
    return string.Template(TEMPLATE.read_text()).substitute(
        processes=processes,
        port=port,
        address=address,
        pidfile=pidfile,
        socket=pidfile.with_name(SOCKET),
        servers=servers,
    )


def tell_proxy(folder: Path, command: str) -> str:
    """One command to HAProxy's runtime API (its socket in the state folder); its answer, '' when
    HAProxy cannot be reached (the caller carries on without it)."""
    answer = b""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(folder / SOCKET))
            s.sendall(command.encode() + b"\n")
            while chunk := s.recv(4096):
                answer += chunk
    except OSError:
        return ""
    return answer.decode(errors="replace")


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + HEALTH, timeout=3) as r:
            return r.read().decode().strip() == "ok"
    except OSError:
        return False


def port_free(address: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: a closed
        try:  # connection lingering in TIME_WAIT does not keep them from listening
            s.bind((address, port))
        except OSError:
            return False
    return True


def app_command(port: int) -> list[str]:
    """`streamlit run app.py` on 127.0.0.1:port as a class server runs it (headless, no file
    watcher, no usage statistics); the tests and benchmarks start the app the same way."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]


def start_app(port: int, log: Path) -> subprocess.Popen:
    """One `streamlit run app.py` on 127.0.0.1:port, in a process group of its own (its jobs join
    it); the app itself gives each session one torch thread unless VIZ_TORCH_THREADS says so."""
    from serving.paths import RUNS_ENV, runs_root

    cmd = app_command(port)
    env = {**os.environ, RUNS_ENV: str(runs_root(REPO))}  # one runs folder for all, not the app's
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def interrupt(proc: subprocess.Popen, sig: int = signal.SIGINT, grace: float = 15) -> None:
    """Stop a child and its group: SIGINT is a Ctrl-C on `streamlit run` (its jobs save and stop),
    SIGTERM HAProxy's hard stop (on SIGINT it waits for idle connections); SIGKILL after `grace` s."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_ready(procs: dict[int, subprocess.Popen], folder: Path) -> None:
    """Wait until every app answers its health check; a clear error if one exits or is slow."""
    deadline = time.monotonic() + STARTUP_S
    pending = dict(procs)
    while pending:
        for port, proc in list(pending.items()):
            if proc.poll() is not None:
                raise ServeError(f"the app on port {port} exited; see {folder}/app-{port}.log")
            if healthy(f"http://127.0.0.1:{port}"):
                del pending[port]
        if time.monotonic() > deadline:
            raise ServeError(f"app(s) on port(s) {sorted(pending)} not ready in {STARTUP_S} s")
        time.sleep(0.3)


def public_url(address: str, port: int) -> str:
    """The address to give students: this machine's LAN address when serving on every interface."""
    if address not in ("0.0.0.0", ""):
        return f"http://{address}:{port}"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:  # no packet is sent: connect() on UDP only picks the outgoing interface
            s.connect(("10.255.255.255", 1))
            return f"http://{s.getsockname()[0]}:{port}"
        except OSError:
            return f"http://{socket.gethostname()}:{port}"


def check_start(args: argparse.Namespace, folder: Path) -> str:
    """The haproxy binary, once nothing stands in the way of starting; else a ServeError."""
    haproxy = haproxy_path()
    if haproxy is None:
        raise ServeError("HAProxy is not installed: `sudo apt-get install haproxy` (Debian/Ubuntu)")
    if args.processes < 1:
        raise ServeError("--processes must be at least 1")
    pid = read_pids(folder).get("launcher")
    if pid and alive(pid):
        raise ServeError(f"a class server already runs on port {args.port} (pid {pid}); `stop` it")
    ports = [args.port, *range(args.backend_port, args.backend_port + args.processes)]
    busy = [p for p in ports if not port_free("127.0.0.1" if p != args.port else args.address, p)]
    if busy:
        raise ServeError(f"port(s) {busy} already in use: choose --port / --backend-port")
    return haproxy


def start(args: argparse.Namespace) -> None:
    folder = args.state_dir or state_dir(args.port)
    folder.mkdir(parents=True, exist_ok=True)
    haproxy = check_start(args, folder)
    ports = list(range(args.backend_port, args.backend_port + args.processes))
    cfg = folder / "haproxy.cfg"
    cfg.write_text(
        render_config(
            args.processes, args.port, args.address, args.backend_port, folder / "haproxy.pid"
        )
    )
    apps: dict[int, subprocess.Popen] = {}
    proxy = None
    signal.signal(signal.SIGTERM, _interrupted)  # `stop` sends SIGTERM: clean up as on Ctrl-C
    try:
        for port in ports:
            apps[port] = start_app(port, folder / f"app-{port}.log")
        write_pids(folder, apps, None)
        print(
            f"starting {len(apps)} app processes on 127.0.0.1:{ports[0]}-{ports[-1]} ...",
            flush=True,
        )
        wait_ready(apps, folder)
        if not args.no_warm:
            _warm(ports, args.warm_every_model)
        with open(folder / "haproxy.log", "ab") as log:
            proxy = subprocess.Popen(
                [haproxy, "-db", "-f", str(cfg)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        write_pids(folder, apps, proxy)
        _wait_proxy(args, proxy, folder)
        print(
            f"serving the class at {public_url(args.address, args.port)} "
            f"({len(apps)} processes behind HAProxy); Ctrl-C or `python -m serving.class_server "
            f"stop --port {args.port}` stops it",
            flush=True,
        )
        supervise(apps, proxy, folder, warm=None if args.no_warm else args.warm_every_model)
    except KeyboardInterrupt:
        print("stopping the class server ...", flush=True)
    finally:
        for proc in [p for p in [proxy] if p] + list(apps.values()):
            interrupt(proc, signal.SIGTERM if proc is proxy else signal.SIGINT)
        (folder / "pids.json").unlink(missing_ok=True)


def _warm(ports: list[int], every_model: bool) -> None:
    """The views a class opens first, on every process, before the address is given
    (serving/warm.py): every page on the default model, every lesson stop, Home on the other
    models the picker offers except runs trained here (`every_model`: every page on each)."""
    from serving.jobs import runs_root
    from serving.models import discover
    from serving.warm import plan, warm

    runs = runs_root(REPO).resolve()
    models = sorted(n for n, path in discover().items() if runs not in path.parents)
    views = plan(models, every_model)
    what = "every page x every model" if every_model else "every page, every lesson stop"
    print(f"warming each process: {what}, {len(models)} models ...", flush=True)
    failed = {port: pages for port, pages in warm(ports, views).items() if pages}
    for port, pages in failed.items():  # the class can still come: say where to look
        print(
            f"app on port {port}: {', '.join(pages)} failed on first view; see its log", flush=True
        )
    print(f"warmed {len(ports)} processes ({len(failed)} with a failed page)", flush=True)


def _interrupted(*_) -> None:
    raise KeyboardInterrupt


def _wait_proxy(args: argparse.Namespace, proxy: subprocess.Popen, folder: Path) -> None:
    host = "127.0.0.1" if args.address in ("0.0.0.0", "") else args.address
    deadline = time.monotonic() + 30
    while not healthy(f"http://{host}:{args.port}"):
        if proxy.poll() is not None or time.monotonic() > deadline:
            raise ServeError(f"HAProxy did not start; see {folder}/haproxy.log")
        time.sleep(0.2)


def supervise(
    apps: dict[int, subprocess.Popen],
    proxy: subprocess.Popen,
    folder: Path,
    warm: bool | None = False,
) -> None:
    """Until interrupted: restart an app process that died (HAProxy sends its browsers to the
    others meanwhile); give up if HAProxy itself exits. `warm`: None, no warm-up; else a restarted
    process is warmed as at the start (True: every page on every model)."""
    restarts = dict.fromkeys(apps, 0)
    names = {port: f"s{i + 1}" for i, port in enumerate(apps)}  # HAProxy's, in render_config
    while proxy.poll() is None:
        for port, proc in apps.items():
            if proc.poll() is not None and restarts[port] < MAX_RESTARTS:
                restarts[port] += 1
                print(f"app on port {port} exited ({proc.returncode}); restarting it", flush=True)
                tell_proxy(folder, f"set server streamlit/{names[port]} state maint")
                apps[port] = start_app(port, folder / f"app-{port}.log")
                write_pids(folder, apps, proxy)
                threading.Thread(
                    target=_come_back,
                    args=(port, apps[port], names[port], folder, warm),
                    daemon=True,
                ).start()
            elif proc.poll() is not None and restarts[port] == MAX_RESTARTS:
                restarts[port] += 1  # a crash loop: say so once, and let the others serve
                print(f"app on port {port} keeps exiting; see {folder}/app-{port}.log", flush=True)
        time.sleep(1)
    raise ServeError(f"HAProxy exited ({proxy.returncode}); see {folder}/haproxy.log")


def _come_back(
    port: int, proc: subprocess.Popen, name: str, folder: Path, warm: bool | None
) -> None:
    """A restarted app, warmed as at the start before HAProxy gives it a browser again: a fresh
    process's first request meets Streamlit's legacy router and its "Page not found" notice
    (docs/ARCHITECTURE.md, Pages and navigation), and its first views load the models."""
    try:
        wait_ready({port: proc}, folder)
        if warm is not None:  # as at the start (--no-warm: not then either)
            _warm([port], warm)
    except Exception as error:  # noqa: BLE001  said, and HAProxy's own checks decide
        print(f"app on port {port}: {error}", flush=True)
    if proc.poll() is None:  # one that exited again is restarted, and taken out again
        tell_proxy(folder, f"set server streamlit/{name} state ready")
        print(f"app on port {port} is back", flush=True)


def write_pids(folder: Path, apps: dict[int, subprocess.Popen], proxy) -> None:
    pids = {"launcher": os.getpid(), "apps": {str(p): a.pid for p, a in apps.items()}}
    if proxy:
        pids["haproxy"] = proxy.pid
    tmp = folder / "pids.json.tmp"
    tmp.write_text(json.dumps(pids))
    tmp.replace(folder / "pids.json")


def read_pids(folder: Path) -> dict:
    try:
        return json.loads((folder / "pids.json").read_text())
    except (OSError, ValueError):
        return {}


def alive(pid: int) -> bool:
    """Is `pid` a live class server launcher (not a stranger that reused the number)?"""
    try:
        return b"serving.class_server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def stop(args: argparse.Namespace, timeout: float = 60) -> None:
    """Ask the launcher (SIGTERM) to stop everything, and wait until it has."""
    folder = args.state_dir or state_dir(args.port)
    pid = read_pids(folder).get("launcher")
    if not pid or not alive(pid):
        raise ServeError(f"no class server runs on port {args.port} (no live pid in {folder})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            raise ServeError(f"the class server (pid {pid}) did not stop in {timeout:g} s")
        time.sleep(0.2)
    print(f"stopped the class server on port {args.port}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "stop"):
        p = sub.add_parser(name)
        p.add_argument("--port", type=int, default=8501, help="the public port (default 8501)")
        p.add_argument("--state-dir", type=Path, help="config, pids, logs (default: a temp folder)")
    sub.choices["start"].add_argument("--processes", type=int, default=os.cpu_count() or 1)
    sub.choices["start"].add_argument("--address", default="0.0.0.0", help="where students connect")
    sub.choices["start"].add_argument("--backend-port", type=int, help="first app port (port+1)")
    sub.choices["start"].add_argument(
        "--no-warm",
        action="store_true",
        help="give the address at once, without first opening the first views on every "
        "process (the first students then wait for the models to load)",
    )
    sub.choices["start"].add_argument(
        "--warm-every-model",
        action="store_true",
        help="warm every page on every model, not only the default model's pages, the lesson "
        "stops and each model's Home (minutes a process with the bundled models)",
    )
    args = parser.parse_args(argv)
    if args.command == "start" and args.backend_port is None:
        args.backend_port = args.port + 1
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    try:
        start(args) if args.command == "start" else stop(args)
    except ServeError as exc:
        sys.exit(f"class_server: {exc}")


if __name__ == "__main__":
    main()
