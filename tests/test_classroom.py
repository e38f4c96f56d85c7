"""Class state (serving/classroom): every test runs on SQLite in a temporary folder (unit) and on a
real PostgreSQL server started from Debian's package (system), through the same functions.

The PostgreSQL server is pytest-postgresql's: started once for the session on 127.0.0.1 and a free
port (its data in pytest's temporary folder, fsync off) through tests/pg_ctl, which finds Debian's
binaries and lets them run when the tests run as root; each test gets a fresh database of its own
from the library's client fixture. Outside CI those tests skip when PostgreSQL is missing or cannot
start; with CI=true they fail instead. Processes are real: the cross-process tests run a second
Python.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mirakuru.exceptions import ExecutorError
from port_for import get_port
from pytest_postgresql import factories
from pytest_postgresql.exceptions import PostgreSQLUnsupported
from sqlalchemy import func, select

from serving import jobs
from serving.classroom import board, classes, questions, store
from serving.classroom.classes import RateLimited
from serving.classroom.questions import AlreadyAnswered
from serving.classroom.store import ClassRefused, ClassStateError
from viz_model.analysis.ngrams import LN2, bits_per_char, validation_chars_per_token
from viz_model.bundles.files import write_json, write_text
from viz_model.lessons.lesson_file import Lesson, Stop
from viz_model.lessons.truth import Truth
from viz_model.text.data import load_text
from viz_model.text.tokenization import Tokenizer
from viz_model.training.settings import RunSettings

REPO = Path(__file__).resolve().parent.parent


PG_CTL = REPO / "tests" / "pg_ctl"  # Debian's pg_ctl, as root too (the script says how)
OPEN = jobs.Auth()  # a server without a teacher password

# The session's server, 127.0.0.1 only (-h), and each test's empty database on it (a connection
# to it, closed and the database dropped after the test).
pg_server = factories.postgresql_proc(
    executable=str(PG_CTL),
    host="127.0.0.1",
    port=None,  # a free one
    user="viz",
    dbname="viz",
    postgres_options="-h 127.0.0.1 -c max_connections=300",
)
pg_database = factories.postgresql("pg_server")


def _no_postgres(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but the PostgreSQL tests cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres(request):
    """pg_server, or a skip (a failure under CI=true) that says why PostgreSQL cannot run."""
    found = subprocess.run([PG_CTL, "--version"], capture_output=True, text=True)
    if found.returncode:
        _no_postgres(
            f"PostgreSQL is not installed ({found.stderr.strip()}; apt-get install postgresql)"
        )
    try:
        return request.getfixturevalue("pg_server")
    except (OSError, subprocess.SubprocessError, ExecutorError, PostgreSQLUnsupported) as error:
        _no_postgres(f"a PostgreSQL server could not start: {error!r}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.system)])
def db(request, tmp_path, monkeypatch):
    """The database URL of one test, set as VIZ_CLASS_DB; its runs folder in tmp_path."""
    monkeypatch.setenv(jobs.RUNS_ENV, str(tmp_path / "runs"))
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'class.sqlite3'}"
    else:
        request.getfixturevalue("postgres")
        info = request.getfixturevalue("pg_database").info
        url = f"postgresql+psycopg://{info.user}@{info.host}:{info.port}/{info.dbname}"
    monkeypatch.setenv(store.DB_ENV, url)
    yield url
    store.dispose(url)  # its pooled connections closed: PostgreSQL counts them, and drops it next


def in_another_process(script: str, *args: str) -> list:
    """Run `script` in a second Python (its own engine, its own connections); its printed JSON."""
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=os.environ.copy())  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def a_class(n: int = 0, title: str = "Week 3") -> tuple[classes.ClassInfo, list[classes.Member]]:
    info = classes.start_class(OPEN, title)
    return info, [classes.join(info.code, f"s{i}", f"client{i}") for i in range(n)]


def count_rows(table, **where) -> int:
    with store.reading() as conn:
        query = select(func.count()).select_from(table)
        for column, value in where.items():
            query = query.where(table.c[column] == value)
        return conn.execute(query).scalar()


# ---- classes and joining ------------------------------------------------------------------------


def test_a_class_gets_a_code_from_the_unambiguous_alphabet_and_is_found_by_it(db):
    info, _ = a_class()
    assert len(info.code) == 6 and set(info.code) <= set(classes.CODE_ALPHABET)
    assert not set("0O1I") & set(classes.CODE_ALPHABET)
    assert info.teacher_key and info.active
    typed = f"{info.code[:3].lower()}-{info.code[3:].lower()} "
    assert classes.find_class(typed).id == info.id
    assert classes.find_class(typed).teacher_key is None  # the key is given once, at the start
    other, _ = a_class(title="Week 4")
    assert other.code != info.code
    assert [c.id for c in classes.active_classes()] == [other.id, info.id]
    assert classes.find_class("ZZZZZZ" if info.code != "ZZZZZZ" else "YYYYYY") is None


def test_starting_a_class_needs_the_teacher_password_when_the_server_has_one(db, monkeypatch):
    monkeypatch.setenv(jobs.PASSWORD_ENV, "s3cret")
    with pytest.raises(ClassRefused, match="needs the teacher password"):
        classes.start_class(jobs.Auth.resolve(None), "x")
    with pytest.raises(ClassRefused, match="wrong teacher password"):
        classes.start_class(jobs.Auth.resolve("guess"), "x")
    info = classes.start_class(jobs.Auth.resolve("s3cret"), "x")
    # with a password, the password leads the class too (a second tab, a lost key)
    assert classes.set_view(jobs.Auth.resolve("s3cret"), info.id, "Attention", {}).version == 1
    with pytest.raises(ClassRefused, match="wrong teacher password"):
        classes.set_view(jobs.Auth.resolve("guess"), info.id, "Attention", {})
    monkeypatch.delenv(jobs.PASSWORD_ENV)
    with pytest.raises(ClassRefused, match="no teacher password"):  # without one, only the key
        classes.set_view(jobs.Auth(), info.id, "Attention", {})


def test_names_are_stripped_capped_and_stored_as_typed_and_an_empty_one_is_numbered(db):
    info, _ = a_class()
    first = classes.join(info.code, "", "a")
    second = classes.join(info.code, "   ", "b")
    typed = classes.join(info.code, "  <b>Ada</b> & co  ", "c")
    long = classes.join(info.code, "x" * 100, "d")
    assert (first.name, second.name) == ("Student 1", "Student 2")
    assert typed.name == "<b>Ada</b> & co"  # escaping is the UI's job
    assert long.name == "x" * classes.NAME_MAX
    assert classes.member(typed.token).name == "<b>Ada</b> & co"
    assert len({first.token, second.token, typed.token, long.token}) == 4
    with pytest.raises(ClassRefused):
        classes.member("not-a-token")


WRONG_CODES = """
import json, sys
from serving.classroom import classes
out = []
for _ in range(int(sys.argv[2])):
    try:
        classes.join(sys.argv[1], "x", "laptop-7")
        out.append("joined")
    except classes.RateLimited:
        out.append("limited")
    except classes.ClassRefused:
        out.append("wrong")
print(json.dumps(out))
"""


def test_wrong_codes_are_rate_limited_per_client_across_processes(db):
    info, _ = a_class()
    wrong = "ZZZZZZ" if info.code != "ZZZZZZ" else "YYYYYY"
    for _ in range(5):
        with pytest.raises(ClassRefused, match="No class has this code"):
            classes.join(wrong, "x", "laptop-7")
    assert in_another_process(WRONG_CODES, wrong, "6") == ["wrong"] * 5 + ["limited"]
    with pytest.raises(RateLimited) as refused:  # another wrong code from this client
        classes.join(wrong, "x", "laptop-7")
    assert 0 < refused.value.retry_after <= classes.JOIN_WINDOW_S
    assert f"try again in {math.ceil(refused.value.retry_after)} s" in str(refused.value)
    # a right code is never blocked (issue 39: behind a proxy the whole room shared one key, and
    # ten typos locked every student out), not even from the client over the limit
    assert classes.join(info.code, "x", "laptop-7").name == "x"
    assert classes.join(info.code, "y", "laptop-8").name == "y"  # another client is not limited
    later = time.time() + classes.JOIN_WINDOW_S + 1
    assert classes.join(info.code, "x", "laptop-7", now=later).name == "x"


def test_one_client_takes_at_most_three_seats_of_a_class_and_is_told_when_to_try_again(db):
    """Issue 39, item 7: one client joined 240 times in 20 s, all accepted, inflating "Joined"
    and "x of N answered". A client key takes JOIN_SEATS_MAX seats of one class per window; the
    refusal says so and when; other clients, other classes and a later join are not bounded."""
    info, _ = a_class()
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", options=["a", "b"])
    now = time.time()
    seats = [classes.join(info.code, f"tab{i}", "laptop-7", now=now + i) for i in range(3)]
    assert len({s.token for s in seats}) == 3  # a lost seat can be taken again, twice
    refused = []
    for i in range(240):
        with pytest.raises(ClassRefused) as error:
            classes.join(info.code, "again", "laptop-7", now=now + 3 + i / 12)
        refused.append(error.value)
    first = refused[0]
    assert isinstance(first, RateLimited) and type(first).__name__ == "SeatsLimited"
    assert "has joined this class 3 times in the last 10 minutes" in str(first)
    assert "go on in the seat you have, or join again in 10 min" in str(first)
    assert 0 < first.retry_after <= classes.JOIN_SEATS_WINDOW_S
    assert count_rows(store.members, class_id=info.id) == 3
    assert questions.distribution(q.id).members == 3  # "x of 3 answered", not of 243
    assert classes.join(info.code, "Ada", "laptop-8", now=now + 30).name == "Ada"  # another one
    other, _ = a_class(title="Week 4")
    assert classes.join(other.code, "Ada", "laptop-7", now=now + 30).name == "Ada"  # its own seats
    later = now + classes.JOIN_SEATS_WINDOW_S + 1.5  # the first two seats out of the window
    assert [classes.join(info.code, n, "laptop-7", now=later).name for n in "ab"] == ["a", "b"]
    with pytest.raises(ClassRefused, match="join again in 1 s"):  # the third goes in 0.5 s
        classes.join(info.code, "back", "laptop-7", now=later)


def test_a_room_behind_one_address_is_seated_whole_when_the_server_says_its_size(db, monkeypatch):
    """A school's NAT puts a whole room on one address: VIZ_SEATS_PER_ADDRESS lets the class in,
    and still bounds it."""
    info, _ = a_class()
    monkeypatch.setenv(classes.SEATS_ENV, "40")
    now = time.time()
    assert len({classes.join(info.code, "", "school-nat", now=now).token for _ in range(40)}) == 40
    with pytest.raises(ClassRefused, match="joined this class 40 times"):
        classes.join(info.code, "", "school-nat", now=now)
    for bad in ("0", "-3", "many", ""):
        monkeypatch.setenv(classes.SEATS_ENV, bad)
        assert classes.seats_max() == classes.JOIN_SEATS_MAX


def test_simultaneous_joins_from_one_client_take_three_seats_and_from_30_clients_all_join(db):
    """The bound holds when the joins of one client race (PostgreSQL locks the class's row,
    SQLite writes one at a time), and never refuses a room whose browsers differ: 30 joins at
    once from 30 clients all join (the drill's figure), as the 100 of a_class(100) do."""
    info, _ = a_class()
    results: list[object] = []

    def join(name: str, client: str) -> None:
        try:
            results.append(classes.join(info.code, name, client))
        except (ClassRefused, ClassStateError) as error:
            results.append(error)

    for pairs in (
        [(f"s{i}", "one-laptop") for i in range(10)],
        [(f"s{i}", f"c{i}") for i in range(30)],
    ):
        results.clear()
        threads = [threading.Thread(target=join, args=pair) for pair in pairs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        joined = [r for r in results if isinstance(r, classes.Member)]
        if pairs[0][1] == "one-laptop":
            assert len(joined) == 3
            assert {type(r).__name__ for r in results if r not in joined} == {"SeatsLimited"}
        else:
            assert len(joined) == 30, [str(r) for r in results if r not in joined]
    assert count_rows(store.members, class_id=info.id) == 33


# ---- following ----------------------------------------------------------------------------------


def test_the_view_version_grows_with_every_move_and_view_reads_the_last(db):
    info, _ = a_class()
    assert classes.view(info.id).version == 0 and classes.view(info.id).page == ""
    versions = [
        classes.set_view(info.teacher_key, info.id, "Attention", {"layer": str(i)}).version
        for i in range(5)
    ]
    assert versions == [1, 2, 3, 4, 5]
    seen = classes.view(info.id)
    assert (seen.version, seen.page, seen.params) == (5, "Attention", {"layer": "4"})
    with pytest.raises(ClassRefused):
        classes.set_view(info.teacher_key, info.id, "Attention", {"layer": 1})  # not text


def test_a_student_cannot_act_as_the_teacher_or_another_class_s_teacher(db):
    info, (student,) = a_class(1)
    other, _ = a_class(title="other")
    q = questions.ask(info.teacher_key, info.id, "number", "How many?")
    not_teachers = [student.token, other.teacher_key, "", info.teacher_key + "x"]
    for key in not_teachers:
        with pytest.raises(ClassRefused, match="Only the class's teacher"):
            classes.set_view(key, info.id, "Attention", {})
        with pytest.raises(ClassRefused, match="Only the class's teacher"):
            questions.reveal(key, q.id, 3)
        with pytest.raises(ClassRefused, match="Only the class's teacher"):
            questions.ask(key, info.id, "number", "Again?")
        with pytest.raises(ClassRefused, match="Only the class's teacher"):
            classes.end_class(key, info.id)
        with pytest.raises(ClassRefused, match="Only the class's teacher"):
            classes.delete_class(key, info.id)
    assert classes.view(info.id).version == 0
    assert questions.get_question(q.id).state == "open"
    assert classes.get_class(info.id).active
    with pytest.raises(ClassRefused, match="Join the class first|not in the class"):
        questions.answer(info.teacher_key, q.id, 3)  # nor is the teacher key a student


def test_a_class_number_no_database_holds_is_no_class_not_a_crash(db):
    """Issue 39: a forged teacher cookie `viz_class_teacher=99999999999999999999:x` (cookies
    ignore ports: another app on the host can set it) broke every page with an OverflowError."""
    info, _ = a_class(1)
    for class_id in (10**20, -(10**20), 2**63, 0, -1):
        with pytest.raises(ClassRefused, match="no such class"):
            classes.claim("x", class_id)
        with pytest.raises(ClassRefused, match="no such class"):
            classes.get_class(class_id)
    assert classes.claim(info.teacher_key, info.id).id == info.id


# ---- questions ----------------------------------------------------------------------------------


def test_a_second_answer_is_refused_and_the_first_kept(db):
    info, (ada,) = a_class(1)
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", options=["a", "b", "c"])
    questions.answer(ada.token, q.id, "b")
    with pytest.raises(AlreadyAnswered, match="first answer stands"):
        questions.answer(ada.token, q.id, "c")
    shown = questions.distribution(q.id)
    assert shown.counts == {"a": 0, "b": 1, "c": 0} and shown.total == 1 and shown.members == 1
    assert questions.my_answer(ada.token, q.id) == "b"


def test_answers_must_fit_the_question_and_its_class(db):
    info, (ada, bob, cy, di) = a_class(4)
    t = info.teacher_key
    head = questions.ask(t, info.id, "head", "Which head?", answer_spec={"n_layer": 2, "n_head": 2})
    assert head.options == ("L0 H0", "L0 H1", "L1 H0", "L1 H1")
    with pytest.raises(ClassRefused, match="one of"):
        questions.answer(ada.token, head.id, "L2 H0")
    questions.answer(ada.token, head.id, "L1 H0")
    number = questions.ask(t, info.id, "number", "Loss?", answer_spec={"unit": "nats"})
    assert questions.get_question(head.id).state == "closed"  # asking closed the last one
    with pytest.raises(ClassRefused, match="closed"):
        questions.answer(bob.token, head.id, "L0 H0")
    for bad in ("many", float("nan"), True):
        with pytest.raises(ClassRefused, match="number"):
            questions.answer(bob.token, number.id, bad)
    questions.answer(bob.token, number.id, "2.50")
    questions.answer(cy.token, number.id, 2.5)
    questions.answer(di.token, number.id, 0.1)
    shown = questions.distribution(number.id)
    assert shown.counts == {"2.5": 2, "0.1": 1} and shown.numbers == (0.1, 2.5, 2.5)
    token = questions.ask(t, info.id, "token", "Next token?")
    questions.answer(ada.token, token.id, " the")  # a leading space is part of a token
    assert questions.distribution(token.id).counts == {" the": 1}
    with pytest.raises(ClassRefused, match="kind"):
        questions.ask(t, info.id, "essay", "Why?")
    with pytest.raises(ClassRefused, match="2 to"):
        questions.ask(t, info.id, "choice", "Which?", options=["only"])
    other, (eve,) = a_class(1, "other")
    with pytest.raises(ClassRefused, match="another class"):
        questions.answer(eve.token, token.id, "x")


def test_a_lesson_stop_is_asked_with_its_own_question_and_the_truth_s_form(db):
    info, _ = a_class()
    stop = Stop("Attention", {"layer": 1}, "Look.", "Which head of layer 1 copies?",
                "induction_head", {"layer": 1}, "induction-2l", None)  # fmt: skip
    lesson = Lesson("2_attention", "Attention", "induction-2l", (Stop("Home", {}, "i", "q?",
                    "token_count", {}, "m", None), stop))  # fmt: skip
    truth = Truth("choice", "L1 H2", "why", options=("L1 H0", "L1 H2", "none"))
    q = questions.ask_stop(info.teacher_key, info.id, lesson, 2, truth)
    assert (q.kind, q.prompt, q.options) == ("choice", stop.question, truth.options)
    assert (q.lesson_id, q.step, q.truth) == ("2_attention", 2, None)
    revealed = questions.reveal(info.teacher_key, q.id, truth.value, why=truth.why)
    assert (revealed.state, revealed.truth, revealed.why) == ("revealed", "L1 H2", "why")
    assert questions.open_question(info.id) is None
    assert questions.latest_question(info.id).id == q.id


ANSWERS_SCRIPT = """
import json, sys, threading
from serving.classroom import questions
tokens, qid = json.loads(sys.stdin.read()), int(sys.argv[1])
out = []
def go(token, value):
    try:
        questions.answer(token, qid, value)
        out.append("ok")
    except questions.AlreadyAnswered:
        out.append("again")
threads = [threading.Thread(target=go, args=(t, v)) for t, v in tokens]
threads += [threading.Thread(target=go, args=(t, "b")) for t, _ in tokens]  # each a second time
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(out))
"""


def _answer_all(qid: int, pairs: list[tuple[str, str]]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", ANSWERS_SCRIPT, str(qid)], cwd=REPO,
                          input=json.dumps(pairs), capture_output=True, text=True, timeout=300,
                          env=os.environ.copy())  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_100_answers_at_once_from_threads_are_all_counted(db):
    info, students = a_class(100)
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", options=["a", "b", "c"])
    chosen = ["a" if i % 3 == 0 else "c" for i in range(100)]
    errors = []

    def go(token, value):
        try:
            questions.answer(token, q.id, value)
        except (ClassRefused, ClassStateError) as error:
            errors.append(error)

    threads = [
        threading.Thread(target=go, args=(s.token, v))
        for s, v in zip(students, chosen, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    shown = questions.distribution(q.id)
    assert shown.counts == {"a": chosen.count("a"), "b": 0, "c": chosen.count("c")}
    assert shown.total == 100 == shown.members


def test_100_answers_from_two_processes_at_once_are_all_counted_and_second_ones_refused(db):
    info, students = a_class(100)
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", options=["a", "b", "c"])
    pairs = [(s.token, "a" if i % 2 else "c") for i, s in enumerate(students)]
    with_threads = []
    runners = [
        threading.Thread(target=lambda part=part: with_threads.append(_answer_all(q.id, part)))
        for part in (pairs[:50], pairs[50:])
    ]
    for r in runners:
        r.start()
    for r in runners:
        r.join()
    said = [word for out in with_threads for word in out]
    assert len(said) == 200 and said.count("again") == 100  # 100 first answers, 100 refusals
    shown = questions.distribution(q.id)
    # each student's first answer stands: "b" counts only where a second answer won the race,
    # and then that student's own first answer is the "b" (never both)
    assert shown.total == 100 == count_rows(store.answers, question_id=q.id)
    assert sum(shown.counts.values()) == 100


# ---- the leaderboard and the dashboard ----------------------------------------------------------


def write_run(name: str, settings: RunSettings, status: dict, text: str | None = None) -> Path:
    """A run folder as jobs.start and the worker leave it (settings, status, the tokenizer)."""
    path = jobs.run_dir(name)
    path.mkdir(parents=True)
    if text is not None:
        write_text(path / "text.txt", text)
        settings = RunSettings.from_dict(
            {**settings.to_dict(), "text_file": str(path / "text.txt")}
        )
    source = load_text(settings.data_source())
    Tokenizer.train(source, settings.tokenizer, settings.vocab_size).save(path / "tokenizer.json")
    write_json(path / "status.json", {"state": "finished", "step": 100, **status})
    write_json(path / "settings.json", settings.to_dict())
    return path


ENGLISH = " ".join(
    f"the {a} sat on the {b} and the {c} ran to the {a}."
    for a in ("cat", "dog", "bird", "fox") for b in ("mat", "log", "hill") for c in ("hen", "cow")
) * 20  # fmt: skip


def test_the_leaderboard_ranks_by_validation_bits_per_character(db):
    info, (ada, bob, cy) = a_class(3)
    char = RunSettings(task="repeat", task_examples=300, preset="tiny")
    bpe = RunSettings(text_file="mine.txt", tokenizer="bpe", vocab_size=300, preset="tiny")
    write_run("ada-char", char, {"val_loss": 1.2})
    bob_path = write_run("bob-bpe", bpe, {"val_loss": 2.5, "state": "stopped"}, ENGLISH)
    write_run("cy-new", char, {"state": "running", "val_loss": None, "step": 3})
    for who, run in ((ada, "ada-char"), (bob, "bob-bpe"), (cy, "cy-new")):
        board.register_run(who.token, run)
    rows = board.leaderboard(info.id)
    per = validation_chars_per_token(
        ENGLISH, Tokenizer.load(bob_path / "tokenizer.json"), bpe.val_fraction
    )
    assert per > 2.5 / 1.2  # so Bob's higher loss per token is the lower per character
    assert [(r.rank, r.name, r.run_id) for r in rows] == [
        (1, "s1", "bob-bpe"),
        (2, "s0", "ada-char"),
        (None, "s2", "cy-new"),
    ]
    assert rows[0].bits_per_char == pytest.approx(bits_per_char(2.5, per))
    assert rows[1].bits_per_char == pytest.approx(1.2 / LN2)
    assert rows[0].state == "stopped" and rows[2].bits_per_char is None
    assert "bpe 300" in rows[0].settings and "tiny" in rows[1].settings


def test_a_run_is_refused_when_it_is_another_s_older_than_the_member_or_outside_budget(db):
    info, (ada, bob) = a_class(2)
    char = RunSettings(corpus="shakespeare", preset="tiny", minutes=1.0)
    old = write_run("old-run", char, {"val_loss": 1.0})
    os.utime(old / "settings.json", (time.time() - 3600, time.time() - 3600))
    with pytest.raises(ClassRefused, match="before you joined"):
        board.register_run(ada.token, "old-run")
    write_run("ada-run", char, {"val_loss": 1.0})
    board.register_run(ada.token, "ada-run")
    board.register_run(ada.token, "ada-run")  # twice by its owner: fine
    with pytest.raises(ClassRefused, match="another student's run"):
        board.register_run(bob.token, "ada-run")
    with pytest.raises(ClassRefused, match="no run named"):
        board.register_run(bob.token, "no-such-run")
    board.class_budget(info.teacher_key, info.id, "shakespeare", minutes=0.5)
    assert board.budget(info.id) == board.Budget("shakespeare", None, 0.5)
    write_run("bob-long", char, {"val_loss": 1.0})
    with pytest.raises(ClassRefused, match="0.5 minutes"):
        board.register_run(bob.token, "bob-long")
    board.class_budget(info.teacher_key, info.id, "shakespeare", tokens=1000)
    steps = RunSettings(
        corpus="shakespeare", preset="tiny", train={"max_steps": 10, "batch_size": 1}
    )
    write_run("bob-steps", steps, {"val_loss": 1.0})  # 10 x 1 x 64 = 640 tokens
    board.register_run(bob.token, "bob-steps")
    with pytest.raises(ClassRefused, match="Only the class's teacher"):  # a student sets none
        board.class_budget(ada.token, info.id, "shakespeare", tokens=10**9)
    assert [r.run_id for r in board.leaderboard(info.id)] == ["ada-run", "bob-steps"]


def test_the_dashboard_counts_who_is_connected_following_where_and_what_trains(db):
    info, (ada, bob, cy, di) = a_class(4)
    now = time.time() + 100
    classes.heartbeat(ada.token, "Attention", True, now=now)
    classes.heartbeat(bob.token, "Attention", True, now=now - 5)
    classes.heartbeat(cy.token, "Tokenization", False, now=now - 10)
    classes.heartbeat(di.token, "Attention", True, now=now - board.CONNECTED_S - 1)  # gone
    q = questions.ask(info.teacher_key, info.id, "number", "How many?")
    questions.answer(ada.token, q.id, 1)
    questions.answer(di.token, q.id, 2)
    settings = RunSettings(task="repeat", task_examples=300, preset="tiny")
    live = write_run("live", settings, {"state": "running"})
    write_run("dead", settings, {"state": "running", "pid": 999_999_999})  # interrupted
    # a process whose command line is this run's worker's: what jobs.read takes for a live one
    command = [sys.executable, "-c", "import time; time.sleep(120)", jobs.WORKER, str(live)]
    worker = subprocess.Popen(command)
    try:
        started = jobs.process_started(worker.pid)  # liveness checks the pid's start time
        status = {"state": "running", "step": 5, "pid": worker.pid, "pid_started": started}
        write_json(live / "status.json", status)
        board.register_run(bob.token, "live")
        board.register_run(cy.token, "dead")
        shown = board.dashboard(info.id, now=now)
    finally:
        worker.kill()
        worker.wait()
    assert (shown.members, shown.connected, shown.following) == (4, 3, 2)
    assert shown.pages == {"Attention": 2, "Tokenization": 1}
    assert (shown.question_id, shown.answered) == (q.id, 2)
    assert shown.training == ("live",)


# ---- ending, deleting, faults -------------------------------------------------------------------


def test_ending_keeps_the_record_and_deleting_removes_it(db):
    info, (ada, bob) = a_class(2)
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", options=["a", "b"])
    questions.answer(ada.token, q.id, "a")
    write_run("ada-run", RunSettings(task="repeat", task_examples=300, preset="tiny"), {})
    board.register_run(ada.token, "ada-run")
    ended = classes.end_class(info.teacher_key, info.id)
    assert not ended.active and classes.find_class(info.code).id == info.id
    assert info.id not in [c.id for c in classes.active_classes()]
    with pytest.raises(ClassRefused, match="ended"):
        classes.join(info.code, "late", "x")
    with pytest.raises(ClassRefused, match="closed"):
        questions.answer(bob.token, q.id, "b")
    assert questions.distribution(q.id).counts == {"a": 1, "b": 0}
    assert [r.run_id for r in board.leaderboard(info.id)] == ["ada-run"]
    other, (eve,) = a_class(1, "other")
    other_q = questions.ask(other.teacher_key, other.id, "number", "n?")
    questions.answer(eve.token, other_q.id, 1)
    classes.delete_class(info.teacher_key, info.id)
    assert classes.find_class(info.code) is None
    with pytest.raises(ClassRefused, match="no such question"):
        questions.distribution(q.id)
    with pytest.raises(ClassRefused):
        classes.member(ada.token)
    for table in (store.members, store.questions, store.runs):
        assert count_rows(table, class_id=info.id) == 0
    assert count_rows(store.answers, question_id=q.id) == 0
    assert (jobs.runs_root() / "ada-run" / "settings.json").is_file()  # the model stays
    assert questions.distribution(other_q.id).total == 1  # the other class is untouched


def test_a_locked_sqlite_database_gives_a_class_state_error_a_teacher_can_read(tmp_path):
    path = tmp_path / "class.sqlite3"
    url = f"sqlite:///{path}?timeout=0.2"
    info = classes.start_class(OPEN, "x", db=url)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a long write
    try:
        with pytest.raises(ClassStateError) as refused:
            classes.join(info.code, "ada", "c1", db=url)
        assert classes.view(info.id, db=url).version == 0  # WAL: reading still works
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    message = str(refused.value)
    assert (
        "busy" in message and str(path) in message and "Exploring the pages still works" in message
    )
    assert "Traceback" not in message and "SELECT" not in message
    assert classes.join(info.code, "ada", "c1", db=url).name == "ada"  # and after: all well


def test_an_unreachable_postgresql_gives_a_class_state_error(tmp_path):
    port = get_port(None)  # a free one: nothing listens there
    url = f"postgresql+psycopg://viz@127.0.0.1:{port}/viz?connect_timeout=2"
    with pytest.raises(ClassStateError, match=f"cannot be reached.*127.0.0.1:{port}|{port}"):
        classes.find_class("ABCDEF", db=url)


def test_a_postgresql_url_without_its_driver_names_the_extra_that_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if viz-gpt[postgres] were left out
    url = "postgresql+psycopg://viz@127.0.0.1:1/viz"
    with pytest.raises(ClassStateError, match=r"\(psycopg\).*pip install 'viz-gpt\[postgres\]'"):
        store.engine(url)


def test_a_database_of_another_schema_version_is_refused(tmp_path):
    path = tmp_path / "class.sqlite3"
    url = f"sqlite:///{path}"
    store.engine(url)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE class_meta SET value = '99' WHERE key = 'schema'")
    store.dispose(url)  # a new process meets it
    with pytest.raises(ClassStateError, match="another version"):
        store.engine(url)


def test_a_database_of_the_first_schema_gets_every_later_column_and_keeps_its_classes(
    tmp_path,
):
    path = tmp_path / "class.sqlite3"
    url = f"sqlite:///{path}"
    info = classes.start_class(OPEN, "Before the upgrade", db=url)
    with sqlite3.connect(path) as conn:  # the database as schema 1 made it
        conn.execute("ALTER TABLE class_questions DROP COLUMN answer")
        conn.execute("ALTER TABLE class_questions DROP COLUMN answer_why")
        conn.execute("ALTER TABLE class_questions DROP COLUMN closes_at")
        conn.execute("ALTER TABLE class_members DROP COLUMN client_hash")
        conn.execute("UPDATE class_meta SET value = '1' WHERE key = 'schema'")
    store.dispose(url)  # a new process of the new version meets it
    q = questions.ask(info.teacher_key, info.id, "number", "n?", answer=3, seconds=30, db=url)
    assert questions.reveal(info.teacher_key, q.id, db=url).truth == "3"
    assert q.closes_at == pytest.approx(q.opened_at + 30)  # schema 3's timer, through 2
    assert classes.find_class(info.code, db=url).title == "Before the upgrade"
    for _ in range(classes.JOIN_SEATS_MAX):  # schema 4's seat bound, through 2 and 3
        classes.join(info.code, "", "one-laptop", db=url)
    with pytest.raises(RateLimited, match="3 times"):
        classes.join(info.code, "", "one-laptop", db=url)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM class_meta").fetchone() == (store.SCHEMA_VERSION,)


def test_the_answer_kept_at_asking_is_revealed_from_any_session_and_only_then_shown(db):
    """The teacher's page measured the answer when it asked; a reload (a new session, another
    process) reveals that answer: nothing of it lives in one session's memory."""
    info, (ada,) = a_class(1)
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", ["a", "b"], answer="b",
                      answer_why="measured")  # fmt: skip
    seen = questions.latest_question(info.id)  # what every follower's box reads
    assert (seen.truth, seen.why, seen.state) == (None, None, "open")
    with pytest.raises(ClassRefused):
        questions.reveal(ada.token, q.id)  # a student cannot reveal it
    revealed = questions.reveal(info.teacher_key, q.id)
    assert (revealed.state, revealed.truth, revealed.why) == ("revealed", "b", "measured")
    empty = questions.ask(info.teacher_key, info.id, "token", "Next token?")
    with pytest.raises(ClassRefused, match="no answer to reveal"):
        questions.reveal(info.teacher_key, empty.id)
    assert questions.reveal(info.teacher_key, empty.id, " the").truth == " the"  # given: shown


def test_a_timed_question_takes_answers_until_its_time_then_turns_closed_by_itself(db, monkeypatch):
    """Issue 37: the teacher's timer. Answers within it count; after it the question is closed
    for everyone (its state, the open question, a late answer) with no write by anyone."""
    info, (ada, bo) = a_class(2)
    q = questions.ask(info.teacher_key, info.id, "choice", "Which?", ["a", "b"], seconds=30)
    assert (q.state, q.closes_at - q.opened_at) == ("open", pytest.approx(30))
    assert 29 < q.seconds_left() <= 30
    questions.answer(ada.token, q.id, "a")

    class Later:  # the clock 31 s on
        @staticmethod
        def time() -> float:
            return q.opened_at + 31

    monkeypatch.setattr(questions, "time", Later)
    late = questions.latest_question(info.id)
    assert (late.state, late.seconds_left(), late.closed_at) == ("closed", 0.0, None)
    assert questions.open_question(info.id) is None
    with pytest.raises(ClassRefused, match="Time is up"):
        questions.answer(bo.token, q.id, "b")
    assert questions.distribution(q.id).total == 1
    assert questions.reveal(info.teacher_key, q.id, "a").state == "revealed"  # reveal still works
    for bad in (0, 4, 3601, float("nan"), "soon"):
        with pytest.raises(ClassRefused, match="timer"):
            questions.ask(info.teacher_key, info.id, "number", "n?", seconds=bad)
    assert questions.ask(info.teacher_key, info.id, "number", "n?").closes_at is None


def test_the_answers_export_is_the_teachers_a_row_an_answer_and_runs_no_formula(db):
    import csv
    import io

    info, (ada, bob) = a_class(2)
    classes.join(info.code, "=HYPERLINK(1)", "client-x")  # a name typed to run in a spreadsheet
    evil = classes.join(info.code, "=cmd", "client-y")
    q = questions.ask(info.teacher_key, info.id, "number", "How many?", answer=3)
    questions.answer(ada.token, q.id, 3)
    questions.answer(bob.token, q.id, -1.5)
    questions.answer(evil.token, q.id, 3)
    before = list(csv.reader(io.StringIO(questions.answers_csv(info.teacher_key, info.id))))
    assert before[0][:6] == ["question", "asked", "lesson", "stop", "student", "answer"]
    assert [r[4:7] for r in before[1:]] == [["s0", "3", ""], ["s1", "-1.5", ""], ["'=cmd", "3", ""]]
    questions.reveal(info.teacher_key, q.id)
    after = list(csv.reader(io.StringIO(questions.answers_csv(info.teacher_key, info.id))))
    assert [r[6] for r in after[1:]] == ["true", "false", "true"]
    with pytest.raises(ClassRefused):
        questions.answers_csv(ada.token, info.id)  # a student cannot read the class's answers


def test_heartbeats_in_one_write_set_each_students_page_and_following(db):
    info, (ada, bob, cy) = a_class(3)
    now = time.time() + 100
    classes.heartbeats(
        [(ada.token, "Attention", True), (bob.token, "Next_token", False), ("nobody", "X", True)],
        now=now,
    )
    shown = board.dashboard(info.id, now=now)
    assert (shown.connected, shown.following) == (2, 1)  # cy sent none; an unknown token: nothing
    assert shown.pages == {"Attention": 1, "Next_token": 1}


def test_a_change_check_sees_every_commit_and_says_nothing_moved_when_none_came(db):
    info, _ = a_class()
    changed = store.Changes()
    assert changed()  # the first look cannot know: read
    classes.set_view(info.teacher_key, info.id, "Attention", {"layer": "1"})
    assert _soon(changed)
    assert not changed()
    classes.view(info.id)  # a read is no change
    assert not changed()
    answered = in_another_process(
        "import json; from serving.classroom import classes\n"
        f"classes.set_view({info.teacher_key!r}, {info.id}, 'Next_token', {{}})\n"
        "print(json.dumps(True))"
    )
    assert answered and _soon(changed) and not changed()  # another process's commit too
    changed.close()


def _soon(check, within: float = 2.0) -> bool:
    """PostgreSQL delivers a notification just after the commit returns: look for a moment."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
