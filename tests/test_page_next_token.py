"""The Next-token page in AppTest: the bars react to temperature / top-k, the URL carries them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from tests.apptest_util import app_test, first_bundle
from ui.state import widget_key
from viz_model.analysis import next_token as nt
from viz_model.bundles.load import load_bundle

PAGE = "pages/07_next_token.py"
PROMPT = "ROMEO: But soft, what light"


def _bars(at) -> dict:
    """The distribution figure's traces by name."""
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    return {t.get("name"): t for t in fig["data"]}


def test_page_draws_bars_chips_and_perplexity(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    bars = _bars(at)
    before = bars["after temperature, before the cut"]
    assert len(before["x"]) == 20  # the default number of bars
    assert abs(sum(bars["renormalised: what is sampled"]["y"]) - 1) < 0.2  # top 20 of 64 hold most
    html = at.get("html")[0].proto.body
    assert html.count('class="chip"') == len(PROMPT)  # a char model: one chip per character
    assert "Perplexity" in [m.label for m in at.metric]


def test_temperature_changes_the_bars(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    y1 = _bars(at)["after temperature, before the cut"]["y"]
    at.slider(key=widget_key("temperature")).set_value(0.3).run()
    assert not at.exception
    y2 = _bars(at)["after temperature, before the cut"]["y"]
    assert max(y2) > max(y1)  # colder is sharper
    assert at.query_params["temperature"] in ("0.3", ["0.3"])
    entropy = [m for m in at.metric if m.label == "Entropy (nats)"][0].value
    at.slider(key=widget_key("temperature")).set_value(2.0).run()
    assert float([m for m in at.metric if m.label == "Entropy (nats)"][0].value) > float(entropy)


def test_top_k_greys_the_cut_tokens(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"top_k": "3"})
    assert not at.exception
    bars = _bars(at)
    colours = bars["after temperature, before the cut"]["marker"]["color"]
    from ui.charts.common import CUT_COLOUR

    assert colours.count(CUT_COLOUR) == len(colours) - 3
    after = bars["renormalised: what is sampled"]["y"]
    assert sum(1 for y in after if y > 0) == 3 and abs(sum(after) - 1) < 1e-5
    assert "cut by top-k / top-p" in bars


def test_top_k_then_top_p_says_how_many_survive(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"top_k": "5", "top_p": "0.6"})
    assert not at.exception
    note = next(m.value for m in at.markdown if "Top-k first, then top-p" in m.value)
    survivors = int(re.search(r"\*\*(\d+) tokens? survives?\*\*", note).group(1))
    sampled = _bars(at)["renormalised: what is sampled"]["y"]
    assert survivors == sum(1 for y in sampled if y > 0) <= 5
    assert "keeps the 5 most likely" in note
    at.slider(key=widget_key("top_p")).set_value(1.0).run()  # top-p off: no such note
    assert not any("Top-k first, then top-p" in m.value for m in at.markdown)


def test_the_loss_section_prints_the_analysis_loss_and_accuracy(models_dir):
    """The section draws its bars, and its metrics and claim carry the analysis' own numbers on
    the same prompt (the test model's loss, accuracy, ln V and its untrained twin's loss)."""
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    assert "The loss, named: cross-entropy" in [h.value for h in at.subheader]
    metrics = {m.label: m.value for m in at.metric}
    b = load_bundle(Path(models_dir) / first_bundle(models_dir))
    ids, V = b.tokenizer.encode(PROMPT)[-b.config.n_ctx :], b.tokenizer.vocab_size
    logits = nt.prompt_logits(b.model, ids)
    numbers = nt.loss_numbers(nt.surprisal(logits, ids), nt.top_is_next(logits, ids), V)
    assert metrics["Loss (nats per token)"] == f"{numbers.loss:.3f}"
    assert metrics["Accuracy (top-1)"] == f"{numbers.accuracy:.0%}"
    assert metrics["Blind guess ln V"] == f"{math.log(V):.3f}"
    text = "\n".join(m.value for m in at.markdown)
    assert f"{numbers.loss:.2f} nats per token" in text
    assert f"At {int(numbers.hits.sum())} of {len(ids) - 1} positions" in text
    bars = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    loss_fig = [f for f in bars if "−ln p(next)" in f["layout"]["title"]["text"]][0]
    drawn = sum(len(t["x"]) for t in loss_fig["data"] if t["type"] == "bar")
    assert drawn == min(len(ids) - 1, 30)
