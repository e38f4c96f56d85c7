"""The Interventions page in AppTest: every control changes the picture, and the URL carries it."""

from __future__ import annotations

import json
import os
import shutil
import signal

import numpy as np
import pytest

from serving import jobs
from tests.apptest_util import app_test, first_bundle, plotly_array, plotly_figures
from tests.test_jobs import wait_for
from ui.charts.common import show_whitespace
from ui.state import widget_key
from viz_model.analysis.labs import interventions as iv
from viz_model.analysis.tokens import token_text
from viz_model.analysis.untrained import untrained_twin
from viz_model.bundles.load import load_bundle

PAGE = "pages/11_interventions.py"
PROMPT = "ROMEO: But soft, what light"


def _open(models_dir, **query):
    return app_test(models_dir, PAGE, prompt=PROMPT, query=query)


def _url(at, key: str) -> str:
    value = at.query_params[key]
    return value[0] if isinstance(value, list) else value


def _heatmaps(at) -> list[dict]:
    return [t for fig in plotly_figures(at) for t in fig["data"] if t["type"] == "heatmap"]


def _model(models_dir):
    bundle = load_bundle(models_dir / first_bundle(models_dir))
    return bundle, bundle.tokenizer.encode(PROMPT)


def test_choosing_heads_ablates_them_and_the_url_keeps_them(models_dir):
    at = _open(models_dir)
    assert not at.exception
    assert any("Choose heads" in i.value for i in at.info)
    at.button_group(key=widget_key("heads") + "_1").set_value(["H2"]).run()
    assert not at.exception and _url(at, "heads") == "1.2"
    bars = plotly_figures(at)[0]["data"]
    before, after = (np.asarray(plotly_array(t["y"])) for t in bars)
    bundle, ids = _model(models_dir)
    eff = iv.effect(
        bundle.model,
        ids,
        iv.validation_windows(ids, 64),  # this bundle names no data: the loss is on the prompt
        iv.ablation_hooks(bundle.model, iv.Ablation(heads=((1, 2),))),
    )
    top = eff.changed_tokens(12)
    np.testing.assert_allclose(before, eff.p_before[top], atol=1e-5)
    np.testing.assert_allclose(after, eff.p_after[top], atol=1e-5)
    loss_after = next(m for m in at.metric if m.label == "Loss after")
    assert float(loss_after.value) == pytest.approx(eff.loss_after, abs=1e-3)


def test_the_sweep_draws_each_heads_loss_increase(models_dir):
    at = _open(models_dir, heads="0.1", sweep="1")
    assert not at.exception
    (grid,) = _heatmaps(at)
    bundle, ids = _model(models_dir)
    expected = iv.head_sweep(bundle.model, iv.validation_windows(ids, 64))
    np.testing.assert_allclose(plotly_array(grid["z"]), expected, atol=1e-4)
    at.toggle(key=widget_key("sweep")).set_value(False).run()
    assert not _heatmaps(at) and _url(at, "sweep") == "0"


def test_mean_ablation_mlps_and_neurons_with_a_bad_entry(models_dir):
    at = _open(models_dir, how="mean", mean_ref="prompt", mlps="1", neurons="L1N3, L7N1, junk")
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("L7N1" in w for w in warnings) and any("junk" in w for w in warnings)
    assert "MLP 1" in plotly_figures(at)[0]["layout"]["title"]["text"]
    assert "neurons L1N3" in plotly_figures(at)[0]["layout"]["title"]["text"]
    at.button_group(key=widget_key("mlps") + "_0").set_value(["0", "1"]).run()
    assert _url(at, "mlps") == "0,1"


def test_patching_draws_both_maps_and_refuses_a_long_replacement(models_dir):
    at = _open(models_dir, exp="Patching")
    assert not at.exception
    resid, heads = _heatmaps(at)
    z = plotly_array(resid["z"])
    end = int(_url(at, "patch_end"))  # the default cut: where a one-token change matters
    assert z.shape == (3, end + 1)  # 2 layers + the last residual, one column a token
    assert z[-1, -1] == pytest.approx(1, abs=1e-4) and np.abs(z[-1, :-1]).max() < 1e-4
    assert plotly_array(heads["z"]).shape == (2, 4)
    pos = int(_url(at, "patch_pos"))
    assert np.abs(z[:, :pos]).max() < 1e-4  # nothing before the changed token differs
    at.text_input(key=widget_key("patch_tok")).set_value("xyz").run()
    assert any("3 tokens" in e.value for e in at.error) and not _heatmaps(at)
    at.selectbox(key=widget_key("patch_pos")).set_value(4).run()  # "O" of ROMEO
    at.text_input(key=widget_key("patch_tok")).set_value("␣").run()  # a space, as the chips show it
    assert not at.error and len(_heatmaps(at)) == 2
    chips = [h.proto.body for h in at.main.get("html")]  # the page's, not the sidebar's style
    corrupted, clean = chips[-1], chips[-2]
    assert corrupted.count(">␣</span>") == clean.count(">␣</span>") + 1 == PROMPT.count(" ") + 1


def test_patching_predicts_after_an_earlier_token(models_dir):
    at = _open(models_dir, exp="Patching", patch_end="10", patch_pos="3", patch_tok="q")
    assert not at.exception
    z = plotly_array(_heatmaps(at)[0]["z"])
    assert z.shape == (3, 11) and np.abs(z[:, :3]).max() < 1e-4


def test_steering_with_strength_zero_writes_the_same_text(models_dir):
    at = _open(models_dir, exp="Steering", strength="0", steer_len="30")
    assert not at.exception
    plain, pushed = (c.value for c in at.code)
    assert plain == pushed and len(plain) > len(PROMPT)
    at.slider(key=widget_key("strength")).set_value(10.0).run()
    plain2, pushed2 = (c.value for c in at.code)
    assert plain2 == plain and pushed2 != plain and _url(at, "strength") == "10"
    at.text_area(key=widget_key("steer_b")).set_value("  \n\n ").run()
    assert any("at least one prompt in each set" in i.value for i in at.info)


def test_positions_removed_or_shuffled(models_dir):
    at = _open(models_dir, exp="Positions")
    assert not at.exception
    lines = plotly_figures(at)[0]["data"]
    before, after = (plotly_array(t["y"]) for t in lines)
    assert np.isnan(before[0]) and not np.allclose(before[1:], after[1:])
    bundle, ids = _model(models_dir)
    hooks = iv.position_hooks(bundle.model, "remove", len(ids))
    np.testing.assert_allclose(after[1:], iv.surprisals(bundle.model, ids, hooks)[1:], atol=1e-4)
    at.radio(key=widget_key("pos_mode")).set_value("shuffle").run()
    assert _url(at, "pos_mode") == "shuffle"
    shuffled = plotly_array(plotly_figures(at)[0]["data"][1]["y"])
    assert not np.allclose(shuffled[1:], after[1:])


def test_retrain_needs_a_model_that_names_its_data(models_dir):
    at = _open(models_dir, heads="0.1")
    assert any("does not say what it was trained on" in i.value for i in at.info)
    assert not [b for b in at.button if b.label == "Start retraining"]


@pytest.fixture
def retrain_env(models_dir, tmp_path, monkeypatch):
    """A models folder whose bundle names its data, and a runs folder of its own."""
    folder = tmp_path / "models"
    shutil.copytree(models_dir / first_bundle(models_dir), folder / "named")
    config = json.loads((folder / "named" / "config.json").read_text())
    config["meta"]["data"] = {"task": "repeat", "task_examples": 300, "task_len": 32}
    config["train"] = {"max_steps": 150, "eval_every": 10, "eval_batches": 2, "sample_every": 0}
    (folder / "named" / "config.json").write_text(json.dumps(config))
    history = json.loads((folder / "named" / "history.json").read_text())
    for i, record in enumerate(history):  # as the training loop writes them (tests/bundles omits)
        record.update(lr=1e-3, tokens_per_s=1000, elapsed=0.1 * (i + 1))
    (folder / "named" / "history.json").write_text(json.dumps(history))
    runs = tmp_path / "runs"
    monkeypatch.setenv(jobs.RUNS_ENV, str(runs))
    monkeypatch.setenv("VIZ_JOB_THREADS", "1")
    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    yield folder
    for view in jobs.list_runs(runs):
        if view.live and jobs.worker_alive(view.pid, view.path, view.pid_started):
            os.kill(view.pid, signal.SIGKILL)


def test_damage_then_retrain_starts_a_job_from_the_damaged_weights(retrain_env):
    at = app_test(retrain_env, PAGE, prompt=PROMPT, query={"heads": "0.1,1.2"})
    assert not at.exception
    at.text_input(key="iv_run_name").set_value("hurt").run()
    at.number_input(key="iv_steps").set_value(20).run()
    next(b for b in at.button if b.label == "Start retraining").click().run()
    assert not at.exception and any("Started “hurt”" in s.value for s in at.success)
    assert at.session_state["t_run"] == "hurt"
    assert json.loads((jobs.run_dir("hurt") / "config.json").read_text())["meta"]["damaged"][
        "what"
    ] == ("heads L0H1, L1H2 zero-ablated")
    done = wait_for("hurt", lambda v: v.state == "finished", "the retrain")
    steps = [r["step"] for r in done.history]
    assert steps == list(range(1, 171))  # the source's 150 steps, then 20 from the damage
    next(b for b in at.button if b.label == "Start retraining").click().run()
    assert any("already exists" in e.value for e in at.error)  # a second start: a clear refusal


def test_retrain_asks_for_the_teacher_password(retrain_env, monkeypatch):
    monkeypatch.setenv(jobs.PASSWORD_ENV, "secret")
    at = app_test(retrain_env, PAGE, prompt=PROMPT, query={"heads": "0.1"})
    at.text_input(key="iv_run_name").set_value("locked").run()
    next(b for b in at.button if b.label == "Start retraining").click().run()
    assert any("password" in e.value for e in at.error)
    assert not (jobs.runs_root() / "locked").exists()


def test_every_choice_lands_in_the_url_and_a_link_reopens_it(models_dir):
    at = _open(models_dir, heads="0.1")
    first = plotly_figures(at)[0]["data"][1]["y"]
    at.radio(key=widget_key("how")).set_value("mean").run()
    at.radio(key=widget_key("mean_ref")).set_value("prompt").run()
    assert (_url(at, "how"), _url(at, "mean_ref")) == ("mean", "prompt")
    assert plotly_figures(at)[0]["data"][1]["y"] != first  # mean ablation moves other tokens
    at.radio(key=widget_key("exp")).set_value("Steering").run()
    plain = at.code[0].value
    at.slider(key=widget_key("steer_layer")).set_value(1).run()
    at.number_input(key=widget_key("steer_seed")).set_value(3).run()
    assert at.code[0].value != plain  # another seed writes another text
    assert (_url(at, "steer_layer"), _url(at, "steer_seed")) == ("1", "3")
    at.radio(key=widget_key("exp")).set_value("Positions").run()
    at.radio(key=widget_key("pos_mode")).set_value("shuffle").run()
    at.number_input(key=widget_key("pos_seed")).set_value(2).run()
    at.radio(key=widget_key("exp")).set_value("Patching").run()
    at.selectbox(key=widget_key("patch_end")).set_value(12).run()
    assert not at.exception and plotly_array(_heatmaps(at)[0]["z"]).shape == (3, 13)
    query = {k: _url(at, k) for k in at.query_params if k != "model"}
    again = app_test(models_dir, PAGE, query=query)  # a shared link opens the same view
    assert again.radio(key=widget_key("exp")).value == "Patching"
    assert again.selectbox(key=widget_key("patch_end")).value == 12
    again.radio(key=widget_key("exp")).set_value("Positions").run()
    assert again.number_input(key=widget_key("pos_seed")).value == 2
    again.radio(key=widget_key("exp")).set_value("Ablation").run()
    assert again.radio(key=widget_key("how")).value == "mean"
    assert again.button_group(key=widget_key("heads") + "_0").value == ["H1"]


def test_a_typed_replacement_reaches_the_error_escaped(models_dir):
    at = _open(models_dir, exp="Patching", patch_tok="**[x](y)**")
    (error,) = at.error
    assert "\\*\\*\\[x\\]\\(y\\)\\*\\*" in error.value and "**[x]" not in error.value


def test_patching_prints_both_runs_own_favourites_and_the_claim(models_dir):
    at = _open(models_dir, exp="Patching")
    bundle, ids = _model(models_dir)
    end, pos = int(_url(at, "patch_end")), int(_url(at, "patch_pos"))
    clean = ids[: end + 1]
    token = bundle.tokenizer.encode(iv.typed_text(at.text_input(key=widget_key("patch_tok")).value))
    bad = iv.corrupt(clean, pos, token[0])
    result = iv.patching(bundle.model, clean, bad)
    label = lambda i: show_whitespace(token_text(bundle.tokenizer, int(i)))  # noqa: E731
    corrupted = next(m for m in at.metric if m.label == "Corrupted favourite")
    assert corrupted.value.startswith(label(result.corrupt_top) + " (")
    claim = iv.patching_claim(result, label)
    assert any(claim.text == m.value for m in at.markdown)


def test_positions_prose_does_not_say_the_embedding_is_the_only_order(models_dir):
    at = _open(models_dir, exp="Positions")
    text = " ".join(m.value for m in at.markdown)
    assert "only place order enters" not in text  # false for a causal model
    assert "gets order from its mask" in text
    assert "Removing the position embeddings" in text and "noise" in text


def test_steering_draws_the_push_against_alpha_and_claims_it_only_beyond_chance(models_dir):
    at = _open(models_dir, exp="Steering")
    assert not at.exception
    fig = plotly_figures(at)[0]
    assert [t["name"] for t in fig["data"]][1] == "the steering direction"
    claim = next(m.value for m in at.markdown if "moves it by at most" in m.value)
    assert ("beyond chance" in claim) != ("shows no push" in claim)


def test_the_sweep_names_heads_only_beyond_noise(models_dir):
    at = _open(models_dir, sweep="1")
    bundle, ids = _model(models_dir)
    windows = iv.validation_windows(ids, 64)
    stats = iv.head_sweep_stats(bundle.model, windows)
    blank = iv.head_sweep_stats(untrained_twin(bundle).model, windows)  # issue 36, class 1
    assert any(iv.head_sweep_claim(stats, untrained=blank).text == m.value for m in at.markdown)


def test_facts_are_counted_with_each_layer_knocked_out_and_the_sentence_recomputes():
    from pathlib import Path

    from tests.apptest_util import open_link
    from viz_model.analysis.labs import facts as fa
    from viz_model.analysis.labs.interventions import validation_text, validation_windows
    from viz_model.bundles.load import load_bundle
    from viz_model.text.data import load_text

    models = Path(__file__).resolve().parents[1] / "assets" / "models"
    at = open_link(models, PAGE, {"model": "shakespeare-tiny", "exp": "Facts"}, timeout=300)
    assert not at.exception, at.exception[0].value
    b = load_bundle(models / "shakespeare-tiny")
    text = load_text(b.meta["data"])
    facts = fa.corpus_facts(text[: int(len(text) * (1 - b.meta["data"]["val_fraction"]))])
    windows = validation_windows(b.tokenizer.encode(validation_text(b.meta)), b.config.n_ctx)
    result = fa.fact_ablations(b.model, b.tokenizer.encode, b.tokenizer.decode, facts, windows)
    assert fa.ablation_claim(result).text in [m.value for m in at.markdown]
    table = at.dataframe[0].value
    assert list(table["recalled"]) == ["yes" if r else "no" for r in result.clean]
