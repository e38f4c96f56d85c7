"""The class database: one SQLAlchemy engine per process and URL, the tables, and transactions
that turn every database fault into one `ClassStateError` a teacher can read.

    url = store.database_url()          # VIZ_CLASS_DB, else sqlite:///<runs_root>/class.sqlite3
    with store.writing(url) as conn:    # one transaction; SQLite: BEGIN IMMEDIATE
        conn.execute(store.classes.insert().values(...))
    with store.reading(url) as conn:    # a plain read (WAL: never blocked by a writer)
        row = conn.execute(...).first()

SQLite (the default) lives in the runs folder, in WAL mode with a busy timeout, so every server
process of one machine shares it; `VIZ_CLASS_DB` names any SQLAlchemy URL instead, PostgreSQL past
one machine (`postgresql+psycopg://user@host:5432/viz`). The same statements run on both. Tables
are made on first use (`metadata.create_all`, under a lock) and the schema's version is kept in
the `meta` table: a database made by another version is refused with a ClassStateError.

Not here: what the tables mean to a class (classes.py, questions.py, board.py).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from collections.abc import Iterator

from sqlalchemy import (
    Column,
    Engine,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    exc,
    select,
    text,
)
from sqlalchemy.engine import Connection, make_url

from serving import jobs

DB_ENV = "VIZ_CLASS_DB"
CHANNEL = "viz_class"  # PostgreSQL: the NOTIFY channel every write transaction signals
SQLITE_FILE = "class.sqlite3"
SCHEMA_VERSION = "4"
# What each older schema lacks, added in place, one version after another (a class database
# outlives an upgrade of the app):
# 1 -> 2: a question keeps the answer its teacher's page measured, so a reload can still reveal;
# 2 -> 3: a question may take answers until a time (the teacher's timer);
# 3 -> 4: a member keeps the digest of the client key it joined from (the bound on seats).
MIGRATIONS = {
    "1": (
        "ALTER TABLE class_questions ADD COLUMN answer VARCHAR(200)",
        "ALTER TABLE class_questions ADD COLUMN answer_why TEXT",
    ),
    "2": ("ALTER TABLE class_questions ADD COLUMN closes_at FLOAT",),
    "3": ("ALTER TABLE class_members ADD COLUMN client_hash VARCHAR(64)",),
}
BUSY_TIMEOUT_S = 10.0  # SQLite: how long a write waits for another process's before giving up
_WRITE = "class_write"  # the execution option that makes SQLite's BEGIN an IMMEDIATE one


class ClassStateError(Exception):
    """The class database is locked, full or unreachable: the message says so for a teacher, and
    the page goes on working for exploring."""


class ClassRefused(Exception):
    """A class action the user may not take or got wrong (a wrong code or token, a closed
    question, a second answer): the message can be shown as it is."""


# ---- the tables ---------------------------------------------------------------------------------

metadata = MetaData()

meta = Table(
    "class_meta",
    metadata,
    Column("key", String(40), primary_key=True),
    Column("value", String(200), nullable=False),
)
classes = Table(
    "classes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("code", String(6), nullable=False, unique=True),
    Column("title", String(120), nullable=False),
    Column("teacher_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("view_version", Integer, nullable=False, default=0),
    Column("view_page", String(100), nullable=False, default=""),
    Column("view_params", Text, nullable=False, default="{}"),
    Column("view_updated_at", Float),
    Column("budget_corpus", String(100)),
    Column("budget_tokens", Integer),
    Column("budget_minutes", Float),
)
members = Table(
    "class_members",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("class_id", ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("name", String(40), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("joined_at", Float, nullable=False),
    Column("seen_at", Float),
    Column("page", String(100)),
    Column("following", Integer, nullable=False, default=1),
    Column("client_hash", String(64)),  # sha256 of the client key it joined from (the seat bound)
)
join_failures = Table(
    "class_join_failures",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("client_key", String(128), nullable=False, index=True),
    Column("at", Float, nullable=False),
)
questions = Table(
    "class_questions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("class_id", ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("kind", String(10), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("options", Text, nullable=False, default="[]"),
    Column("spec", Text, nullable=False, default="{}"),
    Column("lesson_id", String(100)),
    Column("step", Integer),
    Column("opened_at", Float, nullable=False),
    Column("closed_at", Float),
    Column("truth", String(200)),
    Column("why", Text),
    Column("revealed_at", Float),
    # the answer the teacher's page measured when asking, kept (never shown) until the reveal
    Column("answer", String(200)),
    Column("answer_why", Text),
    Column(
        "closes_at", Float
    ),  # answers are taken until then (the teacher's timer); NULL: no timer
)
answers = Table(
    "class_answers",
    metadata,
    Column("id", Integer, primary_key=True),
    Column(
        "question_id",
        ForeignKey("class_questions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("member_id", ForeignKey("class_members.id", ondelete="CASCADE"), nullable=False),
    Column("value", String(200), nullable=False),
    Column("number", Float),
    Column("at", Float, nullable=False),
    UniqueConstraint("question_id", "member_id", name="one_answer_each"),
)
runs = Table(
    "class_runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("class_id", ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("member_id", ForeignKey("class_members.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("registered_at", Float, nullable=False),
    UniqueConstraint("class_id", "run_id", name="one_owner_a_run"),
)


# ---- the engine ---------------------------------------------------------------------------------


def database_url() -> str:
    """VIZ_CLASS_DB when it is set, else SQLite in the runs folder (<runs_root>/class.sqlite3)."""
    return _url(os.environ.get(DB_ENV, ""), os.environ.get(jobs.RUNS_ENV, ""))


@functools.lru_cache(maxsize=16)
def _url(db_env: str, runs_env: str) -> str:
    """Keyed by the two settings a URL is made of: every database call asks, a path is built once."""
    if db_env.strip():
        return db_env.strip()
    return f"sqlite:///{jobs.runs_root() / SQLITE_FILE}"


def digest(token: str) -> str:
    """What the database keeps of a secret token: its sha256, so reading the file gives no key."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def _forget_engines() -> None:
    """In a forked child: start afresh (a parent's pooled connections must not be shared)."""
    _engines.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_engines)


def engine(url: str | None = None) -> Engine:
    """The process's engine for `url` (default: database_url()), its tables made on first use."""
    url = url or database_url()
    found = _engines.get(url)
    if found is not None:
        return found
    with _engines_lock:
        if url not in _engines:
            made = _make_engine(url)
            _guard(lambda: _create_tables(made), made.url)
            _engines[url] = made
        return _engines[url]


def dispose(url: str | None = None) -> None:
    """Close this process's engine for `url` and its pooled connections (the next call makes a
    new one): for tests, and a server moved to another database."""
    with _engines_lock:
        found = _engines.pop(url or database_url(), None)
    if found is not None:
        found.dispose()


def _make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        try:
            return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
        except ModuleNotFoundError as error:  # the driver is an extra: viz-gpt[postgres]
            raise ClassStateError(
                f"{DB_ENV} names a {parsed.drivername} database, but its driver ({error.name}) "
                "is not installed: pip install 'viz-gpt[postgres]' (or pip install -r "
                "requirements.txt in a checkout). Exploring the pages still works."
            ) from None
    database = parsed.database or ""
    if database and database != ":memory:":
        try:
            os.makedirs(os.path.dirname(os.path.abspath(database)), exist_ok=True)
        except OSError as error:
            raise ClassStateError(
                f"The class database cannot be made in {os.path.dirname(database)}: "
                f"{error.strerror or error}. Exploring the pages still works."
            ) from None
    connect_args = {} if "timeout" in parsed.query else {"timeout": BUSY_TIMEOUT_S}
    made = create_engine(url, connect_args=connect_args, pool_size=10, max_overflow=20)

    @event.listens_for(made, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # we send BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        cursor.execute("PRAGMA synchronous=NORMAL")  # safe in WAL against a killed process
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(made, "begin")
    def _on_begin(conn: Connection) -> None:
        # A write takes the write lock at once (IMMEDIATE), so two writers queue on the busy
        # timeout instead of deadlocking when both try to turn a read into a write.
        immediate = conn.get_execution_options().get(_WRITE)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return made


def _create_tables(made: Engine) -> None:
    with made.execution_options(**{_WRITE: True}).begin() as conn:
        if made.dialect.name == "postgresql":  # two processes creating at once: one waits
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(2323)")
        metadata.create_all(conn)
        found = conn.execute(select(meta.c.value).where(meta.c.key == "schema")).scalar()
        if found in MIGRATIONS:
            while found in MIGRATIONS:
                for statement in MIGRATIONS[found]:
                    conn.exec_driver_sql(statement)
                found = str(int(found) + 1)
            conn.execute(meta.update().where(meta.c.key == "schema").values(value=found))
        if found is None:
            conn.execute(meta.insert().values(key="schema", value=SCHEMA_VERSION))
        elif found != SCHEMA_VERSION:
            raise ClassStateError(
                f"The class database was made by another version of the app (schema {found}, "
                f"this one reads {SCHEMA_VERSION}). Point {DB_ENV} at a new database or remove "
                "the old one. Exploring the pages still works."
            )


# ---- transactions -------------------------------------------------------------------------------


@contextlib.contextmanager
def writing(url: str | None = None) -> Iterator[Connection]:
    """One write transaction, committed on leaving; every database fault a ClassStateError.
    An IntegrityError (a unique constraint: a second answer, say) passes through for the caller
    to refuse in its own words."""
    made = engine(url)
    with _translated(made.url), made.execution_options(**{_WRITE: True}).begin() as conn:
        yield conn
        if made.dialect.name == "postgresql":  # delivered at commit to every listener (Changes)
            conn.execute(text(f"NOTIFY {CHANNEL}"))


@contextlib.contextmanager
def reading(url: str | None = None) -> Iterator[Connection]:
    """One read-only transaction; every database fault a ClassStateError."""
    made = engine(url)
    with _translated(made.url), made.connect() as conn:
        yield conn


class Changes:
    """Whether the class database may have changed since this object last looked, for a thread
    that polls it often (ui/class_watch.py), without reading a table:
    - SQLite: `PRAGMA data_version` on a connection of its own, which moves whenever another
      connection commits (a few microseconds);
    - PostgreSQL: a connection of its own that LISTENs on CHANNEL, which every write transaction
      NOTIFYs at its commit (`writing`); a look drains what arrived, without waiting.
    The first look, any other database, and any fault say True (the caller reads and finds out).
    One thread uses one object."""

    def __init__(self, url: str | None = None):
        self._url = url
        self._engine: Engine | None = None
        self._conn = None  # SQLite: a pooled DBAPI connection; PostgreSQL: a psycopg one
        self._seen: int | None = None

    def __call__(self) -> bool:
        try:
            made = engine(self._url)
            if made.dialect.name not in ("sqlite", "postgresql"):
                return True
            if made is not self._engine:  # first look, another database, or disposed
                self.close()
                self._engine, self._conn = made, self._connect(made)
                return True
            if made.dialect.name == "postgresql":
                return any([True for _ in self._conn.notifies(timeout=0)])  # drain them all
            version = self._conn.driver_connection.execute("PRAGMA data_version").fetchone()[0]
        except Exception:  # noqa: BLE001  whatever the fault, the caller reads and finds out
            self.close()
            return True
        changed, self._seen = version != self._seen, version
        return changed

    def _connect(self, made: Engine):
        if made.dialect.name == "sqlite":
            conn = made.raw_connection()
            self._seen = conn.driver_connection.execute("PRAGMA data_version").fetchone()[0]
            return conn
        import psycopg  # loaded only with a PostgreSQL class database

        conninfo = made.url.set(drivername="postgresql").render_as_string(hide_password=False)
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=5)
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._engine, self._conn, self._seen = None, None, None


@contextlib.contextmanager
def _translated(where) -> Iterator[None]:
    try:
        yield
    except exc.IntegrityError:
        raise
    except (exc.SQLAlchemyError, OSError) as error:
        raise ClassStateError(explain(error, where)) from error


def _guard(action, where) -> None:
    with _translated(where):
        action()


def explain(error: BaseException, where=None) -> str:
    """The sentence a teacher reads for a database fault (no traceback, no SQL)."""
    text = str(getattr(error, "orig", None) or error).lower()
    place = _place(where)
    tail = " Exploring the pages still works; class features come back when it does."
    if "locked" in text or "busy" in text:
        return (
            f"The class database ({place}) is busy: another server process held it for more "
            f"than {BUSY_TIMEOUT_S:g} s. Try again in a moment." + tail
        )
    if "full" in text or "no space" in text:
        return f"The class database ({place}) is full: its disk has no space left." + tail
    if "readonly" in text or "read-only" in text or "permission" in text:
        return (
            f"The class database ({place}) cannot be written (read-only or no permission)." + tail
        )
    return f"The class database ({place}) cannot be reached right now." + tail


def _place(where) -> str:
    if where is None:
        return "unknown"
    url = make_url(str(where)) if not hasattr(where, "get_backend_name") else where
    if url.get_backend_name() == "sqlite":
        return f"SQLite file {url.database}"
    return f"{url.get_backend_name()} at {url.host or 'localhost'}:{url.port or 'default port'}"
