"""The MLP neurons page in AppTest: heatmap, corpus snippets, a promoted-tokens table that follows
the chosen neuron, and an attention-only model that stops with a note."""

from __future__ import annotations

import json
import re

from tests.apptest_util import app_test, open_numbers
from ui.parts import numbers_key
from ui.state import widget_key
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.load import load_bundle
from viz_model.model.gpt import GPT

PAGE = "pages/06_mlp_neurons.py"
PROMPT = "ROMEO: But soft"


def test_page_draws_heatmap_and_snippets(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert len(heat["x"]) == 20 and len(heat["y"]) == len(PROMPT)
    body = at.get("html")[0].proto.body
    assert body.count('class="snip"') == 8 and body.count("outline") == 8


def test_changing_the_neuron_changes_the_promoted_tokens(models_dir):
    at = open_numbers(app_test(models_dir, PAGE, prompt=PROMPT, query={"neuron": "0"}))
    assert not at.exception
    before = at.dataframe[0].value
    at.session_state[numbers_key()] = True
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
    assert not any("d_\\text{mlp}" in m.value for m in at.markdown)  # no MLP numbers described


def _outlined_positions(body: str) -> list[int]:
    """For each snippet of the page's HTML, the index of its outlined (peak) token."""
    out = []
    for snippet in body.split('class="snip"')[1:]:
        tokens = snippet.split('class="tok"')[1:]
        out.append(next(i for i, t in enumerate(tokens) if "outline" in t))
    return out


def test_default_neuron_on_shakespeare_char_is_not_position_driven(models_dir):
    # The old default (the prompt's most active neuron, L0 n61) peaked at the first character
    # of every snippet: all 8 outlines at position 0.
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})
    assert not at.exception
    positions = _outlined_positions(at.get("html")[0].proto.body)
    assert len(positions) == 8
    assert max(positions.count(p) for p in positions) <= 2  # peaks spread over the snippets
    assert "clearest neuron" in " ".join(c.value for c in at.caption)


def test_dead_neurons_are_counted_and_a_dead_choice_is_flagged(models_dir, tmp_path):
    import torch

    base = load_bundle(models_dir / "test-char")
    with torch.no_grad():  # neurons 0-4 of layer 0 can no longer fire: GELU(-100) = 0
        base.model.blocks[0].mlp.fc_in.bias[:5] = -100.0
    save_bundle(tmp_path / "dead", base.model, base.tokenizer)
    at = app_test(tmp_path, PAGE, prompt=PROMPT, query={"neuron": "3"})
    assert not at.exception
    note = " ".join(c.value for c in at.caption if "dead" in c.value)
    count, of = (int(n) for n in re.search(r"\*\*(\d+) of (\d+)\*\* neurons", note).groups())
    assert 5 <= count < of and "never fire above 0.1" in note
    assert any("Neuron 3 is dead" in w.value for w in at.warning)
    at.number_input(key=widget_key("neuron")).set_value(7).run()
    assert not any("is dead" in w.value for w in at.warning)


def test_the_idea_says_activations_are_graded_not_on_or_off(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    (idea,) = [m.value for m in at.markdown if "**neuron**" in m.value]
    assert "on or off" not in idea and "graded" in idea
    assert "never below −0.17" in idea  # test-char uses GELU, whose minimum is -0.17
