"""The sidebar's "Take this view to a notebook" button (ui/notebook_button.py), in AppTest: every
page offers the view it shows, named for the page and model, with the link's settings in it."""

from __future__ import annotations

import ast

import nbformat
import pytest
import streamlit as st

from serving.notebooks import MIME
from tests.apptest_util import app_test, open_link
from ui.notebook_button import LABEL

PROMPT = 'To be, or "not" \\ to be'


@pytest.fixture
def downloads(monkeypatch) -> list[tuple[bytes, str, str | None]]:
    """(data, mime type, file name) of every file a run hands a download button, caught on the
    way in (AppTest keeps them in a media store it drops after the run); through the public
    element's own class, so no private Streamlit module is imported."""
    caught: list[tuple[bytes, str, str | None]] = []
    element = type(st.sidebar)
    offer = element.download_button

    def catch(self, label, data, file_name=None, mime=None, *args, **kwargs):
        raw = data.encode("utf-8") if isinstance(data, str) else data
        caught.append((raw, mime, file_name))
        return offer(self, label, data, file_name, mime, *args, **kwargs)

    monkeypatch.setattr(element, "download_button", catch)
    return caught


def notebook_of(downloads) -> tuple[nbformat.NotebookNode, str]:
    """The last notebook a run offered, validated, and its file name."""
    data, mime, name = [d for d in downloads if d[1] == MIME][-1]
    notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
    nbformat.validate(notebook)
    return notebook, name


def code(notebook) -> str:
    return "\n".join(c.source for c in notebook.cells if c.cell_type == "code")


def test_the_attention_page_offers_its_head_as_a_notebook_of_the_same_model_and_prompt(
    models_dir, downloads
):
    at = app_test(models_dir, "pages/03_attention.py", PROMPT, query={"layer": "1", "head": "3"})
    assert not at.exception
    buttons = [b for b in at.sidebar.get("download_button") if b.proto.label == LABEL]
    assert len(buttons) == 1
    notebook, name = notebook_of(downloads)
    assert name == "viz-gpt-attention-test-char.ipynb"
    source = code(notebook)
    assert f"prompt = {PROMPT!r}" in source
    assert str(models_dir / "test-char") in source  # a folder, not a bundled model: its path
    assert "layer, head = 1, 3" in source
    assert "hook_pattern" in source
    assert "Attention" in notebook.cells[0].source


def test_a_page_without_a_recipe_offers_the_generic_notebook_and_a_snapshot_its_step(
    models_dir, downloads
):
    at = open_link(
        models_dir,
        "pages/08_generation.py",
        {"model": "test-char", "prompt": PROMPT, "train_step": "37"},
    )
    assert not at.exception
    notebook, name = notebook_of(downloads)
    assert name == "viz-gpt-generation-test-char.ipynb"
    assert "the generic notebook" in notebook.cells[0].source
    assert "bundle.model = bundle.load_snapshot(37)" in code(notebook)
    prompt = next(
        n.value
        for n in ast.walk(ast.parse(code(notebook)))
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "prompt"
    )
    assert ast.literal_eval(prompt) == PROMPT


def test_an_empty_prompt_offers_no_notebook(models_dir, downloads):
    at = app_test(models_dir, "pages/07_next_token.py", prompt="")
    assert not at.exception
    assert not [b for b in at.sidebar.get("download_button") if b.proto.label == LABEL]
