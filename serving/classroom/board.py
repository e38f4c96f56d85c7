"""The class's runs and the teacher's dashboard: the budget, the leaderboard, who is where.

    board.class_budget(key, class_id, "shakespeare", minutes=2)   # or tokens=...
    jobs.start(run_id, settings, auth=...)                       # the student's own run, then
    board.register_run(member_token, run_id)                     # ... it is theirs in the class
    board.leaderboard(class_id)     # [Standing(rank=1, name=..., bits_per_char=1.93, ...), ...]
    board.dashboard(class_id)       # Dashboard(connected=87, following=80, pages={...}, ...)

The leaderboard ranks by validation bits per character: the run's last validation loss (nats
per token, status.json) / ln 2 / the characters a token stands for on its validation split
(viz_model/analysis/ngrams.py, as the Compare models page computes it), so runs with different
tokenizers compare fairly. Runs without a validation loss yet come last, unranked. A run belongs
to the student who registered it: it must have been started after they joined, on the budget's
corpus and within its tokens (max_steps x batch_size x n_ctx) or minutes; a run registered by
another student is refused. The job caps (VIZ_MAX_JOBS, ...) still hold: runs start through
jobs.start.

Not here: starting runs (serving/jobs.py), the curves (Compare models reads the run folders).
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import exc, func, select, update

from serving import jobs
from serving.classroom import store
from serving.classroom.classes import Teacher, check_teacher, class_row, member_row
from serving.classroom.store import ClassRefused
from viz_model.analysis.ngrams import bits_per_char, validation_chars_per_token
from viz_model.model.config import PRESETS
from viz_model.text.data import load_text
from viz_model.text.tokenization import Tokenizer
from viz_model.training.settings import RunSettings

CONNECTED_S = 15.0  # a student is connected when their last heartbeat is this recent


@dataclass(frozen=True)
class Budget:
    corpus: str
    tokens: int | None
    minutes: float | None

    def problem(self, settings: RunSettings) -> str | None:
        """Why a run of `settings` is outside this budget, or None."""
        if settings.corpus != self.corpus:
            return f"the class trains on the “{self.corpus}” corpus"
        if self.minutes is not None and not (settings.minutes and settings.minutes <= self.minutes):
            return f"the class's budget is {self.minutes:g} minutes a run"
        if self.tokens is not None:
            used = run_tokens(settings)
            if used > self.tokens:
                return (
                    f"the class's budget is {self.tokens:,} tokens a run; this one takes {used:,}"
                )
        return None


def run_tokens(settings: RunSettings) -> int:
    """The training tokens a run of `settings` reads at most: steps x batch x context."""
    cfg = settings.train_config()
    n_ctx = settings.model.get("n_ctx", PRESETS.get(settings.preset, {}).get("n_ctx", 0))
    return int(cfg.max_steps) * int(cfg.batch_size) * int(n_ctx)


@dataclass(frozen=True)
class Standing:
    """One row of the leaderboard."""

    rank: int | None  # None: no validation loss yet
    name: str  # the student's name as typed: escape it before drawing it as HTML
    run_id: str
    state: str  # jobs.STATES
    step: int
    bits_per_char: float | None
    val_loss: float | None  # nats per token
    settings: str  # a one-line summary of what the student chose


@dataclass(frozen=True)
class Dashboard:
    members: int  # ever joined
    connected: int  # heartbeat within CONNECTED_S
    following: int  # connected and following the teacher
    pages: dict[str, int]  # connected students per page, most first
    question_id: int | None  # the open question
    answered: int  # its answers so far (out of `members`)
    training: tuple[str, ...]  # the class's runs running or paused now


# ---- the budget and the runs --------------------------------------------------------------------


def class_budget(
    teacher: Teacher,
    class_id: int,
    corpus: str,
    tokens: int | None = None,
    minutes: float | None = None,
    *,
    db: str | None = None,
) -> Budget:
    """Set the class's budget: every run on `corpus`, with at most `tokens` or `minutes`."""
    if (tokens is None) == (minutes is None):
        raise ClassRefused("a budget is either tokens or minutes")
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1
    ):
        raise ClassRefused("a budget in tokens is a whole number of at least 1")
    if minutes is not None and not (isinstance(minutes, int | float) and 0 < minutes < math.inf):
        raise ClassRefused("a budget in minutes is a number above 0")
    budget = Budget(str(corpus), tokens, float(minutes) if minutes is not None else None)
    c = store.classes.c
    with store.writing(db) as conn:
        check_teacher(conn, class_id, teacher)
        conn.execute(
            update(store.classes)
            .where(c.id == class_id)
            .values(
                budget_corpus=budget.corpus, budget_tokens=tokens, budget_minutes=budget.minutes
            )
        )
    return budget


def budget(class_id: int, *, db: str | None = None) -> Budget | None:
    """The class's budget, None before the teacher sets one."""
    with store.reading(db) as conn:
        row = class_row(conn, class_id)
    if row.budget_corpus is None:
        return None
    return Budget(row.budget_corpus, row.budget_tokens, row.budget_minutes)


def register_run(
    member_token: str, run_id: str, *, db: str | None = None, root: Path | None = None
) -> None:
    """Put the student's run on the class's leaderboard. Refused for a run started before they
    joined, outside the budget, or registered by someone else (registering one's own twice is
    fine)."""
    view = _read_run(run_id, root)
    try:
        settings = RunSettings.from_dict(view.settings)
    except (TypeError, ValueError) as error:
        raise ClassRefused(f"{run_id!r} has settings this app cannot read: {error}") from None
    started = (view.path / "settings.json").stat().st_mtime
    try:
        with store.writing(db) as conn:
            who = member_row(conn, member_token)
            row = class_row(conn, who.class_id)
            if row.ended_at is not None:
                raise ClassRefused("This class has ended.")
            if started < who.joined_at - 1.0:  # a second for clocks of two processes
                raise ClassRefused(f"{run_id!r} was started before you joined the class.")
            if row.budget_corpus is not None:
                rules = Budget(row.budget_corpus, row.budget_tokens, row.budget_minutes)
                if problem := rules.problem(settings):
                    raise ClassRefused(f"{run_id!r} is outside the class's budget: {problem}.")
            owner = conn.execute(
                select(store.runs.c.member_id).where(
                    store.runs.c.class_id == who.class_id, store.runs.c.run_id == run_id
                )
            ).scalar()
            if owner == who.id:
                return
            if owner is not None:
                raise ClassRefused(f"{run_id!r} is another student's run.")
            conn.execute(
                store.runs.insert().values(
                    class_id=who.class_id,
                    member_id=who.id,
                    run_id=run_id,
                    registered_at=time.time(),
                )
            )
    except exc.IntegrityError:  # registered by another at the same moment
        raise ClassRefused(f"{run_id!r} is another student's run.") from None


def _read_run(run_id: str, root: Path | None, history: bool = False) -> jobs.RunView:
    try:
        return jobs.read(run_id, root, history=history)
    except jobs.JobError as error:
        raise ClassRefused(str(error)) from None


@functools.lru_cache(maxsize=64)
def _chars_per_token(tokenizer_file: str, _mtime_ns: int, source: str) -> float | None:
    """Characters per validation token of a run (its tokenizer file and data source), cached per
    process on the tokenizer file's mtime: a BPE run's text is encoded once."""
    try:
        tokenizer = Tokenizer.load(tokenizer_file)
        data = json.loads(source)
        return validation_chars_per_token(load_text(data), tokenizer, data["val_fraction"])
    except (OSError, KeyError, TypeError, ValueError):  # a missing file, a text gone
        return None


def run_bits_per_char(view: jobs.RunView) -> float | None:
    """The run's last validation loss in bits per character, None before its first evaluation."""
    loss = view.val_loss
    tokenizer = view.path / "tokenizer.json"
    if not isinstance(loss, int | float) or not math.isfinite(loss) or not tokenizer.is_file():
        return None
    try:
        source = RunSettings.from_dict(view.settings).data_source()
        if source.get("text_file"):
            source["text_file"] = str(view.path / "text.txt")
    except (TypeError, ValueError):
        return None
    per = _chars_per_token(
        str(tokenizer), tokenizer.stat().st_mtime_ns, json.dumps(source, sort_keys=True)
    )
    return bits_per_char(float(loss), per) if per else None


def summary(settings: dict) -> str:
    """A run's choices in one line: "quick, char; d_model=64; lr=0.003, max_steps=300; 2 min"."""
    parts = [f"{settings.get('preset', '?')}, {settings.get('tokenizer', '?')}"]
    if settings.get("vocab_size"):
        parts[0] += f" {settings['vocab_size']}"
    for key in ("model", "train"):
        chosen = settings.get(key) or {}
        if chosen:
            parts.append(
                ", ".join(
                    f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in sorted(chosen.items())
                )
            )
    if settings.get("minutes"):
        parts.append(f"{settings['minutes']:g} min")
    return "; ".join(parts)


def leaderboard(
    class_id: int, *, db: str | None = None, root: Path | None = None
) -> list[Standing]:
    """The class's registered runs, best validation bits per character first."""
    with store.reading(db) as conn:
        class_row(conn, class_id)
        rows = conn.execute(
            select(store.runs.c.run_id, store.members.c.name)
            .join(store.members, store.members.c.id == store.runs.c.member_id)
            .where(store.runs.c.class_id == class_id)
            .order_by(store.runs.c.id)
        ).all()
    found = []
    for run_id, name in rows:
        try:
            view = jobs.read(run_id, root, history=False)
        except jobs.JobError:  # deleted since: off the board
            continue
        bpc = run_bits_per_char(view)
        found.append((bpc, name, view))
    found.sort(key=lambda item: (item[0] is None, item[0] if item[0] is not None else 0.0))
    out = []
    for i, (bpc, name, view) in enumerate(found):
        out.append(
            Standing(
                i + 1 if bpc is not None else None,
                name,
                view.name,
                view.state,
                int(view.step or 0),
                bpc,
                view.val_loss,
                summary(view.settings),
            )
        )
    return out


# ---- the dashboard ------------------------------------------------------------------------------


def dashboard(
    class_id: int, *, db: str | None = None, root: Path | None = None, now: float | None = None
) -> Dashboard:
    """The teacher's numbers: who is connected, following, on which page; the open question's
    answers; which of the class's runs train."""
    now = time.time() if now is None else now
    m, q, a = store.members.c, store.questions.c, store.answers.c
    here = (m.class_id == class_id) & (m.seen_at >= now - CONNECTED_S)
    with store.reading(db) as conn:
        class_row(conn, class_id)
        members = conn.execute(select(func.count()).where(m.class_id == class_id)).scalar()
        per_page = conn.execute(
            select(m.page, func.count(), func.sum(m.following)).where(here).group_by(m.page)
        ).all()
        question_id = conn.execute(
            select(q.id).where(q.class_id == class_id, q.closed_at.is_(None)).order_by(q.id.desc())
        ).scalar()
        answered = 0
        if question_id is not None:
            answered = conn.execute(
                select(func.count()).where(a.question_id == question_id)
            ).scalar()
        run_ids = (
            conn.execute(select(store.runs.c.run_id).where(store.runs.c.class_id == class_id))
            .scalars()
            .all()
        )
    pages = {page or "": n for page, n, _ in sorted(per_page, key=lambda r: (-r[1], r[0] or ""))}
    training = []
    for run_id in run_ids:
        try:
            if jobs.read(run_id, root, history=False).live:
                training.append(run_id)
        except jobs.JobError:
            continue
    return Dashboard(
        members=members,
        connected=sum(pages.values()),
        following=sum(int(f or 0) for _, _, f in per_page),
        pages=pages,
        question_id=question_id,
        answered=answered,
        training=tuple(training),
    )
