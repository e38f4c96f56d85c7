"""What a run will cost: measured speed, counted memory, and the model shape a run builds."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from viz_model import estimate
from viz_model.config import GPTConfig
from viz_model.estimate import (
    measure_speed,
    memory_estimate,
    memory_parts,
    steps_in,
    train_seconds,
)
from viz_model.model import GPT
from viz_model.run_settings import RunSettings, estimate_params, model_shape

SMALL = dict(vocab_size=40, n_ctx=32, n_layer=1, n_head=2)


def test_speed_is_positive_and_falls_when_the_model_grows():
    narrow = measure_speed(GPTConfig(d_model=32, **SMALL), batch_size=8)
    wide = measure_speed(GPTConfig(d_model=128, **SMALL), batch_size=8)
    assert narrow > 0 and wide > 0
    assert wide < narrow


def test_speed_runs_on_the_jobs_threads_and_restores_torchs_setting(monkeypatch):
    seen = []
    real_step = estimate._train_step

    def step(*args):
        seen.append(torch.get_num_threads())
        real_step(*args)

    monkeypatch.setattr(estimate, "_train_step", step)
    before = torch.get_num_threads()
    other = 2 if before == 1 else 1
    measure_speed(GPTConfig(d_model=16, **SMALL), batch_size=2, threads=other, steps=2)
    assert seen == [other] * 3  # the warm-up and both timed steps
    assert torch.get_num_threads() == before


def test_speed_leaves_the_global_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    measure_speed(GPTConfig(d_model=16, **SMALL), batch_size=2, steps=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("overrides", [{}, {"attn_only": True}, {"tie_embeddings": True}])
def test_memory_is_16_bytes_a_parameter_plus_activations_linear_in_batch(overrides):
    cfg = GPTConfig(d_model=32, **{**SMALL, **overrides})
    n_params = sum(p.numel() for p in GPT(cfg).parameters())  # shared weights counted once
    m1, m2, m3 = (memory_estimate(cfg, b) for b in (1, 2, 3))
    per_sequence = m2 - m1
    assert per_sequence > 0 and m3 - m2 == per_sequence
    assert m1 - per_sequence == 16 * n_params  # what is left at batch 0: the weights' part
    assert memory_parts(cfg, 5).state == 16 * n_params


def _saved_bytes(cfg: GPTConfig, batch: int) -> int:
    """Bytes autograd really keeps for backward in one training forward pass (no parameters)."""
    model = GPT(cfg).train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.randint(cfg.vocab_size, (batch, cfg.n_ctx))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        F.cross_entropy(model(x).flatten(0, 1), x.flatten())
    return sum(n for ptr, n in storages.items() if ptr not in params)


@pytest.mark.parametrize("overrides", [{}, {"attn_only": True}, {"norm": "post", "n_layer": 3}])
def test_activation_count_covers_what_autograd_keeps_within_a_factor_of_two(overrides):
    cfg = GPTConfig(d_model=64, **{**SMALL, "n_head": 4, **overrides})
    saved = _saved_bytes(cfg, batch=4)
    counted = memory_parts(cfg, 4).activations
    assert saved <= counted <= 2 * saved


@pytest.mark.parametrize("tokenizer, vocab", [("char", None), ("bpe", 300), ("word", None)])
def test_model_shape_is_the_model_estimate_params_counts(tokenizer, vocab):
    settings = RunSettings(task="repeat", tokenizer=tokenizer, vocab_size=vocab, preset="tiny")
    text = "abcab cab\nxyz zz\n" * 50
    cfg = model_shape(settings, text)
    assert GPT(cfg).n_params() == estimate_params(settings, text)
    if tokenizer == "char":
        assert cfg.vocab_size == len(set(text)) + 1


def test_time_is_the_minutes_given_or_tokens_over_speed():
    assert train_seconds(500, 16, 64, 8000.0, minutes=1.5) == 90.0
    seconds = train_seconds(500, 16, 64, 8000.0)
    assert seconds == pytest.approx(500 * 16 * 64 / 8000)
    assert train_seconds(500, 32, 64, 8000.0) == pytest.approx(2 * seconds)
    assert steps_in(seconds, 16, 64, 8000.0) == pytest.approx(500, abs=1)


def test_n_params_builds_each_shape_once(monkeypatch):
    # The Training page asks for the same shape's count three times a view; only the first builds.
    from viz_model import estimate

    cfg = GPTConfig(vocab_size=37, n_ctx=16, d_model=32, n_layer=1, n_head=2, d_mlp=64)
    first = estimate.n_params(cfg)
    monkeypatch.setattr(estimate, "GPT", None)  # a second build would fail
    assert estimate.n_params(cfg) == first == GPT(cfg).n_params()
    assert estimate.memory_parts(cfg, 2).state == 16 * first
