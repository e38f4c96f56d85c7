"""The Residual stream page in AppTest: lens grid, attribution that follows the chosen position,
and a post-LN model that shows the lens only."""

from __future__ import annotations

import json

import pytest

from tests.apptest_util import app_test
from ui.state import widget_key
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.load import load_bundle
from viz_model.model.gpt import GPT

PAGE = "pages/04_residual_stream.py"
PROMPT = "ROMEO: But soft"


def _figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _trace(at, kind: str) -> dict:
    return next(t for f in _figures(at) for t in f["data"] if t["type"] == kind)


def test_page_draws_lens_and_attribution(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    lens = [
        t
        for f in _figures(at)
        for t in f["data"]
        if t.get("colorbar", {}).get("title", {}).get("text") == "p(top)"
    ][0]
    assert len(lens["x"]) == len(PROMPT) and len(lens["y"]) == 3  # embed + 2 blocks
    wf = _trace(at, "waterfall")
    assert wf["x"][-1] == "logit" and wf["x"][:2] == ["embed", "pos"]
    assert sum(wf["y"][:-1]) == pytest.approx(wf["y"][-1], abs=1e-3)  # the shares add up


def test_changing_the_position_changes_the_attribution(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    before = _trace(at, "waterfall")["y"]
    at.slider(key=widget_key("pos")).set_value(3).run()
    assert not at.exception
    after = _trace(at, "waterfall")["y"]
    assert after != before
    assert at.query_params["pos"] in ("3", ["3"])  # the URL carries the choice
    # The token choice offers the real next token at position 3 ("E" after "ROME").
    options = at.selectbox(key=widget_key("token")).options
    assert any("real next token" in o for o in options)


def test_post_ln_model_shows_the_lens_only(models_dir, tmp_path):
    base = load_bundle(models_dir / "test-char")
    model = GPT(base.config.__class__(**{**base.config.to_dict(), "norm": "post"})).eval()
    save_bundle(tmp_path / "post-ln", model, base.tokenizer)
    at = app_test(tmp_path, PAGE, prompt=PROMPT)
    assert not at.exception
    assert any("post-LN" in w.value for w in at.warning)
    kinds = {t["type"] for f in _figures(at) for t in f["data"]}
    assert "waterfall" not in kinds and "heatmap" in kinds


def test_the_logit_lens_of_a_model_without_a_mask_is_called_copying(models_dir):
    at = app_test(models_dir, "pages/04_residual_stream.py", query={"model": "shakespeare-nomask"})
    assert not at.exception
    assert any("no causal mask" in w.value and "copying" in w.value for w in at.warning)
    masked = app_test(
        models_dir, "pages/04_residual_stream.py", query={"model": "shakespeare-tiny"}
    )
    assert not any("no causal mask" in w.value for w in masked.warning)


def test_a_long_prompt_shows_the_lens_a_window_at_a_time(models_dir):
    from ui.residual_stream import LENS_MAX_T

    prompt = "ROMEO: But soft, what light through yonder window breaks?"  # > LENS_MAX_T characters
    at = app_test(models_dir, PAGE, prompt=prompt)
    assert not at.exception

    def columns() -> list[str]:
        return next(
            t["x"]
            for f in _figures(at)
            for t in f["data"]
            if t.get("colorbar", {}).get("title", {}).get("text") == "p(top)"
        )

    slider = at.slider(key=widget_key("lens_from"))
    last_first = len(prompt) - LENS_MAX_T  # the default: the last LENS_MAX_T positions
    assert (slider.min, slider.max, slider.value) == (0, last_first, last_first)
    last = columns()
    assert len(last) == LENS_MAX_T and last[-1].startswith(f"{len(prompt) - 1}:")
    at.slider(key=widget_key("lens_from")).set_value(0).run()
    assert not at.exception
    first = columns()
    assert len(first) == LENS_MAX_T and first[0].startswith("0:") and first != last
    assert at.query_params["lens_from"] in ("0", ["0"])
