"""The RNN, LSTM, GRU and causal CNN (viz_model/model/recurrent*.py): the hand-written cells equal
the fused modules, every family is causal, the CNN reads exactly its receptive field, a carried
state equals one long forward, and bundles of every family round-trip or fail with one clear
CheckpointError."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from viz_model.bundles.checkpoint import save_bundle, save_snapshot
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.load import load_bundle
from viz_model.model.config import PRESETS
from viz_model.model.families import build_model, config_from_dict, family_of
from viz_model.model.recurrent import RecurrentLM, macs_per_token, state_floats
from viz_model.model.recurrent_cells import inspect
from viz_model.model.recurrent_config import (
    OTHER_FAMILIES,
    RecurrentConfig,
    gpt_block_params,
    preset_shape,
)
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.tokenization import Tokenizer
from viz_model.training.settings import RunSettings

VOCAB = 23


def small(family: str, seed: int = 0, **overrides) -> RecurrentLM:
    torch.manual_seed(seed)
    shape = dict(vocab_size=VOCAB, n_ctx=16, d_model=12, n_layer=3, kernel_size=2)
    model = RecurrentLM(RecurrentConfig(family, **{**shape, **overrides})).eval()
    with torch.no_grad():  # LayerNorm gains away from 1, biases away from 0: exercise them
        for name, p in model.named_parameters():
            if "ln" in name or "bias" in name:
                p.add_(0.2 * torch.randn_like(p))
    return model


@pytest.fixture(params=OTHER_FAMILIES)
def family(request) -> str:
    return request.param


def seq(n: int = 20, seed: int = 1) -> torch.Tensor:
    return torch.randint(VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


def test_shapes_match_the_gpt(family):
    model = small(family)
    assert model(seq(9)).shape == (9, VOCAB)
    assert model(torch.stack([seq(9), seq(9, 2)])).shape == (2, 9, VOCAB)
    assert family_of(model) == family


def test_hand_written_cells_equal_the_fused_modules(family):
    model = small(family)
    ids = seq(20)
    found = inspect(model, ids)
    torch.testing.assert_close(found.logits, model(ids), atol=1e-5, rtol=1e-4)
    assert len(found.layers) == model.cfg.n_layer
    assert all(t.hidden.shape == (20, 12) for t in found.layers)
    gates = {"lstm": {"input", "forget", "output", "cell"}, "gru": {"update", "reset"}}
    assert set(found.layers[0].gates) == gates.get(family, set())
    for name, g in found.layers[0].gates.items():
        if name != "cell":  # gates are sigmoids, strictly between 0 and 1
            assert bool(((g > 0) & (g < 1)).all())


def test_the_fused_layer_output_is_the_hand_written_hidden_state(family):
    """Layer by layer, not only the logits: the pages will show these hidden states."""
    model = small(family)
    ids = seq(12)
    found = inspect(model, ids)
    x = model.embed(ids)[None]
    for block, trace in zip(model.blocks, found.layers, strict=True):
        x, _ = block(x)
        torch.testing.assert_close(x[0], trace.hidden, atol=1e-5, rtol=1e-4)


def test_every_family_is_causal(family):
    model = small(family)
    ids = seq(14)
    base = model(ids)
    for t in (0, 5, 12):
        changed = ids.clone()
        changed[t + 1] = (changed[t + 1] + 1) % VOCAB
        torch.testing.assert_close(model(changed)[: t + 1], base[: t + 1])
        assert not torch.allclose(model(changed)[t + 1], base[t + 1])


@pytest.mark.parametrize(("kernel", "layers"), [(2, 3), (3, 2)])
def test_the_cnn_reads_exactly_its_receptive_field(kernel, layers):
    model = small("cnn", kernel_size=kernel, n_layer=layers)
    field = model.cfg.receptive_field
    assert field == 1 + (kernel - 1) * (2**layers - 1)
    ids = seq(30)
    t = 25
    base = model(ids)[t]
    for s in range(t + 1):
        changed = ids.clone()
        changed[s] = (changed[s] + 1) % VOCAB
        moved = not torch.allclose(model(changed)[t], base)
        assert moved == (t - s < field), f"token {s} and logits at {t}, field {field}"


def test_a_carried_state_equals_one_long_forward(family):
    model = small(family)
    ids = seq(40)
    state = model.new_state()
    pieces = [model(ids[a:b], state) for a, b in ((0, 7), (7, 8), (8, 40))]
    torch.testing.assert_close(torch.cat(pieces), model(ids), atol=1e-5, rtol=1e-4)
    assert state.length == 40


def test_generation_with_and_without_the_state_gives_the_same_tokens(family):
    model = small(family)
    prompt = seq(5).tolist()
    settings = SamplingSettings(temperature=0.8)
    # past the training window (n_ctx 16): a recurrent model carries its state on
    with_state = generate(model, prompt, 30, settings, seed=3, use_kv_cache=True)
    without = generate(model, prompt, 30, settings, seed=3, use_kv_cache=False)
    assert with_state == without and len(with_state) == 30


def test_state_and_cost_do_not_grow_with_the_context(family):
    cfg = small(family).cfg
    assert state_floats(cfg) > 0 and macs_per_token(cfg) > 0
    if family == "lstm":
        assert state_floats(cfg) == 2 * cfg.n_layer * cfg.d_model


def test_presets_hold_about_the_gpts_weights(family):
    for name in ("tiny", "quick", "small"):
        shape = preset_shape(family, name)
        cfg = RecurrentConfig(family, 77, **shape)
        layers = build_model(cfg).param_counts()[family]
        gpt = PRESETS[name]["n_layer"] * gpt_block_params(PRESETS[name]["d_model"])
        assert abs(layers - gpt) / gpt < 0.12, (name, layers, gpt)
    if family == "cnn":
        cfg = RecurrentConfig("cnn", 77, **preset_shape("cnn", "tiny"))
        assert cfg.receptive_field >= PRESETS["tiny"]["n_ctx"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"family": "transformer-xl"}, "unknown model family"),
        ({"family": "lstm", "d_model": 0}, "d_model must be between"),
        ({"family": "cnn", "kernel_size": 1}, "kernel_size must be between"),
        ({"family": "gru", "n_head": 4}, "unknown fields for a gru model"),
        ({"family": "rnn", "dropout": 1.5}, "dropout must be in"),
    ],
)
def test_bad_configs_say_what_is_wrong(fields, message):
    with pytest.raises(ValueError, match=message):
        config_from_dict({"vocab_size": VOCAB, **fields})


def test_a_config_without_family_is_a_gpt():
    cfg = config_from_dict({"vocab_size": VOCAB, "n_ctx": 16, "d_model": 32, "n_layer": 1})
    assert family_of(cfg) == "gpt"


def test_run_settings_refuse_a_gpt_setting_for_another_family():
    with pytest.raises(ValueError, match="n_head: a GPT's settings; an LSTM has no attention"):
        RunSettings(corpus="shakespeare", family="lstm", model={"n_head": 4})
    settings = RunSettings(corpus="shakespeare", family="gru", preset="tiny", model={"n_ctx": 32})
    assert settings.model_config(77).family == "gru"
    assert settings.model_config(77).n_ctx == 32


# ---- bundles -------------------------------------------------------------------------------------

TEXT = "to be or not to be, that is the question. " * 4


@pytest.fixture
def tokenizer() -> Tokenizer:
    return Tokenizer.train(TEXT, "char")


def test_bundles_of_every_family_round_trip(tmp_path, tokenizer, family):
    model = small(family, vocab_size=tokenizer.vocab_size)
    path = save_bundle(tmp_path / family, model, tokenizer, None, [], {"command": "x"})
    save_snapshot(path, model, 3)
    raw = json.loads((path / "config.json").read_text())
    assert raw["model"]["family"] == family
    bundle = load_bundle(path)
    assert bundle.family == family and isinstance(bundle.model, RecurrentLM)
    ids = seq(10) % tokenizer.vocab_size
    torch.testing.assert_close(bundle.model(ids), model(ids))
    snap = bundle.load_snapshot(3)  # float16: close, not equal
    torch.testing.assert_close(snap(ids), model(ids), atol=0.05, rtol=0.05)


def _corrupt(path, **model_fields):
    raw = json.loads((path / "config.json").read_text())
    raw["model"].update(model_fields)
    (path / "config.json").write_text(json.dumps(raw))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"family": "mamba"}, "unknown model family 'mamba'"),
        ({"d_model": -3}, "d_model must be between"),
        ({"d_model": 16}, "has shape"),
        ({"family": "gru"}, "config.json implies"),
        ({"family": "cnn"}, "does not match config.json"),
        ({"family": "gpt"}, "unknown model config fields: family|kernel_size"),
    ],
)
def test_a_broken_recurrent_bundle_is_one_clear_error(tmp_path, tokenizer, change, message):
    model = small("lstm", vocab_size=tokenizer.vocab_size)
    path = save_bundle(tmp_path / "b", model, tokenizer)
    _corrupt(path, **change)
    with pytest.raises(CheckpointError, match=message):
        load_bundle(path)


# ---- how far back each family reads (viz_model/analysis/reach.py) -----------------------------


def test_the_reach_profile_of_the_cnn_ends_at_its_receptive_field():
    from viz_model.analysis.reach import distance_holding, reach_profile

    model = small("cnn", kernel_size=2, n_layer=3)  # receptive field 8
    windows = torch.randint(VOCAB, (6, 21), generator=torch.Generator().manual_seed(0))
    profile = reach_profile(model, windows)
    assert profile.shape == (20,)
    field = model.cfg.receptive_field
    assert (profile[:field] > 0).all() and (profile[field:] == 0).all()
    assert distance_holding(profile, 1.0) == field - 1


def test_the_reach_profile_runs_on_every_family_and_a_gpt(family):
    from tests.conftest import tiny_model
    from viz_model.analysis.reach import distance_holding, reach_profile

    windows = torch.randint(VOCAB, (4, 13), generator=torch.Generator().manual_seed(1))
    for model in (small(family), tiny_model()):
        profile = reach_profile(model, windows)
        assert profile.shape == (12,) and np.isfinite(profile).all() and profile[0] > 0
        assert 0 <= distance_holding(profile, 0.5) <= distance_holding(profile, 0.9) < 12


def test_a_gpts_cost_per_token_grows_with_the_context_and_the_others_do_not(family):
    from tests.conftest import tiny_config
    from viz_model.model.families import carried_floats, macs_per_token

    gpt, other = tiny_config(), small(family).cfg
    step = macs_per_token(gpt, 101) - macs_per_token(gpt, 100)
    assert step == 2 * gpt.n_layer * gpt.d_model  # q.k and p.v over one more token, per layer
    assert carried_floats(gpt, 10) == 2 * gpt.n_layer * 10 * gpt.d_model
    assert macs_per_token(other, 10) == macs_per_token(other, 10_000) > 0
    assert carried_floats(other, 10) == carried_floats(other, 10_000) == state_floats(other)
