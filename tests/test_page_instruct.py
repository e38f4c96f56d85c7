"""The Instruction tuning part of Using a model and the Tokenization page on the bundled
instruction-tuned model in AppTest: the template's special tokens shown one chip each, both
models' scores and the claims, a student's own instruction, and bad input with a message."""

from __future__ import annotations

import pytest

from tests.apptest_util import app_test
from tests.claims_models import ASSETS
from ui.state import widget_key
from viz_model.bundles.load import load_bundle
from viz_model.text.instructions import SPECIAL_TOKENS

USE = "pages/19_using_a_model.py"
TOKENS = "pages/01_tokenization.py"
TUNED = "shakespeare-instruct"


def _texts(at) -> str:
    return " ".join(e.value for e in [*at.success, *at.info, *at.warning, *at.markdown])


@pytest.fixture(scope="module")
def at(models_dir):
    at = app_test(models_dir, USE, query={"model": TUNED, "use_part": "instruct"}, timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_part_shows_the_template_both_models_and_the_claims(at):
    chips = at.get("html")[0].proto.body
    for token in SPECIAL_TOKENS:
        assert f"{token.replace('|', '|')}" in chips.replace("&lt;", "<").replace("&gt;", ">")
    assert chips.count(", special") == 3
    assert [c.key for c in at.get("plotly_chart")] == ["use_instruct_bars"]
    texts = _texts(at)
    assert "**Before**: “shakespeare\\-char”" in texts
    assert texts.count("held-out") >= 4 and "end in" in texts
    assert len(at.success) + len(at.info) >= 5  # four kinds and stopping
    assert "After tuning: **" in texts  # the default instruction answered
    assert at.code[0].value.startswith("<|user|>reverse: bard<|assistant|>")


@pytest.mark.parametrize(
    "raw, message",
    [("shout: bard", "kind: word"), ("reverse: bär", "not in this model's vocabulary")],
)
def test_a_bad_instruction_gets_a_message_not_a_traceback(at, raw, message):
    at.text_input(key=widget_key("u_in_own")).set_value(raw).run()
    assert not at.exception
    assert any(message in w.value for w in at.warning)


def test_tokenization_shows_the_templates_tokens_as_single_special_tokens(models_dir):
    prompt = load_bundle(ASSETS / TUNED).meta["example_prompts"][0]
    at = app_test(models_dir, TOKENS, prompt=prompt, query={"model": TUNED}, timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    model_chips = at.get("html")[3].proto.body  # the fourth row: this model's tokenizer
    char_chips = at.get("html")[0].proto.body  # characters: "<|user|>" is 8 chips there
    for token in SPECIAL_TOKENS:
        escaped = token.replace("<", "&lt;").replace(">", "&gt;")
        assert f">{escaped}</span>" in model_chips
        assert f">{escaped}</span>" not in char_chips
    assert model_chips.count(", special") == 3
    assert any("3 special (one id each)" in m.value for m in at.markdown)
