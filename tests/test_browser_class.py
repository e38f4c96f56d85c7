"""A live class end to end in Chromium (issue 23's "Done when"): one teacher and three students,
each in a browser context of their own, the teacher on one app process and the students on
another (two `streamlit run app.py` on two ports sharing one runs folder, so one class database:
SQLite in that folder). Start, join, follow, stop following and follow again, a typed question
answered right and wrong, the reveal, a budget and a student's run on the leaderboard in bits
per character, the end of the class.

The teacher moves only by clicking inside the app (the sidebar navigation, widgets): a page.goto
would start a new Streamlit session, which is no longer the class's teacher. Every wait polls with
a deadline; none is a timing threshold (how fast a move reaches 100 students is
benchmarks/, not a test). Screenshots go to artifacts/screenshots/class-*.png.

Uses the fixtures of tests/test_browser.py (the system Chromium; skipped outside CI without one).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from urllib.parse import urlparse

import pytest

from serving import jobs
from serving.classroom import classes
from serving.classroom.store import DB_ENV
from serving.models import ENV_VAR
from tests.test_browser import (  # noqa: F401 (browser is a fixture)
    DONE,
    NAV,
    ROOT,
    SHOTS,
    TIMEOUT_MS,
    browser,
    free_port,
    open_home_once,
    query,
    screenshot,
    start_server,
    stop_server,
    wait_drawn,
    wait_healthy,
)
from tests.test_class_serving import served  # noqa: F401 (a fixture: the class server)
from ui import present
from ui.parts import NUMBERS_TITLE

pytestmark = pytest.mark.browser


def _text(p) -> str:
    return p.locator(MAIN).inner_text()


SIDEBAR = "[data-testid='stSidebar']"
MAIN = "[data-testid='stMain']"
EXCEPTION = "[data-testid='stException']"
DEADLINE_S = 60.0  # a generous bound on a wait that normally ends in a second or two
HTML_NAME = "<b>x</b>"  # a student's name that would be bold if it were drawn as HTML
STUDENTS = ("Ada", HTML_NAME, "Cy")
RUN = "ada-run"
QUESTION = "Does head 2 of layer 0 look at the previous token?"


@pytest.fixture(scope="module")
def class_servers(tmp_path_factory):
    """Two app processes on two ports, one runs folder (so one class database): (teacher's base
    URL, students' base URL, the runs folder). No teacher password, one thread a job."""
    runs = tmp_path_factory.mktemp("runs")
    logs = tmp_path_factory.mktemp("logs")
    env = {**os.environ, ENV_VAR: str(ROOT / "assets" / "models"), jobs.RUNS_ENV: str(runs)}
    env["VIZ_JOB_THREADS"] = "1"
    for unset in (jobs.PASSWORD_ENV, DB_ENV):  # no password; SQLite in the runs folder
        env.pop(unset, None)
    ports = [free_port()]
    ports.append(next(p for p in iter(free_port, None) if p != ports[0]))
    procs = [start_server(port, env, logs / f"streamlit-{port}.log") for port in ports]
    try:
        for port, proc in zip(ports, procs, strict=True):
            wait_healthy(f"http://127.0.0.1:{port}", proc)
            open_home_once(port)
        assert procs[0].pid != procs[1].pid and ports[0] != ports[1]
        yield f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}", runs
    finally:
        for proc in procs:
            stop_server(proc)
        for view in jobs.list_runs(runs):
            if view.live and jobs.worker_alive(view.pid, view.path, view.pid_started):
                os.kill(view.pid, signal.SIGKILL)


# ---- helpers ------------------------------------------------------------------------------------


def _new_page(browser, width: int = 1280, height: int = 800):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": height})
    p = context.new_page()
    p.js_errors = []
    p.on("pageerror", lambda exc: p.js_errors.append(str(exc)))
    return p


def _until(what: str, check, p, timeout: float = DEADLINE_S):
    """Poll `check()` until it returns something true, or fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        p.wait_for_timeout(250)


def _path(p) -> str:
    return urlparse(p.url).path.strip("/")


def _at(p, route: str, **params: str) -> bool:
    """Whether the browser shows `route` with these URL values."""
    here = query(p)
    return _path(p) == route and all(here.get(k) == v for k, v in params.items())


TITLES = {"Attention": "Attention", "Class": "Live class"}  # a page's title, by its route


def _widget(p, key: str) -> str | None:
    """What the page's widget bound to URL key `key` shows: a slider's value, a radio's choice."""
    box = p.locator(f".st-key-_w_{key}")
    if not box.count():
        return None
    if box.locator("input[type='range']").count():
        return box.locator("input[type='range']").input_value()
    chosen = box.locator("label").filter(has=p.locator("input:checked"))
    return chosen.inner_text().strip() if chosen.count() else None


def _shows(p, route: str, **values: str) -> bool:
    """Whether the screen shows `route`'s page (its title) with these widget values, finished."""
    title = p.locator(f"{MAIN} h1").first
    if not title.count() or not title.inner_text().strip().endswith(TITLES[route]):  # icon first
        return False
    if p.locator(DONE).count() == 0:
        return False
    return all(_widget(p, k) == v for k, v in values.items())


def _follows(p, who: str, route: str, url_problems: list[str], **values: str) -> None:
    """Until `who`'s screen shows the teacher's view; then their URL must say it too (a wrong
    URL is recorded, and the test fails on it at the end, after the other steps ran)."""
    _until(f"{who}'s screen follows to {route} {values}", lambda: _shows(p, route, **values), p)
    try:
        _until(f"{who}'s URL follows to {route} {values}", lambda: _at(p, route, **values), p, 15)
    except AssertionError as missed:
        url_problems.append(f"{missed}; the URL is {p.url}")


def _nav(p, route: str) -> None:
    """Click the sidebar navigation's link to `route` (a move inside the session)."""
    p.locator(f"{NAV} [data-testid='stSidebarNavLink'][href$='/{route}']").click()
    p.wait_for_url(f"**/{route}*", timeout=TIMEOUT_MS)
    wait_drawn(p)


def _box(p):
    """A student's class box: at the top of the main area, above the page's title (in the
    sidebar it sat below the navigation, out of sight on a laptop)."""
    return p.locator(f"{MAIN} .st-key-class_box")


def _metric(p, label: str) -> str:
    metric = p.locator("[data-testid='stMetric']").filter(has_text=label)
    return metric.locator("[data-testid='stMetricValue']").inner_text().strip()


def _sidebar_text(p) -> str:
    return p.locator(SIDEBAR).inner_text()


def _no_exception(p, who: str) -> None:
    assert p.locator(EXCEPTION).count() == 0, (
        f"{who}: {p.locator(EXCEPTION).first.inner_text()[:500]}"
    )


def _shot(p, name: str):
    """The viewport as the person sees it (the sidebar and the top of the page)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"class-{name}.png"
    p.screenshot(path=str(path))
    return path


def _table(frame) -> list[dict[str, str]]:
    """An st.dataframe's rows as column -> text, from the grid's accessible table (the cells
    themselves are drawn on a canvas)."""
    if not frame.count():
        return []
    heads = [h.strip() for h in frame.locator("[role='columnheader']").all_text_contents()]
    rows = []
    for row in frame.locator("[role='row']").all():
        cells = [c.strip() for c in row.locator("[role='gridcell']").all_text_contents()]
        if cells:
            rows.append(dict(zip(heads[-len(cells) :], cells, strict=False)))
    return rows


def _slider_to(p, key: str, value: int) -> None:
    """Move the page's slider bound to URL key `key` to `value` with the keyboard (one rerun a
    step), and wait until the URL has it."""
    thumb = p.locator(f".st-key-_w_{key} input[type='range']")
    now = int(thumb.input_value())
    thumb.focus()
    for _ in range(abs(value - now)):
        thumb.press("ArrowRight" if value > now else "ArrowLeft")
    p.wait_for_function(
        f"() => new URLSearchParams(location.search).get('{key}') === '{value}'",
        timeout=TIMEOUT_MS,
    )
    wait_drawn(p)


# ---- the class ----------------------------------------------------------------------------------


def test_a_class_end_to_end(class_servers, browser):  # noqa: F811
    teacher_url, student_url, _ = class_servers
    teacher = _new_page(browser, 1400, 900)
    students = {name: _new_page(browser) for name in STUDENTS}
    everyone = {"teacher": teacher, **students}
    try:
        _a_class(teacher_url, student_url, teacher, students)
    except BaseException:  # what each screen showed when a step failed, for the report
        for i, p in enumerate(everyone.values()):
            with contextlib.suppress(Exception):
                _shot(p, f"failed-{i}")
                print(f"failed-{i}: {p.url}\n{_sidebar_text(p)[:400]}")
        raise
    finally:
        for p in everyone.values():
            p.context.close()


def _a_class(teacher_url: str, student_url: str, teacher, students: dict) -> None:
    ada, html_student, cy = (students[n] for n in STUDENTS)
    url_problems: list[str] = []  # a screen that followed while its URL did not
    followers = (ada, html_student)  # Cy stops following for a while

    # -- the teacher starts a class (no teacher password on this server) and reads the code
    teacher.goto(f"{teacher_url}/Class")
    wait_drawn(teacher)
    teacher.locator(MAIN).get_by_role("button", name="Start a class").click()
    teacher.locator(".join-code").wait_for(timeout=TIMEOUT_MS)
    code = teacher.locator(".join-code").inner_text().strip()
    assert re.fullmatch(r"[A-Z0-9]{4,8}", code), code
    assert f"?join={code}" in teacher.locator(MAIN).inner_text()  # the link students open
    assert f"code {code}" in _sidebar_text(teacher)  # the teacher's own class box
    _no_exception(teacher, "teacher's room")

    # -- three students join on the other process, from the link (the code is filled in)
    for name, p in students.items():
        p.goto(f"{student_url}/Class?join={code}")
        wait_drawn(p)
        form = p.locator(f"{MAIN} [data-testid='stForm']").filter(has_text="Join code")
        assert form.get_by_label("Join code").input_value() == code
        form.get_by_label("Your name (or leave it empty to stay anonymous)").fill(name)
        form.get_by_role("button", name="Join").click()
        _box(p).wait_for(timeout=TIMEOUT_MS)
        _until(f"{name!r} has a seat cookie", lambda p=p: _cookie(p, "viz_class_seat"), p)
        assert "seat" not in query(p)  # never in the address a student shares
        assert urlparse(p.url).port != urlparse(teacher.url).port  # the other process
        _no_exception(p, name)
    # The name with HTML is text everywhere it is drawn: never a bold element.
    box_text = _box(html_student).inner_text()
    assert f"you are {HTML_NAME}" in box_text, box_text
    assert f"as {HTML_NAME}." in html_student.locator(MAIN).inner_text()
    assert (
        html_student.locator(f"{SIDEBAR} b, {MAIN} b").filter(has_text=re.compile("^x$")).count()
        == 0
    )
    _until("the teacher's dashboard: 3 joined", lambda: _metric(teacher, "Joined") == "3", teacher)
    _until("3 following", lambda: _metric(teacher, "Following you") == "3", teacher)
    screenshot(teacher, "class-teacher-room")

    # -- the teacher moves to Attention, then changes widgets: every follower moves with them
    _nav(teacher, "Attention")
    for name, p in students.items():
        _follows(p, name, "Attention", url_problems)
    teacher.locator(".st-key-_w_view [role='radiogroup'] label").filter(has_text="scores").click()
    teacher.wait_for_function(
        "() => new URLSearchParams(location.search).get('view') === 'scores'", timeout=TIMEOUT_MS
    )
    wait_drawn(teacher)
    _slider_to(teacher, "head", 1)
    for name, p in students.items():
        _follows(p, name, "Attention", url_problems, view="scores", head="1")
        _no_exception(p, name)
    _shot(ada, "student-follows-attention")

    # -- Cy stops following; the teacher moves again: Cy stays, the others move
    _box(cy).get_by_role("button", name="Stop following").click()
    _box(cy).filter(has_text="Exploring on your own.").wait_for(timeout=TIMEOUT_MS)
    _slider_to(teacher, "head", 2)
    for name, p in zip(("Ada", HTML_NAME), followers, strict=True):
        _follows(p, name, "Attention", url_problems, head="2")
    cy.wait_for_timeout(3_000)  # a few of Cy's polls: none may move Cy
    assert _shows(cy, "Attention", view="scores", head="1"), _shot(cy, "cy-moved")
    _shot(cy, "student-exploring")
    # ... and follows again with one click: to the teacher's view as it is now
    _box(cy).get_by_role("button", name="Follow the teacher").click()
    _follows(cy, "Cy", "Attention", url_problems, view="scores", head="2")
    _box(cy).filter(has_text="Following the teacher").wait_for(timeout=TIMEOUT_MS)

    # -- back to Live class, the teacher's control room: the class stays on the teacher's last
    # view while the teacher asks a typed choice question with an answer
    _nav(teacher, "Class")
    teacher.locator(MAIN).filter(has_text="Ask the room").wait_for(timeout=TIMEOUT_MS)
    ada.wait_for_timeout(2_000)  # a few of the watcher's reads: none may move the class
    for name, p in students.items():
        assert _shows(p, "Attention", view="scores", head="2"), _shot(p, f"{name}-moved")
    ask = teacher.locator(f"{MAIN} [data-testid='stForm']").filter(has_text="Options, one a line")
    ask.get_by_label("Question").fill(QUESTION)
    ask.get_by_label("Options, one a line").fill("yes\nno\nonly sometimes")
    ask.get_by_label("The answer (one of the options; empty: none to reveal)").fill("yes")
    ask.get_by_role("button", name="Ask").click()
    live = teacher.locator(MAIN).filter(has_text="of 3 answered")
    live.wait_for(timeout=TIMEOUT_MS)
    assert f"{QUESTION} · 0 of 3 answered" in teacher.locator(MAIN).inner_text()

    # -- the students see it in their class box and answer: Ada right, <b>x</b> wrong
    for p in students.values():
        _box(p).filter(has_text=f"The teacher asks: {QUESTION}").wait_for(timeout=TIMEOUT_MS)
    _shot(ada, "student-question")
    for p, choice in ((ada, "yes"), (html_student, "no")):
        form = _box(p).locator("[data-testid='stForm']")
        form.locator("[role='radiogroup'] label").filter(has_text=re.compile(f"^{choice}$")).click()
        form.get_by_role("button", name="Send my answer").click()
        _box(p).filter(has_text=f"Your answer: {choice}. Wait for the reveal.").wait_for(
            timeout=TIMEOUT_MS
        )
        # One answer each: the form is gone, so there is no second attempt to make.
        assert _box(p).get_by_role("button", name="Send my answer").count() == 0
    answered = f"{QUESTION} · 2 of 3 answered"
    _until("the teacher sees 2 of 3 answered", lambda: answered in _text(teacher), teacher)
    screenshot(teacher, "class-teacher-answers")

    # -- the reveal: right and wrong in each box; Cy, who did not answer, sees the answer
    teacher.locator(MAIN).get_by_role("button", name="Reveal the answer").click()
    teacher.locator(MAIN).filter(has_text="Revealed: yes").wait_for(timeout=TIMEOUT_MS)
    _box(ada).filter(has_text="You said yes: right. The answer: yes").wait_for(timeout=TIMEOUT_MS)
    _box(html_student).filter(has_text="You said no; the answer is yes.").wait_for(
        timeout=TIMEOUT_MS
    )
    _box(cy).filter(has_text="The answer: yes").wait_for(timeout=TIMEOUT_MS)
    for name, p in students.items():
        assert _box(p).locator("[data-testid='stForm']").count() == 0, (
            f"{name}: a form after the reveal"
        )
        _no_exception(p, name)
    _shot(ada, "student-revealed-right")
    _shot(html_student, "student-revealed-wrong")

    # -- the leaderboard: the teacher sets a budget, Ada trains a short run within it
    budget = teacher.locator(f"{MAIN} [data-testid='stForm']").filter(has_text="Minutes a run")
    minutes = budget.get_by_label("Minutes a run")
    minutes.fill("0.5")
    minutes.press("Tab")
    budget.get_by_role("button", name="Set the budget").click()
    teacher.locator(MAIN).filter(has_text="at most 0.5 minutes").wait_for(timeout=TIMEOUT_MS)
    _box(ada).get_by_role("button", name="Stop following").click()  # to train on her own
    _box(ada).filter(has_text="Exploring on your own.").wait_for(timeout=TIMEOUT_MS)
    _nav(ada, "Training")
    ada.locator(f"{MAIN} [data-testid='stExpander']").filter(has_text="Set up a new run").wait_for(
        timeout=TIMEOUT_MS
    )
    amount = ada.locator(".st-key-_w_t_minutes input")
    amount.fill("0.1")  # six seconds of the default preset (quick: 2 layers, d_model 128)
    amount.press("Tab")
    wait_drawn(ada)
    name = ada.locator(".st-key-_w_t_name input")
    name.fill(RUN)
    name.press("Tab")
    wait_drawn(ada)
    start = ada.locator(".st-key-t_start button")
    _until("Ada may start a run (the class's budget)", start.is_enabled, ada)
    start.click()
    ada.locator(MAIN).filter(has_text="It is on the class's leaderboard").wait_for(
        timeout=TIMEOUT_MS
    )
    _no_exception(ada, "Ada on Training")
    _shot(ada, "student-run-started")

    board = teacher.locator(f"{MAIN} [data-testid='stDataFrame']")

    def ranked() -> dict[str, str] | None:
        """The leaderboard's row for Ada's run once it has bits per character: column -> cell."""
        for row in _table(board):
            if row.get("run") == RUN and row.get("bits per character"):
                return row
        return None

    row = _until("Ada's run on the leaderboard with bits per character", ranked, teacher, 180)
    assert row["student"] != "Ada", row  # names hidden on the projector until the teacher asks
    teacher.locator(MAIN).get_by_text("Show students' names").click()
    wait_drawn(teacher)
    row = _until("Ada's name on the leaderboard", ranked, teacher)
    assert row["student"] == "Ada" and row["rank"] == "1", row
    bpc = float(row["bits per character"])
    assert 0.5 < bpc < 8, row  # a few seconds of training: far from good, far from nothing
    screenshot(teacher, "class-teacher-leaderboard")

    # -- the end: the record stays, the students are no longer in a class
    teacher.locator(MAIN).get_by_role("button", name="End the class").click()
    teacher.locator(MAIN).get_by_role("button", name="Start a class").wait_for(timeout=TIMEOUT_MS)
    for p in (ada, html_student, cy):
        _no_exception(p, "a student at the end")
    for p in (teacher, *students.values()):
        assert not p.js_errors, p.js_errors[:3]
    # The students' screens followed the teacher; their URLs (shared, reloaded, bookmarked: the
    # view as a link) must have followed too.
    assert not url_problems, "\n".join(url_problems)


# ---- a flood of wrong codes --------------------------------------------------------------------


def test_a_flood_of_wrong_codes_from_one_browser_locks_no_student_out(served, browser):  # noqa: F811
    """Issue 39's lock-out, as the drill met it: behind HAProxy, one browser types wrong codes
    past the limit and is told to wait; another student's right code still joins, and so does the
    flooder's own right code (only wrong codes count)."""
    url = served["url"]
    teacher, flooder, other = (_new_page(browser) for _ in range(3))
    try:
        for p in (teacher, flooder, other):
            p.goto(f"{url}/Class")
            wait_drawn(p)
        teacher.locator(MAIN).get_by_role("button", name="Start a class").click()
        teacher.locator(".join-code").wait_for(timeout=TIMEOUT_MS)
        code = teacher.locator(".join-code").inner_text().strip()
        form = flooder.locator(f"{MAIN} [data-testid='stForm']").filter(has_text="Join code")
        for _ in range(classes.JOIN_FAILURES_MAX + 1):
            form.get_by_label("Join code").fill("ZZZZZZ")
            form.get_by_role("button", name="Join").click()
            wait_drawn(flooder)
        _until("the flooder told to wait", lambda: "Too many wrong codes" in _text(flooder),
               flooder)  # fmt: skip
        for p, name in ((other, "Ada"), (flooder, "Bo")):  # right codes, from the same address
            form = p.locator(f"{MAIN} [data-testid='stForm']").filter(has_text="Join code")
            form.get_by_label("Join code").fill(code)
            form.get_by_label("Your name (or leave it empty to stay anonymous)").fill(name)
            form.get_by_role("button", name="Join").click()
            _box(p).wait_for(timeout=TIMEOUT_MS)
            assert f"you are {name}" in _box(p).inner_text()
        _until("the teacher's dashboard: 2 joined", lambda: _metric(teacher, "Joined") == "2",
               teacher)  # fmt: skip
    finally:
        for p in (teacher, flooder, other):
            p.context.close()


# ---- a process killed mid-class -----------------------------------------------------------------


def test_a_killed_process_s_student_is_still_in_the_class_and_follows(served, browser):  # noqa: F811
    """The class server's 2 processes behind HAProxy; the teacher and a student on different ones.
    The student's process is killed: the browser reconnects by itself (HAProxy sends it to the
    process alive), the student is still in the class (the seat in a cookie), and the
    teacher's next move reaches them, opening and closing the numbers behind the picture too. (The teacher's own process killed: the teacher's browser
    comes back as the teacher by its cookie; a restarted process is out of HAProxy's turn until
    it is warmed, so no browser meets a fresh process's "Page not found" notice.)"""
    url = served["url"]
    teacher, student = _new_page(browser), _new_page(browser, 1024, 768)
    for p in (teacher, student):
        p.goto(f"{url}/")
        wait_drawn(p)
    teacher.goto(f"{url}/Class")
    wait_drawn(teacher)
    teacher.get_by_role("button", name="Start a class").click()
    code = teacher.locator(".join-code").inner_text().strip()
    student.goto(f"{url}/Class?join={code}")
    wait_drawn(student)
    student.get_by_label("Your name (or leave it empty to stay anonymous)").fill("Ada")
    student.get_by_role("button", name="Join").click()
    _box(student).wait_for(timeout=TIMEOUT_MS)
    on = {p: _cookie(p, "SERVERID") for p in (teacher, student)}
    assert set(on.values()) == {"s1", "s2"}, f"teacher and student on two processes: {on}"

    pids = json.loads((served["folder"] / "pids.json").read_text())["apps"]
    port = served["backends"][int(on[student][1]) - 1]  # s1 -> the first backend port
    os.kill(pids[str(port)], signal.SIGKILL)
    student.wait_for_timeout(3_000)  # the browser notices and reconnects by itself
    _until("the student's box is back", lambda: _box(student).count() > 0, student, 120)
    _nav(teacher, "Attention")
    _until("the student follows after the kill", lambda: _shows(student, "Attention"), student)
    _no_exception(student, "the student after the kill")
    _shot(student, "student-after-kill")
    # what the teacher opens is part of the view (issue 37): the numbers behind the picture
    for opened in (True, False):
        _until("the teacher's numbers section", lambda: _numbers_open(teacher) is not None, teacher)
        teacher.locator(MAIN).locator("summary", has_text=NUMBERS_TITLE).first.click()
        _until(f"the teacher's numbers {opened}", lambda o=opened: _numbers_open(teacher) is o,
               teacher)  # fmt: skip
        _until(f"the student's numbers {opened}", lambda o=opened: _numbers_open(student) is o,
               student)  # fmt: skip


def _numbers_open(p) -> bool | None:
    """Whether the page's first "numbers behind it" section is open (None: it has none)."""
    return p.evaluate(
        """(title) => { const d = [...document.querySelectorAll('[data-testid=stMain] details')]
          .find(d => d.querySelector('summary').innerText.includes(title));
          return d ? d.open : null; }""",
        NUMBERS_TITLE,
    )


def _cookie(p, name: str) -> str | None:
    return {c["name"]: c["value"] for c in p.context.cookies()}.get(name)


# ---- a lecture: brisk moves through a lesson, a question, a reload, a killed process -----------

LECTURE = "2_attention"
# Bursts of Back (B) and Next (N) as a lecturer clicks them, each burst ending at a stop the
# screens must agree on: stops 6 -> 7 and 7 -> 6 change the model (shakespeare-char,
# induction-2l), 8 is another page (Interventions), 4 another model again (shakespeare-nomask).
BURSTS = ("N", "N", "BB", "NNN", "BBBB", "BB", "NNNN")
ASK_AT = 7  # the stop whose question the room answers (a choice: which head)


def _lesson_stops(lesson_id: str) -> list[tuple[str, str]]:
    """(page route, model) of each stop, as the lesson file says."""
    import tomllib

    data = tomllib.loads((ROOT / "assets" / "lessons" / f"{lesson_id}.toml").read_text())
    return [(s["page"], s.get("model", data["model"])) for s in data["stop"]]


def _rendered(p) -> tuple[str, str, str, str]:
    """What the screen shows, not what the database says: the page's title, the lesson stop,
    the sidebar's model and training step (read from the page even where presenter mode folds
    the sidebar away)."""
    title = p.locator(f"{MAIN} h1").first.inner_text().strip().split()[-1]
    panel = p.locator(f"{MAIN} .st-key-lesson_panel")
    stop = re.search(r"stop\s(\d+)\sof", panel.first.inner_text()) if panel.count() else None
    model = p.locator(".st-key-_w_model input").first.input_value()
    thumb = p.locator(".st-key-_w_train_step [aria-valuetext]")  # drawn once its code loaded
    step = (thumb.first.get_attribute("aria-valuetext") or "") if thumb.count() else ""
    return title, stop.group(1) if stop else "", model.strip(), step.strip()


def _blurred(p) -> bool:
    """Whether the lesson's mask (a style with a blur, ui/lesson._mask) is on the page."""
    return p.evaluate(
        "() => [...document.querySelectorAll('style')].some(s => s.textContent.includes('blur(')"
        " && s.textContent.includes('st-key-lesson_panel'))"
    )


def _on_screen(p, locator) -> bool:
    """Whether the top of `locator`'s element is inside the viewport (not scrolled away)."""
    box = locator.bounding_box()
    return box is not None and 0 <= box["y"] < p.viewport_size["height"] - 40


def _settled(p) -> bool:
    return p.locator(DONE).count() > 0 and p.locator(f"{MAIN} h1").count() > 0


_MOVES = {"N": "Next ▶", "B": "◀ Back"}


def _landed(p, stops: list[tuple[str, str]]) -> int | None:
    """The stop a settled screen shows when it shows that stop's whole view (its page, its
    model, a training step), else None (a screen mid-move: one stop's panel on another's page)."""
    if not _settled(p):
        return None
    title, stop, model, step = _rendered(p)
    if not (stop and step):
        return None
    page, want = stops[int(stop) - 1]
    return int(stop) if (title, model) == (_title(page), want) else None


def _steady(p, stops: list[tuple[str, str]]) -> int | None:
    """`_landed`, the same on two looks a second apart: a press still on its way moves it."""
    first = _landed(p, stops)
    if first is None:
        return None
    p.wait_for_timeout(1000)
    return first if _landed(p, stops) == first else None


def _title(page: str) -> str:
    """The last word of a page route's title, as `_rendered` reads it."""
    return TITLES.get(page, page.replace("_", " ")).split()[-1]


def test_a_lecture_keeps_every_screen_on_the_teachers_view(served, browser):  # noqa: F811
    """Issue 37's lecture: a teacher in presenter mode at 1024x768 and three students on the
    class server's two processes. Brisk bursts of Back and Next through a lesson whose stops
    change the model and the page; after each burst every student's screen shows the teacher's
    page, stop, model and training step, and the teacher's the stop's own model, in its address
    bar too (a reload opens what the screen shows). At a stop the
    teacher asks the room: the question appears at the top of each student's main area, the
    teacher reloads mid-question and can still reveal, and the reveal reaches every student.
    Then a student's process is killed, and the next move still reaches everyone."""
    url = served["url"]
    teacher = _new_page(browser, 1024, 768)
    students = [_new_page(browser) for _ in range(3)]
    stops = _lesson_stops(LECTURE)
    wrong: list[str] = []  # every burst after which a screen did not show the teacher's view
    try:
        for p in (teacher, *students):
            p.goto(f"{url}/")
            wait_drawn(p)
        teacher.goto(f"{url}/Class")
        wait_drawn(teacher)
        teacher.locator(MAIN).get_by_role("button", name="Start a class").click()
        teacher.locator(".join-code").wait_for(timeout=TIMEOUT_MS)
        code = teacher.locator(".join-code").inner_text().strip()
        for i, p in enumerate(students):
            p.goto(f"{url}/Class?join={code}")
            wait_drawn(p)
            p.get_by_label("Your name (or leave it empty to stay anonymous)").fill(f"S{i}")
            p.get_by_role("button", name="Join").click()
            _box(p).wait_for(timeout=TIMEOUT_MS)
        # the teacher opens the lesson in presenter mode (a new tab: the cookie keeps the class)
        teacher.goto(f"{url}/{stops[5][0]}?lesson={LECTURE}&step=6&present=1")
        wait_drawn(teacher)
        at, dropped = 6, 0
        for burst in BURSTS:
            start = at
            for move in burst:
                teacher.locator(MAIN).get_by_role("button", name=_MOVES[move]).click()
                teacher.wait_for_timeout(150)  # brisk: the next click before the page has drawn
                at += 1 if move == "N" else -1
            # A click made while the page is still drawing may be dropped (Streamlit merges two
            # presses of one button waiting for the same run, and a press on a page being
            # replaced names a button the next page does not have): the teacher then stands
            # between the burst's start and its end, on that stop's whole view, never beyond
            landed = _until(f"the teacher settled after burst {burst}",
                            lambda: _steady(teacher, stops), teacher)  # fmt: skip
            assert min(start, at) <= landed <= max(start, at), (start, burst, landed)
            dropped += abs(at - landed)
            while landed != at:  # the lecturer clicks again, once the page has drawn
                move = "N" if at > landed else "B"
                teacher.locator(MAIN).get_by_role("button", name=_MOVES[move]).click()
                landed += 1 if move == "N" else -1
                _until(f"the teacher at stop {landed}", lambda s=landed:
                       _landed(teacher, stops) == s, teacher)  # fmt: skip
            page, model = stops[at - 1]
            shown = _rendered(teacher)
            try:  # the teacher's address bar (a reload, a link) names what the screen shows
                _until(f"the teacher's address at stop {at}, {model}", lambda m=model, a=at:
                       (query(teacher).get("step"), query(teacher).get("model")) == (str(a), m),
                       teacher)  # fmt: skip
            except AssertionError:
                wrong.append(f"after burst {burst} (stop {at}): the teacher's address reads "
                             f"{query(teacher)}, the screen {shown}")  # fmt: skip
            for i, p in enumerate(students):
                try:
                    _until(f"S{i} on the teacher's view {shown}",
                           lambda p=p, v=shown: _settled(p) and _rendered(p) == v, p)  # fmt: skip
                except AssertionError:
                    wrong.append(f"after burst {burst} (stop {at}): S{i} shows {_rendered(p)}, "
                                 f"the teacher {shown}")  # fmt: skip
            _no_exception(teacher, f"the teacher at stop {at}")
        print(f"brisk clicks the teacher made again: {dropped} of {sum(map(len, BURSTS))}")
        assert not wrong, "\n".join(wrong)

        # -- the room answers this stop's question, at the top of each student's page
        while at != ASK_AT:
            step_to = "Next ▶" if at < ASK_AT else "◀ Back"
            teacher.locator(MAIN).get_by_role("button", name=step_to).click()
            at += 1 if at < ASK_AT else -1
            _until(f"the teacher at stop {at}", lambda a=at: _settled(teacher) and
                   _rendered(teacher)[1] == str(a), teacher)  # fmt: skip
        for p in students:  # a student scrolled down to a figure when the question comes
            p.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 1e6)")
        teacher.get_by_role("button", name="Ask the room this question").click()
        for i, p in enumerate(students):
            asked = _box(p).filter(has_text="The teacher asks")
            _until(f"S{i} sees the question", lambda p=p, a=asked: a.count() > 0, p)
            _until(f"S{i}'s question form on screen", lambda p=p: _on_screen(p, _box(p)), p)
            top = _box(p).bounding_box()
            title = p.locator(f"{MAIN} h1").first.bounding_box()
            assert top is not None and title is not None and top["y"] < title["y"], (
                f"S{i}: the question is not at the top of the page"
            )
        _box(students[0]).get_by_text("L1 H1", exact=True).click()
        _box(students[0]).get_by_role("button", name="Send my answer").click()
        _box(students[0]).filter(has_text="Wait for the reveal").wait_for(timeout=TIMEOUT_MS)
        teacher.reload()  # mid-question: the teacher's session is new, the question is not
        wait_drawn(teacher)
        reveal = teacher.get_by_role("button", name="Reveal the answer to the room")
        _until("the Reveal button after the reload", lambda: reveal.count() > 0, teacher)
        assert _rendered(teacher)[1] == str(ASK_AT)  # still at the stop, not moved
        reveal.click()
        for i, p in enumerate(students):
            _until(f"S{i} sees the reveal", lambda p=p: "the answer is" in _box(p).inner_text()
                   or "The answer:" in _box(p).inner_text() or ": right." in _box(p).inner_text(),
                   p)  # fmt: skip
        for i, p in enumerate(students):  # the reveal lifts the blur of the student's page too
            _until(f"S{i}'s page unblurred by the reveal", lambda p=p: not _blurred(p), p)
        _shot(students[0], "lecture-student-revealed")
        _shot(teacher, "lecture-teacher-revealed")

        # -- a student's process is killed; the next move still reaches every screen
        pids = json.loads((served["folder"] / "pids.json").read_text())["apps"]
        victim = _cookie(students[1], "SERVERID")
        port = served["backends"][int(victim[1]) - 1]
        os.kill(pids[str(port)], signal.SIGKILL)
        students[1].wait_for_timeout(3_000)
        _until("the student's box is back", lambda: _box(students[1]).count() > 0,
               students[1], 120)  # fmt: skip
        teacher.locator(MAIN).get_by_role("button", name="Next ▶").click()
        at += 1
        _until(f"the teacher at stop {at}", lambda: _settled(teacher) and
               _rendered(teacher)[1] == str(at), teacher)  # fmt: skip
        shown = _rendered(teacher)
        for i, p in enumerate(students):
            _until(f"S{i} follows after the kill", lambda p=p: _settled(p) and
                   _rendered(p) == shown, p, 120)  # fmt: skip
            # stop 7's revealed question stays at stop 7
            assert "The teacher asks" not in _box(p).inner_text(), f"S{i}: {_box(p).inner_text()}"
            assert _blurred(p), f"S{i}: stop {at}'s answer shows before anyone revealed it"

        # -- unasked, the teacher shows this stop's answer: every screen unblurs with the wall's
        teacher.get_by_role("button", name="Show everyone the answer").click()
        _until("the teacher's page unblurred", lambda: not _blurred(teacher), teacher)
        for i, p in enumerate(students):
            _until(f"S{i} sees the answer shown", lambda p=p: not _blurred(p)
                   and "The answer:" in _box(p).inner_text(), p)  # fmt: skip
        _shot(students[2], "lecture-student-shown")
    except BaseException:
        for i, p in enumerate((teacher, *students)):
            with contextlib.suppress(Exception):
                _shot(p, f"lecture-failed-{i}")
        raise
    finally:
        for p in (teacher, *students):
            p.context.close()


# ---- the teacher's spotlight, followed --------------------------------------------------------

# Each chart's top edge on screen (px from the viewport's top), in the page's order.
CHART_TOPS_JS = """() => [...document.querySelectorAll(
  '[data-testid=stMain] :is([data-testid=stPlotlyChart], [data-testid=stImage])')]
  .filter((f) => f.offsetParent !== null && f.getBoundingClientRect().height > 20)
  .map((f) => Math.round(f.getBoundingClientRect().top))"""


def _brought_up(p, n: int) -> bool:
    """Whether chart n (from 1) is at the top of the screen, as the spotlight puts it."""
    tops = p.evaluate(CHART_TOPS_JS)
    return len(tops) >= n and 0 <= tops[n - 1] <= 200


def test_the_teachers_spotlight_brings_up_the_same_figure_on_every_follower(
    served,  # noqa: F811
    browser,  # noqa: F811
):
    """Issue 37 (what the teacher shows is part of the view) and 38 (the spotlight): a teacher in
    presenter mode steps the spotlight through a page's figures on the class server (two
    processes behind HAProxy); a following student (a laptop, not presenter mode) sees the same figure brought to
    the top of their screen after each step, and their address names it; a teacher's reload comes
    back to the figure."""
    teacher_url = student_url = served["url"]  # two processes behind HAProxy
    teacher = _new_page(browser, 1024, 768)
    student = _new_page(browser)
    route = "MLP_neurons"
    try:
        teacher.goto(f"{teacher_url}/Class")
        wait_drawn(teacher)
        teacher.locator(MAIN).get_by_role("button", name="Start a class").click()
        teacher.locator(".join-code").wait_for(timeout=TIMEOUT_MS)
        code = teacher.locator(".join-code").inner_text().strip()
        student.goto(f"{student_url}/Class?join={code}")
        wait_drawn(student)
        student.get_by_label("Your name (or leave it empty to stay anonymous)").fill("Sam")
        student.get_by_role("button", name="Join").click()
        _box(student).wait_for(timeout=TIMEOUT_MS)
        teacher.goto(f"{teacher_url}/{route}?present=1")
        wait_drawn(teacher)
        _until("the student on the teacher's page", lambda: _settled(student)
               and _path(student) == route, student)  # fmt: skip
        charts = _until("the student's charts", lambda: len(student.evaluate(CHART_TOPS_JS)),
                        student)  # fmt: skip
        assert charts >= 2 and not _brought_up(student, 2)
        spot = teacher.locator(f"#{present.SPOTLIGHT_ID} button[data-step='1']")
        for n in (1, 2):
            spot.click()
            _until(f"the teacher's chart {n} up", lambda n=n: _brought_up(teacher, n), teacher)
            _until(f"the teacher's address names chart {n}", lambda n=n: query(teacher).get(
                present.FIG_KEY) == f"{route}:{n}", teacher)  # fmt: skip
            _until(f"the student's chart {n} up", lambda n=n: _brought_up(student, n)
                   and query(student).get(present.FIG_KEY) == f"{route}:{n}", student)  # fmt: skip
        teacher.locator(f"#{present.SPOTLIGHT_ID} button[data-step='-1']").click()
        _until("the student back at chart 1", lambda: _brought_up(student, 1)
               and query(student).get(present.FIG_KEY) == f"{route}:1", student)  # fmt: skip
        teacher.reload()
        wait_drawn(teacher)
        _until("the teacher's reload back at chart 1", lambda: _brought_up(teacher, 1), teacher)

        _no_exception(teacher, "the teacher")
        _no_exception(student, "the student")
    except BaseException:
        for name, p in (("teacher", teacher), ("student", student)):
            with contextlib.suppress(Exception):
                _shot(p, f"spotlight-failed-{name}")
        raise
    finally:
        for p in (teacher, student):
            p.context.close()
