"""The Adversarial suffix page (AppTest): what it prints is the search run again by hand, the URL
carries every choice, and a target that is not one token gets words, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apptest_util import open_link, plotly_figures
from viz_model.analysis.labs import adversarial as adv
from viz_model.bundles.load import load_bundle

PAGE = "pages/22_adversarial.py"
MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
PROMPT = "ROMEO:\nBut soft"


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


@pytest.mark.parametrize("where", ["bundled", "trained"])
def test_the_page_prints_the_search_it_ran(where, models_dir):
    folder, name = (MODELS, "shakespeare-char") if where == "bundled" else (models_dir, "test-char")
    query = {"model": name, "prompt": PROMPT, "adv_target": "e", "adv_len": "3", "adv_steps": "4"}
    at = open_link(folder, PAGE, query, timeout=300)
    assert not at.exception, at.exception[0].value
    bundle = load_bundle(folder / name)
    tok = bundle.tokenizer
    ids = tok.encode(PROMPT)
    result = adv.search(bundle.model, ids, tok.encode("e")[0], 3, 4, 8, tok.encode(" ")[0])
    assert _metric(at, "p(target) before") == adv.probability_text(result.p_target[0])
    assert _metric(at, "p(target) after") == adv.probability_text(result.p_target[-1])
    assert adv.search_claim(result, "“e”").text in [m.value for m in at.markdown]
    climb = next(f for f in plotly_figures(at) if "as the suffix is searched" in str(f["layout"]))
    assert len(climb["data"][0]["x"]) == len(result.p_target)


def test_a_target_of_two_tokens_is_refused_in_words():
    query = {"model": "shakespeare-char", "prompt": PROMPT, "adv_target": "ab"}
    at = open_link(MODELS, PAGE, query, timeout=300)
    assert not at.exception
    assert any("is 2 tokens for this model" in e.value for e in at.error)


def test_the_suffix_table_has_one_row_a_step_and_suffixes_of_the_chosen_length():
    query = {"model": "shakespeare-char", "prompt": PROMPT, "adv_target": "e", "adv_len": "4"}
    at = open_link(MODELS, PAGE, query, timeout=300)
    table = at.table[0].value
    assert all(len(s.replace("␣", " ").replace("↵", "\n")) == 4 for s in table["suffix"])
    assert list(table["step"]) == list(range(len(table)))
