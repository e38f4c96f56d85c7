"""A lesson on screen: the stop's view applied, the question above the page, predict then reveal.

The URL carries the place in a lesson (`?lesson=2_attention&step=3`), so a link resumes it.
app.py calls `enter(page)` before the frame reads the model or the prompt, and `panel(ctx, page)`
after the frame, above the page:

- `enter` applies a stop's exact view the first time the session reaches it (its model, prompt
  and the page's URL keys; the page's other keys go back to their defaults) and switches to the
  stop's page when the URL is on another one.
- `panel` shows the instruction and the question, masks the page's charts, tables and prose until
  the student commits an answer (a stop with hide = false shows them), then reveals the model's
  own answer (viz_model/lessons: an answer kind measures the model on screen) and why.

Not here: the lesson files and what an answer is (viz_model/lessons/), the Lessons page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from serving import models
from ui import cache, nav, precision, present, state
from ui.frame import DEFAULT_PROMPT, PageContext
from viz_model.analysis.claims import md_escape
from viz_model.lessons.kinds import Subject
from viz_model.lessons.lesson_file import (
    Catalogue,
    Lesson,
    LessonError,
    Stop,
    lessons_dir,
    load_lessons,
)
from viz_model.lessons.registry import ANSWERS
from viz_model.lessons.truth import Truth, visible_token

LESSON, STEP = "lesson", "step"  # the URL keys
# the frame's own keys a view may set, besides model, prompt: the training step, the precision
FRAME_KEYS = frozenset({"train_step", "quant"})
_APPLIED = "_lesson_applied"  # (lesson id, step) whose view this session last applied
_SESSION_SEEN = "_lesson_seen"  # this session has run before (a new one may be a reload)
_ANSWERS = "_lesson_answers"  # {(lesson id, step): the student's answer, or None: just shown}
MASK_FILTER = "blur(14px) opacity(0.25)"  # what the mask does to what it hides
PANEL_KEY = "lesson_panel"  # the panel's container: .st-key-lesson_panel, kept out of the mask
# a student's class box (ui/classroom.BOX_KEY), kept out of it too
CLASS_BOX_KEY = present.STUDENT_BOX_KEY
# What the mask blurs in the page below the panel until the student answers: everything that
# could give the answer away (charts, tables, numbers, prose with claims). Headings, formulas and
# widgets stay, so the page can still be read for what it is about.
MASKED = ("stPlotlyChart", "stVegaLiteChart", "stDataFrame", "stTable", "stMetric", "stMarkdown",
          "stAlert", "stCaption", "stCode", "stJson", "stExpander")  # fmt: skip


@dataclass(frozen=True)
class RoomAsks:
    """A lesson stop in a live class (ui/classroom.py): the class's question is answered once,
    in the class box, and the panel shows no form of its own. `asked`: the room's question is
    this stop's now; `revealed`: its answer has been shown to the room."""

    revealed: bool
    answer: str | None  # this student's answer in the class, as stored
    asked: bool = True


@dataclass(frozen=True)
class Place:
    lesson: Lesson
    step: int  # 1-based

    @property
    def stop(self) -> Stop:
        return self.lesson.stop(self.step)

    @property
    def key(self) -> tuple[str, int]:
        return (self.lesson.id, self.step)


# ---- the lessons ------------------------------------------------------------------------------


def catalogue() -> Catalogue:
    """What a lesson may name here: every page with its URL keys, every installed model."""
    pages = {(p.url_path or p.label): frozenset(p.view_keys) | FRAME_KEYS for p in nav.all_pages()}
    return Catalogue(pages, frozenset(models.discover()), ANSWERS)


def lessons() -> tuple[list[Lesson], list[LessonError]]:
    """The lessons in assets/lessons/ (or $VIZ_LESSONS_DIR), read again only when a file or the
    installed models change."""
    folder = lessons_dir()
    files = tuple((p.name, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.toml")))
    return _read_lessons(str(folder), files, tuple(models.discover()))


@st.cache_resource(max_entries=4, show_spinner=False)
def _read_lessons(
    folder: str, files: tuple[tuple[str, int], ...], installed: tuple[str, ...]
) -> tuple[list[Lesson], list[LessonError]]:
    """Keyed by the folder, its files' names and times and the installed models."""
    return load_lessons(Path(folder), catalogue())


def find(lesson_id: str) -> Lesson | None:
    return next((x for x in lessons()[0] if x.id == lesson_id), None)


def page_of(stop: Stop) -> nav.Page:
    return next(p for p in nav.all_pages() if (p.url_path or p.label) == stop.page)


def prompt_of(lesson: Lesson, stop: Stop) -> str:
    return stop.prompt if stop.prompt is not None else DEFAULT_PROMPT


def link(lesson: Lesson, step: int = 1, present: bool = False) -> str:
    """A relative link that opens (or resumes) a lesson at a stop."""
    page = page_of(lesson.stop(step))
    extra = "&present=1" if present else ""
    return f"./{page.url_path}?{LESSON}={lesson.id}&{STEP}={step}{extra}"


# ---- where the session is ---------------------------------------------------------------------


def current() -> Place | None:
    """The lesson stop this session is at (from the session, else the URL), or None."""
    ss = st.session_state
    lesson_id = ss.get(LESSON, st.query_params.get(LESSON))
    lesson = find(str(lesson_id)) if lesson_id else None
    if lesson is None:
        ss.pop(LESSON, None)
        return None
    step = state.parse_int(ss.get(STEP, st.query_params.get(STEP)), 1, 1, len(lesson.stops))
    ss[LESSON], ss[STEP] = lesson.id, step
    state.mirror(LESSON, lesson.id)
    state.mirror(STEP, step)
    return Place(lesson, step)


def go(lesson: Lesson, step: int) -> None:
    """Move the session to a stop (its view is applied by `enter` on the next run) and rerun."""
    st.session_state[LESSON], st.session_state[STEP] = lesson.id, step
    st.session_state.pop(_APPLIED, None)
    st.rerun()


def arrive(lesson_id: str, step: str | int) -> None:
    """Put the session at a stop whose view is already set (a student following the teacher, who
    may have changed it): its panel shows, its view is not applied again."""
    found = find(str(lesson_id))
    if found is None:
        return
    place = Place(found, state.parse_int(step, 1, 1, len(found.stops)))
    st.session_state[LESSON], st.session_state[STEP] = place.key
    st.session_state[_APPLIED] = place.key


def leave() -> None:
    for key in (LESSON, STEP, _APPLIED):
        st.session_state.pop(key, None)
        if key in st.query_params:
            del st.query_params[key]
    st.rerun()


def enter(page: nav.Page) -> tuple[int, int] | None:
    """Before the frame reads the model and prompt: apply the current stop's view once, and open
    its page if the session is elsewhere (links and Back/Next land here). A reload keeps the view
    and the page its address names. Returns (stop, stops) for the frame's presenter header, None
    outside a lesson."""
    place = current()
    fresh = not st.session_state.get(_SESSION_SEEN)
    st.session_state[_SESSION_SEEN] = True
    if place is None:
        return None
    where = (place.step, len(place.lesson.stops))
    if st.session_state.get(_APPLIED) == place.key:
        return where
    if fresh and precision.KEY in st.query_params:
        # A new session on an address this app wrote (a reload, a copied address bar: it
        # mirrors the precision on every run, a lesson link never names it): the address is the
        # view, as the teacher left it, on the page it names (Live class included).
        st.session_state[_APPLIED] = place.key
        return where
    stop, target = place.stop, page_of(place.stop)
    present.is_on()  # read a link's present=1 into the session: the switch drops the URL's keys
    _apply_view(place.lesson, stop, target)
    st.session_state[_APPLIED] = place.key
    if target.url_path != page.url_path:
        st.switch_page(target.file, query_params={LESSON: place.lesson.id, STEP: place.step})
    return where


def _apply_view(lesson: Lesson, stop: Stop, page: nav.Page) -> None:
    for key in (*page.view_keys, *FRAME_KEYS):  # the rest of the view goes back to its defaults
        state.forget(key)
    state.set_value("model", stop.model)
    state.set_value("prompt", prompt_of(lesson, stop))
    for key, value in stop.view.items():
        state.set_value(key, value)


# ---- the panel --------------------------------------------------------------------------------


@cache.per_prompt
def truth(bundle_id: str, ids: tuple[int, ...], prompt: str, kind: str, args: str) -> Truth:
    """The model's answer to a stop's question (args: the kind's arguments as JSON)."""
    subject = Subject(cache.bundle(bundle_id), ids, prompt)
    return ANSWERS[kind](subject, json.loads(args))


def truth_for(ctx: PageContext, stop: Stop) -> Truth:
    return measure(ctx, stop.answer, dict(stop.args))


def measure(ctx: PageContext, kind: str, args: dict) -> Truth:
    """An answer kind (viz_model/lessons) measured on the model and prompt on screen."""
    text = json.dumps(args, sort_keys=True)
    with st.spinner("Measuring the answer on this model…"):
        return truth(ctx.bundle_id, tuple(ctx.ids), ctx.prompt, kind, text)


def panel(
    ctx: PageContext | None,
    page: nav.Page,
    room: Callable[[tuple[str, int]], RoomAsks | None] | None = None,
    lead: Callable[[Place, Truth], RoomAsks | None] | None = None,
) -> None:
    """The lesson's box above the page: where the class is, the question, the reveal. In a live
    class, `room` says for a student how the class's question of this stop stands (it is
    answered there, never here), and `lead` draws the teacher's ask and reveal of it."""
    place = current()
    if place is None:
        return
    stop = place.stop
    with st.container(border=True, key=PANEL_KEY):
        _header(place)
        if page_of(stop).url_path != page.url_path:
            _elsewhere(place)
            return
        if stop.title:
            st.markdown(f"#### {stop.title}")
        st.markdown(stop.instruction)
        st.markdown(f"**{stop.question}**")
        if ctx is None or not ctx.ids:
            st.info("This stop needs a prompt: type one in the sidebar.")
            return
        if ctx.bundle.name != stop.model:
            st.caption(
                f"This stop is written for the model {stop.model}; you are looking at "
                f"{ctx.bundle.name}, so the answer below is {ctx.bundle.name}'s."
            )
        answers = st.session_state.setdefault(_ANSWERS, {})
        t = truth_for(ctx, stop)
        asked = room(place.key) if room is not None and place.key not in answers else None
        led = lead(place, t) if lead is not None and asked is None else None
        if place.key in answers:
            _reveal(t, answers[place.key])
        elif asked is not None and asked.revealed:
            _explain(t)  # the verdict is in the class box at the top, where it was answered
        elif led is not None and led.revealed:
            _reveal(t, None)
        elif asked is not None:
            st.info(
                "Your teacher asks the room this question: answer it in the class box at the "
                "top of the page. The model's answer shows here when the teacher reveals it."
                if asked.asked
                else "In the class, your teacher asks the room this question: answer it in the "
                "class box at the top of the page when it appears. The model's answer shows "
                "here when the teacher reveals it."
            )
        elif led is None:
            _ask(place, t)
        shown = place.key in answers or any(r is not None and r.revealed for r in (asked, led))
        if stop.hide and not shown:
            _mask("until the room's answer is revealed" if asked or led else "until you answer")


def _header(place: Place) -> None:
    """One row: where the class is in the lesson, and the buttons that move through it."""
    n = len(place.lesson.stops)
    where, buttons = st.columns([3, 2], vertical_alignment="center")
    # "stop n of N" never broken over two lines (it did at presenter mode's size, 1024 px wide):
    # no-break spaces hold it together, with no HTML; the lesson file's title is escaped
    stop_of = f"stop\u00a0{place.step}\u00a0of\u00a0{n}"
    where.caption(f"Lesson: **{md_escape(place.lesson.title)}** · {stop_of}")
    row = buttons.container(horizontal=True, horizontal_alignment="right", gap="small")
    if row.button("◀ Back", disabled=place.step <= 1, key="lesson_back"):
        go(place.lesson, place.step - 1)
    if row.button("Next ▶", disabled=place.step >= n, type="primary", key="lesson_next"):
        go(place.lesson, place.step + 1)
    if row.button("Leave", key="lesson_leave", help="Leave the lesson"):
        leave()


def _elsewhere(place: Place) -> None:
    target = page_of(place.stop)
    st.markdown(f"This stop is on the **{target.label}** page.")
    if st.button(f"Back to the lesson ({target.label})", type="primary"):
        go(place.lesson, place.step)


def _ask(place: Place, t: Truth) -> None:
    with st.form(f"lesson_answer_{place.lesson.id}_{place.step}", border=False):
        if t.form == "choice":
            answer = st.radio("Your answer", t.options, index=None, horizontal=True)
        elif t.form == "number":
            answer = st.number_input(
                f"Your answer{f' ({t.unit})' if t.unit else ''}", value=None, format="%g"
            )
        else:
            answer = st.text_input(
                "Your answer: a token (␣ for a space, ↵ for a newline)", max_chars=40
            )
        c1, c2 = st.columns([1, 1])
        committed = c1.form_submit_button("Commit my answer", type="primary")
        shown = c2.form_submit_button("Just show me")
    if committed and answer in (None, ""):
        st.warning("Choose or type an answer first, or press “Just show me”.")
    elif committed or shown:
        st.session_state[_ANSWERS][place.key] = answer if committed else None
        st.rerun()


def _reveal(t: Truth, answer: str | float | None) -> None:
    if answer is None:
        st.info(f"The model's answer: **{t.shown()}**")
    elif t.check(answer):
        st.success(
            f"You said {_shown_answer(t, answer)}: right. The model's answer: **{t.shown()}**"
        )
    else:
        st.warning(f"You said {_shown_answer(t, answer)}; the model's answer is **{t.shown()}**.")
    _explain(t)


def _explain(t: Truth) -> None:
    """Why the model answers so (the reveal's explanation, without the verdict)."""
    if not t.holds:
        st.info("On this model, the lesson's expected observation does not hold:", icon="ℹ️")
    st.markdown(t.why)


def _shown_answer(t: Truth, answer: str | float) -> str:
    if t.form == "number":
        return f"{float(answer):g}"
    if t.form == "token":
        return visible_token(str(answer))
    return str(answer)


def _mask(until: str) -> None:
    """Blur what could give the answer away, outside the panel (in the page and the sidebar's
    model card), until it is answered. The sidebar's widgets stay usable."""
    selectors = ", ".join(
        f'[data-testid="{area}"] [data-testid="{t}"]'
        f":not(.st-key-{PANEL_KEY} *):not(.st-key-{CLASS_BOX_KEY} *)"
        f":not(.st-key-{present.HEADER_KEY} *)"
        for area in ("stMain", "stSidebarUserContent")  # the model card states losses
        for t in MASKED
    )
    # A blur alone leaves a chart's large shapes readable on a projector (an attention pattern's
    # triangle, a bar far above the rest): the faded contrast hides them too.
    st.html(
        f"<style>{selectors} {{ filter: {MASK_FILTER}; pointer-events: none; "
        "user-select: none; }</style>"
    )
    st.caption(f"The page below is blurred {until}: predict first, then look.")
