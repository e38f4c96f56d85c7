"""Scrubbing back through training: the sidebar's step slider swaps every page's model for the
snapshot saved at that step, the URL carries it, and the model card says which step is shown."""

from __future__ import annotations

import json

import numpy as np

from serving import models
from tests.apptest_util import app_test, plotly_array, plotly_figures
from ui.state import widget_key
from viz_model.analysis.training import final_step, losses_at

ATTENTION = "pages/03_attention.py"


def _card(at) -> str:
    return " ".join(m.value for m in at.sidebar.markdown)


def _pattern(at) -> np.ndarray:
    """The big pattern heatmap's weights (the trace with a colour bar; the other is the mask)."""
    traces = plotly_figures(at)[0]["data"]
    return plotly_array(next(t for t in traces if "colorbar" in t)["z"])


def test_snapshot_ids_round_trip(tmp_path):
    final = models.bundle_id(tmp_path)
    snap = models.bundle_id(tmp_path, 30)
    assert models.split_step(snap) == (final, 30)
    assert models.split_step(final) == (final, None)
    assert models.path_of(snap) == models.path_of(final) == tmp_path


def test_losses_at_a_step_come_from_that_record_and_the_last_evaluation():
    history = [{"step": s, "train_loss": 5.0 - s} for s in range(1, 5)]
    history[1]["val_loss"] = 3.3
    assert losses_at(history, 3) == (2.0, 3.3)
    assert losses_at(history, 1) == (4.0, None)
    assert losses_at(history, 0) == (None, None)
    assert final_step(history, {}) == 4 and final_step(history, {"step": 9}) == 9


def test_a_page_at_step_0_differs_from_the_final_model(models_dir):
    at = app_test(models_dir, ATTENTION, prompt="ROMEO: But soft")
    assert not at.exception
    slider = at.select_slider(key=widget_key("train_step"))
    assert slider.options == ["0", "1", "37", "150 (final)"]
    assert slider.value == 150
    final_pattern = _pattern(at)
    slider.set_value(0).run()
    assert not at.exception
    assert at.query_params["train_step"] in ("0", ["0"])
    assert "random weights before training" in _card(at)
    step0 = _pattern(at)
    assert step0.shape == final_pattern.shape
    assert not np.allclose(np.nan_to_num(step0), np.nan_to_num(final_pattern), atol=1e-3)


def test_the_url_opens_a_snapshot_and_the_card_gives_its_loss(models_dir):
    steps = json.loads((models_dir / "test-char" / "history.json").read_text())
    at = app_test(models_dir, ATTENTION, prompt="ROMEO", query={"train_step": "37"})
    assert not at.exception
    card = _card(at)
    assert "training step: **37 of 150**" in card
    assert f"{next(r['train_loss'] for r in steps if r['step'] == 37):.3f}" in card


def test_switching_model_goes_back_to_the_final_weights(models_dir):
    at = app_test(models_dir, ATTENTION, prompt="ROMEO", query={"train_step": "0"})
    assert "random weights" in _card(at)
    at.selectbox(key=widget_key("model")).set_value("shakespeare-char").run()
    assert not at.exception
    assert "random weights" not in _card(at)
    slider = at.select_slider(key=widget_key("train_step"))
    assert slider.value == int(slider.options[-1].split()[0].replace(",", ""))


def test_a_model_that_is_not_there_opens_another_at_its_final_weights_not_at_the_links_step(
    models_dir,
):
    """Issue 37: a link to a run by name with train_step=0 (a finished run opened on Attention,
    then reloaded where the run was not found) showed shakespeare-char at step 0, random weights,
    and the class followed. The step belonged to the model asked for; the fallback opens final."""
    at = app_test(models_dir, ATTENTION, prompt="ROMEO", query={"model": "gone", "train_step": "0"})
    assert not at.exception
    assert at.session_state["model"] != "gone"  # another model is shown (Home said which)
    assert "random weights" not in _card(at)
    slider = at.select_slider(key=widget_key("train_step"))
    final = int(slider.options[-1].split()[0].replace(",", ""))
    assert slider.value == final
    assert at.query_params.get("train_step") in (None, str(final))  # the link says so too
