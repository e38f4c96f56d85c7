"""Class state under a class: 100 students polling the teacher's view and answering a question.

    python -m benchmarks.bench_class_state [--students 100] [--processes 2] [--seconds 20]

Against SQLite (a fresh class.sqlite3 in a temporary folder, as serving/classroom/store.py makes
it), the students are split over `processes` Python processes (the server processes of a class),
one thread each, as Streamlit runs a session. Each student polls `classes.view()` once a second
(with a random phase), sends a heartbeat every 5 s, and once the teacher's view names a question
answers it after a random 0-5 s. The teacher (this process) asks the question a few seconds in,
then reads the distribution every 50 ms.

Prints: polls per second sustained, poll latency (median, p95, max), heartbeats, answers
acknowledged and counted (lost = acknowledged - counted, must be 0), refusals and database
errors, and the time from the last answer's commit to the teacher's first complete distribution.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy import func, select

from benchmarks.common import emit
from serving import jobs
from serving.classroom import classes, questions, store

POLL_S = 1.0
HEARTBEAT_S = 5.0
ANSWER_WITHIN_S = 5.0
ASK_AFTER_S = 4.0


def student(token: str, class_id: int, until: float, out: dict, lock: threading.Lock) -> None:
    """One student's session: poll the view every second, heartbeat, answer the question once."""
    rng = random.Random(token)
    latencies, answered_at, errors, beats = [], None, [], 0
    next_poll = time.time() + rng.random() * POLL_S
    next_beat = time.time() + rng.random() * HEARTBEAT_S
    acked = False
    while time.time() < until:
        time.sleep(max(0.0, min(next_poll, next_beat) - time.time()))
        now = time.time()
        try:
            if now >= next_beat:
                classes.heartbeat(token, "Attention", True)
                beats += 1
                next_beat += HEARTBEAT_S
            if now >= next_poll:
                t0 = time.perf_counter()
                seen = classes.view(class_id)
                latencies.append(time.perf_counter() - t0)
                next_poll += POLL_S
                qid = seen.params.get("question")
                if qid and answered_at is None:
                    answered_at = time.time() + rng.random() * ANSWER_WITHIN_S
                if answered_at is not None and not acked and time.time() >= answered_at:
                    questions.answer(token, int(qid), rng.choice(["a", "b", "c"]))
                    acked = True
        except (store.ClassRefused, store.ClassStateError) as error:
            errors.append(f"{type(error).__name__}: {error}")
    with lock:
        out["latencies"] += latencies
        out["acked"] += int(acked)
        out["errors"] += errors
        out["heartbeats"] += beats


def worker(args) -> None:
    """A server process: one thread a student. Reads its tokens, says it is ready (imports
    done), reads the start and end times, and prints what its students measured as JSON."""
    tokens = json.loads(sys.stdin.readline())
    print("ready", flush=True)
    start, until = (float(x) for x in sys.stdin.readline().split())
    time.sleep(max(0.0, start - time.time()))
    out = {"latencies": [], "acked": 0, "errors": [], "heartbeats": 0}
    lock = threading.Lock()
    threads = [
        threading.Thread(target=student, args=(t, args.class_id, until, out, lock)) for t in tokens
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(out))


def teacher(args) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="viz-class-bench-"))
    os.environ[jobs.RUNS_ENV] = str(folder)
    os.environ.pop(store.DB_ENV, None)
    os.environ.pop(jobs.PASSWORD_ENV, None)
    info = classes.start_class(jobs.Auth(), "benchmark")
    tokens = [classes.join(info.code, "", f"c{i}").token for i in range(args.students)]
    parts = [tokens[i :: args.processes] for i in range(args.processes)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_class_state",
                "--worker",
                "--class-id",
                str(info.id),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )  # fmt: skip
        for _ in parts
    ]
    for proc, part in zip(procs, parts, strict=True):
        proc.stdin.write(json.dumps(part) + "\n")
        proc.stdin.flush()
    for proc in procs:  # every process has imported the app's modules
        assert proc.stdout.readline().strip() == "ready"
    start = time.time() + 0.5
    until = start + args.seconds
    for proc in procs:
        proc.stdin.write(f"{start!r} {until!r}\n")
        proc.stdin.close()
    time.sleep(max(0.0, start + ASK_AFTER_S - time.time()))
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", options=["a", "b", "c"])
    classes.set_view(info.teacher_key, info.id, "Attention", {"question": str(q.id)})
    complete_at = None
    while time.time() < until and complete_at is None:
        if questions.distribution(q.id).total >= args.students:
            complete_at = time.time()
        else:
            time.sleep(0.05)
    results = [json.loads(proc.stdout.read()) for proc in procs]
    for proc in procs:
        proc.wait()
    counted = questions.distribution(q.id).total
    with store.reading() as conn:
        last_answer = conn.execute(
            select(func.max(store.answers.c.at)).where(store.answers.c.question_id == q.id)
        ).scalar()
    latencies = sorted(x for r in results for x in r["latencies"])
    acked = sum(r["acked"] for r in results)
    errors = [e for r in results for e in r["errors"]]
    return {
        "students": args.students,
        "processes": args.processes,
        "seconds": args.seconds,
        "polls": len(latencies),
        "polls_per_s": round(len(latencies) / args.seconds, 1),
        "poll_ms": {
            "median": round(1000 * statistics.median(latencies), 2),
            "p95": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 2),
            "max": round(1000 * latencies[-1], 2),
        },
        "heartbeats": sum(r["heartbeats"] for r in results),
        "answers_acknowledged": acked,
        "answers_counted": counted,
        "answers_lost": acked - counted,
        "errors": len(errors),
        "first_errors": errors[:3],
        "last_answer_to_complete_distribution_s": (
            round(complete_at - last_answer, 3) if complete_at and last_answer else None
        ),
        "database": "SQLite (WAL) in a temporary runs folder",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--class-id", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    else:
        emit("class_state", teacher(args))


if __name__ == "__main__":
    main()
