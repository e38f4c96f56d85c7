"""A class at the protocol level: N students working through the lesson against 1 or N processes.

    python -m benchmarks.bench_class_load --students 100 --pace 5 15 --processes 1 2 [--job]
    python -m benchmarks.bench_class_load --students 30 --pace 0.5 2 --processes 2 --cold
    python -m benchmarks.bench_class_load --reruns 1000          # memory after 10 ... 1,000 reruns

Each setting starts the class server (serving/class_server.py: HAProxy in front even of one
process, so the proxy's cost is in every figure) with a fresh runs folder, optionally a `quick`
training job in it (--job). The class server warms each process before it gives its address
(serving/warm.py: every page on the default model, the lesson stops, each model's Home;
--warm-every-model: every page on every model; --no-warm: nothing). The class
then arrives spread over the first think time, or within one second with --cold. Then each student
(serving/student.py: one websocket, as a browser tab) opens the lesson at a random page with
its own model and a prompt from a pool (everyday lines, emoji, right-to-left and combining marks,
markup, 2,000 characters), and every `pace` seconds either goes on to the next page or types a new
prompt of its own, new to the server (one time in four). Counted: views that drew an exception, runs not finished within 30 s, dropped
connections (the student reconnects and goes on). Reported: p50/p95 of each view's round trip,
views per second, each app process's resident memory (sampled every 2 s) and its data caches
(Streamlit's /_stcore/metrics) at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import websockets

from benchmarks.class_arrival import page_paths
from benchmarks.common import emit
from serving.student import Student
from tests.test_browser import free_port

ROOT = Path(__file__).resolve().parent.parent
SLOW_S = 30.0  # a run slower than this counts as not finished (the bar)
NEW_PROMPT_SHARE = 0.25  # of clicks that type a new prompt instead of moving on
PROMPTS = [
    "ROMEO:\nBut soft, what light through yonder window breaks?",
    "JULIET:\nO Romeo, Romeo! wherefore art thou Romeo?",
    "First Citizen:\nBefore we proceed any further, hear me speak.",
    "the cat sat on the mat and the dog sat on the log",
    "KING 👑 RICHARD 😀: my horse! ❤️",
    "مرحبا بالعالم and e\u0301 n\u0303 combining marks",
    "<script>alert('x')</script> <b>bold</b> &amp; [link](javascript:alert(1))",
    ("To be, or not to be, that is the question. " * 50)[:2000],
]


def own_prompt(rng: random.Random, seed: int, clicks: int) -> str:
    """A prompt the student types: a line of the pool with words of their own, new to the server
    (every cache misses on it, the worst case); the first prompt of each comes from the pool."""
    return f"{rng.choice(PROMPTS)} ({seed}.{clicks})"


def student_plan(seed: int, models: list[str], lesson: list[str]) -> tuple[str, int, random.Random]:
    """A student's first query (model and prompt), first page index and own random stream."""
    rng = random.Random(seed)
    query = urllib.parse.urlencode({"model": rng.choice(models), "prompt": rng.choice(PROMPTS)})
    return query, rng.randrange(len(lesson)), rng


async def student_lesson(
    url: str, seconds: float, pace: tuple[float, float], seed: int, models: list[str]
) -> dict:
    """One student for `seconds`: their views (dicts) and how many times the connection dropped."""
    lesson = page_paths()
    query, at, rng = student_plan(seed, models, lesson)
    views, drops, end = [], 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        try:
            async with Student(url) as student:
                views.append((await student.view(lesson[at], query)).as_dict())
                while time.perf_counter() < end:
                    await asyncio.sleep(rng.uniform(*pace))
                    if rng.random() < NEW_PROMPT_SHARE and "Prompt" in student.widget_ids:
                        seen = await student.view(
                            lesson[at], widgets={"Prompt": own_prompt(rng, seed, len(views))}
                        )
                    else:
                        at = (at + 1) % len(lesson)
                        seen = await student.view(lesson[at])
                    views.append(seen.as_dict())
        except (websockets.ConnectionClosed, OSError, TimeoutError):
            drops += 1
            await asyncio.sleep(1.0)  # as the browser does before it reconnects
    return {"views": views, "drops": drops}


async def sample_memory(pids: list[int], every: float, into: list[list[float | None]]) -> None:
    """Append each process's resident MB to `into` every `every` seconds, until cancelled."""
    while True:
        into.append([rss_mb(pid) for pid in pids])
        await asyncio.sleep(every)


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        return None
    return None


def cache_mb(port: int, top: int = 6) -> dict[str, float]:
    """An app process's data caches in MB, largest first (Streamlit's /_stcore/metrics): its
    st.cache_data caches and the shared byte budget's functions (ui/shared_cache.py)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/metrics", timeout=30).read()
    sizes = {}
    kinds = ('cache_type="st_cache_data"', 'cache_type="viz_shared"')
    for line in text.decode().splitlines():
        if line.startswith("cache_memory_bytes{") and any(k in line for k in kinds):
            name = line.split('cache="')[1].split('"')[0].replace("__main__.", "")
            sizes[name] = round(float(line.rsplit(" ", 1)[1]) / 1e6, 1)
    ranked = sorted(sizes.items(), key=lambda kv: -kv[1])
    return {"total": round(sum(sizes.values()), 1), **dict(ranked[:top])}


@contextmanager
def class_server(processes: int, env: dict[str, str], warm_up: bool | None = False):
    """Start serving.class_server with `processes` apps, warmed by it (`warm_up` None: not at all;
    True: every page on every model); yield (url, app pids, app ports)."""
    port, backend, folder = free_port(), free_port(), Path(tempfile.mkdtemp(prefix="bench-class-"))
    cmd = [
        sys.executable,
        "-m",
        "serving.class_server",
        "start",
        "--processes",
        str(processes),
        "--port",
        str(port),
        "--backend-port",
        str(backend),
        "--address",
        "127.0.0.1",
        "--state-dir",
        str(folder),
        *(["--no-warm"] if warm_up is None else ["--warm-every-model"] if warm_up else []),
    ]
    launcher = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = launcher.stdout.readline()
        while line and "serving the class at" not in line:
            line = launcher.stdout.readline()
        if not line:
            raise RuntimeError(f"the class server did not start; see {folder}")
        pids = json.loads((folder / "pids.json").read_text())["apps"]
        ports = [backend + i for i in range(processes)]
        yield f"http://127.0.0.1:{port}", [pids[str(p)] for p in ports], ports
    finally:
        launcher.terminate()  # what `class_server stop` sends
        launcher.wait(timeout=90)


async def run_class(url: str, args: argparse.Namespace, models: list[str], pids: list[int]):
    memory: list[list[float | None]] = []
    sampler = asyncio.create_task(sample_memory(pids, 2.0, memory))
    spread = 1.0 if args.cold else max(args.pace)  # a cold class arrives within one second

    async def student(seed: int) -> dict:
        await asyncio.sleep(random.Random(-seed).uniform(0, spread))
        return await student_lesson(url, args.seconds, tuple(args.pace), seed, models)

    results = await asyncio.gather(*(student(s) for s in range(args.students)))
    sampler.cancel()
    return results, memory


def summarise(results: list[dict], seconds: float) -> dict:
    views = [v for r in results for v in r["views"]]
    times = sorted(v["seconds"] for v in views if v["finished"])
    errors = sorted({e for v in views for e in v["exceptions"]})
    pct = statistics.quantiles(times, n=100) if len(times) > 1 else [None] * 99
    return {
        "views": len(views),
        "views_per_s": round(len(views) / seconds, 1),
        "exception_views": sum(1 for v in views if v["exceptions"]),
        "not_finished_in_30s": sum(1 for v in views if not v["finished"] or v["seconds"] > SLOW_S),
        "dropped_connections": sum(r["drops"] for r in results),
        "errors": errors[:5],
        "p50_s": round(pct[49], 2) if pct[49] is not None else None,
        "p95_s": round(pct[94], 2) if pct[94] is not None else None,
        "max_s": round(times[-1], 2) if times else None,
        "kb_per_view": round(statistics.mean(v["kilobytes"] for v in views), 1) if views else None,
    }


def start_job(env: dict[str, str]) -> str:
    """A quick training job on Shakespeare in env's runs folder, as a student would start it."""
    from serving import jobs
    from viz_model.training.settings import RunSettings

    os.environ.update({jobs.RUNS_ENV: env[jobs.RUNS_ENV]})
    jobs.start(
        "loadjob", RunSettings(corpus="shakespeare", preset="quick", minutes=30), auth=jobs.Auth()
    )
    return "loadjob"


def job_speed(name: str) -> float:
    from serving import jobs

    return round(jobs.read(name, history=False).tokens_per_s)


def measure(processes: int, args: argparse.Namespace, models: list[str]) -> dict:
    env = {**os.environ, "VIZ_RUNS_DIR": tempfile.mkdtemp(prefix="bench-runs-")}
    job = start_job(env) if args.job else None
    try:
        warm_up = None if args.no_warm else args.warm_every_model
        with class_server(processes, env, warm_up) as (url, pids, ports):
            results, memory = asyncio.run(run_class(url, args, models, pids))
            caches = [cache_mb(p) for p in ports]
    finally:
        if job:
            from serving import jobs

            speed = job_speed(job)
            jobs.stop(job, auth=jobs.Auth())
    per_process = list(zip(*memory, strict=True)) if memory else []
    return {
        "processes": processes,
        "job": bool(job),
        **({"job_tokens_per_s": speed} if job else {}),
        **summarise(results, args.seconds),
        "rss_mb_max": [max(m for m in p if m) for p in per_process],
        "rss_mb_end": [p[-1] for p in per_process],
        "data_caches_mb": caches,
    }


async def rerun_memory(url: str, port: int, pid: int, reruns: int, marks: list[int]) -> list:
    """One session: `reruns` page runs through the lesson, each with a new prompt (every cache
    misses); memory and data caches at each mark."""
    lesson, rng, out = page_paths(), random.Random(0), []
    async with Student(url) as student:
        await student.view(lesson[0])
        for i in range(1, reruns + 1):
            prompt = f"{rng.choice(PROMPTS)[:200]} {i}"  # new text each time: new ids, new entries
            await student.view(lesson[i % len(lesson)], widgets={"Prompt": prompt})
            if i in marks:
                out.append({"reruns": i, "rss_mb": rss_mb(pid), "data_caches_mb": cache_mb(port)})
    return out


def memory_growth(args: argparse.Namespace) -> dict:
    env = {**os.environ, "VIZ_RUNS_DIR": tempfile.mkdtemp(prefix="bench-runs-")}
    marks = sorted({m for m in (10, 100, 300, args.reruns) if m <= args.reruns})
    with class_server(1, env) as (url, pids, ports):
        idle = {"reruns": 0, "rss_mb": rss_mb(pids[0]), "data_caches_mb": cache_mb(ports[0])}
        points = asyncio.run(rerun_memory(url, ports[0], pids[0], args.reruns, marks))
        time.sleep(args.idle)
        after = {
            "idle_s": args.idle,
            "rss_mb": rss_mb(pids[0]),
            "data_caches_mb": cache_mb(ports[0]),
        }
    return {"reruns": [idle, *points], "after_idle": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--pace", type=float, nargs=2, default=[5.0, 15.0], help="think time, s")
    parser.add_argument("--seconds", type=float, default=90.0, help="of class, per setting")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--job", action="store_true", help="a training job runs meanwhile")
    parser.add_argument("--cold", action="store_true", help="arrive within 1 s of the address")
    parser.add_argument(
        "--no-warm",
        action="store_true",
        help="the class server gives the address "
        "before opening every page once (with --cold: the worst first minute)",
    )
    parser.add_argument(
        "--warm-every-model",
        action="store_true",
        help="the class server warms every page on every model (as before 2026-11-28), not "
        "only the default model's pages, the lesson stops and each model's Home",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        help="the models the students choose among (default: every bundled model, each student "
        "its own; a class following a teacher uses one or two)",
    )
    parser.add_argument("--reruns", type=int, help="instead: memory after this many reruns")
    parser.add_argument("--idle", type=float, default=60.0, help="with --reruns: idle, then again")
    args = parser.parse_args()
    bundled = ROOT / "assets" / "models"
    models = args.models or sorted(
        p.name for p in bundled.iterdir() if (p / "config.json").is_file()
    )
    if args.reruns:
        emit("class_memory", memory_growth(args))
        return
    runs = [measure(n, args, models) for n in args.processes]
    emit(
        "class_load",
        {
            "students": args.students,
            "pace_s": args.pace,
            "seconds": args.seconds,
            "cold": args.cold,
            "no_warm": args.no_warm,
            "warm_every_model": args.warm_every_model,
            "models": models,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
