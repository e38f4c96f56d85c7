"""RunSettings: the one description of a run that the command line and the job runner share."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from viz_model.model.config import (
    OPTIMIZER_TRAINING,
    PRESET_TRAINING,
    STEPS_WHEN_TIMED,
    GPTConfig,
    TrainConfig,
)
from viz_model.training.cli import build_parser, settings_from_args
from viz_model.training.settings import (
    MODEL_FLAGS,
    TRAIN_FLAGS,
    RunSettings,
    new_run,
    settings_to_argv,
)

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


# ---- the flags and the config dataclasses, both ways ------------------------------------------
# The flags are written by hand (their help is part of the lesson, and bundles record their names
# in meta["command"]); these tests are what keeps them and the dataclasses from drifting apart.

# Fields no flag sets, each with the reason.
NOT_FLAGS = {
    "vocab_size": "the tokenizer decides it",
    "beta1": "AdamW's betas stay GPT-2's (0.9, 0.95): not a lesson knob",
    "beta2": "as beta1",
    "time_limit": "--minutes sets it, through RunSettings.minutes",
}
# Flags that set a field by switching a default True off.
NEGATED = {"no_bias": "bias", "no_causal_mask": "causal", "no_residual": "residual"}
# Flags that are RunSettings' own fields, or say where a run goes rather than what it is.
RUN_FLAGS = {"help", "out", "resume", "quiet", "finetune", "steps"} | {
    f.name for f in dataclasses.fields(RunSettings)
}


def _parser_dests() -> set[str]:
    return {action.dest for action in build_parser()._actions}


def test_every_config_field_has_a_flag_or_a_reason():
    reachable = set(MODEL_FLAGS.values()) | set(TRAIN_FLAGS.values()) | set(NEGATED.values())
    fields = {f.name for f in dataclasses.fields(GPTConfig)}
    fields |= {f.name for f in dataclasses.fields(TrainConfig)}
    assert fields - reachable == set(NOT_FLAGS)


def test_every_flag_sets_a_field():
    known = set(MODEL_FLAGS) | set(TRAIN_FLAGS) | set(NEGATED) | RUN_FLAGS
    assert _parser_dests() - known == set()
    assert set(MODEL_FLAGS) | set(TRAIN_FLAGS) | set(NEGATED) <= _parser_dests()


def _other_value(action: argparse.Action, now):
    """A value for the flag's field other than the preset's `now` (a choice, or a number)."""
    if action.choices:
        return next(choice for choice in action.choices if choice != now)
    if action.type is float:
        return 0.125 if now != 0.125 else 0.25
    if action.dest == "snapshot_at":
        return (7, 11)
    return 3 if now != 3 else 5


@pytest.mark.parametrize(
    "flag, name, group",
    [(f, n, "model") for f, n in MODEL_FLAGS.items()]
    + [(f, n, "train") for f, n in TRAIN_FLAGS.items()]
    + [(f, n, "model") for f, n in NEGATED.items()],
)
def test_each_flag_alone_survives_the_command_line(flag, name, group):
    """Generated from the tables: a flag added to the parser and MODEL_FLAGS but not to
    settings_to_argv (or read back under another name) fails here."""
    actions = {action.dest: action for action in build_parser()._actions}
    if flag in NEGATED:
        value = False
    elif isinstance(getattr(GPTConfig(vocab_size=65), name, None), bool):
        value = True
    else:
        now = getattr(GPTConfig(vocab_size=65) if group == "model" else TrainConfig(), name, None)
        value = _other_value(actions[flag], now)
    settings = RunSettings(corpus="shakespeare", **{group: {name: value}})
    argv = settings_to_argv(settings, "runs/x")
    assert settings_from_args(build_parser().parse_args(argv)) == settings
