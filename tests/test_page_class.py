"""The Live class page and the class box (AppTest): a teacher starts a class and publishes the
view; a student joins by code, follows the teacher's page and choices, stops and rejoins, comes
back by the seat in the URL, answers once and sees the reveal. The class database is the real
one (SQLite in a tmp runs folder); the teacher's moves and questions go through its API where
the page under test is the student's.

In AppTest a fragment runs inline in the full run (no timer), so `at.run()` is one poll; a page
switch happens within that run, but the next `at.run()` runs the page AppTest started on."""

from __future__ import annotations

import pytest

from serving import jobs
from serving.classroom import classes, questions, store
from tests.apptest_util import ROOT, app_test, first_bundle
from tests.test_page_lessons import DEMO
from ui import class_page, class_watch, classroom
from ui import lesson as ui_lesson
from ui.state import to_url, widget_key
from viz_model.analysis.claims import md_escape
from viz_model.bundles.load import load_bundle
from viz_model.lessons import lesson_file
from viz_model.lessons.kinds import subject_for
from viz_model.lessons.lesson_file import load_lessons
from viz_model.lessons.registry import ANSWERS
from viz_model.lessons.truth import visible_token

CLASS_PAGE = "pages/18_class.py"
MODELS = ROOT / "assets" / "models"


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A runs folder of its own, so a class database of its own."""
    monkeypatch.setenv(jobs.RUNS_ENV, str(tmp_path))
    monkeypatch.delenv(store.DB_ENV, raising=False)
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    # this process's copies of class 1 are another database's class 1 (its question revealed)
    classroom.forget_all()
    yield tmp_path
    # the students' boxes stay registered with this process's watcher (AppTest's sessions end
    # without a word), which would go on reading a class database in the next test's runs folder
    class_watch.unregister_all()
    store.dispose()


@pytest.fixture
def jar(monkeypatch):
    """The browser's cookies for the sessions AppTest starts (it has none of its own). A session
    reads them at its first run only: set one before `app_test`, clear it after."""
    found: dict[str, str] = {}
    monkeypatch.setattr(classroom, "browser_cookie", found.get)
    return found


def _seated(jar, token: str, page: str | None = CLASS_PAGE, models=None):
    """A student's browser back on a new session (a reload, another server process): its seat
    cookie, and no seat anywhere else."""
    jar[classroom.SEAT_COOKIE] = token
    try:
        return app_test(models or MODELS, page)
    finally:
        jar.clear()


def _cookies_written(at) -> str:
    """The scripts that set this browser's cookies (st.html in the page)."""
    return "\n".join(h.proto.body for h in at.get("html") if "document.cookie" in h.proto.body)


@pytest.fixture
def a_class(runs):
    return classes.start_class(jobs.Auth(), "Week 3")


def _join(at, code: str, name: str):
    at.text_input[0].set_value(code)  # the join form: the code, then the name
    at.text_input[1].set_value(name)
    at.button[0].click().run()
    return at


def _sidebar_text(at) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown) + "\n".join(
        c.value for c in at.sidebar.caption
    )


def _box_text(at) -> str:
    """A student's class box and question: at the top of the main area (issue 37: in the
    sidebar it sat below the navigation, out of sight)."""
    return "\n".join(m.value for m in at.main.markdown) + "\n".join(
        c.value for c in at.main.caption
    )


def _student(models_dir, a_class, name="Ada"):
    at = app_test(models_dir, CLASS_PAGE)
    _join(at, a_class.code, name)
    assert not at.exception
    return at


def test_a_teacher_starts_a_class_and_is_shown_its_code(models_dir, runs):
    at = app_test(models_dir, CLASS_PAGE)
    start = next(b for b in at.button if b.label == "Start a class")
    start.click().run()
    assert not at.exception
    found = classes.active_classes()
    assert len(found) == 1
    bodies = [h.proto.body for h in at.main.get("html")]
    assert any(f">{found[0].code}<" in b for b in bodies)
    assert len(at.main.get("image")) == 1  # the QR code of the join link
    assert "following you" in _sidebar_text(at)


def test_a_teachers_move_is_published_with_the_pages_choices(models_dir, runs):
    at = app_test(models_dir, CLASS_PAGE)
    next(b for b in at.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    at.switch_page("pages/03_attention.py").run()
    at.slider(key=widget_key("layer")).set_value(1).run()
    view = classes.view(info.id)
    assert view.page == "Attention"
    assert view.params["layer"] == "1"
    assert view.params["model"] == first_bundle(models_dir)
    assert "present" not in view.params
    at.switch_page(CLASS_PAGE).run()  # the control room: the class stays on Attention
    assert classes.view(info.id).page == "Attention"


def test_a_wrong_code_is_refused_and_a_name_is_drawn_as_typed(models_dir, a_class):
    at = app_test(models_dir, CLASS_PAGE)
    _join(at, "ZZZZZZ", "Ada")
    assert "No class has this code" in at.warning[0].value
    assert "Join a class" in [s.value for s in at.subheader]  # still outside, the page runs
    _join(at, a_class.code.lower(), "<b>Ada</b>")
    text = _box_text(at)
    assert "\\<b\\>Ada\\</b\\>" in text  # escaped Markdown: shown as typed, never bold


def test_a_student_follows_the_teachers_page_and_choices(models_dir, a_class):
    at = _student(models_dir, a_class)
    model = first_bundle(models_dir)
    view = {"layer": "1", "head": "1", "model": model, "prompt": "abcabc"}
    classes.set_view(a_class.teacher_key, a_class.id, "Attention", view)
    classroom.forget(a_class.id)
    at.run()  # the student's poll sees the move and switches page (AppTest: the same run)
    assert not at.exception
    assert at.title[0].value.endswith("Attention")
    assert at.slider(key=widget_key("layer")).value == 1
    assert at.slider(key=widget_key("head")).value == 1
    assert at.session_state["prompt"] == "abcabc"


def test_a_student_who_stops_following_stays_and_rejoins_with_one_click(models_dir, a_class):
    at = _student(models_dir, a_class)
    next(b for b in at.main.button if b.label == "Stop following").click().run()
    classes.set_view(a_class.teacher_key, a_class.id, "Next_token", {})
    classroom.forget(a_class.id)
    at.run()
    assert at.title[0].value.endswith("Live class")  # still where the student was
    assert "Exploring on your own" in _box_text(at)
    next(b for b in at.main.button if b.label == "Follow the teacher").click().run()
    assert at.title[0].value.endswith("Next token")


def test_a_student_back_on_a_new_session_is_still_in_the_class_by_the_seat(
    models_dir, a_class, jar
):
    me = classes.join(a_class.code, "Grace", "test")
    at = _seated(jar, me.token, models=models_dir)
    assert "Grace" in _box_text(at)
    wrong = _seated(jar, "not-a-token", models=models_dir)
    assert not wrong.exception
    assert "Join a class" in [s.value for s in wrong.subheader]
    # the bad seat cookie is removed from that browser (app_test's second run wrote it)
    assert f"{classroom.SEAT_COOKIE}=; path=/; max-age=0" in _cookies_written(wrong)


def test_a_shared_link_opens_the_view_never_a_classmates_seat(models_dir, a_class, jar):
    """Issue 39: `seat=<token>` rode in the address bar students share; a classmate who opened
    it answered as that student, whose own answer was then refused."""
    ada = _student(models_dir, a_class)
    assert classroom.SEAT not in ada.query_params  # the seat is never in Ada's address
    assert f"{classroom.SEAT_COOKIE}=" in _cookies_written(ada)  # but in her browser's cookie
    token = ada.session_state["_class"].secret
    q = questions.ask(a_class.teacher_key, a_class.id, "choice", "Which?", ["a", "b"])
    classroom.forget(a_class.id)
    link = app_test(models_dir, CLASS_PAGE, query={classroom.SEAT: token})  # a link of old
    assert "Join a class" in [s.value for s in link.subheader]  # not in the class: no seat
    assert "_class" not in link.session_state
    assert classroom.SEAT not in link.query_params  # and the token is gone from its address
    ada.run()
    ada.main.radio[0].set_value("b")
    next(b for b in ada.main.button if b.label == "Send my answer").click().run()
    assert questions.distribution(q.id).counts == {"a": 0, "b": 1}  # her answer is hers


def test_a_student_answers_once_and_sees_the_reveal(models_dir, a_class):
    at = _student(models_dir, a_class)
    q = questions.ask(a_class.teacher_key, a_class.id, "choice", "Which?", ["L0 H1", "L1 H0"])
    classroom.forget(a_class.id)
    at.run()
    assert "The teacher asks:** Which?" in _box_text(at)
    at.main.radio[0].set_value("L1 H0")
    next(b for b in at.main.button if b.label == "Send my answer").click().run()
    dist = questions.distribution(q.id)
    assert dist.counts == {"L0 H1": 0, "L1 H0": 1}
    at.run()
    assert not any(b.label == "Send my answer" for b in at.main.button)  # answered: no form
    questions.reveal(a_class.teacher_key, q.id, "L0 H1", why="measured")
    classroom.forget(a_class.id)
    at.run()
    assert "the answer is **L0 H1**" in "\n".join(w.value for w in at.main.warning)
    assert "You said L1 H0" in "\n".join(w.value for w in at.main.warning)


def test_at_a_lesson_stop_in_a_class_a_student_answers_only_the_class_s_form_at_the_top(
    a_class, monkeypatch, tmp_path, jar
):
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    me = classes.join(a_class.code, "Ada", "test")
    at = _seated(jar, me.token, page=None)
    (lesson,), _ = load_lessons(tmp_path / "lessons", ui_lesson.catalogue())
    stop = lesson.stops[0]  # the teacher's view at the stop, as the teacher's session publishes it
    view = {"lesson": "demo", "step": 1, "model": stop.model, "prompt": stop.prompt, **stop.view}
    classes.set_view(
        a_class.teacher_key, a_class.id, "Next_token", {k: to_url(v) for k, v in view.items()}
    )
    classroom.forget(a_class.id)
    at.run()  # the student follows to the stop
    assert at.title[0].value.endswith("Next token")
    # In a class a stop's question is the class's: no private form, not even before it is asked
    assert _buttons(at) == []
    assert "when it appears" in "\n".join(i.value for i in at.main.info)
    subject = subject_for(load_bundle(MODELS / stop.model), stop.prompt)
    truth = ANSWERS[stop.answer](subject, stop.args)
    q = questions.ask_stop(a_class.teacher_key, a_class.id, lesson, 1, truth)
    classroom.forget(a_class.id)
    at.run()
    assert not at.exception
    assert _buttons(at) == ["Send my answer"]  # one form: the class's, which the teacher collects
    assert "answer it in the class box" in "\n".join(i.value for i in at.main.info)
    at.main.text_input[0].input(truth.value)
    next(b for b in at.main.button if b.label == "Send my answer").click().run()
    assert questions.distribution(q.id).total == 1
    questions.reveal(a_class.teacher_key, q.id, truth.value)
    classroom.forget(a_class.id)
    at.run()
    assert _buttons(at) == []  # revealed: the panel shows the model's answer, with the class's
    assert "right" in at.main.success[0].value  # answer, and asks nothing again


def _buttons(at) -> list[str]:
    """The labels of the answer forms' submit buttons, in the page and the sidebar."""
    return [b.label for b in at.button if b.label in ("Commit my answer", "Send my answer")]


def test_a_number_answer_within_the_tolerance_is_right(a_class):
    me = classes.join(a_class.code, "Ada", "test")
    spec = {"tolerance": 0.05}
    q = questions.ask(a_class.teacher_key, a_class.id, "number", "How far?", None, spec)
    questions.answer(me.token, q.id, 1.04)
    revealed = questions.reveal(a_class.teacher_key, q.id, 1.0)
    assert questions.is_right(revealed, "1.04")
    assert not questions.is_right(revealed, "1.06")
    token_q = questions.ask(a_class.teacher_key, a_class.id, "token", "Which token?")
    revealed = questions.reveal(a_class.teacher_key, token_q.id, " the")
    assert questions.is_right(revealed, "␣the") and not questions.is_right(revealed, "the")


def test_a_class_database_that_cannot_be_opened_is_said_and_the_app_goes_on(
    models_dir, runs, monkeypatch
):
    monkeypatch.setenv(store.DB_ENV, "postgresql+psycopg://nobody@127.0.0.1:9/viz")  # refused
    at = app_test(models_dir, CLASS_PAGE)
    _join(at, "ABCDEF", "Ada")
    assert not at.exception
    (error,) = at.error
    assert "Every other page still works" in error.value
    at.switch_page("pages/03_attention.py").run()
    assert not at.exception and at.title[0].value.endswith("Attention")


def test_a_head_question_is_answered_by_the_models_own_measurement(models_dir, runs):
    at = app_test(models_dir, CLASS_PAGE, prompt="abcabc")
    next(b for b in at.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    at.radio(key="class_q_kind").set_value("head").run()
    at.text_input[0].set_value("Which head copies?")
    at.selectbox(key="class_q_layer").set_value(1)
    role = next(r for r in class_page.HEAD_ROLES if "induction" in r)
    at.selectbox(key="class_q_role").set_value(role)
    next(b for b in at.button if b.label == "Ask").click().run()
    assert not at.exception
    q = questions.latest_question(info.id)
    bundle = load_bundle(models_dir / first_bundle(models_dir))
    expected = ANSWERS["induction_head"](subject_for(bundle, "abcabc"), {"layer": 1})
    assert (q.kind, q.options) == ("choice", expected.options)
    next(b for b in at.button if b.label == "Reveal the answer").click().run()
    assert questions.get_question(q.id).truth == expected.value


def test_when_the_teacher_ends_the_class_a_student_is_told_and_is_out_of_it(models_dir, a_class):
    at = _student(models_dir, a_class)
    classes.end_class(a_class.teacher_key, a_class.id)
    classroom.forget(a_class.id)
    at.run()
    assert "ended the class" in "\n".join(i.value for i in at.main.info)
    at.run()
    assert "Join a class" in [s.value for s in at.subheader]  # out of it: the page offers to join
    assert f"{classroom.SEAT_COOKIE}=; path=/; max-age=0" in _cookies_written(at)  # seat gone


def test_a_teacher_takes_a_class_back_with_the_password_and_no_code_is_shown_before(
    models_dir, runs, monkeypatch
):
    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    info = classes.start_class(jobs.Auth("sesame", "sesame"), "Week 4")
    at = app_test(models_dir, CLASS_PAGE)
    (choice,) = [s for s in at.selectbox if s.label == "Class"]
    assert all(info.code not in option for option in choice.options)  # students see this page
    at.text_input(key="class_take_password").set_value("wrong")
    next(b for b in at.button if b.label == "Take over").click().run()
    assert "Start a class" in [b.label for b in at.button]  # refused: still outside
    at.text_input(key="class_take_password").set_value("sesame")
    next(b for b in at.button if b.label == "Take over").click().run()
    assert not at.exception
    assert any(f">{info.code}<" in h.proto.body for h in at.main.get("html"))


def test_a_question_asked_before_the_teachers_reload_can_still_be_revealed(
    models_dir, runs, monkeypatch
):
    """Issue 37: after a reload the teacher saw the answers and no Reveal button, because the
    measured answer lived in the old session. A new session (here: taking the class over) reveals
    the answer kept with the question."""
    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    info = classes.start_class(jobs.Auth("sesame", "sesame"), "Week 5")
    q = questions.ask(info.teacher_key, info.id, "choice", "Which head?", ["L0 H1", "L1 H0"],
                      answer="L1 H0", answer_why="measured on the model")  # fmt: skip
    at = app_test(models_dir, CLASS_PAGE)  # the teacher's new session: nothing in its state
    at.text_input(key="class_take_password").set_value("sesame")
    next(b for b in at.button if b.label == "Take over").click().run()
    assert "This question has no answer to reveal" not in [c.value for c in at.caption]
    next(b for b in at.button if b.label == "Reveal the answer").click().run()
    assert not at.exception
    revealed = questions.get_question(q.id)
    assert (revealed.truth, revealed.why) == ("L1 H0", "measured on the model")


def test_the_teacher_asks_and_reveals_a_stops_question_from_the_lesson_panel(
    runs, monkeypatch, tmp_path
):
    """In a class the teacher's lesson panel asks the room the stop's question (its answer
    measured on the teacher's model and kept), counts the answers, and reveals it: the projected
    page stays blurred until then, with no trip to the Live class page."""
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    at = app_test(MODELS, CLASS_PAGE)
    next(b for b in at.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    ada = classes.join(info.code, "Ada", "test")
    at.session_state["lesson"], at.session_state["step"] = "demo", 1
    at.switch_page("pages/07_next_token.py").run()
    assert not at.exception
    assert _blurred(at)
    next(b for b in at.button if b.label == "Ask the room this question").click().run()
    q = questions.latest_question(info.id)
    assert (q.lesson_id, q.step, q.state) == ("demo", 1, "open")
    (lesson,), _ = load_lessons(tmp_path / "lessons", ui_lesson.catalogue())
    stop = lesson.stops[0]
    expected = ANSWERS[stop.answer](subject_for(load_bundle(MODELS / stop.model), stop.prompt), {})
    assert q.answer == expected.value  # measured on the teacher's model, kept for the reveal
    assert not [b for b in at.button if b.label == "Commit my answer"]  # the room's, not mine
    questions.answer(ada.token, q.id, expected.value)
    at.run()
    assert "1 of 1 have answered" in "\n".join(i.value for i in at.main.info)
    assert _blurred(at)
    next(b for b in at.button if b.label == "Reveal the answer to the room").click().run()
    assert questions.get_question(q.id).truth == expected.value
    assert not _blurred(at)
    assert "The model's answer" in "\n".join(i.value for i in at.main.info)


def test_the_teacher_shows_a_stops_answer_on_every_screen_without_asking(
    runs, monkeypatch, tmp_path, jar
):
    """A lecturer's run: unasked, the teacher pressed the lesson panel's private "Just show me";
    the projector showed the answer while every student's page stayed blurred. In a class the
    teacher's panel has no form of its own: "Show everyone the answer" reveals the stop's answer
    on every screen, and a student reads its explanation once (not in the box and the panel)."""
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    teacher = app_test(MODELS, CLASS_PAGE)
    next(b for b in teacher.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    me = classes.join(info.code, "Ada", "test")
    teacher.session_state["lesson"], teacher.session_state["step"] = "demo", 1
    teacher.switch_page("pages/07_next_token.py").run()
    assert not teacher.exception
    assert _blurred(teacher)
    assert not [b for b in teacher.button if b.label in ("Commit my answer", "Just show me")]
    next(b for b in teacher.button if b.label == "Show everyone the answer").click().run()
    _, _, truth = _demo_stop(tmp_path)
    q = questions.latest_question(info.id)
    assert (q.lesson_id, q.step, q.truth) == ("demo", 1, truth.value)
    assert not _blurred(teacher)

    student = _seated(jar, me.token, page=None)  # follows the teacher to the stop
    assert student.title[0].value.endswith("Next token")
    assert not _blurred(student)
    assert f"The answer: **{classroom.shown(q, truth.value)}**" in [
        i.value for i in student.main.info
    ]
    said = [m.value for m in (*student.main.markdown, *student.main.caption)]
    assert sum(truth.why in t for t in said) == 1, said


def _blurred(at) -> bool:
    """Whether the lesson's mask is on the page (its style, drawn with st.html)."""
    return any("blur(" in h.proto.body for h in at.get("html"))


def test_a_student_who_wandered_off_goes_back_to_the_teachers_page_with_one_click(
    models_dir, a_class
):
    at = _student(models_dir, a_class)
    classes.set_view(a_class.teacher_key, a_class.id, "Attention", {"layer": "1"})
    classroom.forget(a_class.id)
    at.run()
    assert at.title[0].value.endswith("Attention")
    assert not [b for b in at.main.button if b.label == "Back to the teacher's page"]
    at.switch_page("pages/07_next_token.py").run()  # the student clicks elsewhere
    back = next(b for b in at.main.button if b.label == "Back to the teacher's page")
    back.click().run()
    assert at.title[0].value.endswith("Attention")
    assert at.slider(key=widget_key("layer")).value == 1


def test_the_leaderboard_hides_names_until_the_teacher_shows_them(models_dir, runs):
    """On a projector the room sees the leaderboard: a student's name (a poor score, a joke
    name) shows only when the teacher turns names on."""
    from serving.classroom import board
    from tests.test_classroom import write_run
    from viz_model.training.settings import RunSettings

    at = app_test(models_dir, CLASS_PAGE)
    next(b for b in at.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    ada = classes.join(info.code, "Ada Lovelace", "test")
    write_run("ada-run", RunSettings(task="repeat", task_examples=300, preset="tiny"),
              {"val_loss": 1.2})  # fmt: skip
    board.register_run(ada.token, "ada-run")
    classroom.forget(info.id)
    at.run()
    table = at.dataframe[0].value
    assert list(table["run"]) == ["ada-run"] and "Ada Lovelace" not in list(table["student"])
    at.toggle(key="class_board_names").set_value(True).run()
    assert list(at.dataframe[0].value["student"]) == ["Ada Lovelace"]


def test_the_teacher_password_cannot_be_guessed_at_script_speed(models_dir, runs, monkeypatch):
    """Issue 39: 200 guesses in 16 s through "Start a class", no slowdown. After a few wrong
    ones this browser waits, even with the right password; nothing is started meanwhile."""
    from serving import guesses

    monkeypatch.setenv(jobs.PASSWORD_ENV, "sesame")
    at = app_test(models_dir, CLASS_PAGE)
    for i in range(guesses.FAILURES_MAX):
        at.text_input(key="class_password").set_value(f"guess{i}")
        next(b for b in at.button if b.label == "Start a class").click().run()
    at.text_input(key="class_password").set_value("sesame")
    next(b for b in at.button if b.label == "Start a class").click().run()
    assert not at.exception
    shown = "\n".join(e.value for e in at.error) + "\n".join(w.value for w in at.warning)
    assert "too many wrong teacher passwords" in shown
    assert classes.active_classes() == []


# ---- the teacher's view, as the page settled (issue 37: followers on the wrong model) ------------


def _settling(class_id: int, teacher_key: str):
    """A teacher's run on Attention (layer 1, stop 7), as app.py runs it, in the way
    `session_state["how"]` names: "settles" (the run ends), "overtaken" (a newer run of the
    session began before it ended: rapid clicks overlap runs), "stops" (the page's st.stop),
    "fragment" (then a page fragment changes one key, starting from a browser address that still
    names the previous stop), "begins" (only a newer run's start), "box" (only the teacher box's
    timer)."""
    import streamlit as st

    from ui import classroom, nav

    ss = st.session_state
    if "_class" not in ss:
        ss["_class"] = classroom.Membership(class_id, "", "", "teacher", teacher_key)
    page, how = nav.by_route("Attention"), ss["how"]
    inline = classroom.in_fragment_rerun
    if how == "box":
        classroom.in_fragment_rerun = lambda: True  # AppTest runs a fragment inline: as a rerun
        try:
            classroom._teacher_box(ss["_class"], page)
        finally:
            classroom.in_fragment_rerun = inline
        return
    run = classroom.enter(page)
    if how == "begins":
        return
    st.query_params.from_dict({"model": "m", "layer": "1", "step": "7"})  # as the frame reads them
    classroom.boxes(page, st.sidebar.container(), st.container())
    if how == "overtaken":
        ss["_class_run"] += 1
    try:
        if how == "stops":
            st.stop()
    finally:
        classroom.after_run(page, run)
    if how == "fragment":
        st.query_params.from_dict({"model": "old", "step": "6", "layer": "1"})

        @classroom.view_fragment
        def position() -> None:
            st.query_params["query"] = "3"

        classroom.in_fragment_rerun = lambda: True
        try:
            position()
        finally:
            classroom.in_fragment_rerun = inline


SETTLED = {"model": "m", "layer": "1", "step": "7"}


def _teacher(a_class):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_function(_settling, args=(a_class.id, a_class.teacher_key))


def _runs(at, a_class, *hows: str) -> classes.View:
    for how in hows:
        at.session_state["how"] = how
        at.run(timeout=30)
        assert not at.exception, at.exception
    return classes.view(a_class.id)


def test_a_teachers_run_overtaken_by_a_newer_one_publishes_nothing(a_class):
    """Rapid Back/Next: a run that a newer one overtook holds a half-applied view (the newer run
    began from the browser's address); only the newest run's view goes to the class."""
    before = classes.view(a_class.id)
    at = _teacher(a_class)
    assert _runs(at, a_class, "overtaken", "box").version == before.version
    settled = _runs(at, a_class, "settles")
    assert (settled.page, settled.params) == ("Attention", SETTLED)


def test_a_page_that_stops_is_published_by_the_teachers_box_unless_a_newer_run_began(a_class):
    """st.stop ends a page on purpose (a refusal, an empty prompt), and a run that a newer click
    replaces ends the same way: the view as the frame left it waits for the teacher's box, which
    runs only between full runs and publishes it if no newer run began."""
    before = classes.view(a_class.id)
    at = _teacher(a_class)
    assert _runs(at, a_class, "stops").version == before.version  # not yet
    assert _runs(at, a_class, "stops", "begins", "box").version == before.version  # overtaken
    classroom_view = _runs(at, a_class, "stops", "box")
    assert (classroom_view.page, classroom_view.params) == ("Attention", SETTLED)


def test_a_page_fragment_publishes_the_keys_it_changed_on_the_settled_view(a_class):
    """A fragment starts from the browser's address, which may lag the screen (here: still at
    the previous stop's model and step): the class gets the settled view plus the fragment's own
    change, not the lagging address."""
    view = _runs(_teacher(a_class), a_class, "fragment")
    assert view.params == {**SETTLED, "query": "3"}


def _addressing() -> None:
    """The address bar's part of a run, as app.py and a class box's timer do it, in the way
    `session_state["how"]` names: "run" (a full run, number `run`, ends on stop 7), "timer" (a
    box's timed run, from a browser address still at stop 6, the newest full run being
    `newest`), "moves" (a page fragment moves the query position, from the same address)."""
    import streamlit as st

    from ui import state

    ss = st.session_state
    if ss["how"] == "run":
        st.query_params.from_dict({"model": "m", "step": "7"})
        state.say_address(ss["run"])
        return
    inline = state._in_fragment_run
    state._in_fragment_run = lambda: True  # AppTest runs a fragment inline: as a timed rerun
    try:
        st.query_params.from_dict(ss.get("browser", {"model": "old", "step": "6"}))
        if ss["how"] == "moves":
            state.mirror("query", 3)
        else:
            state.keep_address(ss["newest"])
    finally:
        state._in_fragment_run = inline


def _address_after(at, **session) -> dict:
    for key, value in session.items():
        at.session_state[key] = value
    at.run(timeout=30)
    assert not at.exception, at.exception
    got = {k: at.query_params[k] for k in at.query_params}
    return {k: v if isinstance(v, str) else v[-1] for k, v in got.items()}


def test_a_lagging_address_bar_is_put_back_to_what_the_screen_shows():
    """Issue 37: after a burst of Back and Next the teacher's address bar could stay a stop
    behind the screen (a reload then opened the wrong stop). A class box's timed run puts it
    back to what the newest full run ended on, unless a newer full run began; a fragment's own
    change (a position) is kept, not undone."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_addressing)
    assert _address_after(at, how="run", run=4) == {"model": "m", "step": "7"}
    assert _address_after(at, how="timer", newest=4) == {"model": "m", "step": "7"}  # mended
    assert _address_after(at, how="timer", newest=5) == {"model": "old", "step": "6"}  # newer
    assert _address_after(at, how="moves", browser={"model": "m", "step": "7"}) == {
        "model": "m",
        "step": "7",
        "query": "3",
    }
    shown = {"model": "m", "step": "7", "query": "3"}
    assert _address_after(at, how="timer", newest=4, browser=shown) == shown  # kept


def test_a_forged_or_broken_teacher_cookie_is_no_class():
    """Issue 39: `viz_class_teacher=99999999999999999999:x` broke every page for that browser."""
    assert classroom.teacher_cookie("12:abc") == (12, "abc")
    for bad in (None, "", "12", "12:", ":abc", "99999999999999999999:x", "²:x", "١٢:x",
                "-3:x", " 12:x", "1e3:x"):  # fmt: skip
        assert classroom.teacher_cookie(bad) is None, bad


def test_a_timed_stop_question_counts_down_for_students_then_takes_no_answer(
    runs, monkeypatch, tmp_path, jar
):
    """Issue 37's classroom controls: the teacher gives the room a minute from the lesson panel;
    a student sees the countdown over the form; once the time is up the student's box says so
    and offers no form, and the teacher's count says it too. Close answers locks a question
    before its time."""
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    teacher = app_test(MODELS, CLASS_PAGE)
    next(b for b in teacher.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    me = classes.join(info.code, "Ada", "test")
    teacher.session_state["lesson"], teacher.session_state["step"] = "demo", 1
    teacher.switch_page("pages/07_next_token.py").run()
    teacher.selectbox(key="class_ask_stop_timer").set_value("1 min").run()
    next(b for b in teacher.button if b.label == "Ask the room this question").click().run()
    q = questions.latest_question(info.id)
    assert q.state == "open" and 59 < q.seconds_left() <= 60
    info_text = "\n".join(i.value for i in teacher.main.info)
    assert "0 of 1 have answered" in info_text and "s left" in info_text

    student = _seated(jar, me.token, page=None)
    assert "Answer within" in "\n".join(h.proto.body for h in student.main.get("html"))
    assert [b for b in student.button if b.label == "Send my answer"]

    class Later:  # the clock past the minute
        @staticmethod
        def time() -> float:
            return q.opened_at + 61

    monkeypatch.setattr(questions, "time", Later)
    student.run()
    assert "Time is up" in _box_text(student)
    assert not [b for b in student.button if b.label == "Send my answer"]
    teacher.run()
    assert "Time is up: 0 of 1 answered." in "\n".join(i.value for i in teacher.main.info)
    assert not [b for b in teacher.button if b.label == "Close answers"]

    monkeypatch.undo()  # the clock back; a new question, closed by the teacher before its time
    monkeypatch.setenv(jobs.RUNS_ENV, str(runs))
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    key = teacher.session_state["_class"].secret  # the teacher's session keeps the key
    again = questions.ask_stop(key, info.id, *_demo_stop(tmp_path), seconds=60)
    classroom.forget(info.id)  # as the teacher's own ask does: this process's copies are old
    teacher.run()
    next(b for b in teacher.button if b.label == "Close answers").click().run()
    assert questions.get_question(again.id).closed_at is not None
    student.run()
    assert "The teacher has closed this question." in _box_text(student)


def _demo_stop(tmp_path):
    """(lesson, step, truth) of the demo lesson's first stop, measured on its model."""
    (lesson,), _ = load_lessons(tmp_path / "lessons", ui_lesson.catalogue())
    stop = lesson.stops[0]
    truth = ANSWERS[stop.answer](subject_for(load_bundle(MODELS / stop.model), stop.prompt), {})
    return lesson, 1, truth


def test_a_stops_question_once_answered_stays_at_its_stop(a_class, monkeypatch, tmp_path, jar):
    """A lecturer's run: the revealed question of one stop sat at the top of every later stop
    (330-460 px, 'Which head of layer 1...' above a one-layer model). A lesson stop's question,
    once it takes no answer, shows only at its stop; an open one follows the student."""
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path / "lessons"))
    me = classes.join(a_class.code, "Ada", "test")
    at = _seated(jar, me.token, page=None)
    lesson, step, truth = _demo_stop(tmp_path)

    def teacher_at(stop: int) -> None:
        s = lesson.stops[stop - 1]
        view = {"lesson": "demo", "step": stop, "model": s.model, "prompt": s.prompt, **s.view}
        page = ui_lesson.page_of(s).url_path
        classes.set_view(a_class.teacher_key, a_class.id, page, {k: to_url(v) for k, v in view.items()})  # fmt: skip
        classroom.forget(a_class.id)
        at.run()

    teacher_at(1)
    q = questions.ask_stop(a_class.teacher_key, a_class.id, lesson, step, truth)
    classroom.forget(a_class.id)
    at.run()
    assert "The teacher asks" in _box_text(at)
    teacher_at(2)  # the teacher moves on before closing it: it can still be answered
    assert "The teacher asks" in _box_text(at)
    questions.reveal(a_class.teacher_key, q.id)
    classroom.forget(a_class.id)
    at.run()
    assert "The teacher asks" not in _box_text(at)  # revealed: stop 1's, not stop 2's
    teacher_at(1)
    assert "The teacher asks" in _box_text(at)  # back at its stop, with its reveal


def test_a_number_is_shown_as_the_lessons_reveal_prints_it():
    """A lecturer's run: the student's reveal printed 14.0138973226 where the teacher's said
    14.01."""
    q = questions.Question(1, 1, "number", "?", (), {"unit": "bits"}, None, None, 0.0, None)
    assert classroom.shown(q, "14.0138973226") == md_escape("14.01 bits")
    assert classroom.shown(q, "3") == md_escape("3 bits")
    token = questions.Question(2, 1, "token", "?", (), {}, None, None, 0.0, None)
    assert classroom.shown(token, " the") == md_escape(visible_token(" the"))


def test_the_live_class_page_asks_with_a_timer_and_closes_answers(models_dir, runs):
    """The teacher's own question, from the Live class page, with a time to answer: the
    question keeps its deadline, the page says the seconds left, Close answers locks it."""
    at = app_test(models_dir, CLASS_PAGE)
    next(b for b in at.button if b.label == "Start a class").click().run()
    (info,) = classes.active_classes()
    at.radio(key="class_q_kind").set_value("token").run()
    at.text_input[0].set_value("Which token comes next?")
    at.selectbox(key="class_q_timer").set_value("30 s")
    next(b for b in at.button if b.label == "Ask").click().run()
    assert not at.exception
    q = questions.latest_question(info.id)
    assert q.closes_at is not None and 29 < q.seconds_left() <= 30
    line = next(m.value for m in at.main.markdown if "Which token comes next?" in m.value)
    assert "0 of 0 answered · " in line and " s left" in line
    next(b for b in at.button if b.label == "Close answers").click().run()
    assert questions.get_question(q.id).state == "closed"
    line = next(m.value for m in at.main.markdown if "Which token comes next?" in m.value)
    assert line.endswith("· answers closed")


@pytest.mark.parametrize("role", ["teacher", "student"])
def test_a_reload_while_the_class_database_is_out_keeps_the_place_and_takes_it_back(
    a_class, jar, monkeypatch, role
):
    """Issue 39: a teacher reloaded during a PostgreSQL outage and lost the lead, silently, for
    good. Now the page says the place is kept, removes no cookie, and takes the class back
    once the database answers."""
    me = classes.join(a_class.code, "Ada", "test")
    cookie = (
        (classroom.TEACHER_COOKIE, f"{a_class.id}:{a_class.teacher_key}")
        if role == "teacher"
        else (classroom.SEAT_COOKIE, me.token)
    )
    down = store.ClassStateError("the class database is not answering")

    def out(*args, **kwargs):
        raise down

    with monkeypatch.context() as outage:
        outage.setattr(classes, "claim", out)
        outage.setattr(classes, "member", out)
        jar[cookie[0]] = cookie[1]
        at = app_test(MODELS, CLASS_PAGE)
        assert not at.exception
        assert "_class" not in at.session_state
        said = "\n".join(w.value for w in at.main.warning)
        assert "Your place in the live class is kept" in said and "database" in said
        assert "max-age=0" not in _cookies_written(at)  # the place is not thrown away
        at.run()  # still out: still said, still not in
        assert "_class" not in at.session_state
    at.run()  # the database is back: the next look takes the class back
    assert at.session_state["_class"].role == role
    assert not [w for w in at.main.warning if "cannot be reached" in w.value]
