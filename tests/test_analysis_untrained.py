"""analysis/untrained.py: the model of the same shape that learned nothing, on a GPT and on every
recurrent family: same config and parameter shapes, different weights from the trained model,
the same weights for the same seed, the step-0 snapshot where the bundle kept one."""

from __future__ import annotations

import shutil

import pytest
import torch

from tests.bundles import build_test_bundle
from viz_model.analysis.untrained import fresh_model, untrained_twin
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.load import load_bundle
from viz_model.model.config import GPTConfig
from viz_model.model.families import build_model
from viz_model.model.recurrent_config import RecurrentConfig

FAMILIES = ["gpt", "rnn", "lstm", "gru", "cnn"]


def shape(family: str) -> dict:
    return {} if family == "gpt" else {"family": family}


@pytest.fixture(scope="module", params=FAMILIES)
def trained(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "run"
    return load_bundle(build_test_bundle(out, steps=20, **shape(request.param)))


def same_shapes(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(sa[k].shape == sb[k].shape for k in sa)


def differs(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return any(not torch.equal(sa[k].float(), sb[k].float()) for k in sa)


def test_the_twin_has_the_models_config_and_shapes_and_other_weights(trained):
    twin = untrained_twin(trained)
    assert twin.model.cfg == trained.config
    assert same_shapes(twin.model, trained.model)
    assert differs(twin.model, trained.model)
    assert not twin.model.training


def test_the_twin_is_the_step_0_snapshot_where_the_bundle_kept_one(trained):
    twin = untrained_twin(trained)
    assert twin.source == "its step-0 snapshot"
    step0 = trained.load_snapshot(0)
    assert not differs(twin.model, step0)


def test_without_a_snapshot_the_twin_is_a_seeded_fresh_init(trained, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(trained.path, folder)
    shutil.rmtree(folder / "snapshots")
    bare = load_bundle(folder)
    a, b = untrained_twin(bare, seed=3), untrained_twin(bare, seed=3)
    assert "fresh initialisation (seed 3)" in a.source
    assert not differs(a.model, b.model)  # deterministic for a seed
    assert differs(a.model, untrained_twin(bare, seed=4).model)
    assert differs(a.model, bare.model)
    assert same_shapes(a.model, bare.model)


def test_a_fine_tunes_twin_is_random_weights_not_its_base(trained, tmp_path):
    folder = save_bundle(
        tmp_path / "tuned", trained.model, trained.tokenizer, meta={"base": "some-base"}
    )
    shutil.copytree(trained.path / "snapshots", folder / "snapshots")
    twin = untrained_twin(load_bundle(folder))
    assert twin.source.startswith("a fresh initialisation")


@pytest.mark.parametrize(
    "cfg",
    [
        GPTConfig(vocab_size=13, n_ctx=16, d_model=16, n_layer=2, n_head=2),
        RecurrentConfig(family="lstm", vocab_size=13, n_ctx=16, d_model=16, n_layer=2),
    ],
)
def test_a_fresh_model_is_the_same_for_a_seed_and_leaves_the_global_random_state(cfg):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = fresh_model(cfg, seed=5)
    after = torch.rand(3)
    assert torch.equal(after, expected)
    assert not differs(a, fresh_model(cfg, seed=5))
    assert differs(a, fresh_model(cfg, seed=6))
    torch.manual_seed(5)  # the family's own init, as a run with seed 5 starts
    assert not differs(a, build_model(cfg))
