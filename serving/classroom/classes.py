"""A class: started by the teacher, joined by code, and the teacher's view that students follow.

    info = classes.start_class(auth, "Attention, week 3")   # info.code "K7PQ2M", info.teacher_key
    me = classes.join("k7pq2m", "Ada", client_key)           # me.token: the student's secret
    classes.set_view(info.teacher_key, info.id, "Attention", {"layer": "1", "head": "2"})
    classes.view(info.id)                                    # View(version=1, page=..., params=...)
    classes.heartbeat(me.token, "Attention", following=True)

Who may do what. The teacher acts with a `Teacher`: the class's teacher key (`ClassInfo
.teacher_key`, a secret made by start_class that the teacher's session keeps) or, when the server
has a teacher password, the password as a `jobs.Auth` (so a teacher who lost the key, or opens a
second tab, can take the class back). A student acts with the member token `join` made; a token
is never a teacher key, so a student cannot act as the teacher or as another student. Starting a
class needs the teacher password when the server has one (`jobs.check`, as for runs).

Join codes are 6 characters from an alphabet without 0/O/1/I (about a billion codes); wrong
codes are counted in the database per client key (the UI passes something stable for a browser,
e.g. its IP address or a cookie), so at most JOIN_FAILURES_MAX a minute hold across every server
process; the refusal (`RateLimited`) says when to try again. Seats are bounded the same way: at
most JOIN_SEATS_MAX joins of one class from one client key within JOIN_SEATS_WINDOW_S (a
student who lost a seat may take another; a script cannot fill "Joined" and "x of N answered"
with hundreds), refused as `SeatsLimited`. Names are stripped and cut to NAME_MAX characters and
stored as typed: the UI escapes them wherever it draws them.

`view(class_id)` is one primary-key row read, for 100 students polling about once a second.

Not here: questions (questions.py), runs and the dashboard (board.py), the database (store.py).
"""

from __future__ import annotations

import hmac
import json
import math
import os
import secrets
import time
from dataclasses import dataclass, field

from sqlalchemy import bindparam, delete, exc, func, select, update
from sqlalchemy.engine import Connection, Row

from serving import jobs
from serving.classroom import store
from serving.classroom.store import ClassRefused

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read off a projector
CODE_LENGTH = 6
NAME_MAX = 40
TITLE_MAX = 120
PAGE_MAX = 100
PARAMS_MAX = 16000  # characters of the view's params as JSON: a 5,000-character prompt, escaped
JOIN_FAILURES_MAX = 10  # wrong codes a client key may try ...
JOIN_WINDOW_S = 60.0  # ... in this many seconds
JOIN_SEATS_MAX = 3  # seats one client key may take in one class (SEATS_ENV sets another) ...
SEATS_ENV = "VIZ_SEATS_PER_ADDRESS"  # a room whose laptops share one address (a NAT): its size
JOIN_SEATS_WINDOW_S = 600.0  # ... in this many seconds

Teacher = jobs.Auth | str  # the teacher password (jobs.Auth) or the class's teacher key


class RateLimited(ClassRefused):
    """Too many wrong join codes from one client: `retry_after` seconds until the next try."""

    def __init__(self, retry_after: float, message: str | None = None):
        self.retry_after = retry_after
        super().__init__(
            message
            or f"Too many wrong codes from this browser; try again in {math.ceil(retry_after)} s."
        )


class SeatsLimited(RateLimited):
    """One client key took JOIN_SEATS_MAX seats of this class within JOIN_SEATS_WINDOW_S."""

    def __init__(self, retry_after: float):
        minutes = f"{JOIN_SEATS_WINDOW_S / 60:g} minutes"
        wait = math.ceil(retry_after)
        wait_words = f"{wait} s" if wait < 60 else f"{math.ceil(wait / 60)} min"
        super().__init__(
            retry_after,
            f"This browser's network address has joined this class {seats_max()} times in "
            f"the last {minutes}, the most it may: go on in the seat you have, or join again in "
            f"{wait_words}.",
        )


@dataclass(frozen=True)
class ClassInfo:
    id: int
    code: str
    title: str
    created_at: float
    ended_at: float | None
    teacher_key: str | None = field(default=None, repr=False)  # only from start_class

    @property
    def active(self) -> bool:
        return self.ended_at is None


@dataclass(frozen=True)
class Member:
    id: int
    class_id: int
    name: str
    joined_at: float
    token: str | None = field(default=None, repr=False)  # only from join


@dataclass(frozen=True)
class View:
    """The teacher's current view: a page's URL path and its query params; `version` grows by
    one at each set_view, so a student's poll sees a move by comparing one number."""

    version: int
    page: str
    params: dict[str, str]
    updated_at: float | None
    ended: bool = False  # the teacher ended the class (its last move: the version grew)


# ---- who is who ---------------------------------------------------------------------------------


def check_password(auth: jobs.Auth) -> None:
    """jobs.check, with its refusal as a ClassRefused in a class's words."""
    try:
        jobs.check(auth)
    except jobs.JobError as error:
        given = getattr(auth, "given", None)
        text = "leading a class needs the teacher password" if not given else str(error)
        raise ClassRefused(text) from None


MAX_ID = 2**63 - 1  # the largest row id SQLite and PostgreSQL's BIGINT hold


def class_row(conn: Connection, class_id: int) -> Row:
    """The class's row; ClassRefused for a number no class has, a number past any database's
    integers included (a forged teacher cookie), which a driver would otherwise raise on."""
    if isinstance(class_id, bool) or not isinstance(class_id, int) or not 0 < class_id <= MAX_ID:
        raise ClassRefused("There is no such class (it may have been deleted).")
    row = conn.execute(select(store.classes).where(store.classes.c.id == class_id)).first()
    if row is None:
        raise ClassRefused("There is no such class (it may have been deleted).")
    return row


def check_teacher(conn: Connection, class_id: int, teacher: Teacher) -> Row:
    """The class's row when `teacher` is its teacher key or the server's teacher password;
    ClassRefused otherwise (a student's token included)."""
    row = class_row(conn, class_id)
    if isinstance(teacher, jobs.Auth):
        if not teacher.required:
            raise ClassRefused(
                "This server has no teacher password: act with the teacher key the class was "
                "started with."
            )
        check_password(teacher)
        return row
    if isinstance(teacher, str) and hmac.compare_digest(store.digest(teacher), row.teacher_hash):
        return row
    raise ClassRefused("Only the class's teacher may do this.")


def member_row(conn: Connection, token: str) -> Row:
    """The member whose secret `token` this is; ClassRefused for any other string."""
    if not isinstance(token, str) or not token:
        raise ClassRefused("Join the class first.")
    row = conn.execute(
        select(store.members).where(store.members.c.token_hash == store.digest(token))
    ).first()
    if row is None:
        raise ClassRefused(
            "This browser is not in the class (it may have been deleted); join again."
        )
    return row


def _info(row: Row, key: str | None = None) -> ClassInfo:
    return ClassInfo(row.id, row.code, row.title, row.created_at, row.ended_at, key)


def _member(row: Row, token: str | None = None) -> Member:
    return Member(row.id, row.class_id, row.name, row.joined_at, token)


def normalise_code(code: str) -> str:
    """A typed code as stored: upper case, spaces and dashes dropped ("k7p q2m" -> "K7PQ2M")."""
    return "".join(c for c in str(code).upper() if c not in " -\t")


# ---- classes ------------------------------------------------------------------------------------


def start_class(auth: jobs.Auth, title: str, *, db: str | None = None) -> ClassInfo:
    """A new class with a fresh join code; the returned info carries the teacher key (keep it in
    the teacher's session: it is never shown again)."""
    check_password(auth)
    title = (str(title or "").strip() or "A live class")[:TITLE_MAX]
    key = secrets.token_urlsafe(24)
    now = time.time()
    for _ in range(20):  # a code already taken (one in a billion): draw another
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        try:
            with store.writing(db) as conn:
                found = conn.execute(
                    store.classes.insert().values(
                        code=code,
                        title=title,
                        teacher_hash=store.digest(key),
                        created_at=now,
                        view_version=0,
                        view_page="",
                        view_params="{}",
                    )
                )
                class_id = found.inserted_primary_key[0]
            return ClassInfo(class_id, code, title, now, None, key)
        except exc.IntegrityError:
            continue
    raise store.ClassStateError("No free join code could be drawn; try again.")


def find_class(code: str, *, db: str | None = None) -> ClassInfo | None:
    """The class with this join code (ended or not), or None."""
    with store.reading(db) as conn:
        row = conn.execute(
            select(store.classes).where(store.classes.c.code == normalise_code(code))
        ).first()
    return _info(row) if row is not None else None


def get_class(class_id: int, *, db: str | None = None) -> ClassInfo:
    """The class `class_id` (ClassRefused when there is none)."""
    with store.reading(db) as conn:
        return _info(class_row(conn, class_id))


def active_classes(*, db: str | None = None) -> list[ClassInfo]:
    """Every class not ended, newest first."""
    with store.reading(db) as conn:
        rows = conn.execute(
            select(store.classes)
            .where(store.classes.c.ended_at.is_(None))
            .order_by(store.classes.c.created_at.desc(), store.classes.c.id.desc())
        ).all()
    return [_info(row) for row in rows]


def claim(teacher: Teacher, class_id: int, *, db: str | None = None) -> ClassInfo:
    """The class, when `teacher` may lead it (a second tab, or the teacher back after a server
    process restarted, with the password); ClassRefused otherwise or when it has ended."""
    with store.reading(db) as conn:
        row = check_teacher(conn, class_id, teacher)
    if row.ended_at is not None:
        raise ClassRefused("This class has ended.")
    return _info(row)


def end_class(teacher: Teacher, class_id: int, *, db: str | None = None) -> ClassInfo:
    """End the class: no more joins or answers; its record (members, answers, runs) stays until
    delete_class."""
    now = time.time()
    with store.writing(db) as conn:
        row = check_teacher(conn, class_id, teacher)
        if row.ended_at is None:  # a move too, so every follower hears of it
            c = store.classes.c
            conn.execute(
                update(store.classes)
                .where(c.id == class_id)
                .values(ended_at=now, view_version=c.view_version + 1)
            )
            conn.execute(
                update(store.questions)
                .where(
                    store.questions.c.class_id == class_id, store.questions.c.closed_at.is_(None)
                )
                .values(closed_at=now)
            )
        return _info(class_row(conn, class_id))


def delete_class(teacher: Teacher, class_id: int, *, db: str | None = None) -> None:
    """Remove the class and everything recorded in it (members, questions, answers, the list of
    its runs). The runs' folders stay: they are models, deleted through jobs.delete."""
    with store.writing(db) as conn:
        check_teacher(conn, class_id, teacher)
        asked = select(store.questions.c.id).where(store.questions.c.class_id == class_id)
        conn.execute(delete(store.answers).where(store.answers.c.question_id.in_(asked)))
        for table in (store.questions, store.runs, store.members):
            conn.execute(delete(table).where(table.c.class_id == class_id))
        conn.execute(delete(store.classes).where(store.classes.c.id == class_id))


# ---- joining ------------------------------------------------------------------------------------


def join(
    code: str, name: str | None, client_key: str, *, db: str | None = None, now: float | None = None
) -> Member:
    """Join the class of `code` as `name` (empty: "Student N"). The returned member carries its
    secret token. ClassRefused for a wrong code or an ended class; RateLimited after
    JOIN_FAILURES_MAX wrong codes from `client_key` within JOIN_WINDOW_S seconds; SeatsLimited
    when `client_key` took JOIN_SEATS_MAX seats of this class within JOIN_SEATS_WINDOW_S (one
    client joined 240 times in 20 s; students on addresses of their own are never bounded).

    Only wrong codes count, and a right code always joins, even from a client over the limit:
    behind a proxy that hides the students' addresses, ten typos across the room once refused
    every student with the right code for a minute. A guesser gains nothing by it: one code in
    32^6 (about 10^9) is a class's, so a wrong guess is all a guesser meets, and those are limited.
    """
    now = time.time() if now is None else now
    client_key = str(client_key or "unknown")[:128]
    failures = store.join_failures
    with store.writing(db) as conn:
        since = now - JOIN_WINDOW_S
        row = conn.execute(  # PostgreSQL: locked, so two joins count each other's seats
            select(store.classes)
            .where(store.classes.c.code == normalise_code(code))
            .with_for_update()
        ).first()
        if row is None:
            recent = conn.execute(
                select(func.count(), func.min(failures.c.at)).where(
                    failures.c.client_key == client_key, failures.c.at > since
                )
            ).one()
            if recent[0] >= JOIN_FAILURES_MAX:
                raise RateLimited(max(1.0, recent[1] + JOIN_WINDOW_S - now))
            conn.execute(
                delete(failures).where(failures.c.client_key == client_key, failures.c.at <= since)
            )
            conn.execute(failures.insert().values(client_key=client_key, at=now))
            failed = True
        else:
            failed = False
            if row.ended_at is not None:
                raise ClassRefused(f"The class “{row.title}” has ended.")
            client_hash = store.digest(client_key)
            _check_seats(conn, row.id, client_hash, now)
            token = secrets.token_urlsafe(24)
            name = str(name or "").strip()[:NAME_MAX]
            if not name:
                count = conn.execute(
                    select(func.count()).where(store.members.c.class_id == row.id)
                ).scalar()
                name = f"Student {count + 1}"
            made = conn.execute(
                store.members.insert().values(
                    class_id=row.id,
                    name=name,
                    token_hash=store.digest(token),
                    joined_at=now,
                    seen_at=now,
                    following=1,
                    client_hash=client_hash,
                )
            )
            member_id = made.inserted_primary_key[0]
    if failed:  # said after the commit, so the failure is counted
        raise ClassRefused("No class has this code; check it on the teacher's screen.")
    return Member(member_id, row.id, name, now, token)


def seats_max() -> int:
    """The seats one client key may take in one class within JOIN_SEATS_WINDOW_S: JOIN_SEATS_MAX,
    or SEATS_ENV where a whole room reaches the server from one address (a school's NAT in front
    of a server elsewhere), which no proxy setting can tell apart."""
    found = os.environ.get(SEATS_ENV, "").strip()
    return int(found) if found.isdigit() and int(found) > 0 else JOIN_SEATS_MAX


def _check_seats(conn: Connection, class_id: int, client_hash: str, now: float) -> None:
    """SeatsLimited when this client took JOIN_SEATS_MAX seats of the class in the window."""
    m = store.members.c
    taken, first = conn.execute(
        select(func.count(), func.min(m.joined_at)).where(
            m.class_id == class_id,
            m.client_hash == client_hash,
            m.joined_at > now - JOIN_SEATS_WINDOW_S,
        )
    ).one()
    if taken >= seats_max():
        raise SeatsLimited(max(1.0, first + JOIN_SEATS_WINDOW_S - now))


def member(token: str, *, db: str | None = None) -> Member:
    """The member of a token (a student coming back on another server process, say)."""
    with store.reading(db) as conn:
        return _member(member_row(conn, token))


def heartbeat(
    member_token: str,
    page: str,
    following: bool,
    *,
    db: str | None = None,
    now: float | None = None,
) -> None:
    """Record that the student is here, on `page`, following the teacher or not (call it every
    few seconds: the dashboard counts a student connected for CONNECTED_S after it)."""
    now = time.time() if now is None else now
    with store.writing(db) as conn:
        row = member_row(conn, member_token)
        conn.execute(
            update(store.members)
            .where(store.members.c.id == row.id)
            .values(seen_at=now, page=str(page)[:PAGE_MAX], following=int(bool(following)))
        )


def heartbeats(
    beats: list[tuple[str, str, bool]], *, db: str | None = None, now: float | None = None
) -> None:
    """Many students' heartbeats, (member token, page, following) each, in one transaction: what
    one server process writes for all its connected students (ui/class_watch.py). An unknown
    token changes nothing."""
    if not beats:
        return
    now = time.time() if now is None else now
    m = store.members.c
    rows = [
        {"h": store.digest(token), "p": str(page)[:PAGE_MAX], "f": int(bool(f))}
        for token, page, f in beats
    ]
    with store.writing(db) as conn:
        conn.execute(
            update(store.members)
            .where(m.token_hash == bindparam("h"))
            .values(seen_at=now, page=bindparam("p"), following=bindparam("f")),
            rows,
        )


# ---- following ----------------------------------------------------------------------------------


def set_view(
    teacher: Teacher, class_id: int, page: str, params: dict[str, str], *, db: str | None = None
) -> View:
    """Store the teacher's view (a page's URL path, e.g. "Attention", and its query params) as
    the next version; returns it."""
    if not isinstance(page, str) or not page or len(page) > PAGE_MAX:
        raise ClassRefused(f"a page is its URL path, 1 to {PAGE_MAX} characters")
    if not isinstance(params, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in params.items()
    ):
        raise ClassRefused("a view's params are the page's query params: text names and values")
    text = json.dumps(params, sort_keys=True)
    if len(text) > PARAMS_MAX:
        raise ClassRefused(f"a view's params may take at most {PARAMS_MAX} characters as JSON")
    now = time.time()
    c = store.classes.c
    with store.writing(db) as conn:
        row = check_teacher(conn, class_id, teacher)
        if row.ended_at is not None:
            raise ClassRefused("This class has ended.")
        conn.execute(
            update(store.classes)
            .where(c.id == class_id)
            .values(
                view_version=c.view_version + 1,  # in the database: two moves never share one
                view_page=page,
                view_params=text,
                view_updated_at=now,
            )
        )
        version = conn.execute(select(c.view_version).where(c.id == class_id)).scalar()
    return View(version, page, dict(params), now)


def view(class_id: int, *, db: str | None = None) -> View:
    """The teacher's current view (version 0 and page "" before the first set_view): one
    primary-key row read."""
    c = store.classes.c
    with store.reading(db) as conn:
        row = conn.execute(
            select(c.view_version, c.view_page, c.view_params, c.view_updated_at, c.ended_at).where(
                c.id == class_id
            )
        ).first()
    if row is None:
        raise ClassRefused("There is no such class (it may have been deleted).")
    params = json.loads(row.view_params)
    ended = row.ended_at is not None
    return View(row.view_version, row.view_page, params, row.view_updated_at, ended)
