"""The Using a model page in AppTest: every part renders on a freshly trained model with its
chart, choices go into the URL, and bad input (an empty prompt, no candidates, a word of unknown
characters, a huge beam width in a link) gets a clear message instead of a traceback."""

from __future__ import annotations

import pytest

from tests.apptest_util import ROOT, app_test, open_link
from tests.test_page_view_keys import FRAME
from ui import nav
from ui.parts import numbers_key
from ui.state import widget_key
from ui.usage import PARTS

PAGE = "pages/19_using_a_model.py"
PROMPT = "ROMEO: But soft, what light"
CHARTS = {
    "forcing": ["use_forcing_bars"],
    "backtrack": ["use_forced_lines"],
    "repetition": ["use_repetition_bars"],
    "beam": ["use_beam_tree"],
    "scoring": ["use_score_total", "use_score_per_token"],
    "fewshot": [],  # not trained on the task: a message instead
    "noisy": ["use_channel_bars"],
    "instruct": [],  # no chat template in test-char's vocabulary: a message instead
    "hyperfit": ["use_hyperfit_bars"],  # the bundled pair, when the model is not hyperfitted
}


def _charts(at) -> list[str]:
    return [c.key for c in at.get("plotly_chart")]


def _texts(at) -> str:
    return " ".join(e.value for e in [*at.success, *at.info, *at.warning, *at.markdown])


@pytest.mark.parametrize("part", list(PARTS))
def test_every_part_renders_its_chart_and_a_computed_sentence(models_dir, part):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"use_part": part})
    assert not at.exception, at.exception
    assert _charts(at) == CHARTS[part]
    assert at.success or at.info or at.warning  # the part's claim, or its message
    if part == "fewshot":
        assert "was not trained on this task" in _texts(at)
    if part == "instruct":
        assert "has no chat template in its vocabulary" in _texts(at)
    if part == "repetition":  # issue 36: "breaks them on purpose ... always becomes less likely"
        assert "always becomes less likely" not in _texts(at)
        assert "does not forbid them" in _texts(at)
    written = set(at.query_params.keys()) - FRAME
    assert written <= set(nav.find("Using_a_model").view_keys), written


def test_choices_go_into_the_url(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"use_part": "beam"})
    at.slider(key=widget_key("u_width")).set_value(2).run()
    assert not at.exception
    assert at.query_params["u_width"] == ["2"] or at.query_params["u_width"] == "2"
    assert "With width 2" in _texts(at) or "(width 2)" in _texts(at)


def test_a_huge_beam_width_in_a_link_is_capped_and_said_so(models_dir):
    at = open_link(
        models_dir,
        PAGE,
        {"model": "test-char", "prompt": PROMPT, "use_part": "beam", "u_width": "100000"},
    )
    assert not at.exception
    assert any("at most 8 beams" in i.value for i in at.info)
    assert at.slider(key=widget_key("u_width")).value == 8


def test_empty_candidates_and_an_empty_scoring_prompt_get_a_message(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"use_part": "scoring"})
    at.session_state[numbers_key()] = True
    at.text_area(key=widget_key("u_sc_cands")).set_value("\n  \n").run()
    assert not at.exception
    assert any("at least one candidate" in i.value for i in at.info)
    at.text_input(key=widget_key("u_sc_prompt")).set_value("  ").run()
    assert not at.exception and any("Type a prompt" in i.value for i in at.info)


def test_candidates_disagreeing_by_length_are_ranked_both_ways(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"use_part": "scoring"})
    at.session_state[numbers_key()] = True
    at.text_area(key=widget_key("u_sc_cands")).set_value("a\nthe king of all the world").run()
    table = at.dataframe[0].value
    assert set(table["candidate"]) == {" a", " the king of all the world"}
    assert sorted(table["rank by total"]) == [1, 2]


def test_an_empty_prompt_stops_with_a_message(models_dir):
    at = app_test(models_dir, PAGE, prompt="", query={"use_part": "forcing"})
    assert not at.exception
    assert any("Type a prompt" in i.value for i in at.info)


def test_a_word_of_unknown_characters_is_said_so(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"use_part": "noisy"})
    at.text_area(key=widget_key("u_nc_text")).set_value("But soft ΩΨΣ breaks").run()
    assert not at.exception
    assert any("does not know" in w.value for w in at.warning)


def test_a_one_token_prompt_cannot_show_teacher_forcing(models_dir):
    at = app_test(models_dir, PAGE, prompt="R", query={"use_part": "forcing"})
    assert not at.exception
    assert any("at least two" in i.value for i in at.info)


def test_the_fewshot_model_measures_accuracy_against_examples():
    at = open_link(
        ROOT / "assets" / "models",
        PAGE,
        {"model": "fewshot-tiny", "prompt": "abc>cba hed>deh fgb>", "use_part": "fewshot"},
    )
    assert not at.exception, at.exception
    assert _charts(at) == ["use_fewshot_curve"]
    assert "chance" in _texts(at)


def test_a_model_not_trained_on_the_task_offers_to_open_the_task_model():
    at = open_link(
        ROOT / "assets" / "models",
        PAGE,
        {"model": "shakespeare-tiny", "prompt": PROMPT, "use_part": "fewshot"},
    )
    assert not at.exception and _charts(at) == []
    at.button(key="use_open_task_model").click().run()
    assert not at.exception, at.exception
    assert at.session_state["model"] == "fewshot-tiny"
    assert _charts(at) == ["use_fewshot_curve"]


def test_hyperfitting_compares_the_model_on_screen_with_its_base_or_says_it_shows_the_pair(
    models_dir,
):
    link = {"prompt": PROMPT, "use_part": "hyperfit"}
    at = open_link(models_dir, PAGE, {"model": "shakespeare-tiny-hyperfit", **link})
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "was not hyperfitted" not in captions
    assert "it repeated itself less than its base" in _texts(at)  # the bundled pair's measure
    assert "most of what it writes is recited" in _texts(at)
    at = open_link(models_dir, PAGE, {"model": "test-char", **link})
    assert not at.exception, at.exception
    assert "“test-char” was not hyperfitted" in " ".join(c.value for c in at.caption)
    assert any(b.key == "use_open_hyperfit" for b in at.button)
