"""The Training dynamics page in AppTest: the head to follow (in the URL), the sidebar's step
marked on the charts, the numbers behind the chart, and a model without snapshots."""

from __future__ import annotations

import shutil

import numpy as np

from tests.apptest_util import app_test, plotly_array, plotly_figures
from ui.state import widget_key

PAGE = "pages/12_training_dynamics.py"


def _thick(fig: dict) -> set[str]:
    """The names of the head lines drawn thick (the followed head)."""
    return {t["name"] for t in fig["data"] if t.get("legendgroup") and t["line"]["width"] == 4}


def test_induction_2l_opens_on_its_induction_head_and_follows_another(models_dir):
    at = app_test(models_dir, PAGE, query={"model": "induction-2l"})
    assert not at.exception
    box = at.selectbox(key=widget_key("dyn_head"))
    assert box.value == "L1 H2"  # the strongest induction head at the end
    roles, accuracy = plotly_figures(at)
    assert _thick(roles) == {"L1 H2"}
    said = next(m.value for m in at.markdown if "half learned by step" in m.value)
    formed = int(said.split("half learned by step ")[1].split(" ")[0].replace(",", ""))
    assert 900 <= formed <= 1500  # inside the dense snapshots around the phase change
    assert f"copying half learned: step {formed:,}" in [t.get("name") for t in roles["data"]]
    names = [t["name"] for t in accuracy["data"]]
    assert "copy accuracy (per token)" in names and "whole copy right" in names
    # a real phase change: the page says so, and does not call it only the metric's jump
    text = " ".join(m.value for m in at.markdown)
    assert "The loss itself changes phase" in text
    assert "magnifies a small slip" in text  # the whole-copy drop after its peak, explained

    box.set_value("L0 H3").run()
    assert not at.exception
    assert at.query_params["dyn_head"] in ("L0 H3", ["L0 H3"])
    roles = plotly_figures(at)[0]
    assert _thick(roles) == {"L0 H3"}
    table = at.dataframe[0].value  # the numbers behind the followed head's lines
    drawn = [t for t in roles["data"] if t.get("name") == "L0 H3"]  # one per role row
    np.testing.assert_allclose(table["previous-token"], plotly_array(drawn[0]["y"]), atol=1e-3)
    np.testing.assert_allclose(table["induction"], plotly_array(drawn[1]["y"]), atol=1e-3)


def test_the_url_chooses_the_head_and_the_sidebar_step_is_marked(models_dir):
    at = app_test(models_dir, PAGE, query={"dyn_head": "L1 H1", "train_step": "37"})
    assert not at.exception
    assert at.selectbox(key=widget_key("dyn_head")).value == "L1 H1"
    roles = plotly_figures(at)[0]
    assert _thick(roles) == {"L1 H1"}
    assert "the sidebar's step: 37" in [t.get("name") for t in roles["data"]]
    assert any(s.get("x0") == 37 for s in roles["layout"]["shapes"])
    steps = plotly_array(roles["data"][0]["x"])
    assert steps.tolist() == [0, 1, 37, 150]  # every saved step, whatever the sidebar shows
    at.select_slider(key=widget_key("train_step")).set_value(150).run()  # the final model
    assert "the sidebar's step: 37" not in [t.get("name") for t in plotly_figures(at)[0]["data"]]


def test_a_model_without_snapshots_says_so(models_dir, tmp_path):
    bare = tmp_path / "bare" / "no-snapshots"
    shutil.copytree(models_dir / "test-char", bare, ignore=shutil.ignore_patterns("snapshots"))
    at = app_test(bare.parent, PAGE)
    assert not at.exception
    assert any("kept no snapshots" in i.value and "no-snapshots" in i.value for i in at.info)
    assert not plotly_figures(at)


def test_a_damaged_snapshot_is_reported_and_the_app_keeps_running(models_dir, tmp_path):
    damaged = tmp_path / "damaged" / "bad-snapshot"
    shutil.copytree(models_dir / "test-char", damaged)
    (damaged / "snapshots" / "step_000037.safetensors").write_bytes(b"not weights")
    at = app_test(damaged.parent, PAGE)
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert "bad-snapshot" in error and "step_000037.safetensors" in error
    assert not plotly_figures(at)


def test_a_class_trained_model_that_never_copies_says_so_and_draws_no_dashed_line(
    claim_bundles, tmp_path
):
    """The bug: the tiny preset after 300 steps on Shakespeare, second-copy loss tracking the
    first copy's, and the page said "Copying is half learned by step 147 (dashed line)"."""
    from tests.claims_models import CLASS_TRAINED

    folder = tmp_path / "class" / CLASS_TRAINED
    shutil.copytree(claim_bundles[CLASS_TRAINED], folder)
    at = app_test(folder.parent, PAGE)
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "This model never learned to copy" in text
    assert "half learned" not in text + " ".join(c.value for c in at.caption)
    roles, accuracy, *_gradient_health = plotly_figures(at)
    for fig in (roles, accuracy):
        names = [t.get("name") or "" for t in fig["data"]]
        assert not any(name.startswith("copying half learned") for name in names)
        assert not fig["layout"].get("shapes")
