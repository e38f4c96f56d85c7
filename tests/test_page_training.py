"""The Training page in AppTest: a bundle's curves, their x axis in the URL, the baselines on the
bundled corpus model, and the samples it wrote."""

from __future__ import annotations

from pathlib import Path

from tests.apptest_util import app_test, plotly_array, plotly_figures
from ui.state import widget_key
from viz_model.analysis.training import tex_number
from viz_model.bundles.load import load_bundle
from viz_model.model.config import TrainConfig

PAGE = "pages/09_training.py"


def test_a_bundle_without_samples_or_data_shows_its_loss_curve(models_dir):
    at = app_test(models_dir, PAGE)
    assert not at.exception
    figs = plotly_figures(at)
    assert figs, "no chart drawn"
    names = [trace.get("name") for trace in figs[0]["data"]]
    assert names == ["training loss", "validation loss"]
    train_y = plotly_array(figs[0]["data"][0]["y"])
    train_x = plotly_array(figs[0]["data"][0]["x"])
    assert train_y.size > 0 and train_y[0] > train_y[-1]  # the loss fell
    assert any("no samples" in info.value for info in at.info)
    at.radio(key=widget_key("hist_x")).set_value("tokens").run()
    assert not at.exception
    assert at.query_params["hist_x"] in ("tokens", ["tokens"])
    x_tokens = plotly_array(plotly_figures(at)[0]["data"][0]["x"])
    assert x_tokens[-1] > train_x[-1]  # tokens = steps x batch x context


def test_the_corpus_model_shows_baselines_and_samples_by_step(models_dir):
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})
    assert not at.exception
    loss_fig = plotly_figures(at)[0]
    labels = [a["text"] for a in loss_fig["layout"].get("annotations", [])]
    assert any(label.startswith("bigram") for label in labels), labels
    bigram = next(float(t.split()[-1]) for t in labels if t.startswith("bigram"))
    final_val = plotly_array(loss_fig["data"][1]["y"])[-1]
    assert final_val < bigram  # the bundled model beats counting pairs
    slider = at.select_slider(key=widget_key("hist_sample"))
    first_step = slider.options[0]
    last_text = at.code[0].value
    slider.set_value(first_step).run()
    assert not at.exception
    assert at.code[0].value != last_text


def test_the_update_shown_is_adamw_with_the_models_own_numbers(models_dir):
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})
    assert not at.exception
    formulas = [element.value for element in at.get("latex")] if at.get("latex") else []
    formulas += [m.value for m in at.markdown if m.value.startswith("$$")]
    joined = " ".join(formulas)
    assert r"\beta_1" in joined and "m_t" in joined  # AdamW, not plain gradient descent
    bundle = load_bundle(Path("assets/models/shakespeare-char"))
    cfg = TrainConfig.from_dict(bundle.train_config)
    for value in (cfg.beta1, cfg.beta2, cfg.weight_decay, cfg.lr, cfg.min_lr):
        assert tex_number(value) in joined, value
    assert f"W = {cfg.warmup_steps}" in joined


def test_a_model_name_from_the_url_is_shown_as_typed_not_as_markdown(models_dir):
    at = app_test(models_dir, None, query={"model": "**x**[link](http://e.vil)"})  # a shared link
    assert not at.exception
    message = next(e.value for e in at.error if "There is no model called" in e.value)
    assert "\\*\\*x\\*\\*\\[link\\](http\\://e.vil)" in message  # no markup, no autolink
