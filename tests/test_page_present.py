"""Presenter mode's header line (ui/present.header, drawn by the frame): with the sidebar folded
away, the top of the page names the model, its training step as the sidebar's slider writes it
and, in a lesson, the stop; outside presenter mode there is no such line (issue 38)."""

from __future__ import annotations

import shutil

import pytest

from tests.apptest_util import app_test, open_link
from ui import present
from ui.state import widget_key
from viz_model.analysis.claims import md_escape
from viz_model.lessons import lesson_file

ATTENTION = "pages/03_attention.py"
PRESENT = {"present": "1"}
DEMO = """title = "Demo"
model = "test-char"
prompt = "ROMEO: But soft"

[[stop]]
page = "Next_token"
instruction = "Look."
question = "How many tokens does the prompt make?"
answer = "token_count"

[[stop]]
page = "Attention"
instruction = "Look at the grid."
question = "How many tokens does the prompt make?"
answer = "token_count"

[[stop]]
page = "Attention"
instruction = "Again."
question = "How many tokens does the prompt make?"
answer = "token_count"
hide = false
"""


@pytest.fixture
def demo_lessons(tmp_path, monkeypatch):
    (tmp_path / "demo.toml").write_text(DEMO)
    monkeypatch.setenv(lesson_file.LESSONS_ENV, str(tmp_path))
    return tmp_path


def headers(at) -> list[str]:
    """The header lines on the page: the markdown that opens with the model's name."""
    return [m.value for m in at.main.markdown if m.value.startswith("Model **")]


def test_presenter_mode_names_the_model_and_its_final_step_at_the_top(models_dir):
    at = app_test(models_dir, ATTENTION, prompt="ROMEO: But soft", query=PRESENT)
    assert not at.exception
    assert headers(at) == ["Model **test\\-char** · training step **150 (final)**"]
    slider = at.select_slider(key=widget_key("train_step"))
    assert slider.options[-1] == "150 (final)" and slider.value == 150  # as the sidebar writes it


def test_the_header_follows_the_training_step_slider(models_dir):
    at = app_test(models_dir, ATTENTION, prompt="ROMEO", query={**PRESENT, "train_step": "37"})
    assert headers(at) == ["Model **test\\-char** · training step **37**"]
    at.select_slider(key=widget_key("train_step")).set_value(0).run()
    assert not at.exception
    assert headers(at) == ["Model **test\\-char** · training step **0**"]


def test_home_has_the_header_too(models_dir):
    at = app_test(models_dir, None, query=PRESENT)
    assert not at.exception
    assert headers(at) == ["Model **test\\-char** · training step **150 (final)**"]


def test_there_is_no_header_outside_presenter_mode(models_dir):
    at = app_test(models_dir, ATTENTION, prompt="ROMEO: But soft")
    assert not at.exception
    assert headers(at) == []
    assert at.select_slider(key=widget_key("train_step"))  # the sidebar still shows the step


def test_a_model_without_snapshots_gets_no_step(models_dir, tmp_path):
    bare = tmp_path / "no-steps"
    shutil.copytree(models_dir / "test-char", bare, ignore=shutil.ignore_patterns("snapshots"))
    at = app_test(tmp_path, ATTENTION, prompt="ROMEO", query=PRESENT)
    assert not at.exception
    assert headers(at) == ["Model **no\\-steps**"]


def test_a_long_model_name_is_cut_so_the_step_stays_on_the_line(models_dir, tmp_path):
    long_name = "a-class-run-with-a-very-long-name-indeed"
    shutil.copytree(models_dir / "test-char", tmp_path / long_name)
    at = app_test(tmp_path, None, query=PRESENT)
    assert not at.exception
    cut = md_escape(long_name[: present.HEADER_NAME_CHARS - 1]) + "…"
    assert headers(at) == [f"Model **{cut}** · training step **150 (final)**"]


def test_a_lesson_stop_is_named_and_the_header_is_kept_out_of_the_blur(models_dir, demo_lessons):
    at = open_link(models_dir, None, {"lesson": "demo", "step": "2", **PRESENT})
    assert not at.exception
    assert "Attention" in at.title[0].value
    assert headers(at) == [
        "Model **test\\-char** · training step **150 (final)** · lesson **stop 2 of 3**"
    ]
    masks = [h.proto.body for h in at.get("html") if "filter: blur" in h.proto.body]
    assert masks and f":not(.st-key-{present.HEADER_KEY} *)" in masks[0]
    next_stop = next(b for b in at.button if b.label == "Next ▶")
    next_stop.click().run()
    assert headers(at)[0].endswith("lesson **stop 3 of 3**")
