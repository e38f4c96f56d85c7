"""The MLP neurons page in AppTest: heatmap, corpus snippets, a promoted-tokens table that follows
the chosen neuron, and an attention-only model that stops with a note."""

from __future__ import annotations

import json

from tests.apptest_util import app_test
from ui.state import widget_key
from viz_model import GPT
from viz_model.checkpoint import load_bundle, save_bundle

PAGE = "pages/6_MLP_neurons.py"
PROMPT = "ROMEO: But soft"


def test_page_draws_heatmap_and_snippets(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert len(heat["x"]) == 20 and len(heat["y"]) == len(PROMPT)
    body = at.get("html")[0].proto.body
    assert body.count('class="snip"') == 8 and body.count("outline") == 8


def test_changing_the_neuron_changes_the_promoted_tokens(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"neuron": "0"})
    assert not at.exception
    before = at.dataframe[0].value
    at.number_input(key=widget_key("neuron")).set_value(7).run()
    assert not at.exception
    after = at.dataframe[0].value
    assert not before.equals(after)
    assert at.query_params["neuron"] in ("7", ["7"])
    col = "logit change per unit"
    assert list(after[col]) == sorted(after[col], reverse=True)  # promoted: largest first


def test_attention_only_model_stops_gracefully(models_dir, tmp_path):
    base = load_bundle(models_dir / "test-char")
    model = GPT(base.config.__class__(**{**base.config.to_dict(), "attn_only": True})).eval()
    save_bundle(tmp_path / "attn-only", model, base.tokenizer)
    at = app_test(tmp_path, PAGE, prompt=PROMPT)
    assert not at.exception
    assert any("attention-only" in i.value for i in at.info)
    assert not at.get("plotly_chart")
