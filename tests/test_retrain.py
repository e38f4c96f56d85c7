"""Damage, then retrain: a damaged copy of a finished run trains on as a job of its own."""

from __future__ import annotations

import os

import pytest

from serving import jobs, retrain
from tests.test_jobs import root, tiny, wait_for  # noqa: F401  (root is a fixture)
from viz_model.analysis.labs.interventions import Ablation, damaged_copy
from viz_model.bundles.load import load_bundle


def test_a_damaged_copy_retrains_from_where_its_source_stopped(root):  # noqa: F811
    jobs.start("whole", tiny(max_steps=20, eval_every=10), auth=jobs.Auth())
    wait_for("whole", lambda v: v.state == "finished", "the source run")
    source = load_bundle(root / "whole")
    damaged = damaged_copy(source.model, Ablation(heads=((0, 1),)))
    view = retrain.start_damaged(
        "hurt", root / "whole", damaged, steps=10, note="L0H1 zeroed", auth=jobs.Auth()
    )
    assert view.state == "running"
    done = wait_for("hurt", lambda v: v.state == "finished", "the retrain")
    assert done.step == 30 and [r["step"] for r in done.history][:21] == list(range(0, 21))
    healed = load_bundle(root / "hurt")
    assert healed.meta["damaged"] == {"source": "whole", "step": 20, "what": "L0H1 zeroed"}
    E = damaged.cfg.d_head
    cols = healed.model.blocks[0].attn.out.weight[:, E : 2 * E]  # head 1's columns of W_O
    assert damaged.blocks[0].attn.out.weight[:, E : 2 * E].abs().max() == 0
    assert cols.abs().max() > 0  # training wrote into the zeroed head again
    assert jobs.read("hurt").path.joinpath("settings.json").is_file()  # listed as a run


def test_retrain_is_refused_without_password_data_or_room(root, monkeypatch, tmp_path):  # noqa: F811
    from tests.bundles import build_test_bundle

    src = build_test_bundle(tmp_path / "src", steps=2)  # its meta does not name its data
    model = load_bundle(src).model
    with pytest.raises(jobs.JobError, match="does not say what it was trained on"):
        retrain.start_damaged("x", src, model, steps=5, auth=jobs.Auth())
    with pytest.raises(jobs.JobError, match="steps"):
        retrain.start_damaged("x", src, model, steps=0, auth=jobs.Auth())
    monkeypatch.setenv(jobs.PASSWORD_ENV, "secret")
    with pytest.raises(jobs.JobError, match="password"):
        retrain.start_damaged("x", src, model, steps=5, auth=jobs.Auth.resolve(None))
    monkeypatch.setenv(jobs.PASSWORD_ENV, "")  # a password only in Streamlit's secrets
    for given in (None, "guess"):
        with pytest.raises(jobs.JobError, match="password"):
            retrain.start_damaged("x", src, model, 5, auth=jobs.Auth.resolve(given, "secret"))
    with pytest.raises(TypeError):
        retrain.start_damaged("x", src, model, 5)  # no auth: no start
    assert not (root / "x").exists()


def test_a_password_only_in_the_secrets_guards_retraining_in_a_fresh_server(
    claim_bundles, tmp_path, monkeypatch
):
    """The bug: the secret reached the jobs only when the Training page had run in the process, so
    Interventions' "damage, then retrain" started a job with no password asked."""
    from tests.apptest_util import app_test
    from ui import teacher

    monkeypatch.delenv(jobs.PASSWORD_ENV, raising=False)
    monkeypatch.setenv(jobs.RUNS_ENV, str(tmp_path / "runs"))
    teacher._secret.clear()  # a fresh server process: nothing read yet
    try:
        models = claim_bundles["class-tiny"].parent  # holds class-tiny (first by name)
        at = app_test(models, None, prompt="ROMEO:", query={"heads": "0.1"})
        at.secrets["teacher_password"] = "from-secrets"
        at.switch_page("pages/11_interventions.py").run()
        assert not at.exception
        assert at.text_input(key="iv_password").label == "Teacher password"
        at.text_input(key="iv_run_name").set_value("sneaky").run()
        next(b for b in at.button if b.label == "Start retraining").click().run()
        assert any("needs the teacher password" in e.value for e in at.error)
        assert not (tmp_path / "runs" / "sneaky").exists()
        assert jobs.PASSWORD_ENV not in os.environ
    finally:
        teacher._secret.clear()
