"""The LayerNorm page in AppTest: the shown mean/sigma follow the chosen LayerNorm and token, and
a post-LN bundle beside a pre-LN one is compared on the same prompt."""

from __future__ import annotations

import json
import shutil

from tests.apptest_util import app_test, plotly_array
from ui.state import widget_key
from viz_model.analysis import layernorm as lnx
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.load import load_bundle
from viz_model.model.gpt import GPT

PAGE = "pages/05_layernorm.py"
PROMPT = "ROMEO: But soft"


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_changing_the_layernorm_and_token_changes_mean_and_sigma(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    first = _metrics(at)
    assert set(first) >= {"μ before", "σ before"}
    at.selectbox(key=widget_key("ln")).set_value("ln_final").run()
    assert not at.exception
    second = _metrics(at)
    assert second["σ before"] != first["σ before"]
    at.slider(key=widget_key("ln_pos")).set_value(2).run()
    third = _metrics(at)
    assert third["μ before"] != second["μ before"]
    assert at.query_params["ln"] in ("ln_final", ["ln_final"])
    # The formula is filled with the shown sigma.
    sigma = third["σ before"]
    assert any(sigma in block.value for block in at.latex)


def test_headings_name_the_layernorm_for_people_with_the_hook_name_small(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    heading = next(h.value for h in at.subheader if h.value.startswith("Token"))
    assert "the LayerNorm of block 0, before attention" in heading
    assert heading.endswith(":small[:gray[`blocks.0.ln1`]]")  # the module path, small, last
    at.selectbox(key=widget_key("ln")).set_value("blocks.1.ln2").run()
    heading = next(h.value for h in at.subheader if h.value.startswith("Token"))
    assert "block 1, before the MLP" in heading and "`blocks.1.ln2`" in heading
    title = json.loads(at.get("plotly_chart")[2].proto.spec)["layout"]["title"]["text"]
    assert "this LayerNorm" in title and "blocks.1" not in title  # the heading names it


def test_pre_and_post_ln_models_are_compared(models_dir, tmp_path):
    shutil.copytree(models_dir / "test-char", tmp_path / "a-pre")
    base = load_bundle(models_dir / "test-char")
    model = GPT(base.config.__class__(**{**base.config.to_dict(), "norm": "post"})).eval()
    save_bundle(tmp_path / "b-post", model, base.tokenizer)
    at = app_test(tmp_path, PAGE, prompt=PROMPT)
    assert not at.exception
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    profile = figs[-1]
    assert [t["name"] for t in profile["data"]] == ["a-pre (pre-LN)", "b-post (post-LN)"]
    assert not any("Only pre-LN" in i.value for i in at.info)


def test_a_model_without_a_twin_is_shown_a_pair_that_differs_only_in_the_norm(models_dir):
    # test-char (its own small shape) has no post-LN twin; the old page set it beside
    # shakespeare-postln (another depth and width) as if only the norm differed
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    profile = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert [t["name"] for t in profile["data"]] == [
        "shakespeare-tiny (pre-LN)",
        "shakespeare-postln (post-LN)",
    ]
    text = " ".join(m.value for m in at.markdown)
    assert "differs from **test-char** only in where LayerNorm sits" in text
    assert not any("Only pre-LN" in i.value for i in at.info)
    # the sentences under the chart are the claims of the lengths drawn in it
    pre, post = (plotly_array(t["y"]).astype(float) for t in profile["data"])
    assert lnx.growth_claim(pre).text in text
    ratio = post[-1] / pre[-1]
    assert ("stream of shakespeare-postln (post-LN) is longer" in text) == (ratio > 1.1)


def test_a_snapshot_says_how_many_tokens_it_had_read_by_its_step(models_dir, tmp_path):
    """Issue 36: at a training step the caption gave the final step's tokens seen."""
    shutil.copytree(models_dir / "test-char", tmp_path / "a-pre")
    config = tmp_path / "a-pre" / "config.json"
    raw = json.loads(config.read_text())  # as the training loop records a run (batch 16)
    raw["train"] = {"batch_size": 16}
    raw["meta"].update(step=150, tokens_seen=150 * 16 * raw["model"]["n_ctx"])
    config.write_text(json.dumps(raw))
    base = load_bundle(tmp_path / "a-pre")
    model = GPT(base.config.__class__(**{**base.config.to_dict(), "norm": "post"})).eval()
    save_bundle(tmp_path / "b-post", model, base.tokenizer)
    step = 37
    assert step in base.snapshot_steps()
    by_then = step * 16 * base.config.n_ctx
    assert 0 < by_then < base.meta["tokens_seen"]
    at = app_test(tmp_path, PAGE, prompt=PROMPT, query={"model": "a-pre", "train_step": "37"})
    assert not at.exception
    caption = next(c.value for c in at.caption if "Tokens seen in training" in c.value)
    assert f"a-pre (step 37) {by_then:,}" in caption
    assert f"{base.meta['tokens_seen']:,}" not in caption.split(";")[0]
