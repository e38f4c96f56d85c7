"""Pages on a GPT-2 folder from Hugging Face (made here, random weights): the picker lists it,
the model card says where it came from, and pages with every head narrow the view to a few
layers once a model has more heads than fit (13 layers x 4 heads here: 52 maps, over the cap
of 48, so the grid shows 12 layers at a time, as it shows 4 of GPT-2's 12)."""

from __future__ import annotations

import re

import pytest

from serving.models import discover
from tests.apptest_util import app_test, plotly_figures
from tests.hf_gpt2 import save_gpt2_folder
from ui.frame import _context
from ui.state import widget_key
from viz_model.bundles.load import load_bundle
from viz_model.model import scale

pytest.importorskip("transformers")
NAME = "tiny-gpt2"


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-models")
    save_gpt2_folder(root / NAME, n_layer=13, n_head=4, n_embd=16, chars=30_000)
    return root


def _grid_titles(at) -> list[str]:
    """The titles of the all-heads grid, the figure whose subplot titles read "L0 H0" etc."""
    for fig in plotly_figures(at):
        titles = [a["text"] for a in fig["layout"].get("annotations", [])]
        titles = [t.replace("<b>", "").replace("</b>", "") for t in titles]
        if titles and all(re.fullmatch(r"L\d+ H\d+", t) for t in titles):
            return titles
    raise AssertionError("no grid of heads on the page")


def test_the_picker_lists_it_and_the_card_names_its_source(hf_dir, monkeypatch):
    monkeypatch.setenv("VIZ_MODEL_DIRS", str(hf_dir))
    assert discover()[NAME] == (hf_dir / NAME).resolve()
    at = app_test(hf_dir)
    assert not at.exception
    card = "\n".join(m.value for m in at.sidebar.markdown)
    assert "Hugging Face folder (gpt2)" in card and "13 (attention + MLP, pre-LN)" in card


def test_attention_grid_and_head_table_show_a_window_of_layers(hf_dir):
    at = app_test(hf_dir, "pages/03_attention.py", prompt="to be or not to be", query={"layer": 12})
    assert not at.exception
    # the window holding the chosen layer opens: layer 12 alone, its 4 heads
    assert _grid_titles(at) == [f"L12 H{h}" for h in range(4)]
    roles = next(t.value for t in at.table if "role" in t.value.columns)
    assert len(roles) == 4
    at.selectbox(key=widget_key("grid_layers")).set_value(0).run()
    titles = _grid_titles(at)
    assert len(titles) == 48 and titles[0] == "L0 H0" and titles[-1] == "L11 H3"
    roles = next(t.value for t in at.table if "role" in t.value.columns)
    assert len(roles) == 48


def test_generation_per_head_rows_show_a_window_of_layers(hf_dir):
    at = app_test(hf_dir, "pages/08_generation.py", prompt="to be", query={"per_head": "true"})
    assert not at.exception
    heatmap = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")
    rows = heatmap["data"][0]["y"]
    assert len(rows) == 48 and rows[-1] == "layer 11 head 3"
    at.selectbox(key=widget_key("gen_layers")).set_value(12).run()
    heatmap = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")
    assert heatmap["data"][0]["y"] == [f"layer 12 head {h}" for h in range(4)]


def test_mlp_page_names_gpt2s_gelu(hf_dir):
    at = app_test(hf_dir, "pages/06_mlp_neurons.py", prompt="to be or not")
    assert not at.exception
    assert any("GELU (tanh)" in m.value for m in at.markdown)


def test_a_big_models_prompt_is_cut_to_view_tokens_with_the_reason(hf_dir, monkeypatch):
    bundle = load_bundle(hf_dir / NAME)
    # As if this model were GPT-2 sized: a budget that 20 tokens' activations fit, 40 do not
    monkeypatch.setattr(scale, "CACHE_BUDGET", scale.cache_bytes(bundle.config, 20))
    monkeypatch.setattr(scale, "MIN_VIEW_TOKENS", 8)
    ctx = _context("id", bundle, "to be or not to be, " * 20)
    assert len(ctx.ids) == 20 and ctx.n_cut > 0
    assert any("at most 20 at a time" in m and "reads up to 64" in m for m in ctx.messages)


def test_a_pickled_only_folder_is_refused_and_the_app_stays_on_a_good_model(hf_dir):
    bad = hf_dir / "zz-pickled"  # sorts after tiny-gpt2, which other tests open by default
    bad.mkdir(exist_ok=True)
    (bad / "config.json").write_text((hf_dir / NAME / "config.json").read_text())
    (bad / "pytorch_model.bin").write_bytes(b"not read")
    at = app_test(hf_dir, query={"model": "zz-pickled"})
    assert not at.exception
    message = at.error[0].value
    assert "“zz-pickled” has its weights only as a pickled pytorch_model.bin" in message
    assert "safe_serialization=True" in message and "Still showing" in message
    assert at.session_state["model"] != "zz-pickled"
