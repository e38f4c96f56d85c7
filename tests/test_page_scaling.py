"""The Scaling page in AppTest: the sweep's points and fit, GPT-2/3 placed by size, the class's
runs on the same axes, the axis in the URL, and the 12 L d^2 table."""

from __future__ import annotations

import pytest

from tests.apptest_util import app_test, plotly_array, plotly_figures
from tests.conftest import tiny_model
from ui.state import widget_key
from viz_model.analysis import scaling as sc
from viz_model.checkpoint import save_bundle
from viz_model.config import GPTConfig
from viz_model.tokenization import Tokenizer

PAGE = "pages/16_Scaling.py"


def _traces(at) -> dict[str, dict]:
    return {t["name"]: t for t in plotly_figures(at)[0]["data"]}


def _sweep():
    results = sc.load_sweep()
    n = [sc.count_params(GPTConfig.from_dict(r["model"]))[1] for r in results["runs"]]
    return results["runs"], n


def test_sweep_points_fit_and_published_sizes(models_dir):
    at = app_test(models_dir, PAGE)
    assert not at.exception
    traces = _traces(at)
    runs, n = _sweep()
    assert plotly_array(traces["sweep"]["x"]).tolist() == n
    assert plotly_array(traces["sweep"]["y"]).tolist() == [r["val_loss"] for r in runs]
    law = sc.fit_power_law(n, [r["val_loss"] for r in runs])
    assert f"fit: {law.a:.2f} x^-{law.b:.3f}" in traces
    assert 0 < law.b < 1  # bigger is better here
    gpt = traces["GPT-2 / GPT-3 (size only)"]
    placed = dict(zip(gpt["customdata"], plotly_array(gpt["x"]), strict=True))
    assert placed["GPT-3 175B"] == 12 * 96 * 12288**2
    assert len(placed) == len(sc.PUBLISHED)
    table = at.dataframe[0].value.set_index("model")
    assert table.loc["GPT-3 175B", "12 L d²"] == "173,946,175,488"
    assert table.loc["GPT-3 175B", "rule / parameters"] == "0.99"
    shakespeare_tiny = sc.count_params(GPTConfig.from_dict(runs[2]["model"]))[0]
    assert table.loc[f"sweep {runs[2]['name']}", "parameters"] == f"{shakespeare_tiny:,}"


def test_against_compute_each_point_moves_to_six_n_d_and_goes_in_the_url(models_dir):
    at = app_test(models_dir, PAGE)
    at.radio(key=widget_key("scl_x")).set_value("compute").run()
    assert not at.exception and at.query_params["scl_x"] in ("compute", ["compute"])
    traces = _traces(at)
    runs, n = _sweep()
    expected = [6 * ni * r["tokens_seen"] for ni, r in zip(n, runs, strict=True)]
    assert plotly_array(traces["sweep"]["x"]) == pytest.approx(expected)
    names = traces["GPT-2 / GPT-3 (size only)"]["customdata"]
    assert names and all(name.startswith("GPT-3") for name in names)  # GPT-2's tokens: unknown


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
