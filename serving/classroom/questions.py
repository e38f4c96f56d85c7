"""Asking the room: the teacher poses one question at a time, each student answers once, the
distribution fills live, and the teacher reveals the truth the UI measured on the model.

    q = questions.ask(key, class_id, "choice", "Which head copies?", options=["L1 H0", "L1 H2"])
    q = questions.ask_stop(key, class_id, lesson, 3, truth)      # a lesson stop's own question
    questions.answer(member_token, q.id, "L1 H2")                # a second answer: AlreadyAnswered
    questions.distribution(q.id)       # Distribution(counts={"L1 H0": 0, "L1 H2": 1}, total=1, ...)
    questions.reveal(key, q.id, "L1 H2", why="ablating it raises the loss by ...")

Kinds, as a lesson's answer forms (viz_model/lessons/truth.py) plus a head:
- choice: one of `options` (2 to 12 texts);
- number: a finite number; answer_spec {"unit": "bits"} is shown beside it;
- token: a token's text as typed (1 to 40 characters, not stripped: " the" is not "the");
- head: "L{layer} H{head}" as the Attention page names a head; answer_spec {"n_layer", "n_head"}.

A class has at most one open question: asking a new one closes the last. An answer is one row
under a unique (question, member) constraint, so of two answers from one student, in any
processes at once, the first is kept and the second refused. reveal() closes the question and
stores the truth (and the reveal's Markdown), which the followers' panels then show.

Not here: computing the truth (viz_model/lessons answer kinds, run by the UI on its model).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import exc, func, select, update
from sqlalchemy.engine import Connection, Row

from serving.classroom import store
from serving.classroom.classes import Teacher, check_teacher, member_row
from serving.classroom.store import ClassRefused
from viz_model.lessons.lesson_file import Lesson
from viz_model.lessons.truth import Truth, head_names

KINDS = ("choice", "number", "token", "head")
OPTIONS_MAX = 12
OPTION_MAX = 80
TOKEN_MAX = 40
PROMPT_MAX = 1000
HEADS_MAX = 64  # layers x heads a head question may offer, as options
TIMER_S = (5, 3600)  # the shortest and longest time a teacher may give the room to answer


class AlreadyAnswered(ClassRefused):
    """A second answer to one question: the first stands."""


@dataclass(frozen=True)
class Question:
    id: int
    class_id: int
    kind: str
    prompt: str
    options: tuple[str, ...]  # choice and head: what a student picks from
    spec: dict[str, Any]
    lesson_id: str | None
    step: int | None
    opened_at: float
    closed_at: float | None
    truth: str | None = None  # after reveal
    why: str | None = None  # after reveal: Markdown (user text in it escaped by its maker)
    # the answer the teacher's page measured when asking: what Reveal shows, from any session of
    # the teacher's (a reload keeps it); never drawn for a student before the reveal
    answer: str | None = field(default=None, repr=False)
    answer_why: str = field(default="", repr=False)
    closes_at: float | None = None  # the teacher's timer: answers are taken until then

    @property
    def state(self) -> str:
        """revealed, closed (by the teacher, or its time is up), or open: read now, so a timed
        question turns closed by itself (the class watcher sees it and redraws the boxes)."""
        if self.truth is not None:
            return "revealed"
        return "open" if self.closed_at is None and not self.timed_out() else "closed"

    def timed_out(self, now: float | None = None) -> bool:
        return (
            self.closes_at is not None and (time.time() if now is None else now) >= self.closes_at
        )

    def seconds_left(self, now: float | None = None) -> float | None:
        """Seconds until a timed question closes (0 when past), None without a timer."""
        if self.closes_at is None:
            return None
        return max(0.0, self.closes_at - (time.time() if now is None else now))


@dataclass(frozen=True)
class Distribution:
    """The answers so far: counts by answer (every option, from zero, for choice and head; by
    value otherwise, most given first), how many answered, and how many are in the class."""

    question_id: int
    counts: dict[str, int]
    total: int
    members: int
    numbers: tuple[float, ...] = field(default=())  # number questions: every answer, sorted


# ---- asking -------------------------------------------------------------------------------------


def _options(kind: str, options: Sequence[str] | None, spec: dict[str, Any]) -> tuple[str, ...]:
    if kind == "choice":
        found = tuple(str(o).strip() for o in options or ())
        if not 2 <= len(found) <= OPTIONS_MAX or len(set(found)) != len(found):
            raise ClassRefused(f"a choice question has 2 to {OPTIONS_MAX} different options")
        if any(not o or len(o) > OPTION_MAX for o in found):
            raise ClassRefused(f"an option is 1 to {OPTION_MAX} characters")
        return found
    if options:
        raise ClassRefused(f"a {kind} question takes no options")
    if kind == "head":
        layers, heads = spec.get("n_layer"), spec.get("n_head")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (layers, heads)) or not (
            0 < layers * heads <= HEADS_MAX and layers > 0
        ):
            raise ClassRefused(
                f'a head question needs answer_spec {{"n_layer": L, "n_head": H}}, L x H up to '
                f"{HEADS_MAX}"
            )
        return head_names(layers, heads)
    return ()


def ask(
    teacher: Teacher,
    class_id: int,
    kind: str,
    prompt: str,
    options: Sequence[str] | None = None,
    answer_spec: dict[str, Any] | None = None,
    *,
    lesson: tuple[str, int] | None = None,
    answer: str | float | None = None,
    answer_why: str = "",
    seconds: float | None = None,
    db: str | None = None,
) -> Question:
    """Open a question (closing the class's open one, if any). `lesson` = (lesson id, step)
    records which lesson stop it is, so a follower can show that stop; `answer` (and its
    Markdown `answer_why`) is what reveal() will show, kept in the database so that any session
    of the teacher's can reveal it (None: the teacher left it empty, nothing to reveal);
    `seconds`: a timer, after which no answer is taken (None: until the teacher closes it)."""
    if kind not in KINDS:
        raise ClassRefused(f"a question's kind is one of {', '.join(KINDS)}, not {kind!r}")
    prompt = str(prompt or "").strip()
    if not prompt or len(prompt) > PROMPT_MAX:
        raise ClassRefused(f"a question is 1 to {PROMPT_MAX} characters")
    spec = dict(answer_spec or {})
    found = _options(kind, options, spec)
    lesson_id, step = lesson if lesson is not None else (None, None)
    kept = None if answer is None else _as_truth(kind, answer)
    now = time.time()
    closes_at = None if seconds is None else now + _timer(seconds)
    q = store.questions
    with store.writing(db) as conn:
        row = check_teacher(conn, class_id, teacher)
        if row.ended_at is not None:
            raise ClassRefused("This class has ended.")
        conn.execute(
            update(q).where(q.c.class_id == class_id, q.c.closed_at.is_(None)).values(closed_at=now)
        )
        made = conn.execute(
            q.insert().values(
                class_id=class_id,
                kind=kind,
                prompt=prompt,
                options=json.dumps(list(found)),
                spec=json.dumps(spec, sort_keys=True),
                lesson_id=lesson_id,
                step=step,
                opened_at=now,
                answer=kept,
                answer_why=str(answer_why or ""),
                closes_at=closes_at,
            )
        )
        return _question(_row(conn, made.inserted_primary_key[0]))


def _timer(seconds: float) -> float:
    lo, hi = TIMER_S
    try:
        found = float(seconds)
    except (TypeError, ValueError):
        raise ClassRefused(f"a timer is {lo} to {hi} seconds") from None
    if not lo <= found <= hi:  # NaN included
        raise ClassRefused(f"a timer is {lo} to {hi} seconds")
    return found


def ask_stop(
    teacher: Teacher,
    class_id: int,
    lesson: Lesson,
    step: int,
    truth: Truth,
    *,
    seconds: float | None = None,
    db: str | None = None,
) -> Question:
    """Ask lesson stop `step` (1-based) of `lesson`: its question, in the form of `truth` (the
    stop's answer kind measured on the teacher's model: its options for a choice). The truth is
    kept for the reveal, not shown before it."""
    stop = lesson.stop(step)
    spec: dict[str, Any] = {}
    if truth.form == "number":  # how far from the truth still counts as right, as in the lesson
        spec = {"unit": truth.unit} if truth.unit else {}
        spec["tolerance"] = truth.tolerance
    options = truth.options if truth.form == "choice" else None
    return ask(
        teacher,
        class_id,
        truth.form,
        stop.question,
        options,
        spec,
        lesson=(lesson.id, step),
        answer=truth.value,
        answer_why=truth.why,
        seconds=seconds,
        db=db,
    )


def _row(conn: Connection, question_id: int) -> Row:
    row = conn.execute(select(store.questions).where(store.questions.c.id == question_id)).first()
    if row is None:
        raise ClassRefused("There is no such question (its class may have been deleted).")
    return row


def _question(row: Row) -> Question:
    return Question(
        row.id,
        row.class_id,
        row.kind,
        row.prompt,
        tuple(json.loads(row.options)),
        json.loads(row.spec),
        row.lesson_id,
        row.step,
        row.opened_at,
        row.closed_at,
        row.truth,
        row.why,
        row.answer,
        row.answer_why or "",
        row.closes_at,
    )


def _as_truth(kind: str, value: str | float) -> str:
    """A truth as stored: a number in the form answers are stored in, else its text."""
    if kind == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ClassRefused("the answer to a number question is a number") from None
        if not math.isfinite(number):
            raise ClassRefused("the answer to a number question is a finite number")
        return format(number, ".12g")
    return str(value)[:200]


def open_question(class_id: int, *, db: str | None = None) -> Question | None:
    """The question the class is answering now (not closed, its time not up), or None."""
    q = store.questions
    with store.reading(db) as conn:
        row = conn.execute(
            select(q)
            .where(q.c.class_id == class_id, q.c.closed_at.is_(None))
            .order_by(q.c.id.desc())
        ).first()
    found = _question(row) if row is not None else None
    return found if found is not None and found.state == "open" else None


def latest_question(class_id: int, *, db: str | None = None) -> Question | None:
    """The class's last question, open, closed or revealed (what a follower's panel shows)."""
    q = store.questions
    with store.reading(db) as conn:
        row = conn.execute(
            select(q).where(q.c.class_id == class_id).order_by(q.c.id.desc()).limit(1)
        ).first()
    return _question(row) if row is not None else None


def get_question(question_id: int, *, db: str | None = None) -> Question:
    with store.reading(db) as conn:
        return _question(_row(conn, question_id))


# ---- answering ----------------------------------------------------------------------------------


def check_value(question: Question, value: Any) -> tuple[str, float | None]:
    """(the answer as stored, its number for a number question); ClassRefused when it does not
    fit the question's kind."""
    if question.kind == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ClassRefused("answer with a number") from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise ClassRefused("answer with a finite number")
        return format(number, ".12g"), number
    if not isinstance(value, str):
        raise ClassRefused("answer with text")
    if question.kind == "token":
        if not value or len(value) > TOKEN_MAX:
            raise ClassRefused(f"a token is 1 to {TOKEN_MAX} characters")
        return value, None
    if value not in question.options:
        raise ClassRefused(f"answer with one of: {', '.join(question.options)}")
    return value, None


def is_right(question: Question, value: str | float | None) -> bool:
    """Whether an answer agrees with the revealed truth, checked as a lesson checks it
    (viz_model/lessons/truth.py): a number within the question's tolerance, a token with ␣ for a
    space, an option exactly. False before the reveal."""
    if question.truth is None or value is None:
        return False
    if question.kind == "number":
        tolerance = float(question.spec.get("tolerance", 0.0))
        truth = Truth("number", float(question.truth), "", tolerance=tolerance)
    elif question.kind == "token":
        truth = Truth("token", question.truth, "")
    else:
        return str(value) == question.truth
    return truth.check(value)


def answer(member_token: str, question_id: int, value: Any, *, db: str | None = None) -> None:
    """The student's answer, once: AlreadyAnswered for a second one (the first stands),
    ClassRefused for a closed question, another class's question or a value that does not fit."""
    now = time.time()
    try:
        with store.writing(db) as conn:
            who = member_row(conn, member_token)
            question = _question(_row(conn, question_id))
            if question.class_id != who.class_id:
                raise ClassRefused("This question belongs to another class.")
            if question.closed_at is not None:
                raise ClassRefused("This question is closed.")
            if question.timed_out(now):
                raise ClassRefused("Time is up: this question no longer takes answers.")
            text, number = check_value(question, value)
            conn.execute(
                store.answers.insert().values(
                    question_id=question_id, member_id=who.id, value=text, number=number, at=now
                )
            )
    except exc.IntegrityError:
        raise AlreadyAnswered(
            "You have already answered this question; your first answer stands."
        ) from None


def my_answer(member_token: str, question_id: int, *, db: str | None = None) -> str | None:
    """The student's answer to the question, None before answering (a panel after a reload)."""
    a = store.answers
    with store.reading(db) as conn:
        who = member_row(conn, member_token)
        return conn.execute(
            select(a.c.value).where(a.c.question_id == question_id, a.c.member_id == who.id)
        ).scalar()


def distribution(question_id: int, *, db: str | None = None) -> Distribution:
    """How the class answered so far: one grouped count and one count of members."""
    a = store.answers
    with store.reading(db) as conn:
        question = _question(_row(conn, question_id))
        grouped = conn.execute(
            select(a.c.value, func.count())
            .where(a.c.question_id == question_id)
            .group_by(a.c.value)
        ).all()
        members = conn.execute(
            select(func.count()).where(store.members.c.class_id == question.class_id)
        ).scalar()
        numbers = ()
        if question.kind == "number":
            numbers = tuple(
                conn.execute(
                    select(a.c.number).where(a.c.question_id == question_id).order_by(a.c.number)
                ).scalars()
            )
    found = dict(grouped)
    if question.options:
        counts = {o: found.get(o, 0) for o in question.options}
    else:
        counts = dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))
    return Distribution(question_id, counts, sum(found.values()), members, numbers)


def answers_csv(teacher: Teacher, class_id: int, *, db: str | None = None) -> str:
    """Every answer of the class as CSV text, for the teacher to keep: one row an answer, with
    its question, lesson stop, the student's name as typed, the answer, whether it was right
    (empty before the reveal) and when (ISO time, UTC). The teacher's only."""
    import csv
    import io

    a, q, m = store.answers, store.questions, store.members
    with store.reading(db) as conn:
        check_teacher(conn, class_id, teacher)
        rows = conn.execute(
            select(q, m.c.name, a.c.value, a.c.at)
            .join(a, a.c.question_id == q.c.id)
            .join(m, m.c.id == a.c.member_id)
            .where(q.c.class_id == class_id)
            .order_by(q.c.id, a.c.at)
        ).all()
    out = io.StringIO()
    table = csv.writer(out)
    table.writerow(["question", "asked", "lesson", "stop", "student", "answer", "right", "at"])
    for row in rows:
        question = _question(row)
        right = "" if question.truth is None else str(is_right(question, row.value)).lower()
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(row.at))
        cells = [question.id, question.prompt, question.lesson_id or "", question.step or "",
                 row.name, row.value, right, when]  # fmt: skip
        table.writerow([_no_formula(str(c)) for c in cells])
    return out.getvalue()


def _no_formula(cell: str) -> str:
    """A cell a spreadsheet would run as a formula (a name typed as "=HYPERLINK(...)") gets a
    leading apostrophe, as OWASP advises for CSV exports; a number ("-1.5") stays a number."""
    try:
        float(cell)
        return cell
    except ValueError:
        return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


# ---- closing and revealing ----------------------------------------------------------------------


def close(teacher: Teacher, question_id: int, *, db: str | None = None) -> Question:
    """Stop taking answers (the distribution stays)."""
    q = store.questions
    with store.writing(db) as conn:
        row = _row(conn, question_id)
        check_teacher(conn, row.class_id, teacher)
        conn.execute(
            update(q)
            .where(q.c.id == question_id, q.c.closed_at.is_(None))
            .values(closed_at=time.time())
        )
        return _question(_row(conn, question_id))


def reveal(
    teacher: Teacher,
    question_id: int,
    truth: str | float | None = None,
    why: str | None = None,
    *,
    db: str | None = None,
) -> Question:
    """Close the question and store its truth (as the UI measured it on the model) and the
    reveal's Markdown, for every follower to see. Without `truth`, the answer kept when it was
    asked (ClassRefused when there is none)."""
    now = time.time()
    q = store.questions
    with store.writing(db) as conn:
        row = _row(conn, question_id)
        check_teacher(conn, row.class_id, teacher)
        if truth is None:
            if row.answer is None:
                raise ClassRefused("This question has no answer to reveal (it was asked without).")
            truth, why = row.answer, row.answer_why if why is None else why
        text = _as_truth(row.kind, truth)
        conn.execute(
            update(q)
            .where(q.c.id == question_id)
            .values(
                truth=text,
                why=str(why or ""),
                revealed_at=now,
                closed_at=row.closed_at if row.closed_at is not None else now,
            )
        )
        return _question(_row(conn, question_id))
