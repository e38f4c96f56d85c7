"""Lesson files, answers and sheets (viz_model/lessons/): a mistake names its line, the other
lessons still load, a student's answer is checked against the model's, and the sheets keep the
answers off the student's copy."""

from __future__ import annotations

import json

import pytest

from serving import models
from ui import lesson as ui_lesson
from viz_model.bundles.load import load_bundle
from viz_model.lessons import lesson_file
from viz_model.lessons.kinds import REGISTRY, subject_for
from viz_model.lessons.lesson_file import (
    Catalogue,
    LessonError,
    load_lessons,
    parse_lesson,
)
from viz_model.lessons.sheets import SheetStop, html_sheet, markdown_sheet
from viz_model.lessons.truth import Truth

CATALOGUE = Catalogue(
    {"Attention": frozenset({"layer", "head"}), "Next_token": frozenset({"temperature"})},
    frozenset({"shakespeare-char", "induction-2l"}),
    REGISTRY,
)
GOOD = """title = "Two stops"
model = "shakespeare-char"
prompt = "ROMEO:"

[[stop]]
page = "Next_token"
view = { temperature = 0.5 }
instruction = "Look at the bars."
question = "What comes next?"
answer = "top_next_token"

[[stop]]
page = "Attention"
model = "induction-2l"
view = { layer = 1, head = 0 }
instruction = "The grid."
question = "How many tokens?"
answer = "token_count"
args = { text = "abc" }
hide = false
"""


def line_of(text: str, fragment: str) -> int:
    """The 1-based line holding `fragment` (the line a message must name)."""
    return next(i for i, row in enumerate(text.splitlines(), 1) if fragment in row)


def test_a_good_lesson_reads_with_its_stops_and_their_views():
    lesson = parse_lesson(GOOD, "2_demo.toml", CATALOGUE)
    assert lesson.id == "2_demo"
    assert [s.page for s in lesson.stops] == ["Next_token", "Attention"]
    assert lesson.stops[0].model == "shakespeare-char"  # the lesson's model
    assert lesson.stops[1].model == "induction-2l"  # a stop's own
    assert lesson.stops[1].view == {"layer": 1, "head": 0}
    assert lesson.stops[0].prompt == "ROMEO:" and lesson.stops[0].hide
    assert not lesson.stops[1].hide
    assert lesson.stops[1].line == line_of(GOOD, "[[stop]]") + 7
    assert lesson.stop(99) is lesson.stops[-1] and lesson.stop(0) is lesson.stops[0]


@pytest.mark.parametrize(
    "old, new, marker, says",
    [
        ('page = "Attention"', 'page = "Atention"', 'page = "Atention"', "unknown page 'Atention'"),
        ("head = 0 }", "heads = 0 }", "heads = 0", "has no view key 'heads'"),
        ("{ layer = 1,", "{ step = 1,", "step = 1", "has no view key 'step'"),
        ('model = "induction-2l"', 'model = "gpt-5"', "gpt-5", "model 'gpt-5' is not installed"),
        ('answer = "token_count"', 'answer = "oracle"', "oracle", "unknown answer kind 'oracle'"),
        ('text = "abc"', "texts = 3", "texts = 3", "takes no argument 'texts'"),
        ('text = "abc"', "text = 3", "text = 3", "'text' must be str"),
        ('question = "How many tokens?"', "", None, "needs question"),  # at its [[stop]]
        ("hide = false", 'hide = "no"', 'hide = "no"', "hide must be true or false"),
        ('title = "Two stops"', 'title = "Two stops', 'title = "Two stops', "Illegal character"),
    ],
)
def test_a_mistake_names_its_file_and_line(old, new, marker, says):
    text = GOOD.replace(old, new)
    assert text != GOOD
    with pytest.raises(LessonError) as caught:
        parse_lesson(text, "3_broken.toml", CATALOGUE)
    error = caught.value
    assert error.path.name == "3_broken.toml"
    stops = [i for i, row in enumerate(text.splitlines(), 1) if row == "[[stop]]"]
    expected = line_of(text, marker) if marker else stops[1]
    assert error.line == expected, str(error)
    assert says.lower() in str(error).lower()
    assert str(error).startswith(f"3_broken.toml, line {expected}: ")


def test_a_broken_file_does_not_stop_the_others(tmp_path):
    (tmp_path / "1_good.toml").write_text(GOOD)
    (tmp_path / "2_bad.toml").write_text(GOOD.replace('page = "Attention"', 'page = "Nope"'))
    (tmp_path / "3_binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    lessons, errors = load_lessons(tmp_path, CATALOGUE)
    assert [x.id for x in lessons] == ["1_good"]
    assert sorted(e.path.name for e in errors) == ["2_bad.toml", "3_binary.toml"]


def test_number_token_and_choice_answers_are_checked_against_the_model():
    number = Truth("number", 57, "why", tolerance=0.5)
    assert number.check("57.4") and number.check(57) and not number.check(58)
    assert not number.check("many") and not number.check(float("nan")) and not number.check(None)
    token = Truth("token", " the", "why")
    assert token.check(" the") and token.check("␣the") and not token.check("the")
    newline = Truth("token", "\n", "why")
    assert newline.check("newline") and newline.check("↵") and not newline.check("n")
    choice = Truth("choice", "L1 H2", "why", options=("L1 H0", "L1 H2", "none of them"))
    assert choice.check("L1 H2") and not choice.check("L1 H0")
    with pytest.raises(ValueError):
        Truth("choice", "L9 H9", "why", options=("L1 H0",))


def test_a_kind_checks_its_arguments_by_its_signature():
    kind = REGISTRY["token_count"]
    assert kind.problems({"text": "a"}) == []
    assert kind.problems({"txt": "a"}) and kind.problems({"text": 1})


def _subject(name: str, prompt: str):
    return subject_for(load_bundle(models.discover()[name]), prompt)


def test_every_shipped_lesson_loads_and_every_stop_is_answered_on_its_model():
    lessons, errors = load_lessons(lesson_file.LESSONS_DIR, ui_lesson.catalogue())
    assert errors == []
    assert len(lessons) >= 1
    for item in lessons:
        for stop in item.stops:
            kind = REGISTRY[stop.answer]
            truth = kind(_subject(stop.model, ui_lesson.prompt_of(item, stop)), stop.args)
            assert truth.form == kind.form
            assert truth.why.strip(), f"{item.id} {stop.line}: no reveal"
            if truth.form == "choice":
                assert truth.value in truth.options


def test_subject_for_reads_the_last_tokens_like_every_page():
    bundle = load_bundle(models.discover()["shakespeare-char"])
    n = bundle.config.n_ctx
    prompt = "x" * (n + 7)
    subject = subject_for(bundle, prompt)
    assert len(subject.ids) == n
    assert list(subject.ids) == bundle.tokenizer.encode(prompt)[-n:]


# ---- sheets -----------------------------------------------------------------------------------


def _items():
    lesson = parse_lesson(
        GOOD.replace("What comes next?", "What <b>comes</b> next?"), "d", CATALOGUE
    )
    figure = json.dumps({"data": [{"type": "bar", "y": [1, 2]}], "layout": {"yaxis": {}}})
    truths = [
        Truth("token", "\n", "The model gives **0\\.40**."),
        Truth("number", 3, "Three tokens.", holds=False),
    ]
    items = [
        SheetStop(stop, stop.page, f"./{stop.page}?lesson=d&step={i}", t, fig)
        for i, (stop, t, fig) in enumerate(
            zip(lesson.stops, truths, [figure, None], strict=True), 1
        )
    ]
    return lesson, items


def test_the_students_sheet_asks_and_the_teachers_answers():
    lesson, items = _items()
    student = markdown_sheet(lesson, items, teacher=False)
    teacher = markdown_sheet(lesson, items, teacher=True)
    for stop in lesson.stops:
        assert stop.question in student and stop.question in teacher
    assert "Answer:" not in student and "0\\.40" not in student
    assert "**Answer: '↵'**" in teacher and "**Answer: 3**" in teacher
    assert "does not hold" in teacher  # the second truth does not hold on its model
    assert "./Attention?lesson=d&step=2" in student


def test_the_print_sheet_is_offline_escaped_and_holds_each_figure():
    lesson, items = _items()
    page = html_sheet(lesson, items, teacher=True, plotly_js="/*plotly*/")
    assert page.count('class="fig"') == 1  # the stop without a figure has none
    assert "/*plotly*/" in page
    assert 'src="http' not in page and "<link" not in page  # nothing fetched
    assert "What &lt;b&gt;comes&lt;/b&gt; next?" in page  # lesson text is text
    assert "<b>0.40</b>" in page  # the reveal's Markdown, its escapes undone
    spec = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert spec["layout"]["width"] > 0 and spec["layout"]["yaxis"]["automargin"] is True
    student = html_sheet(lesson, items, teacher=False, plotly_js="")
    assert "0.40" not in student and "Your prediction" in student
    # predict first: on paper the figure, which may show the answer, comes after the blank
    assert student.index("Your prediction") < student.index('class="fig"')
