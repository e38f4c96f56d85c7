"""The Instruction tuning part of Using a model and the Tokenization page on the bundled
instruction-tuned model in AppTest: the template's special tokens shown one chip each, both
models' scores and the claims, a student's own instruction, and bad input with a message."""

from __future__ import annotations

import pytest

from tests.apptest_util import app_test, open_numbers
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
    assert "Tuning taught reversals:" in texts and "two-proportion" in texts
    forgot = [w.value for w in at.warning if "less likely per character" in w.value]
    assert len(forgot) == 1 and "“shakespeare-char”'s validation text" in forgot[0]
    assert "mixes pretraining text" in texts and "3–5 lowercase letters" in texts
    sidebar = " ".join(m.value for m in at.sidebar.markdown)
    assert "validation loss (tuning text)" in sidebar


def test_the_numbers_table_shows_percent(at):
    open_numbers(at)
    table = at.dataframe[-1].value
    assert list(table.columns) == ["kind", "exact: before → after", "starts right: before → after",
                                   "baseline"]  # fmt: skip
    assert all(v.endswith("%") for v in table["baseline"])
    assert " → " in table["exact: before → after"].iloc[0]


def test_an_empty_answer_shows_raw_in_the_code_and_said_in_words(at):
    at.text_input(key=widget_key("u_in_own")).set_value("reverse: BARD").run()
    assert not at.exception
    code = at.code[0].value
    assert "(nothing)" not in code and code.startswith("<|user|>reverse: BARD<|assistant|>")
    said = " ".join(m.value for m in at.markdown)
    assert code == "<|user|>reverse: BARD<|assistant|><|end|>"  # the bundle answers nothing
    assert "answered nothing before" in said and "\\(nothing\\)" in said  # md-escaped


@pytest.mark.parametrize(
    "raw, message",
    [
        ("shout: bard", "kind: word"),
        ("reverse: bär", "not in this model's vocabulary"),
        ("upper: <|end|>", "prompt injection"),
    ],
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


def test_generation_says_when_the_model_wrote_end(models_dir):
    tok = load_bundle(ASSETS / TUNED).tokenizer
    end = tok.token_to_id("<|end|>")
    forced = "_".join(f"f{i}" for i in [*tok.encode("drab"), end])  # steps forced in the URL
    query = {"model": TUNED, "gen": forced}
    prompt = "<|user|>reverse: bard<|assistant|>"
    at = app_test(models_dir, "pages/08_generation.py", prompt=prompt, query=query, timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    assert any("a chat app stops here" in i.value for i in at.info)
    at = app_test(models_dir, "pages/08_generation.py", prompt=prompt, query={"model": TUNED})
    assert not any("a chat app stops here" in i.value for i in at.info)


def test_next_token_names_the_tuning_text_it_searches(models_dir):
    prompt = "<|user|>upper: ysqz"  # "ysqz" is once in the tuning text's training split
    at = app_test(models_dir, "pages/07_next_token.py", prompt=prompt, query={"model": TUNED})
    assert not at.exception, [e.value for e in at.exception]
    said = [m.value for m in at.markdown if "only learns from its training text" in m.value]
    assert len(said) == 1 and "tuned from “shakespeare\\-char”" in said[0]
    assert "it occurs once in the training split" in said[0]  # never "1 times"


def test_tokenization_says_why_a_template_splits_and_where_it_is_one_token(models_dir):
    prompt = "<|user|>reverse: bard<|assistant|>"
    at = app_test(models_dir, TOKENS, prompt=prompt, query={"model": "shakespeare-char"})
    assert not at.exception, [e.value for e in at.exception]
    assert any("*added* to a tokenizer, not learned" in m.value for m in at.markdown)
    assert any("has no chat template" in i.value and TUNED in i.value for i in at.info)
    plain = app_test(models_dir, TOKENS, prompt="ROMEO:", query={"model": "shakespeare-char"})
    assert not any("not learned" in m.value for m in plain.markdown)
    assert not any("chat template" in i.value for i in plain.info)


def test_with_a_precision_both_models_are_measured_at_it(models_dir):
    query = {"model": TUNED, "use_part": "instruct", "quant": "int4"}
    at = app_test(models_dir, USE, query=query, timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    texts = _texts(at)
    assert "both stored as **int4**" in texts and "both stored as int4." in texts
