"""The Live class page's parts: start or join a class, the teacher's room (join code and QR,
dashboard, questions, leaderboard, end), and the student's.

    class_page.outside(ctx)       # neither teaching nor learning: join, or start a class
    class_page.teaching(ctx, m)   # the teacher's room
    class_page.learning(m)        # the student's room

Every name a student typed is escaped before it is drawn (md_escape in Markdown, plotly_text in a
chart, plain cells in a table). A database that is locked or unreachable is said in one sentence
(ClassStateError) and the rest of the app keeps working.

Not here: following and the sidebar's class box (ui/classroom.py), the class database
(serving/classroom/).
"""

from __future__ import annotations

import html
import io
import math
import time
from functools import partial

import pandas as pd
import segno
import streamlit as st

from serving.classroom import board, classes, questions
from serving.classroom.store import ClassRefused, ClassStateError
from ui import classroom, lesson, nav, present, teacher
from ui.charts import classroom as charts
from ui.frame import PageContext
from viz_model.analysis.claims import md_escape
from viz_model.text.data import CORPORA

LIVE_S = 1.0  # the teacher's distribution refreshes this often
# A head question's answer: a lesson answer kind measured on the model on screen, and whether it
# takes the layer the teacher picks.
HEAD_ROLES = {
    "the previous-token head of the layer (its pattern, beyond chance)": (
        "previous_token_head",
        True,
    ),
    "the induction head of the layer (its pattern, confirmed by ablating it)": (
        "induction_head",
        True,
    ),
    "the head whose ablation raises the loss most (any layer)": ("most_needed_head", False),
}
# The join code as a projector shows it: large, spaced, in a font whose letters cannot be confused.
JOIN_CODE_CSS = """<style>.join-code { font: 700 4.5rem/1.1 ui-monospace, Menlo, Consolas, monospace;
  letter-spacing: 0.4rem; }</style>"""


def refusal(error: Exception) -> None:
    """A class action refused (ClassRefused) or the database down (ClassStateError), said."""
    if isinstance(error, ClassStateError):
        st.error(f"{md_escape(str(error))} Every other page still works.", icon="⚠️")
    else:
        st.warning(md_escape(str(error)))


# ---- outside a class --------------------------------------------------------------------------


def outside(ctx: PageContext) -> None:
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Join a class")
        _join_form()
    with right:
        st.subheader("Lead a class")
        _start_form()


def _join_form() -> None:
    with st.form("class_join"):
        code = st.text_input(
            "Join code",
            value=st.query_params.get("join", ""),
            max_chars=12,
            placeholder="on the teacher's screen",
        )
        name = st.text_input("Your name (or leave it empty to stay anonymous)", max_chars=40)
        joined = st.form_submit_button("Join", type="primary")
    if not joined:
        return
    try:
        me = classes.join(code, name, teacher.client_key())
        info = classes.get_class(me.class_id)
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        if isinstance(error, classes.SeatsLimited):  # a room behind one address meets it too
            st.caption(
                f"Each browser address may take {classes.seats_max()} seats of a class within "
                f"{classes.JOIN_SEATS_WINDOW_S / 60:g} minutes. If a whole room shares one "
                "address, tell the teacher: the server names its proxy in VIZ_TRUSTED_PROXIES, "
                f"or, for a network that shares one address (NAT), sets {classes.SEATS_ENV} to "
                "the class's size."
            )
        return
    classroom.begin_learning(info, me)
    st.rerun()


def _start_form() -> None:
    with st.form("class_start"):
        title = st.text_input("Title", value="Inside a GPT", max_chars=120)
        auth = teacher.password_field("class_password")
        started = st.form_submit_button("Start a class")
    if started:
        try:
            info = classes.start_class(auth, title)
        except (ClassRefused, ClassStateError) as error:
            refusal(error)
            return
        classroom.begin_teaching(info, str(info.teacher_key))
        st.rerun()
    if teacher.expected():
        _take_over()


def _take_over() -> None:
    """A teacher's second tab, or a teacher whose server process restarted: the password."""
    try:
        running = classes.active_classes()
    except ClassStateError as error:
        refusal(error)
        return
    if not running:
        return
    with st.expander("Take over a running class (teacher password)"):
        with st.form("class_take_over", border=False):
            # Named by title and start, never by code: anyone may open this page.
            labels = {f"{c.title} · started {_clock(c.created_at)}": c for c in running}
            chosen = st.selectbox("Class", list(labels))
            auth = teacher.password_field("class_take_password")
            taken = st.form_submit_button("Take over")
        if taken and chosen:
            info = labels[chosen]
            try:
                classes.claim(auth, info.id)
            except (ClassRefused, ClassStateError) as error:
                refusal(error)
                return
            classroom.begin_teaching(info, auth)
            st.rerun()


def _clock(when: float) -> str:
    return time.strftime("%H:%M", time.localtime(when))


# ---- the teacher's room -----------------------------------------------------------------------


def teaching(ctx: PageContext, m: classroom.Membership) -> None:
    _join_card(m)
    st.subheader("The room")
    _dashboard(m)
    st.subheader("Ask the room")
    _ask(ctx, m)
    _live_question(m)
    _export(m)
    st.subheader("Leaderboard")
    _budget_form(m)
    _leaderboard(m)
    st.subheader("End the class")
    _end(m)


def _join_card(m: classroom.Membership) -> None:
    link = _join_link(m.code)
    code, qr = st.columns([3, 2], vertical_alignment="center")
    with code:
        st.caption("Join code")
        st.html(f"<div class='join-code'>{html.escape(m.code)}</div>{JOIN_CODE_CSS}")
    code.markdown(f"Students open **{md_escape(link)}** (or scan the code) and type a name.")
    code.caption(
        "The link is this page's address: open this page at the address students can reach "
        "(not localhost) so that the link and the QR code work on their laptops."
    )
    qr.image(_qr_png(link), width=220, caption="Scan to join")


def _join_link(code: str) -> str:
    base = str(st.context.url or "").split("?")[0]
    return f"{base}?join={code}"


def _qr_png(text: str) -> bytes:
    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=8, border=2)
    return out.getvalue()


@st.fragment(run_every=2.0)
def _dashboard(m: classroom.Membership) -> None:
    try:
        d = classroom.dashboard(m.class_id)
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    a, b, c, e = st.columns(4)
    a.metric("Joined", d.members)
    b.metric("Connected", d.connected, help="Seen in the last 15 seconds.")
    c.metric("Following you", d.following)
    e.metric("Runs training", len(d.training))
    if d.pages:
        where = ", ".join(f"{_label(page)} {n}" for page, n in d.pages.items())
        st.caption(f"Where they are: {md_escape(where)}.")


def _label(route: str) -> str:
    """A page's name in the navigation, from its route ("Class" -> "Live class")."""
    page = nav.by_route(route)
    return page.label if page is not None else route


def _ask(ctx: PageContext, m: classroom.Membership) -> None:
    place = lesson.current()
    if place is not None:
        stop = place.stop
        st.markdown(
            f"At the lesson stop **{md_escape(place.lesson.title)}, {place.step}**: "
            f"{md_escape(stop.question)}"
        )
        row = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
        seconds = classroom.timer_choice(row, "class_stop_timer")
        if row.button("Ask the room this stop's question", type="primary"):
            truth = lesson.truth_for(ctx, stop)
            ask = partial(questions.ask_stop, m.secret, m.class_id, place.lesson, place.step, truth)
            _asked(m, partial(ask, seconds=seconds))
    with st.expander("Ask a question of your own", expanded=place is None):
        _typed_question(ctx, m)


KIND_LABELS = {"choice": "a choice", "number": "a number", "token": "a token", "head": "a head"}


def _typed_question(ctx: PageContext, m: classroom.Membership) -> None:
    """A question of the teacher's own. A head question's answer is measured on the model on
    screen (HEAD_ROLES), never typed; the others take the answer the teacher will reveal."""
    kind = st.radio(
        "The class answers with",
        list(KIND_LABELS),
        horizontal=True,
        key="class_q_kind",
        format_func=KIND_LABELS.get,
    )
    with st.form("class_ask", border=False, clear_on_submit=True):
        prompt = st.text_input("Question", max_chars=1000)
        options: list[str] | None = None
        spec: dict = {}
        if kind == "choice":
            text = st.text_area("Options, one a line", "yes\nno")
            options = [line.strip() for line in text.splitlines() if line.strip()]
            truth = st.text_input("The answer (one of the options; empty: none to reveal)")
        elif kind == "number":
            truth = st.number_input("The answer", value=None, format="%g")
            spec["tolerance"] = st.number_input("Counts as right within ±", 0.0, value=0.0)
        elif kind == "token":
            truth = st.text_input("The answer: a token (␣ for a space)", max_chars=40)
        else:
            cfg = ctx.config
            layers = list(range(cfg.n_layer))
            layer = st.selectbox("Layer", layers, index=cfg.n_layer - 1, key="class_q_layer")
            role = st.selectbox(
                f"The answer, measured on {ctx.name}", list(HEAD_ROLES), key="class_q_role"
            )
        seconds = classroom.timer_choice(st, "class_q_timer")
        sent = st.form_submit_button("Ask", type="primary")
    if not sent:
        return
    if kind == "head":
        name, by_layer = HEAD_ROLES[role]
        t = lesson.measure(ctx, name, {"layer": layer} if by_layer else {})
        ask = partial(questions.ask, m.secret, m.class_id, "choice", prompt, t.options)
        _asked(m, partial(ask, answer=t.value, answer_why=t.why, seconds=seconds))
        return
    given = None if truth in (None, "") else truth
    if kind == "choice" and given is not None and given not in options:
        st.warning(f"The answer must be one of the options: {md_escape(', '.join(options))}.")
        return
    ask = partial(questions.ask, m.secret, m.class_id, kind, prompt, options, spec, answer=given)
    _asked(m, partial(ask, seconds=seconds))


def _asked(m: classroom.Membership, ask) -> None:
    """Ask the room; the answer to reveal goes into the class database with the question, so a
    reload (or another tab) of the teacher's can still reveal it."""
    try:
        ask()
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    classroom.forget(m.class_id)
    st.rerun()


@st.fragment(run_every=LIVE_S)
def _live_question(m: classroom.Membership) -> None:
    try:
        q = questions.latest_question(m.class_id)
        if q is None:
            st.caption("No question asked yet.")
            return
        dist = questions.distribution(q.id)
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    left = q.seconds_left() if q.state == "open" else None
    clock = {"open": "" if left is None else f" · {math.ceil(left)} s left", "revealed": ""}.get(
        q.state, " · time is up" if q.closed_at is None else " · answers closed"
    )
    st.markdown(f"**{md_escape(q.prompt)}** · {dist.total} of {dist.members} answered{clock}")
    if q.kind == "number":
        if dist.numbers:
            truth = float(q.truth) if q.truth is not None else None
            present.plot(charts.number_strip(list(dist.numbers), truth, q.spec.get("unit", "")))
    elif dist.counts:
        present.plot(charts.answer_bars(dist.counts, q.truth))
    if q.truth is not None:
        right = sum(n for answer, n in dist.counts.items() if questions.is_right(q, answer))
        st.success(
            f"Revealed: **{classroom.shown(q, q.truth)}**. {right} of {dist.total} answered right."
        )
        if q.why:
            st.markdown(q.why)
        return
    c1, c2 = st.columns(2)
    if q.answer is not None and c1.button("Reveal the answer", type="primary", key=f"rv{q.id}"):
        _act(m, lambda: questions.reveal(m.secret, q.id))
    if q.state == "open" and c2.button("Close answers", key=f"cl{q.id}"):
        _act(m, lambda: questions.close(m.secret, q.id))
    if q.answer is None:
        st.caption("This question has no answer to reveal (you left it empty).")


def _export(m: classroom.Membership) -> None:
    """Every answer of the class so far, as a CSV file the teacher keeps."""
    try:
        text = questions.answers_csv(m.secret, m.class_id)
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    st.download_button(
        "Download the class's answers (CSV)",
        text,
        file_name=f"class-{m.code}-answers.csv",
        mime="text/csv",
        key="class_export",
    )


def _act(m: classroom.Membership, action) -> None:
    try:
        action()
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    classroom.forget(m.class_id)
    # a click handled in a full run (AppTest, or a click that met a rerun) cannot rerun a fragment
    st.rerun(scope="fragment" if classroom.in_fragment_rerun() else "app")


def _budget_form(m: classroom.Membership) -> None:
    try:
        current = board.budget(m.class_id)
    except ClassStateError as error:
        refusal(error)
        return
    if current is not None:
        limit = f"{current.minutes:g} minutes" if current.minutes else f"{current.tokens:,} tokens"
        st.markdown(f"Every run trains on **{current.corpus}**, at most **{limit}**.")
    with st.expander("Set the class's training budget", expanded=current is None):
        with st.form("class_budget", border=False):
            corpus = st.selectbox("Corpus", list(CORPORA))
            minutes = st.number_input("Minutes a run", 0.5, 30.0, value=2.0, step=0.5)
            sent = st.form_submit_button("Set the budget")
        if sent:
            try:
                board.class_budget(m.secret, m.class_id, corpus, minutes=float(minutes))
            except (ClassRefused, ClassStateError) as error:
                refusal(error)
                return
            st.rerun()


@st.fragment(run_every=5.0)
def _leaderboard(m: classroom.Membership) -> None:
    try:
        rows = classroom.leaderboard(m.class_id)
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    if not rows:
        st.caption(
            "No runs yet. Students in the class start runs on the Training page; each one "
            "that fits the budget appears here, ranked by validation bits per character."
        )
        return
    # On a projector the room sees this table: names only when the teacher asks for them
    names = st.toggle("Show students' names", key="class_board_names", value=False)
    table = pd.DataFrame(
        {
            "rank": [r.rank for r in rows],
            "student": [r.name if names else "·" for r in rows],
            "run": [r.run_id for r in rows],
            "bits per character": [r.bits_per_char for r in rows],
            "state": [r.state for r in rows],
            "step": [r.step for r in rows],
            "settings": [r.settings for r in rows],
        }
    )
    bits = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(table, hide_index=True, column_config={"bits per character": bits})
    if len(rows) >= 2:
        st.page_link(
            "pages/13_compare_models.py",
            label="The top two runs side by side, curves overlaid (Compare models)",
            query_params={"model": rows[0].run_id, "cmp_model": rows[1].run_id},
        )


def _end(m: classroom.Membership) -> None:
    c1, c2 = st.columns(2)
    if c1.button("End the class", help="Students stop following; the record stays."):
        _finish(lambda: classes.end_class(m.secret, m.class_id))
    if c2.button("Delete the class", help="Its members, questions and answers; runs stay."):
        _finish(lambda: classes.delete_class(m.secret, m.class_id))


def _finish(action) -> None:
    try:
        action()
    except (ClassRefused, ClassStateError) as error:
        refusal(error)
        return
    classroom.leave()
    st.rerun()


# ---- the student's room -----------------------------------------------------------------------


def learning(m: classroom.Membership) -> None:
    st.markdown(
        f"You are in **{md_escape(m.title)}** as **{md_escape(m.name)}**. While you follow the "
        "teacher, your screen moves with theirs; the box at the top of the sidebar says so and "
        "lets you stop to explore on your own, then follow again with one click. Questions the "
        "teacher asks appear there too."
    )
    st.subheader("Leaderboard")
    try:
        current = board.budget(m.class_id)
    except ClassStateError as error:
        refusal(error)
        current = None
    if current is not None:
        limit = f"{current.minutes:g} minutes" if current.minutes else f"{current.tokens:,} tokens"
        st.markdown(
            f"Train on the Training page: corpus **{current.corpus}**, at most **{limit}** a "
            "run. Your runs that fit appear below, ranked by validation bits per character."
        )
    _leaderboard(m)
    if st.button("Leave the class"):
        classroom.leave()
        st.rerun()
