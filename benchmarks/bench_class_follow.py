"""A live class following its teacher, at the protocol level: move delay, server CPU, answers.

    python -m benchmarks.bench_class_follow [--students 100] [--processes 2] [--moves 8] [--every 10]

Issue 23's figures. One class server (serving/class_server.py: N app processes behind HAProxy)
on a fresh runs folder, so every process shares one SQLite class database. The class and its
100 members are made here through the database API (classes.start_class, classes.join); the
teacher is this process too, moving with classes.set_view every `every` seconds through a cycle
of views (Attention at a layer and head, Next token, Embeddings, ...).

Each student is one websocket (one Streamlit session) that behaves as the browser does and no
more: it opens the teacher's first page with its seat cookie (so the app knows the session is in
the class and draws the follow fragment in the sidebar), reruns each fragment that asked for it
(ForwardMsg auto_rerun: every `interval`, a rerun BackMsg with that fragment id, the current page
and query string, as the browser's timer does), keeps the query string the server sets
(page_info_changed) and otherwise just reads messages: a switch_page is server-initiated (a new
full run of another page, its navigation message naming the page's hash). A move has reached a
student when a full run of the teacher's page with the teacher's URL keys has finished
(script_finished) in their session; delays are from set_view's commit.

Phases, on the same warmed server (every view of the cycle opened once on each process first):
- following: the class follows for `moves` moves; reported: delay p50/p95/max, share within 2 s;
- not following (the baseline for the cost): the same 100 sessions without a seat (no fragment,
  no heartbeat) on the same page, each asking for the teacher's new page by itself at the same
  moments (spread over the same POLL_S second the followers' polls spread over), as a class
  clicking along would;
- answers: the following class is asked a choice question (questions.ask); each student answers
  through the app, at a random moment within 5 s of the question: the fragment's form (a radio
  and a submit button), submitted as the browser does (a rerun BackMsg for the fragment with the
  radio's value and the submit button's trigger). Lost = submitted - counted by
  questions.distribution; and the time from the last answer's commit until a distribution read
  every 50 ms (as the teacher's Live class page reads it, every LIVE_S there) is complete.
Server CPU: the sum of the app processes' CPU time (psutil) over each phase's `moves x every`
seconds, and their ratio; the client (this process, 100 sessions) is reported beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import psutil
import websockets

from benchmarks.bench_class_load import ROOT, class_server
from benchmarks.common import emit
from serving import streamlit_protocol as protocol
from serving.streamlit_protocol import stream_url

SEAT_COOKIE = "viz_class_seat"  # ui/classroom.SEAT_COOKIE: a student's seat, in the browser
POLL_S = 1.0  # ui/classroom.POLL_S: followers' polls spread a move's arrivals over this
TARGET_S = 2.0
ANSWER_WITHIN_S = 5.0
OPTIONS = ["L0 H1", "L1 H2", "L1 H3"]
# The teacher's moves, in turn: (page route, the page's URL keys).
VIEWS = [
    ("Attention", {"layer": "0", "head": "1"}),
    ("Next_token", {}),
    ("Embeddings", {}),
    ("Attention", {"layer": "1", "head": "2"}),
    ("Next_token", {"temperature": "0.5"}),
    ("Embeddings", {"token": "3"}),
]
FIRST = ("Embeddings", {"token": "1"})  # where the class starts, before the first move


class Tab:
    """One browser tab at the protocol level: reads every ForwardMsg, reruns timed fragments,
    keeps the URL's query string and notes each finished full run (page, query, time)."""

    def __init__(self, url: str, timers: bool = True):
        self.url, self.timers = url, timers
        self.ws = None
        self.backend = ""
        self.page_hash = ""  # the page the last full run ran (navigation message)
        self.pages: dict[str, str] = {}  # page hash -> url path
        self.query = ""  # the URL's query string, as the server last set it
        self.cached: set[str] = set()
        self.fragment_timers: dict[str, asyncio.Task] = {}
        self.runs: list[tuple[float, str, str]] = []  # finished full runs: (time, page, query)
        self.starts: list[tuple[float, str, str]] = []  # full runs begun (navigation messages)
        self.fragment_runs = 0
        self.reruns_sent = 0
        self.exceptions: list[str] = []
        self.radio_id = ""  # the answer form's widgets, when drawn
        self.submit_id = ""
        self.unfollow_id = ""  # the class box's "Stop following" button, when drawn
        self.follow_again_seen = False  # the box offered "Follow the teacher": following stopped
        self.form_at: float | None = None
        self.acked_at: float | None = None
        self.submitted_at: float | None = None
        self._reader: asyncio.Task | None = None

    async def open(self, page: str, query: str, cookie: str | None = None) -> None:
        """Connect as a browser opening `page?query`, sending `cookie` as its Cookie header."""
        headers = {"Cookie": cookie} if cookie else None
        self.ws = await websockets.connect(
            stream_url(self.url), max_size=None, open_timeout=120, additional_headers=headers
        )
        self.backend = self.ws.response.headers.get("X-Backend", "")
        self.query = query
        self._reader = asyncio.create_task(self._read())
        await self.send(page_name=page)

    async def close(self) -> None:
        for task in [*self.fragment_timers.values(), self._reader]:
            if task:
                task.cancel()
        await self.ws.close()

    async def send(
        self,
        page_name: str = "",
        fragment_id: str = "",
        auto: bool = False,
        widgets: list | None = None,
        query: str | None = None,
    ) -> None:
        msg = protocol.rerun_request(
            query_string=self.query if query is None else query,
            page_name=page_name,
            page_script_hash="" if page_name else self.page_hash,
            fragment_id=fragment_id,
            is_auto_rerun=auto,
            cached_message_hashes=self.cached,
            widgets=widgets or [],
        )
        self.reruns_sent += 1
        await self.ws.send(msg)

    async def _tick(self, fragment_id: str, interval: float) -> None:
        """The browser's timer for one fragment: a rerun of it every `interval`."""
        while True:
            await asyncio.sleep(interval)
            await self.send(fragment_id=fragment_id, auto=True)

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                fwd = protocol.parse(raw)
                if fwd.metadata.cacheable:
                    self.cached.add(fwd.hash)
                kind = fwd.WhichOneof("type")
                if kind == "auto_rerun" and self.timers:
                    fid, every = fwd.auto_rerun.fragment_id, fwd.auto_rerun.interval
                    if fid not in self.fragment_timers:
                        self.fragment_timers[fid] = asyncio.create_task(self._tick(fid, every))
                elif kind == "stop_auto_rerun":
                    for fid in fwd.stop_auto_rerun.fragment_ids:
                        task = self.fragment_timers.pop(fid, None)
                        if task:
                            task.cancel()
                elif kind == "page_info_changed":
                    self.query = fwd.page_info_changed.query_string
                elif kind == "navigation":
                    self.pages = {
                        p.page_script_hash: p.url_pathname for p in fwd.navigation.app_pages
                    }
                    self.page_hash = fwd.navigation.page_script_hash
                    page = self.pages.get(self.page_hash, "?")
                    self.starts.append((time.perf_counter(), page, self.query))
                elif kind == "delta" and fwd.delta.HasField("new_element"):
                    self._note(fwd.delta.new_element)
                elif kind == "script_finished":
                    if protocol.finished(fwd) == "FINISHED_SUCCESSFULLY":
                        page = self.pages.get(self.page_hash, "?")
                        self.runs.append((time.perf_counter(), page, self.query))
                    elif protocol.finished(fwd) == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY":
                        self.fragment_runs += 1
        except websockets.ConnectionClosed:
            pass

    def _note(self, element) -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:200])
        elif kind == "radio" and element.radio.label == "Your answer" and not self.radio_id:
            self.radio_id = element.radio.id
            self.form_at = self.form_at or time.perf_counter()
        elif kind == "button" and element.button.is_form_submitter and not self.submit_id:
            self.submit_id = element.button.id
        elif kind == "button" and element.button.label == "Stop following":
            self.unfollow_id = element.button.id
        elif kind == "button" and element.button.label == "Follow the teacher":
            self.follow_again_seen = True
        elif kind in ("alert", "markdown") and self.submitted_at and not self.acked_at:
            body = getattr(element, kind).body
            if "Sent. Wait for the reveal" in body or "Your answer:" in body:
                self.acked_at = time.perf_counter()

    def finished(
        self, page: str, params: dict[str, str], since: float, begun: bool = False
    ) -> float | None:
        """When a full run of `page` with `params` in its URL first finished (`begun`: began,
        i.e. the page switched and its title is drawn) after `since`."""
        for at, ran, query in self.starts if begun else self.runs:
            if at < since or ran != page:
                continue
            got = dict(urllib.parse.parse_qsl(query))
            if all(got.get(k) == v for k, v in params.items()):
                return at
        return None

    def at(self, page: str, params: dict[str, str]) -> bool:
        return self.finished(page, params, 0.0) is not None and self.runs[-1][1] == page


def cpu_seconds(pids: list[int]) -> list[float]:
    out = []
    for pid in pids:
        t = psutil.Process(pid).cpu_times()
        out.append(t.user + t.system)
    return out


async def sample_cpu(pids: list[int], into: list[float], every: float = 1.0) -> None:
    """The app processes' cores busy over each `every` seconds, appended until cancelled."""
    last = sum(cpu_seconds(pids))
    while True:
        await asyncio.sleep(every)
        now = sum(cpu_seconds(pids))
        into.append(round((now - last) / every, 2))
        last = now


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


async def warm(ports: list[int]) -> None:
    """Every view of the cycle once on each process, directly (HAProxy round-robins)."""
    for port in ports:
        tab = Tab(f"http://127.0.0.1:{port}", timers=False)
        for page, params in [FIRST, *VIEWS]:
            before = len(tab.runs)
            if tab.ws is None:
                await tab.open(page, urllib.parse.urlencode(params))
            else:
                await tab.send(page_name=page, query=urllib.parse.urlencode(params))
            deadline = time.perf_counter() + 120
            while len(tab.runs) == before and time.perf_counter() < deadline:
                await asyncio.sleep(0.05)
        await tab.close()


async def arrive(tabs: list[Tab], seats: list[str | None], spread: float) -> None:
    page, params = FIRST

    async def one(tab: Tab, seat: str | None, delay: float) -> None:
        await asyncio.sleep(delay)
        cookie = f"{SEAT_COOKIE}={seat}" if seat else None
        await tab.open(page, urllib.parse.urlencode(params), cookie)

    rng = random.Random(1)
    await asyncio.gather(
        *(one(t, s, rng.uniform(0, spread)) for t, s in zip(tabs, seats, strict=True))
    )


async def settle(tabs: list[Tab], page: str, params: dict[str, str], limit: float) -> int:
    """Wait (up to `limit` s) until every tab's last full run is `page` with `params`."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        if all(t.at(page, params) for t in tabs):
            break
        await asyncio.sleep(0.2)
    return sum(t.at(page, params) for t in tabs)


async def stop_following(tabs: list[Tab], limit: float = 60) -> int:
    """Each seated student presses the class box's "Stop following" (a rerun of the box's
    fragment with the button's trigger, as the browser sends it); how many the box then offered
    to follow again."""
    for tab in tabs:
        if tab.unfollow_id:
            await tab.send(
                fragment_id=next(iter(tab.fragment_timers), ""),
                widgets=[(tab.unfollow_id, "trigger_value", True)],
            )
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline and not all(t.follow_again_seen for t in tabs):
        await asyncio.sleep(0.2)
    return sum(t.follow_again_seen for t in tabs)


async def phase(url: str, pids: list[int], tokens: list[str], args, teacher, mode: str) -> dict:
    """One phase: the class arrives, settles, then `args.moves` moves; delays and CPU.
    mode: "following", "seated" (in the class, following stopped, clicking by itself) or
    "baseline" (no seat: students clicking by themselves, no class at all)."""
    from serving.classroom import classes

    following = mode == "following"
    tabs = [Tab(url, timers=True) for _ in tokens]
    key, class_id = teacher
    classes.set_view(key, class_id, FIRST[0], FIRST[1])
    seats = tokens if mode != "baseline" else [None] * len(tabs)
    await arrive(tabs, seats, args.arrive)
    settled = await settle(tabs, FIRST[0], FIRST[1], 60)
    stopped = await stop_following(tabs) if mode == "seated" else None
    await asyncio.sleep(2.0)  # the arrival's tail: off the clock
    rng = random.Random(2)
    moves = []
    busy: list[float] = []
    sampler = asyncio.create_task(sample_cpu(pids, busy))
    cpu0, client0, wall0 = cpu_seconds(pids), time.process_time(), time.perf_counter()
    for i in range(args.moves):
        page, params = VIEWS[i % len(VIEWS)]
        step_end = wall0 + (i + 1) * args.every
        if following:
            classes.set_view(key, class_id, page, params)
            t0 = time.perf_counter()
        else:
            if mode == "seated":  # the teacher moves; the class, not following, clicks along
                classes.set_view(key, class_id, page, params)
            t0 = time.perf_counter()
            query = urllib.parse.urlencode(params)

            async def click(tab: Tab, delay: float, page=page, query=query) -> None:
                await asyncio.sleep(delay)
                tab.query = query
                await tab.send(page_name=page)

            for tab in tabs:
                asyncio.create_task(click(tab, rng.uniform(0, POLL_S)))
        moves.append((t0, page, params))
        await asyncio.sleep(max(0.0, step_end - time.perf_counter()))
    cpu1, client1, wall1 = cpu_seconds(pids), time.process_time(), time.perf_counter()
    sampler.cancel()
    delays, missed, per_move, switches = [], 0, [], []
    for t0, page, params in moves:
        # Not following, a session's own choices win over the URL (ui/state.py), so a student
        # clicking to Attention keeps their layer: the baseline's run is the page's, any keys.
        keys = params if following else {}
        these = [tab.finished(page, keys, t0) for tab in tabs]
        got = [done - t0 for done in these if done is not None]
        begun = [tab.finished(page, keys, t0, begun=True) for tab in tabs]
        switches += [at - t0 for at in begun if at is not None]
        missed += len(these) - len(got)
        delays += got
        per_move.append(
            {
                "view": f"{page}?{urllib.parse.urlencode(params)}",
                "arrived": len(got),
                "p50_s": round(quantile(got, 0.5), 2) if got else None,
                "max_s": round(max(got), 2) if got else None,
            }
        )
    per_process = [round(b - a, 1) for a, b in zip(cpu0, cpu1, strict=True)]
    seconds = wall1 - wall0
    result = {
        "mode": mode,
        "following": following,
        "settled_students": settled,
        "stopped_following": stopped,
        "backends": {
            b: sum(t.backend == b for t in tabs) for b in sorted({t.backend for t in tabs})
        },
        "moves": len(moves),
        "seconds": round(seconds, 1),
        "arrivals": len(delays),
        "not_arrived": missed,
        "delay_s": {
            "p50": round(quantile(delays, 0.5), 2) if delays else None,
            "p95": round(quantile(delays, 0.95), 2) if delays else None,
            "max": round(max(delays), 2) if delays else None,
        },
        "page_switched_s": {
            "p50": round(quantile(switches, 0.5), 2) if switches else None,
            "p95": round(quantile(switches, 0.95), 2) if switches else None,
            "share_within_2s": round(
                sum(d <= TARGET_S for d in switches) / len(delays + [0] * missed), 3
            ),
        },
        "share_within_2s": round(sum(d <= TARGET_S for d in delays) / (len(delays) + missed), 3),
        "server_cpu_s": round(sum(per_process), 1),
        "server_cpu_s_per_process": per_process,
        "server_cores_busy": round(sum(per_process) / seconds, 2),
        "server_cores_busy_by_second_max": max(busy) if busy else None,
        "per_move": per_move,
        "client_cpu_s": round(client1 - client0, 1),
        "fragment_runs": sum(t.fragment_runs for t in tabs),
        "reruns_sent": sum(t.reruns_sent for t in tabs),
        "exceptions": sorted({e for t in tabs for e in t.exceptions})[:5],
    }
    if following and args.answers:
        result["answers"] = await answers(tabs, teacher)
    for tab in tabs:
        await tab.close()
    await asyncio.sleep(3.0)  # the sessions close before the next phase
    return result


async def answers(tabs: list[Tab], teacher) -> dict:
    """The following class answers a choice question through the app's form within 5 s."""
    from sqlalchemy import func, select

    from serving.classroom import questions, store

    key, class_id = teacher
    q = questions.ask(key, class_id, "choice", "Which head copies?", options=OPTIONS)
    asked = time.perf_counter()
    asked_wall = time.time()
    complete: dict[str, float] = {}
    stop = threading.Event()

    def teacher_reads() -> None:  # the teacher's distribution, read every 50 ms
        while not stop.is_set():
            if questions.distribution(q.id).total >= len(tabs):
                complete["at"] = time.time()
                return
            time.sleep(0.05)

    reader = threading.Thread(target=teacher_reads)
    reader.start()
    rng = random.Random(3)

    async def one(tab: Tab, delay: float) -> None:
        await asyncio.sleep(delay)
        while not (tab.radio_id and tab.submit_id):  # the fragment has not drawn the form yet
            if time.perf_counter() > asked + 30:
                return
            await asyncio.sleep(0.05)
        tab.submitted_at = time.perf_counter()
        await tab.send(
            fragment_id=next(iter(tab.fragment_timers), ""),
            widgets=[
                (tab.radio_id, "string_value", rng.choice(OPTIONS)),
                (tab.submit_id, "trigger_value", True),
            ],
        )

    await asyncio.gather(*(one(t, rng.uniform(0, ANSWER_WITHIN_S)) for t in tabs))
    deadline = time.perf_counter() + 15
    while time.perf_counter() < deadline and "at" not in complete:
        await asyncio.sleep(0.1)
    await asyncio.sleep(2.0)  # the last acknowledgements
    stop.set()
    reader.join()
    counted = questions.distribution(q.id).total
    with store.reading() as conn:
        last = conn.execute(
            select(func.max(store.answers.c.at)).where(store.answers.c.question_id == q.id)
        ).scalar()
    submitted = [t.submitted_at - asked for t in tabs if t.submitted_at]
    acked = [t.acked_at - t.submitted_at for t in tabs if t.acked_at and t.submitted_at]
    return {
        "through": "the app: the follow fragment's answer form, submitted as the browser does",
        "form_drawn": sum(t.radio_id != "" for t in tabs),
        "form_drawn_after_s_max": round(max(t.form_at - asked for t in tabs if t.form_at), 2)
        if any(t.form_at for t in tabs)
        else None,
        "submitted": len(submitted),
        "submitted_within_s": round(max(submitted), 2) if submitted else None,
        "acknowledged": len(acked),
        "ack_s": {"p50": round(quantile(acked, 0.5), 2), "max": round(max(acked), 2)}
        if acked
        else None,
        "counted": counted,
        "lost": len(submitted) - counted,
        "last_answer_after_ask_s": round(last - asked_wall, 2) if last else None,
        "last_answer_to_complete_distribution_s": round(complete["at"] - last, 3)
        if "at" in complete and last
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--moves", type=int, default=8)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between moves")
    parser.add_argument("--arrive", type=float, default=10.0, help="the class arrives over, s")
    parser.add_argument("--no-answers", dest="answers", action="store_false")
    parser.add_argument(
        "--phases",
        nargs="+",
        default=["baseline", "seated", "following"],
        choices=["baseline", "seated", "following"],
        help="baseline: no class; seated: the same class, following stopped; following",
    )
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="postgresql: a throwaway local server (pytest-postgresql's executor, tests/pg_ctl)",
    )
    args = parser.parse_args()

    from serving import jobs
    from serving.classroom import store

    runs = tempfile.mkdtemp(prefix="bench-follow-runs-")
    os.environ[jobs.RUNS_ENV] = runs
    os.environ.pop(store.DB_ENV, None)
    os.environ.pop(jobs.PASSWORD_ENV, None)
    if args.database == "postgresql":
        with throwaway_postgres() as url:
            os.environ[store.DB_ENV] = url
            results = run_phases(args)
            store.dispose()  # its pooled connections closed before the server stops
        database = "PostgreSQL 15 (a local throwaway server, fsync off)"
    else:
        results = run_phases(args)
        database = "SQLite (WAL) in the shared runs folder"
    emit(
        "class_follow",
        {
            "students": args.students,
            "processes": args.processes,
            "moves": args.moves,
            "every_s": args.every,
            "views": [f"{p}?{urllib.parse.urlencode(q)}" for p, q in VIEWS],
            "database": database,
            **results,
            **cpu_summary(results),
        },
    )


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL server in a temporary folder on 127.0.0.1 and a free port, started and
    stopped by pytest-postgresql's executor (as tests/test_classroom.py's is, through the same
    tests/pg_ctl); the URL of its empty database `follow`."""
    from port_for import get_port
    from pytest_postgresql.executors import PostgreSQLExecutor
    from pytest_postgresql.janitor import DatabaseJanitor

    folder = Path(tempfile.mkdtemp(prefix="bench-follow-pg-"))
    server = PostgreSQLExecutor(
        executable=str(ROOT / "tests" / "pg_ctl"),
        host="127.0.0.1",
        port=get_port(None),
        datadir=str(folder / "data"),
        unixsocketdir=str(folder),
        logfile=str(folder / "server.log"),
        startparams="-w",
        dbname="follow",
        user="viz",
        postgres_options="-h 127.0.0.1 -c max_connections=300",  # fsync off: its own -F
    )
    try:
        with server:
            DatabaseJanitor(user="viz", host="127.0.0.1", port=server.port, dbname="follow").init()
            yield f"postgresql+psycopg://viz@127.0.0.1:{server.port}/follow"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_phases(args) -> dict:
    """The class made through the database API, the server started and warmed, each phase."""
    from serving import jobs
    from serving.classroom import classes

    info = classes.start_class(jobs.Auth(), "follow benchmark")
    tokens = [classes.join(info.code, "", f"c{i}").token for i in range(args.students)]
    teacher = (info.teacher_key, info.id)
    results = {}
    with class_server(args.processes, dict(os.environ), warm_up=None) as (url, pids, ports):
        asyncio.run(warm(ports))
        for name in args.phases:
            results[name] = asyncio.run(phase(url, pids, tokens, args, teacher, mode=name))
    return results


def cpu_summary(results: dict) -> dict:
    """Following's CPU against the same class not following (seated; the issue's target) and
    against students with no class at all (baseline), and whether the targets are met."""
    out = {}
    follow = results.get("following")
    if follow is None:
        return out
    for name in ("seated", "baseline"):
        if name in results and results[name]["server_cpu_s"]:
            out[f"cpu_ratio_following_to_{name}"] = round(
                follow["server_cpu_s"] / results[name]["server_cpu_s"], 2
            )
    against = out.get("cpu_ratio_following_to_seated", out.get("cpu_ratio_following_to_baseline"))
    out["target_95pct_within_2s_met"] = follow["share_within_2s"] >= 0.95
    if against is not None:
        out["target_cpu_at_most_1.10x_met"] = against <= 1.10
    return out


if __name__ == "__main__":
    main()
