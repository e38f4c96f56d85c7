"""The Quantization page and the sidebar's Precision select: the page draws its table, charts and
claims; a precision in the URL that names none is said and float32 shown; the page's button opens
Attention on the quantised copy, whose model card says so; a precision combines with a step."""

from __future__ import annotations

import numpy as np

from tests.apptest_util import app_test, open_link, plotly_array, plotly_figures
from ui.state import widget_key

PAGE = "pages/21_quantization.py"
ATTENTION = "pages/03_attention.py"


def _card(at) -> str:
    return " ".join(m.value for m in at.sidebar.markdown)


def _pattern(at) -> np.ndarray:
    traces = plotly_figures(at)[0]["data"]
    return plotly_array(next(t for t in traces if "colorbar" in t)["z"])


def test_the_page_draws_its_measurements(models_dir):
    at = app_test(models_dir, PAGE)
    assert not at.exception
    figures = plotly_figures(at)
    assert len(figures) == 4  # bytes against bits per character, the grid, row errors, drift
    drift = figures[3]
    assert [t["name"] for t in drift["data"]][:2] == ["int8 per row", "int4 per row"]
    assert len(drift["data"][0]["x"]) == 3  # the embeddings and after each of 2 blocks
    size = figures[0]
    names = [n for trace in size["data"] for n in trace["customdata"]]
    assert {"float32", "float16", "int8", "int4-tensor-outliers", "int2"} <= set(names)
    text = " ".join(m.value for m in at.markdown)
    assert "**int8, one scale per row** takes" in text
    assert "changes the top token at" in text
    assert "residual stream of **int4 per row** differs from float32's" in text
    # the test model carries no training text: the page says which text stands in
    assert any("shakespeare corpus" in c.value for c in at.caption)
    table = at.dataframe[0].value
    n_params = int(_card(at).split("parameters: **")[1].split("**")[0].replace(",", ""))
    assert len(table) == len(names) and table["bytes"].iloc[0] == f"{4 * n_params:,}"


def test_the_grid_view_follows_its_choices(models_dir):
    at = app_test(models_dir, PAGE, query={"q_bits": "2", "q_grid": "row", "q_row": "3"})
    assert not at.exception
    grid = plotly_figures(at)[1]
    assert len(grid["layout"]["shapes"]) == 3  # int2: the values -s, 0, s
    assert "row 3 of" in grid["layout"]["title"]["text"]
    at.selectbox(key=widget_key("q_bits")).set_value(8).run()
    assert len(plotly_figures(at)[1]["layout"]["shapes"]) == 255


def test_a_bad_precision_in_the_url_is_said_and_float32_shown(models_dir):
    link = {"model": "test-char", "prompt": "ROMEO", "quant": "int9<b>"}
    at = open_link(models_dir, ATTENTION, link)
    assert not at.exception
    assert any("no precision called" in e.value and "float32" in e.value for e in at.error)
    assert at.selectbox(key=widget_key("quant")).value == "float32"
    assert "precision:" not in _card(at)


def test_the_button_opens_attention_on_the_quantised_copy(models_dir):
    at = app_test(models_dir, ATTENTION, prompt="ROMEO: But soft")
    float32 = _pattern(at)
    at.switch_page(PAGE).run()
    at.selectbox(key=widget_key("q_open")).set_value("int2").run()
    next(b for b in at.button if b.label.startswith("Attention on the int2")).click().run()
    assert not at.exception
    assert at.query_params["quant"] in ("int2", ["int2"])
    card = _card(at)
    assert "precision: **int2, one scale per row**" in card
    assert "bytes" in card
    quantised = _pattern(at)
    assert quantised.shape == float32.shape
    assert not np.allclose(np.nan_to_num(quantised), np.nan_to_num(float32), atol=1e-3)
    # back to float32: the shared model the copy was made from is unchanged (AppTest reruns the
    # page it was switched to last, so switch to Attention as the browser already is)
    at.switch_page(ATTENTION).run()
    at.selectbox(key=widget_key("quant")).set_value("float32").run()
    assert "precision:" not in _card(at)
    assert np.array_equal(np.nan_to_num(_pattern(at)), np.nan_to_num(float32))


def test_a_precision_combines_with_a_training_step(models_dir):
    at = app_test(
        models_dir, ATTENTION, prompt="ROMEO", query={"train_step": "37", "quant": "int8"}
    )
    assert not at.exception
    card = _card(at)
    assert "training step: **37 of 150**" in card
    assert "precision: **int8, one scale per row**" in card


def test_a_model_without_a_causal_mask_is_said_to_copy_not_predict():
    """shakespeare-nomask sees each token it is scored on: its bits per character measure copying,
    as the model card and the Training page say; a causal model gets no such note."""
    from pathlib import Path

    bundled = Path(__file__).resolve().parent.parent / "assets" / "models"
    warned = []
    for name in ("shakespeare-nomask", "shakespeare-tiny"):
        at = open_link(bundled, PAGE, {"model": name, "prompt": "ROMEO: But soft"}, timeout=300)
        assert not at.exception, at.exception[0].value
        warned.append(" ".join(w.value for w in at.warning))
    assert "no causal mask" in warned[0] and "measures copying" in warned[0]
    assert "changes that copying" in warned[0]
    assert "no causal mask" not in warned[1]
