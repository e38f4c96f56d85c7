"""Home and the frame in AppTest: the model card, the URL carrying prompt and model, deep links,
empty and long prompts, and a corrupted bundle that leaves the app on a good model."""

from __future__ import annotations

import shutil

import pytest

from tests.apptest_util import ROOT, app_test, open_link
from ui import nav
from ui.frame import DEFAULT_PROMPT, MAX_PROMPT_CHARS
from ui.state import widget_key
from viz_model.bundles.load import load_bundle

GOOD, OTHER, BROKEN = "test-char", "test-char-2", "zz-broken"


@pytest.fixture(scope="module")
def home_models(models_dir, tmp_path_factory):
    """test-char, a copy under another name, and a copy with truncated weights."""
    root = tmp_path_factory.mktemp("home_models")
    shutil.copytree(models_dir / GOOD, root / GOOD)
    shutil.copytree(models_dir / GOOD, root / OTHER)
    shutil.copytree(models_dir / GOOD, root / BROKEN)
    weights = root / BROKEN / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    return root


def card(at) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


def test_home_shows_the_model_card_of_the_bundle(home_models):
    at = app_test(home_models)
    assert not at.exception and not at.error
    bundle = load_bundle(home_models / GOOD)
    cfg = bundle.config
    text = card(at)
    assert f"parameters: **{bundle.model.n_params():,}**" in text
    assert f"layers: **{cfg.n_layer} (" in text
    assert f"heads: **{cfg.n_head} per layer" in text
    assert f"d_model: **{cfg.d_model}**" in text
    assert f"context: **{cfg.n_ctx} tokens**" in text
    assert f"tokenizer: **char, {bundle.tokenizer.vocab_size} tokens**" in text
    assert len(at.get("plotly_chart")) == 2  # the diagram and the parameter bars
    assert at.query_params["model"] == GOOD


def test_changing_prompt_and_model_updates_the_url(home_models):
    at = app_test(home_models)
    at.sidebar.text_area(key=widget_key("prompt")).input("To be, or not to be").run()
    assert at.query_params["prompt"] == "To be, or not to be"
    assert at.session_state["prompt"] == "To be, or not to be"
    at.sidebar.selectbox(key=widget_key("model")).set_value(OTHER).run()
    assert not at.exception and not at.error
    assert at.query_params["model"] == OTHER and at.session_state["model"] == OTHER
    assert at.query_params["prompt"] == "To be, or not to be"  # the prompt stays
    assert at.sidebar.expander[0].label == f"About “{OTHER}”"


def test_a_deep_link_selects_model_and_prompt(home_models):
    at = app_test(home_models, prompt="JULIET:\nO Romeo", query={"model": OTHER})
    assert not at.exception
    assert at.sidebar.selectbox(key=widget_key("model")).value == OTHER
    assert at.sidebar.text_area(key=widget_key("prompt")).value == "JULIET:\nO Romeo"
    assert at.subheader[0].value == f"The model “{OTHER}”"


def test_an_empty_prompt_asks_for_one(home_models):
    at = app_test(home_models, prompt="")
    assert not at.exception
    assert any("Type a prompt in the sidebar" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 2  # Home still shows the model


def test_a_long_prompt_is_cut_and_unknown_characters_are_named(home_models):
    n_ctx = load_bundle(home_models / GOOD).config.n_ctx
    at = app_test(home_models, prompt="x" * (n_ctx + 7) + "☃")
    assert not at.exception
    (cut,) = [i.value for i in at.info if "cut" in i.value]
    assert "the first 8 were cut" in cut and "reads the last" in cut
    at = app_test(home_models, prompt="snow ☃ man")
    assert any("<unk>" in i.value and "☃" in i.value for i in at.info)


def test_a_huge_url_prompt_is_capped(home_models):
    at = app_test(home_models, prompt="a" * 20_000)
    assert not at.exception
    assert len(at.session_state["prompt"]) == 5000
    assert len(at.query_params["prompt"]) == 5000


def test_a_long_paste_keeps_what_fits_and_says_so(home_models):
    at = app_test(home_models)
    pasted = "abcdefghij" * 600  # 6,000 characters
    at.sidebar.text_area(key=widget_key("prompt")).input(pasted).run()
    assert not at.exception
    assert at.session_state["prompt"] == pasted[:MAX_PROMPT_CHARS]
    assert at.sidebar.text_area(key=widget_key("prompt")).value == pasted[:MAX_PROMPT_CHARS]
    (note,) = [i.value for i in at.info if "pasted" in i.value]
    assert "6,000 characters" in note and "the last 1,000 were cut" in note
    at.sidebar.text_area(key=widget_key("prompt")).input("short").run()
    assert not [i.value for i in at.info if "pasted" in i.value]  # gone with the long prompt


def test_a_prompt_the_model_does_not_know_offers_its_examples(home_models):
    at = app_test(home_models, prompt=DEFAULT_PROMPT, query={"model": "induction-2l"})
    assert not at.exception and at.session_state["model"] == "induction-2l"
    (warning,) = [w.value for w in at.sidebar.warning]
    assert "<unk>" in warning and "induction-2l" in warning
    assert any("the sidebar offers prompts “induction-2l” knows" in i.value for i in at.info)
    examples = load_bundle(ROOT / "assets" / "models" / "induction-2l").meta["example_prompts"]
    buttons = [b for b in at.sidebar.button if b.key.startswith("_example_prompt_")]
    assert len(buttons) == len(examples) == 3
    buttons[1].click().run()
    assert at.session_state["prompt"] == examples[1] == at.query_params["prompt"]
    assert at.sidebar.text_area(key=widget_key("prompt")).value == examples[1]
    assert not at.sidebar.warning  # the model knows every token of its own example
    at = app_test(home_models, prompt="hello world")  # test-char knows these: nothing offered
    assert not at.sidebar.warning and not at.sidebar.button


def test_a_corrupted_bundle_shows_an_error_and_keeps_the_good_model(home_models):
    at = app_test(home_models)
    at.sidebar.selectbox(key=widget_key("model")).set_value(BROKEN).run()
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert BROKEN in error and f"Still showing “{GOOD}”" in error
    assert at.session_state["model"] == GOOD and at.query_params["model"] == GOOD
    assert at.sidebar.selectbox(key=widget_key("model")).value == GOOD
    assert at.sidebar.expander[0].label == f"About “{GOOD}”"


def test_a_deep_link_to_a_corrupted_or_unknown_model_falls_back(home_models):
    at = app_test(home_models, query={"model": BROKEN})
    assert not at.exception
    assert any(BROKEN in e.value for e in at.error)
    assert at.session_state["model"] not in (BROKEN, None)
    at = app_test(home_models, query={"model": "no-such-model"})
    assert not at.exception
    assert any("no-such-model" in e.value for e in at.error)
    assert at.session_state["model"] != "no-such-model"


def test_the_navigation_is_the_registry_and_home_links_every_page(home_models):
    at = app_test(home_models)
    assert at.title[0].value == f"{nav.HOME.icon} {nav.HOME.title}"
    labels = [link.proto.label for link in at.get("page_link")]
    assert labels == [p.label for p in nav.lesson_pages()]  # "Where to start"


@pytest.mark.parametrize("entry", nav.lesson_pages(), ids=lambda p: p.url_path)
def test_switching_to_a_page_draws_it_inside_the_frame(home_models, entry):
    at = app_test(home_models, prompt="ROMEO: hello", query={"model": OTHER})
    at.switch_page(entry.file).run()
    assert not at.exception, at.exception and at.exception[0].value
    assert at.title[0].value == f"{entry.icon} {entry.title}"  # the frame's, once
    assert len(at.title) == 1
    assert at.sidebar.text_area(key=widget_key("prompt")).value == "ROMEO: hello"
    assert at.sidebar.selectbox(key=widget_key("model")).value == OTHER
    assert at.query_params["model"] == OTHER and at.query_params["prompt"] == "ROMEO: hello"


def test_a_page_that_needs_a_prompt_does_not_run_without_one(home_models):
    at = app_test(home_models, "pages/03_attention.py", prompt="")
    assert not at.exception
    assert any("Type a prompt in the sidebar" in i.value for i in at.info)
    assert not at.get("plotly_chart") and not at.slider  # the page itself did not run
    at = app_test(home_models, nav.find("Scaling").file, prompt="")
    assert not at.exception and at.get("plotly_chart")  # needs_prompt=False: it runs


def test_a_link_opens_its_page_on_the_first_run(home_models):
    at = open_link(home_models, "pages/03_attention.py", {"model": OTHER, "layer": "1"})
    assert not at.exception
    assert at.title[0].value == ":material/visibility: Attention"
    assert at.slider(key=widget_key("layer")).value == 1


def test_home_says_each_block_holds_attention_and_an_mlp(home_models):
    at = app_test(home_models)
    n_layer = load_bundle(home_models / GOOD).config.n_layer
    (intro,) = [m.value for m in at.markdown if "**blocks**" in m.value]
    assert f"{n_layer} **blocks**, each of them attention followed by an MLP" in intro


def test_the_model_card_offers_the_model_as_a_zip(home_models):
    at = app_test(home_models)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download this model"]
    assert button.proto.ignore_rerun  # the click downloads without running the page again
    assert button.proto.deferred_file_id  # the zip is built on the click, not on every run
    assert "transformers" in button.proto.help  # test-char is GPT-2's shape: both folders
