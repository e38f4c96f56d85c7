"""RunSettings: the one description of a run that the command line and the job runner share."""

from __future__ import annotations

import pytest

from viz_model.model.config import (
    OPTIMIZER_TRAINING,
    PRESET_TRAINING,
    STEPS_WHEN_TIMED,
    TrainConfig,
)
from viz_model.training.cli import build_parser, settings_from_args
from viz_model.training.settings import RunSettings, new_run, settings_to_argv

EXAMPLES = [
    RunSettings(corpus="shakespeare", preset="quick", minutes=1.5),
    RunSettings(
        task="repeat",
        task_examples=300,
        task_len=24,
        val_fraction=0.2,
        preset="attn-only-2l",
        model={
            "n_ctx": 32,
            "pos": "sinusoidal",
            "tie_embeddings": True,
            "bias": False,
            "causal": False,
        },
        train={"max_steps": 7, "batch_size": 4, "lr": 5e-4, "seed": 3, "threads": 1},
        device="cpu",
    ),
    RunSettings(text_file="my text.txt", tokenizer="bpe", vocab_size=300, model={"dropout": 0.1}),
    RunSettings(  # the block's parts of issue 25, each from its own flag
        corpus="shakespeare",
        model={
            "norm_kind": "rmsnorm",
            "mlp": "gated",
            "act": "silu",
            "pos": "rope",
            "n_kv_heads": 2,
            "residual": False,
        },
    ),
    RunSettings(
        corpus="shakespeare",
        train={"optimizer": "sgd", "momentum": 0.5, "lr": 0.2, "health_every": 3},
    ),
]


@pytest.mark.parametrize("settings", EXAMPLES)
def test_settings_survive_the_command_line_and_json(settings):
    argv = settings_to_argv(settings, "runs/x")
    assert settings_from_args(build_parser().parse_args(argv)) == settings
    assert RunSettings.from_dict(settings.to_dict()) == settings


def test_minutes_without_steps_put_the_run_on_the_clock():
    cfg = RunSettings(corpus="shakespeare", preset="quick", minutes=2).train_config()
    assert cfg.time_limit == 120.0 and cfg.max_steps == STEPS_WHEN_TIMED
    assert cfg.lr == PRESET_TRAINING["quick"]["lr"]
    cfg = RunSettings(corpus="shakespeare", minutes=2, train={"max_steps": 50}).train_config()
    assert cfg.time_limit == 120.0 and cfg.max_steps == 50


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "exactly one of a corpus, a task or a text file"),
        ({"corpus": "shakespeare", "task": "repeat"}, "exactly one"),
        ({"corpus": "shakespeare", "tokenizer": "bytes"}, "tokenizer must be one of"),
        ({"corpus": "shakespeare", "model": {"n_heads": 2}}, "unknown model settings: n_heads"),
        ({"corpus": "shakespeare", "train": {"steps": 2}}, "unknown training settings: steps"),
    ],
)
def test_bad_settings_are_refused_with_a_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RunSettings(**kwargs)


def test_a_variant_run_builds_the_block_its_flags_name(tmp_path):
    argv = ["--task", "count", "--task-examples", "200", "--preset", "tiny", "--pos", "alibi"]
    argv += ["--norm-kind", "none", "--no-residual", "--mlp", "gated", "--n-kv-heads", "1"]
    settings = settings_from_args(build_parser().parse_args([*argv, "--out", "x"]))
    cfg = new_run(settings, tmp_path / "x", "cmd").model.cfg
    assert (cfg.pos, cfg.norm_kind, cfg.residual, cfg.mlp, cfg.n_kv_heads) == (
        "alibi",
        "none",
        False,
        "gated",
        1,
    )


def test_new_run_builds_the_model_the_settings_describe(tmp_path):
    settings = RunSettings(
        task="count",
        task_examples=200,
        preset="tiny",
        model={"n_ctx": 16, "d_model": 32},
        train={"max_steps": 3, "seed": 5},
    )
    run = new_run(settings, tmp_path / "x", "cmd")
    assert run.model.cfg.d_model == 32 and run.model.cfg.n_ctx == 16
    assert run.model.cfg.vocab_size == run.tokenizer.vocab_size == 13  # digits, space, \n, <unk>
    assert run.cfg.max_steps == 3 and run.cfg.seed == 5
    assert run.meta["data"]["task"] == "count" and run.meta["command"] == "cmd"
    again = new_run(settings, tmp_path / "y", "cmd")  # seeded: the same initial weights
    other = again.model.state_dict()
    assert all(tensor.equal(other[name]) for name, tensor in run.model.state_dict().items())


def test_the_optimizer_flags_reach_the_training_config():
    parse = build_parser().parse_args
    base = ["--corpus", "shakespeare", "--preset", "quick", "--out", "runs/x"]
    sgd = settings_from_args(parse([*base, "--optimizer", "sgd", "--momentum", "0.5"]))
    cfg = sgd.train_config()
    assert (cfg.optimizer, cfg.momentum) == ("sgd", 0.5)
    for field, value in OPTIMIZER_TRAINING["sgd"].items():  # SGD's own rate, over the preset's
        assert getattr(cfg, field) == value
    assert cfg.warmup_steps == PRESET_TRAINING["quick"]["warmup_steps"]  # the preset's still
    own = settings_from_args(parse([*base, "--optimizer", "sgd", "--lr", "0.5"])).train_config()
    assert own.lr == 0.5 and own.weight_decay == OPTIMIZER_TRAINING["sgd"]["weight_decay"]
    adamw = settings_from_args(parse(base)).train_config()
    assert adamw.optimizer == "adamw" and adamw.lr == PRESET_TRAINING["quick"]["lr"]
    every = settings_from_args(parse([*base, "--health-every", "0"])).train_config()
    assert every.health_every == 0 and adamw.health_every == TrainConfig().health_every
    with pytest.raises(SystemExit):
        parse([*base, "--optimizer", "adam"])
