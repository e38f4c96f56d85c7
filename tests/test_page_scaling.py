"""The Scaling page in AppTest: the sweep's points and a fit drawn over their range only, compute's
own fit on the frontier, no published model on our axes, the class's runs on the same axes, the
axis in the URL, published and counted parameters in the 12 L d^2 table."""

from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import app_test, plotly_array, plotly_figures
from tests.conftest import tiny_model
from ui.charts import scaling as scharts
from ui.state import widget_key
from viz_model.analysis.labs import scaling as sc
from viz_model.bundles.checkpoint import save_bundle
from viz_model.model.config import GPTConfig
from viz_model.text.tokenization import Tokenizer

PAGE = "pages/16_scaling.py"


def _traces(at) -> dict[str, dict]:
    return {t["name"]: t for t in plotly_figures(at)[0]["data"]}


def _sweep():
    results = sc.load_sweep()
    n = [sc.count_params(GPTConfig.from_dict(r["model"]))[1] for r in results["runs"]]
    return results["runs"], n


SWEEP = "sweep (end of training)"


def _xs(trace) -> np.ndarray:
    return plotly_array(trace["x"]).astype(float)


def test_the_fit_is_drawn_only_over_the_sweep_and_no_published_model_is_on_the_chart(models_dir):
    at = app_test(models_dir, PAGE)
    assert not at.exception
    traces = _traces(at)
    runs, n = _sweep()
    assert plotly_array(traces[SWEEP]["x"]).tolist() == n
    assert plotly_array(traces[SWEEP]["y"]).tolist() == [r["val_loss"] for r in runs]
    report = sc.fit_report(n, [r["val_loss"] for r in runs])
    (line,) = [t for name, t in traces.items() if name.startswith("fit")]
    assert line["name"] == scharts.fit_name(report)
    # the old page drew the fit out to GPT-3's 1.7e11 parameters, with GPT-2 and GPT-3 on it
    assert _xs(line).min() == pytest.approx(min(n)) and _xs(line).max() == pytest.approx(max(n))
    assert not any("GPT" in name for name in traces)
    everywhere = " ".join(
        str(t.get("customdata", "")) + str(t.get("text", "")) for t in traces.values()
    )
    assert "GPT" not in everywhere
    page = " ".join(m.value for m in at.markdown)
    assert sc.size_claim(report).text in page


def test_published_and_counted_parameters_are_both_shown(models_dir):
    at = app_test(models_dir, PAGE)
    table = next(
        d.value for d in at.dataframe if "parameters (counted)" in d.value.columns
    ).set_index("model")
    # GPT-2 small: the paper says 117 M; its shape (tied embeddings) counts 124,439,808
    assert table.loc["GPT-2 small", "parameters (published)"] == "117,000,000"
    assert table.loc["GPT-2 small", "parameters (counted)"] == "124,439,808"
    assert table.loc["GPT-3 175B", "12 L d²"] == "173,946,175,488"
    runs, _ = _sweep()
    total = sc.count_params(GPTConfig.from_dict(runs[2]["model"]))[0]
    assert table.loc[f"sweep {runs[2]['name']}", "parameters (counted)"] == f"{total:,}"
    text = " ".join(m.value for m in at.markdown)
    for law in sc.PUBLISHED_LAWS:  # beside the chart, in their own numbers and units
        assert law.numbers in text and law.measured_on in text


def test_against_compute_the_fit_is_computes_own_on_the_frontier(models_dir):
    at = app_test(models_dir, PAGE)
    at.radio(key=widget_key("scl_x")).set_value("compute").run()
    assert not at.exception and at.query_params["scl_x"] in ("compute", ["compute"])
    traces = _traces(at)
    runs, n = _sweep()
    expected = [6 * ni * r["tokens_seen"] for ni, r in zip(n, runs, strict=True)]
    assert plotly_array(traces[SWEEP]["x"]) == pytest.approx(expected)
    curve = sc.curve_points(sc.load_sweep())
    frontier = sc.compute_frontier(curve)
    report = sc.frontier_report(curve)
    (line,) = [t for name, t in traces.items() if name.startswith("fit")]
    assert line["name"] == scharts.fit_name(report)
    assert _xs(line).min() == pytest.approx(frontier[0].compute)
    assert _xs(line).max() == pytest.approx(frontier[-1].compute)
    # its own exponent, not the one against N reused (the old page's compute view)
    by_size = sc.fit_report(n, [r["val_loss"] for r in runs])
    assert report.b != pytest.approx(by_size.b, abs=1e-6)
    page = " ".join(m.value for m in at.markdown)
    assert sc.compute_claim(report).text in page


def test_a_run_trained_here_on_the_same_text_joins_the_plot(tmp_path):
    tok = Tokenizer.train("the king and the queen\n" * 30, "char")
    meta = {"corpus": "shakespeare", "tokenizer": "char", "val_loss": 2.5, "tokens_seen": 10**5}
    save_bundle(tmp_path / "class-run", tiny_model(vocab_size=tok.vocab_size), tok, meta=meta)
    at = app_test(tmp_path, PAGE)
    assert not at.exception
    run = _traces(at)["class run"]
    assert run["customdata"] == ["class-run"] and plotly_array(run["y"]).tolist() == [2.5]
    bundled = _traces(at)["bundled"]["customdata"]
    assert "shakespeare-char" in bundled and "shakespeare-nomask" not in bundled  # it cheats
