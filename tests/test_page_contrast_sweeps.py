"""The Architecture contrasts page's sweep contrasts in AppTest: each sweep's headline numbers and
claims recomputed here from its committed results file (assets/contrasts/<key>.json) and found on
the page, its curves drawn from the file's numbers, the commands shown, a missing file said."""

from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import app_test, plotly_array, plotly_figures
from ui.state import widget_key
from viz_model.analysis import contrasts as ct
from viz_model.analysis.labs import sweeps as sw

PAGE = "pages/15_architecture_contrasts.py"


def _open(models_dir, key: str):
    at = app_test(models_dir, PAGE, prompt="ROMEO:", query={"ctr": key})
    assert not at.exception and not at.error
    return at


def _shown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _figure(at, title: str) -> dict:
    return next(f for f in plotly_figures(at) if f["layout"]["title"]["text"] == title)


def _lines(figure: dict) -> dict[str, np.ndarray]:
    """{trace name: y} of a figure's lines (its stop markers left out)."""
    return {
        t["name"]: plotly_array(t["y"]) for t in figure["data"] if t.get("mode") != "markers+text"
    }


@pytest.mark.parametrize("key", list(sw.SWEEPS))
def test_each_sweep_shows_its_runs_numbers_and_commands_from_the_file(models_dir, key):
    at = _open(models_dir, key)
    sweep = sw.load_sweep(key)
    assert at.subheader[0].value == sw.SWEEPS[key].title
    table = at.dataframe[0].value
    assert list(table.index) == [r.name for r in sweep.runs]
    codes = [c.value for c in at.code]
    assert sweep.script in codes
    for r in sweep.runs:
        val = sw.big(r.final_val) if r.final_val >= 100 else f"{r.final_val:.3f}"
        assert table.loc[r.name, "validation (end)"] == val
        assert table.loc[r.name, "outcome"] == sw.outcome(r)
        assert r.command in codes


def test_depth_says_what_the_file_shows_about_depth_baselines_and_gradients(models_dir):
    at = _open(models_dir, "depth")
    sweep = sw.load_sweep("depth")
    shown = _shown(at)
    assert sw.depth_claim(sweep).text in shown
    for r in sweep.runs:
        assert sw.baseline_claim(r).text in shown
    lines = _lines(_figure(at, "Training loss (mean of every 10 steps)"))
    for r in sweep.runs:
        assert lines[r.name] == pytest.approx(r.curve.loss)
    deep = [r for r in sweep.runs if sw.n_layer(r) == 8]
    grads = _lines(
        _figure(at, "Gradient norm of each layer of the 8-layer models (median over the run)")
    )
    for r in deep:
        assert sw.depth_gradient_claim(r).text in shown
        assert grads[r.name] == pytest.approx(r.grad_median)
    # the headline: without residual connections the gradient reaching block 0 of 8 vanishes
    unres = next(r for r in deep if not sw.residual(r))
    claim = sw.depth_gradient_claim(unres)
    assert claim.made == (claim.numbers["ratio"] >= claim.numbers["threshold"])


def test_layernorm_lr_marks_the_diverged_runs_and_says_where(models_dir):
    at = _open(models_dir, "layernorm-lr")
    sweep = sw.load_sweep("layernorm-lr")
    assert sw.lr_claim(sweep).text in _shown(at)
    assert sw.lr_trained_claim(sweep).text in _shown(at)
    figure = _figure(at, "Validation loss at the end, by learning rate")
    for trace, kind in zip(figure["data"], ("layernorm", "none"), strict=True):
        runs = sorted((r for r in sweep.runs if sw.norm_kind(r) == kind), key=sw.lr)
        assert plotly_array(trace["x"]) == pytest.approx([sw.lr(r) for r in runs])
        diverged = [sw.outcome(r) == "diverged" for r in runs]
        assert [s == "x" for s in trace["marker"]["symbol"]] == diverged
        kept = [r.final_val for r, d in zip(runs, diverged, strict=True) if not d]
        y = plotly_array(trace["y"])
        assert y[~np.array(diverged)] == pytest.approx(kept)


def test_dropout_draws_both_splits_and_the_gap_from_the_file(models_dir):
    at = _open(models_dir, "dropout")
    sweep = sw.load_sweep("dropout")
    shown = _shown(at)
    assert sw.gap_claim(sweep).text in shown
    gaps = _lines(_figure(at, "The gap: held-out loss minus training loss"))
    for r in sweep.runs:
        assert sw.overfit_claim(r).text in shown
        assert gaps[r.name] == pytest.approx(r.eval_val.loss - r.eval_train.loss)
        t, v, g = sw.final_gap(r)
        assert at.dataframe[0].value.loc[r.name, "gap"] == f"{g:.3f}"


def test_optimizers_say_warm_ups_effect_for_each_optimiser(models_dir):
    at = _open(models_dir, "optimizers")
    sweep = sw.load_sweep("optimizers")
    shown = _shown(at)
    assert sw.optimizer_claim(sweep).text in shown
    for opt in ("adamw", "sgd"):
        assert sw.warmup_claim(sweep, opt).text in shown


def test_sweep_keys_and_pair_keys_never_clash():
    assert not set(sw.SWEEPS) & set(ct.CONTRASTS)


def test_the_chooser_offers_the_sweeps_and_puts_one_in_the_url(models_dir):
    at = app_test(models_dir, PAGE, prompt="ROMEO:")
    radio = at.radio(key=widget_key("ctr"))
    titles = {info.title for info in sw.SWEEPS.values()}
    assert titles <= set(radio.options) and ct.CONTRASTS["mask"].title in radio.options
    radio.set_value("dropout").run()
    assert not at.exception and at.query_params["ctr"] in ("dropout", ["dropout"])
    assert at.subheader[0].value == sw.SWEEPS["dropout"].title


def test_a_missing_results_file_is_said_with_the_command_that_makes_it(
    models_dir, monkeypatch, tmp_path
):
    monkeypatch.setattr(sw, "SWEEPS_DIR", tmp_path)
    at = app_test(models_dir, PAGE, prompt="ROMEO:", query={"ctr": "depth"})
    assert not at.exception
    assert "python scripts/contrast_sweeps.py --only depth" in at.error[0].value
