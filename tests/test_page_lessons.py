"""A lesson in the app (AppTest): a stop opens its page in its exact view, masks the page until
the student commits, reveals the model's own answer, and Back/Next carry the view; every stop of
every shipped lesson opens on the model it names; a broken lesson file is reported with its line
while the other lessons load."""

from __future__ import annotations

import time

import pytest
import torch

from serving import jobs, models, sheets
from tests.apptest_util import ROOT, open_link
from tests.test_sheets import fake_build
from ui import lesson as ui_lesson
from ui.state import to_url
from viz_model.analysis.tokens import token_text
from viz_model.bundles.load import load_bundle
from viz_model.lessons import lesson_file
from viz_model.lessons.kinds import subject_for
from viz_model.lessons.lesson_file import load_lessons

MODELS = ROOT / "assets" / "models"
PROMPT = "ROMEO:\\nBut soft, what light"  # as written in TOML: a newline
DEMO = f"""title = "Demo"
model = "shakespeare-char"

[[stop]]
page = "Next_token"
view = {{ temperature = 0.5, bars = 10 }}
prompt = "{PROMPT}"
instruction = "Look at the bars."
question = "What is the most likely next token?"
answer = "top_next_token"

[[stop]]
page = "Attention"
model = "induction-2l"
view = {{ layer = 1, head = 0 }}
instruction = "The grid."
question = "How many tokens does the prompt make?"
answer = "token_count"
hide = false
"""


@pytest.fixture
def demo_lessons(tmp_path, monkeypatch):
    (tmp_path / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path))
    return tmp_path


def _title(at) -> str:
    return at.title[0].value


def _panel_text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def _top_token(model_name: str, prompt: str) -> str:
    """The most likely next token, by argmax of the model's own logits."""
    bundle = load_bundle(models.discover()[model_name])
    subject = subject_for(bundle, prompt)
    with torch.no_grad():
        logits = bundle.model(torch.tensor(list(subject.ids)))
    return token_text(bundle.tokenizer, int(logits[-1].argmax()))


def _masked(at) -> bool:
    return any("filter: blur" in h.proto.body for h in at.get("html"))


def test_a_stop_opens_in_its_view_masks_the_page_and_reveals_the_models_answer(demo_lessons):
    at = open_link(MODELS, None, {"lesson": "demo", "step": "1"})
    assert not at.exception
    assert "Next token" in _title(at)  # the link named Home; the stop's page opened
    q = at.query_params
    assert q["temperature"] == "0.5" and q["bars"] == "10"
    assert q["model"] == "shakespeare-char" and q["prompt"] == "ROMEO:\nBut soft, what light"
    assert q["lesson"] == "demo" and q["step"] == "1"
    assert "What is the most likely next token?" in _panel_text(at)
    assert _masked(at)

    at.text_input[0].input("zzz")
    _button(at, "Commit my answer").click().run()
    truth = _top_token("shakespeare-char", "ROMEO:\nBut soft, what light")
    shown = truth.replace(" ", "␣").replace("\n", "↵")
    assert [w.value for w in at.warning] and f"'{shown}'" in at.warning[0].value
    assert not _masked(at)  # revealed

    _button(at, "Next ▶").click().run()
    assert not at.exception
    assert "Attention" in _title(at)
    q = at.query_params
    assert q["layer"] == "1" and q["head"] == "0" and q["model"] == "induction-2l"
    assert q["step"] == "2" and "temperature" not in q  # the Next token page's keys are gone
    assert not _masked(at)  # hide = false: an observation question
    default = load_bundle(models.discover()["induction-2l"])
    n_tokens = len(subject_for(default, at.session_state["prompt"]).ids)
    at.number_input[0].set_value(n_tokens)
    _button(at, "Commit my answer").click().run()
    assert at.success and f"{n_tokens}" in at.success[0].value and "right" in at.success[0].value

    _button(at, "◀ Back").click().run()
    assert "Next token" in _title(at)
    assert at.warning and not at.text_input  # stop 1 stays answered: its reveal, no question


def test_a_reload_keeps_the_view_and_the_page_its_address_names(demo_lessons):
    """Issue 37: a reload (a new session on the address the app wrote) applied the stop's view
    again, undoing the teacher's changes, and left the Live class page for the stop's page."""
    at = open_link(MODELS, None, {"lesson": "demo", "step": "2"})
    assert "Attention" in _title(at)
    address = {k: (v if isinstance(v, str) else v[0]) for k, v in at.query_params.items()}
    assert address["head"] == "0" and "quant" in address  # the stop's view, as the app wrote it
    changed = {**address, "head": "2"}  # the teacher moved to another head, then reloaded
    again = open_link(MODELS, "pages/03_attention.py", changed)
    assert not again.exception
    assert again.query_params["head"] in ("2", ["2"]) and "Attention" in _title(again)
    class_page = open_link(MODELS, "pages/18_class.py", changed)  # reloaded on Live class
    assert not class_page.exception
    assert "Live class" in _title(class_page)
    lesson_link = open_link(MODELS, "pages/18_class.py", {"lesson": "demo", "step": "2"})
    assert "Attention" in _title(lesson_link)  # a lesson's own link still opens its stop


def test_the_right_token_is_marked_right(demo_lessons):
    at = open_link(MODELS, None, {"lesson": "demo", "step": "1"})
    top = _top_token("shakespeare-char", "ROMEO:\nBut soft, what light")
    at.text_input[0].input(top.replace(" ", "␣").replace("\n", "↵"))
    _button(at, "Commit my answer").click().run()
    assert at.success and "right" in at.success[0].value


def test_a_broken_lesson_is_reported_with_its_line_and_the_others_load(demo_lessons):
    broken = DEMO.replace("head = 0 }", "heads = 0 }")
    (demo_lessons / "broken.toml").write_text(broken)
    line = next(i for i, row in enumerate(broken.splitlines(), 1) if "heads = 0" in row)
    at = open_link(MODELS, "pages/17_lessons.py", {})
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]  # as read, Markdown escapes undone
    assert len(errors) == 1 and f"broken.toml, line {line}" in errors[0]
    assert "heads" in errors[0]
    assert any(m.value == "### Demo" for m in at.markdown)


def test_the_sheets_ask_for_the_teacher_password_and_land_in_the_runs_folder(
    demo_lessons, tmp_path, monkeypatch
):
    """Issue 39: any student could start sheet builds, and they went to the checkout's runs/."""
    runs = tmp_path / "runs"
    monkeypatch.setenv(jobs.RUNS_ENV, str(runs))
    monkeypatch.setenv(jobs.PASSWORD_ENV, "s3cret")
    monkeypatch.setattr(sheets, "command", fake_build(seconds=0.2))
    at = open_link(MODELS, "pages/17_lessons.py", {})
    _button(at, "Make the exercise sheets").click().run()
    assert any("needs the teacher password" in e.value for e in at.error)
    assert not (runs / "sheets" / "demo").exists()  # nothing started

    at.text_input(key="sheets_password_demo").input("s3cret")
    _button(at, "Make the exercise sheets").click().run()
    deadline = time.monotonic() + 60
    while sheets.running("demo") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    at.run()
    assert not at.exception and not at.error
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Student sheet (print)" in labels and "Teacher sheet (Markdown)" in labels
    assert (runs / "sheets" / "demo" / "teacher.html").is_file()


def _shipped():
    lessons, errors = load_lessons(lesson_file.LESSONS_DIR, ui_lesson.catalogue())
    assert not errors, errors
    return [(item, step) for item in lessons for step in range(1, len(item.stops) + 1)]


@pytest.mark.parametrize(
    "item, step", _shipped(), ids=lambda v: v.id if hasattr(v, "id") else str(v)
)
def test_every_shipped_stop_opens_its_page_in_its_view(item, step):
    stop = item.stop(step)
    at = open_link(MODELS, None, {"lesson": item.id, "step": str(step)})
    assert not at.exception, at.exception[0].value if at.exception else ""
    assert ui_lesson.page_of(stop).title in _title(at)
    q = at.query_params
    assert q["model"] == stop.model
    for key, value in stop.view.items():
        assert q[key] == to_url(value), f"{item.id} stop {step}: {key}"
    assert stop.question in _panel_text(at)


def test_the_page_lists_each_lesson_with_its_buttons_and_every_kind_of_answer(demo_lessons):
    from viz_model.lessons.registry import ANSWERS

    at = open_link(MODELS, "pages/17_lessons.py", {})
    assert not at.exception
    assert [m.value for m in at.markdown if m.value.startswith("### ")] == ["### Demo"]
    assert {"Start", "Present"} <= {b.label for b in at.button}
    assert [s.value for s in at.subheader] == ["Write your own"]
    assert list(at.dataframe[0].value["answer"]) == sorted(ANSWERS)
