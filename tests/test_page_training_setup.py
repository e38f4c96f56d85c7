"""The Training page's set-up form (ui.training.setup.form.draw_setup) in AppTest, alone on a page:
problems are explained before Start, the numbers shown are the engine's, the URL pre-fills every
setting, and Start starts a real job (stopped before the test ends)."""

from __future__ import annotations

import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from serving import jobs
from ui.state import widget_key
from ui.training.setup.costs import duration_range
from viz_model.text.data import load_corpus, load_text
from viz_model.training.settings import RunSettings, estimate_params


def _setup_page(password: str | None = None) -> None:
    import streamlit as st

    from ui import teacher
    from ui.training.setup.form import draw_setup

    started = draw_setup(teacher.auth(st.session_state.get("_test_password")))
    st.text(f"started: {started}")


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """An empty runs folder and the server's default caps, for this test only."""
    monkeypatch.setenv(jobs.RUNS_ENV, str(tmp_path))
    for name in ("VIZ_MAX_PARAMS", "VIZ_MAX_MINUTES", "VIZ_MAX_JOBS", jobs.PASSWORD_ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def page(query: dict[str, str] | None = None, password: str | None = None) -> AppTest:
    at = AppTest.from_function(_setup_page, default_timeout=60)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if password is not None:
        at.session_state["_test_password"] = password
    return at.run()


def errors(at: AppTest) -> str:
    return " | ".join(e.value for e in at.error)


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def start_button(at: AppTest):
    return at.button(key="t_start")


TINY_TASK = {"t_data": "task", "t_task": "count", "t_preset": "tiny", "t_batch": "4"}


def test_the_parameter_count_is_estimate_params_of_the_chosen_settings(runs):
    at = page(TINY_TASK)
    assert not at.exception and not at.error
    text = load_text(RunSettings(task="count").data_source())
    char = estimate_params(RunSettings(task="count", preset="tiny"), text)
    assert metric(at, "Parameters") == f"{char:,}"
    at.radio(key=widget_key("t_tok")).set_value("bpe").run()
    at.number_input(key=widget_key("t_vocab")).set_value(300).run()
    bpe = estimate_params(
        RunSettings(task="count", preset="tiny", tokenizer="bpe", vocab_size=300), text
    )
    assert bpe != char
    assert metric(at, "Parameters") == f"{bpe:,}"
    shown = metric(at, "Tokens / second")  # "16–21k": thousands when the high end is
    scale = 1000 if shown.endswith("k") else 1
    low, high = (float(x) * scale for x in shown.rstrip("k").split("–"))
    assert 0 <= low < high  # measured: the slowest and fastest timed step, rounded outwards
    about = " ".join(c.value for c in at.caption)
    assert "steps in 1 min" in about and "Timed with nothing else running" in about
    assert not start_button(at).disabled


def test_a_url_with_t_keys_prefills_every_setting(runs):
    query = {
        "t_data": "task",
        "t_task": "brackets",
        "t_tok": "word",
        "t_vocab": "700",
        "t_preset": "tiny",
        "t_custom": "1",
        "t_n_layer": "3",
        "t_n_head": "2",
        "t_d_model": "48",
        "t_n_ctx": "32",
        "t_pos": "sinusoidal",
        "t_norm": "post",
        "t_attn_only": "1",
        "t_tie_embeddings": "1",
        "t_dropout": "0.1",
        "t_budget": "steps",
        "t_steps": "300",
        "t_batch": "6",
        "t_lr": "0.002",
        "t_seed": "7",
        "t_name": "shared-run",
    }
    at = page(query)
    assert not at.exception
    shown = {
        "t_data": at.radio(key=widget_key("t_data")).value,
        "t_task": at.selectbox(key=widget_key("t_task")).value,
        "t_tok": at.radio(key=widget_key("t_tok")).value,
        "t_vocab": at.number_input(key=widget_key("t_vocab")).value,
        "t_preset": at.selectbox(key=widget_key("t_preset")).value,
        "t_custom": at.toggle(key=widget_key("t_custom")).value,
        "t_n_layer": at.number_input(key=widget_key("t_n_layer")).value,
        "t_n_head": at.number_input(key=widget_key("t_n_head")).value,
        "t_d_model": at.number_input(key=widget_key("t_d_model")).value,
        "t_n_ctx": at.number_input(key=widget_key("t_n_ctx")).value,
        "t_pos": at.selectbox(key=widget_key("t_pos")).value,
        "t_norm": at.selectbox(key=widget_key("t_norm")).value,
        "t_attn_only": at.checkbox(key=widget_key("t_attn_only")).value,
        "t_tie_embeddings": at.checkbox(key=widget_key("t_tie_embeddings")).value,
        "t_dropout": at.number_input(key=widget_key("t_dropout")).value,
        "t_budget": at.radio(key=widget_key("t_budget")).value,
        "t_steps": at.number_input(key=widget_key("t_steps")).value,
        "t_batch": at.number_input(key=widget_key("t_batch")).value,
        "t_lr": at.number_input(key=widget_key("t_lr")).value,
        "t_seed": at.number_input(key=widget_key("t_seed")).value,
        "t_name": at.text_input(key=widget_key("t_name")).value,
    }
    expected = {
        **query,
        "t_vocab": 700,
        "t_custom": True,
        "t_n_layer": 3,
        "t_n_head": 2,
        "t_d_model": 48,
        "t_n_ctx": 32,
        "t_attn_only": True,
        "t_tie_embeddings": True,
        "t_dropout": 0.1,
        "t_steps": 300,
        "t_batch": 6,
        "t_lr": 0.002,
        "t_seed": 7,
    }
    assert shown == expected
    overrides = dict(n_layer=3, n_head=2, d_model=48, n_ctx=32, pos="sinusoidal", norm="post")
    overrides |= dict(attn_only=True, tie_embeddings=True, dropout=0.1)
    settings = RunSettings(
        task="brackets", tokenizer="word", vocab_size=700, preset="tiny", model=overrides
    )
    assert metric(at, "Parameters") == f"{estimate_params(settings, ''):,}"


def test_heads_that_do_not_divide_d_model_are_explained_and_start_is_disabled(runs):
    at = page(TINY_TASK)
    at.toggle(key=widget_key("t_custom")).set_value(True).run()
    at.number_input(key=widget_key("t_d_model")).set_value(64).run()
    assert not at.error and not start_button(at).disabled
    at.number_input(key=widget_key("t_n_head")).set_value(3).run()
    assert not at.exception
    assert "d_model (64) must be divisible by n_head (3)" in errors(at)
    assert start_button(at).disabled
    assert at.query_params["t_n_head"] in ("3", ["3"])  # the URL carries the choice


def test_a_new_preset_resets_the_fields_it_sets(runs):
    at = page({"t_data": "task", "t_preset": "quick", "t_custom": "1"})
    at.number_input(key=widget_key("t_d_model")).set_value(96).run()
    assert at.number_input(key=widget_key("t_batch")).value == 16  # quick's own batch
    at.selectbox(key=widget_key("t_preset")).set_value("small").run()
    assert at.number_input(key=widget_key("t_d_model")).value == 128
    assert at.number_input(key=widget_key("t_batch")).value == 12  # TrainConfig's default
    assert at.number_input(key=widget_key("t_lr")).value == pytest.approx(1e-3)


def test_a_binary_upload_is_refused_with_its_message_and_nothing_is_stored(runs):
    at = page({"t_data": "own", "t_own": "upload", "t_preset": "tiny"})
    assert "2,000 characters" in at.info[0].value  # before any upload
    binary = bytes(range(256)) * 40
    at.file_uploader(key="t_upload").set_value(("notes.txt", binary, "text/plain")).run()
    assert not at.exception
    assert "binary data" in errors(at)
    assert start_button(at).disabled
    assert list(runs.iterdir()) == []


def test_pasted_text_counts_its_own_characters(runs):
    at = page({"t_data": "own", "t_own": "paste", "t_preset": "tiny"})
    text = "to be or not to be, that is the question. " * 60
    at.text_area(key="t_paste").set_value(text).run()
    assert not at.error
    expected = estimate_params(RunSettings(text_file="pasted text", preset="tiny"), text)
    assert metric(at, "Parameters") == f"{expected:,}"


def test_a_model_over_the_servers_cap_is_refused_before_start(runs, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_PARAMS", "50000")
    at = page({"t_preset": "small"})
    params = estimate_params(RunSettings(corpus="shakespeare"), load_corpus("shakespeare"))
    assert params > 50_000
    assert f"{params:,} parameters" in errors(at) and "VIZ_MAX_PARAMS=50000" in errors(at)
    assert start_button(at).disabled
    assert metric(at, "Tokens / second") == "–"  # a refused model is not timed


def test_minutes_over_the_cap_are_refused_before_start(runs, monkeypatch):
    monkeypatch.setenv("VIZ_MAX_MINUTES", "5")
    at = page({**TINY_TASK, "t_minutes": "6"})
    assert "at most 5 minutes" in errors(at) and "VIZ_MAX_MINUTES=5" in errors(at)
    assert start_button(at).disabled


def test_a_bad_run_name_is_explained(runs):
    at = page({**TINY_TASK, "t_name": "../escape"})
    assert "is not" in errors(at) and "'../escape'" in errors(at)
    assert start_button(at).disabled


def test_a_wrong_password_is_a_message_not_a_traceback(runs, monkeypatch):
    monkeypatch.setenv(jobs.PASSWORD_ENV, "secret")
    at = page(TINY_TASK)
    assert start_button(at).disabled  # no password given yet
    at = page(TINY_TASK, password="guess")
    start_button(at).click().run()
    assert not at.exception
    assert "wrong teacher password" in errors(at)
    assert list(runs.glob("*/settings.json")) == []


def _wait_until_done(name: str, seconds: float = 90) -> jobs.RunView:
    deadline = time.monotonic() + seconds
    view = jobs.read(name, history=False)
    while view.live and time.monotonic() < deadline:
        time.sleep(0.5)
        view = jobs.read(name, history=False)
    return view


def test_the_blocks_parts_come_from_the_url_and_reach_the_runs_settings(runs):
    query = {**TINY_TASK, "t_custom": "1", "t_pos": "rope", "t_norm_kind": "rmsnorm"}
    query |= {"t_mlp": "gated", "t_act": "silu", "t_n_kv_heads": "2", "t_residual": "0"}
    at = page(query)
    assert not at.exception and not at.error
    assert at.selectbox(key=widget_key("t_norm_kind")).value == "rmsnorm"
    assert at.selectbox(key=widget_key("t_mlp")).value == "gated"
    assert at.checkbox(key=widget_key("t_residual")).value is False
    assert at.number_input(key=widget_key("t_n_kv_heads")).value == 2
    model = dict(pos="rope", norm_kind="rmsnorm", mlp="gated", act="silu", n_kv_heads=2)
    model |= dict(residual=False, n_layer=2, n_head=4, d_model=64, n_ctx=64)
    settings = RunSettings(task="count", preset="tiny", model=model)
    text = load_text(settings.data_source())
    assert metric(at, "Parameters") == f"{estimate_params(settings, text):,}"
    # heads that no key-value head count divides: the model's own message, Start disabled
    at.number_input(key=widget_key("t_n_kv_heads")).set_value(3).run()
    assert "multiple of n_kv_heads" in errors(at) and start_button(at).disabled


def test_start_starts_a_real_job_in_the_runs_folder(runs):
    query = {"t_data": "task", "t_task": "repeat", "t_preset": "tiny", "t_budget": "steps"}
    at = page({**query, "t_steps": "20", "t_batch": "4", "t_name": "class-run"})
    start_button(at).click().run()
    try:
        assert not at.exception and not at.error
        assert "started: class-run" in [t.value for t in at.text]
        view = jobs.read("class-run", history=False)
        assert view.state in ("running", "finished")
        assert view.path.parent == runs.resolve()
        assert view.settings["task"] == "repeat" and view.settings["train"]["max_steps"] == 20
        low, high = view.estimate["steps_per_s"]  # what the page promised, kept to compare
        assert 0 < low <= high and view.estimate["threads"] == 1
    finally:
        if jobs.read("class-run", history=False).live:
            jobs.stop("class-run", auth=jobs.Auth())
        final = _wait_until_done("class-run")
    assert final.state in ("finished", "stopped")
    at.run()  # the form offers a free name for the next run
    assert at.text_input(key=widget_key("t_name")).value == "class-run-2"
    assert not at.error
    at.text_input(key=widget_key("t_name")).set_value("class-run").run()
    assert "already exists" in errors(at) and start_button(at).disabled


def test_a_double_click_on_start_starts_one_run_not_two(runs):
    query = {**TINY_TASK, "t_budget": "steps", "t_steps": "20", "t_name": "twice"}
    at = page(query)
    start_button(at).click().run()
    try:
        start_button(at).click().run()  # the second click of a double click, a moment later
        assert any("has just started" in i.value for i in at.info)
        assert sorted(v.name for v in jobs.list_runs()) == ["twice"]
    finally:
        for view in jobs.list_runs():
            if view.live:
                jobs.stop(view.name, auth=jobs.Auth())
            _wait_until_done(view.name)


def test_a_shared_link_naming_a_taken_run_offers_the_next_free_name(runs):
    (runs / "rep").mkdir()  # the teacher's run, already on the server
    (runs / "rep" / "settings.json").write_text("{}")
    at = page({**TINY_TASK, "t_name": "rep"})
    assert at.text_input(key=widget_key("t_name")).value == "rep-2"
    assert not at.error


def test_huge_figures_fit_their_metrics(runs):
    at = page({"t_preset": "medium", "t_custom": "1", "t_d_model": "4096", "t_n_layer": "48"})
    params = metric(at, "Parameters")
    assert params.endswith(" B") and len(params) <= 7, params
    assert len(metric(at, "Memory")) <= 7


@pytest.mark.parametrize(
    ("fast", "slow", "shown"),
    [
        (32, 63, ("32–63", "s")),
        (130, 250, ("2.1–4.2", "min")),  # rounded outwards: the range holds what was measured
        (45, 130, ("0.7–2.2", "min")),  # one unit for both ends, the slow end's
        (2000, 2500, ("33–42", "min")),
        (4e4, 9e4, ("11–25", "h")),
    ],
)
def test_a_time_range_is_said_in_one_unit_rounded_outwards(fast, slow, shown):
    assert duration_range(fast, slow) == shown


def test_a_run_of_steps_gets_a_time_range_that_fits_its_metric(runs):
    at = page({**TINY_TASK, "t_budget": "steps", "t_steps": "300000"})
    time_metric = next(m for m in at.metric if m.label.startswith("Time"))
    assert re.fullmatch(r"Time \((s|min|h)\)", time_metric.label), time_metric.label
    assert re.fullmatch(r"[\d.]+–[\d.]+", time_metric.value), time_metric.value
    assert len(time_metric.value) <= 7  # as wide as "424,704" (Parameters), which fits


def test_choosing_sgd_offers_its_momentum_and_learning_rate_and_the_run_gets_them(runs):
    from viz_model.model.config import OPTIMIZER_TRAINING, PRESET_TRAINING

    at = page({**TINY_TASK, "t_preset": "quick"})
    assert at.number_input(key=widget_key("t_lr")).value == PRESET_TRAINING["quick"]["lr"]
    assert not [n for n in at.number_input if n.label == "Momentum"]  # AdamW has none
    at.selectbox(key=widget_key("t_opt")).set_value("sgd").run()
    assert not at.exception and not at.error
    assert at.number_input(key=widget_key("t_lr")).value == OPTIMIZER_TRAINING["sgd"]["lr"]
    at.number_input(key=widget_key("t_momentum")).set_value(0.5).run()
    assert at.query_params["t_opt"] in ("sgd", ["sgd"])
    memory = next(m for m in at.metric if m.label == "Memory").proto.help
    assert "momentum buffer; 12 bytes a parameter" in memory  # not AdamW's 16
    at.selectbox(key=widget_key("t_opt")).set_value("adamw").run()  # back: AdamW's rate again
    assert at.number_input(key=widget_key("t_lr")).value == PRESET_TRAINING["quick"]["lr"]
    at.selectbox(key=widget_key("t_opt")).set_value("sgd").run()
    at.number_input(key=widget_key("t_momentum")).set_value(0.5).run()
    at.radio(key=widget_key("t_budget")).set_value("steps").run()
    at.number_input(key=widget_key("t_steps")).set_value(5).run()
    at.text_input(key=widget_key("t_name")).set_value("sgd-run").run()
    start_button(at).click().run()
    try:
        assert not at.exception and not at.error
        train = jobs.read("sgd-run", history=False).settings["train"]
        assert train["optimizer"] == "sgd" and train["momentum"] == 0.5
        cfg = RunSettings.from_dict(jobs.read("sgd-run", history=False).settings).train_config()
        assert cfg.weight_decay == OPTIMIZER_TRAINING["sgd"]["weight_decay"]
    finally:
        if jobs.read("sgd-run", history=False).live:
            jobs.stop("sgd-run", auth=jobs.Auth())
        _wait_until_done("sgd-run")


def test_the_family_switch_follows_the_url_and_counts_that_familys_parameters(runs):
    at = page({**TINY_TASK, "t_family": "lstm"})
    assert not at.exception and not at.error
    assert at.selectbox(key=widget_key("t_family")).value == "lstm"
    text = load_text(RunSettings(task="count").data_source())
    lstm = estimate_params(RunSettings(task="count", preset="tiny", family="lstm"), text)
    assert metric(at, "Parameters") == f"{lstm:,}"
    at.toggle(key=widget_key("t_custom")).set_value(True).run()
    keys = {w.key for w in at.number_input}
    assert widget_key("t_n_head") not in keys and widget_key("t_d_model") in keys  # no heads
    assert "not offered" in " ".join(c.value for c in at.caption)
    at.selectbox(key=widget_key("t_family")).set_value("cnn").run()
    at.toggle(key=widget_key("t_custom")).set_value(True).run()
    at.number_input(key=widget_key("t_kernel")).set_value(2).run()
    assert not at.exception and not at.error
    assert at.query_params["t_family"] in ("cnn", ["cnn"])
    cnn = RunSettings(task="count", preset="tiny", family="cnn", model={"kernel_size": 2})
    assert metric(at, "Parameters") == f"{estimate_params(cnn, text):,}"
    assert "It reads the last 64 tokens" in " ".join(c.value for c in at.caption)
