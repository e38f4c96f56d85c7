"""The Training page in AppTest: a bundle's curves, their x axis in the URL, the baselines on the
bundled corpus model, and the samples it wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apptest_util import app_test, plotly_array, plotly_figures
from ui.state import widget_key
from viz_model.analysis import loss_accuracy as la
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


def test_the_samples_caption_says_what_the_slider_spans_not_a_step_0_it_lacks(models_dir):
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})
    assert not at.exception
    slider = at.select_slider(key=widget_key("hist_sample"))
    first, last = slider.options[0], slider.options[-1]
    assert int(first) > 0  # trained before the loop kept a step-0 sample
    said = " ".join(c.value for c in at.caption) + " " + (slider.help or "")
    assert "step 0" not in said and "random weights" not in said
    assert f"steps {int(first):,} to {int(last):,}" in said


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


def _run_bundle(out: Path, **train_overrides) -> Path:
    """A small bundle trained by the loop itself (so its history holds gradient health)."""
    import torch

    from viz_model.model.config import GPTConfig
    from viz_model.model.gpt import GPT
    from viz_model.text.data import TokenData, load_corpus
    from viz_model.text.tokenization import Tokenizer
    from viz_model.training.loop import train

    text = load_corpus("shakespeare")[:20_000]
    tok = Tokenizer.train(text, "char")
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_ctx=32, d_model=32, n_layer=2, n_head=4))
    base = dict(max_steps=40, batch_size=8, eval_every=20, eval_batches=2, sample_tokens=0,
                n_snapshots=3, health_every=5, threads=1)  # fmt: skip
    cfg = TrainConfig(**{**base, **train_overrides})
    for _ in train(model, TokenData.from_text(text, tok), cfg, out, tok):
        pass
    return out


def _rule(at, optimizer: str):
    """The expander "The update it was trained with (<optimizer>, ...)" and its formulas."""
    box = next(
        e
        for e in at.expander
        if e.label.startswith(f"The update it was trained with ({optimizer},")
    )
    return box, " ".join(element.value for element in box.latex)


def test_an_sgd_model_shows_sgds_update_with_its_momentum_and_no_warm_up(tmp_path):
    folder = _run_bundle(tmp_path / "m" / "sgd-run", optimizer="sgd", lr=0.2, min_lr=0.02,
                         momentum=0.8, weight_decay=0.0, warmup_steps=0)  # fmt: skip
    at = app_test(folder.parent, PAGE)
    assert not at.exception
    box, formulas = _rule(at, "SGD with momentum")
    assert r"b_t = 0.8\, b_{t-1} + g_t" in formulas and r"\eta_t\, b_t" in formulas
    assert "m_t" not in formulas and r"\beta_1" not in formulas  # not AdamW's
    assert "no warm-up" in formulas and "0.2" in formulas
    assert "No warm-up" in " ".join(c.value for c in box.caption)


def test_an_adamw_model_with_warm_up_shows_adamws_update_and_the_warm_up(tmp_path):
    folder = _run_bundle(tmp_path / "m" / "adamw-run", warmup_steps=7, lr=2e-3)
    at = app_test(folder.parent, PAGE)
    assert not at.exception
    box, formulas = _rule(at, "AdamW")
    assert "m_t" in formulas and "b_t" not in formulas
    assert "W = 7" in formulas and r"2 \times 10^{-3} \cdot t / W" in formulas
    assert "over the first 7 steps" in " ".join(c.value for c in box.caption)


def test_a_model_with_gradient_health_draws_it_by_layer_and_says_what_it_shows(tmp_path):
    folder = _run_bundle(tmp_path / "m" / "health-run", grad_clip=0.5)
    at = app_test(folder.parent, PAGE)
    assert not at.exception
    figures = {tuple(t.get("name") for t in f["data"]): f for f in plotly_figures(at)}
    layers = ("embeddings", "block 0", "block 1", "final LN + unembedding")
    grads = figures[(*layers, "whole gradient")]
    assert grads["layout"]["yaxis"]["type"] == "log"
    assert plotly_array(grads["data"][1]["x"]).tolist() == [1, 5, 10, 15, 20, 25, 30, 35, 40]
    assert figures[layers]["layout"]["yaxis"]["type"] == "log"  # the update ratios
    said = " ".join(m.value for m in at.markdown)
    assert "block 0" in said and ("Clipping was **active**" in said or "never acted" in said)
    assert "rule of thumb" in said


def test_a_model_trained_before_gradient_health_says_it_was_not_recorded(models_dir):
    at = app_test(models_dir, PAGE)  # test-char: a history of losses only
    assert not at.exception
    assert any("recorded no gradient health" in c.value for c in at.caption)


def test_the_intro_puts_the_losss_floor_at_the_texts_entropy_not_at_0(models_dir):
    """Issue 36: "a perfect model scores 0" is false of real text, whose floor is its entropy
    (induction-2l's sidebar gives it as 1.674 nats)."""
    at = app_test(models_dir, "pages/09_training.py")
    intro = " ".join(m.value for m in at.main.markdown)
    assert "a perfect model scores 0" not in intro
    assert "entropy of the text" in intro


def test_a_snapshots_run_summary_says_its_figures_are_the_whole_runs(models_dir):
    """Issue 36: at step 0 the summary's validation loss (the final step's) read as step 0's."""
    at = app_test(models_dir, PAGE, query={"model": "test-char", "train_step": "0"})
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "Final validation loss" in labels and "Validation loss" not in labels
    assert any("the other pages show its weights at step 0" in c.value for c in at.caption)
    final = app_test(models_dir, PAGE, query={"model": "test-char"})
    assert "Validation loss" in [m.label for m in final.metric]


def test_the_corpus_model_draws_log_loss_beside_accuracy_at_its_snapshots(models_dir):
    """The snapshots' scores drawn and stated are the analysis' own on the same validation tokens."""
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})
    assert not at.exception
    fig = [f for f in plotly_figures(at) if "accuracy" in f["layout"]["title"]["text"]][0]
    bundle = load_bundle(Path("assets/models/shakespeare-char"))
    along = la.along_training(bundle, la.validation_slice(bundle))
    assert plotly_array(fig["data"][0]["y"]) == pytest.approx(along.loss, abs=1e-6)
    text = "\n".join(m.value for m in at.markdown)
    assert la.accuracy_claim(along, bundle.tokenizer.vocab_size).text in text
    assert "0.2 to 0.4" in text


def test_a_model_that_names_no_text_says_its_snapshots_cannot_be_scored(models_dir):
    at = app_test(models_dir, PAGE)
    assert not at.exception
    assert any("snapshots cannot be scored" in info.value for info in at.info)
