"""What a run will cost: measured speed, counted memory, and the model shape a run builds."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from viz_model.model.config import GPTConfig, TrainConfig
from viz_model.model.gpt import GPT
from viz_model.training import estimate
from viz_model.training.estimate import (
    measure_speed,
    memory_estimate,
    memory_parts,
    steps_in,
    train_seconds,
)
from viz_model.training.settings import RunSettings, estimate_params, model_shape

SMALL = dict(vocab_size=40, n_ctx=32, n_layer=1, n_head=2)


def test_speed_is_a_range_and_falls_when_the_model_grows():
    narrow = measure_speed(GPTConfig(d_model=32, **SMALL), batch_size=8, steps=3)
    wide = measure_speed(GPTConfig(d_model=256, **SMALL), batch_size=8, steps=3)
    for speed in (narrow, wide):
        low, high = speed.tokens_per_s()
        assert 0 < low <= high
        assert low == 8 * 32 / max(speed.step_s) and high == 8 * 32 / min(speed.step_s)
    assert wide.tokens_per_s()[1] < narrow.tokens_per_s()[1]


def test_speed_is_measured_in_a_process_of_its_own_on_the_jobs_threads(monkeypatch):
    """Not in the caller's process: torch's threads here are never touched (a Streamlit session's
    thread would otherwise set them for the whole server)."""
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(n))
    before = torch.get_num_threads()
    other = 2 if before == 1 else 1
    speed = measure_speed(GPTConfig(d_model=16, **SMALL), batch_size=2, threads=other, steps=2)
    assert speed.threads == other  # what the child's torch reported using
    assert calls == [] and torch.get_num_threads() == before


def test_speed_leaves_the_global_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    measure_speed(GPTConfig(d_model=16, **SMALL), batch_size=2, steps=1)
    assert torch.equal(torch.rand(3), expected)


def test_steps_per_second_counts_the_evaluations_and_samples_and_scales_with_batch():
    speed = estimate.Speed(8, 32, 1, step_s=(0.1, 0.2), eval_s=0.03, sample_s=0.01)
    bare = TrainConfig(batch_size=8, eval_every=0, sample_every=0)
    assert speed.seconds_per_step(bare) == pytest.approx((0.1, 0.2))
    assert speed.steps_per_s(bare) == pytest.approx((5.0, 10.0))
    busy = TrainConfig(
        batch_size=16, eval_every=10, eval_batches=5, sample_every=20, sample_tokens=40
    )
    extra = 5 * 0.03 * 2 / 10 + 40 * 0.01 / 20  # evaluation at twice the batch, samples as timed
    assert speed.seconds_per_step(busy) == pytest.approx((0.2 + extra, 0.4 + extra))


@pytest.mark.parametrize("overrides", [{}, {"attn_only": True}, {"tie_embeddings": True}])
def test_memory_is_16_bytes_a_parameter_plus_activations_linear_in_batch(overrides):
    cfg = GPTConfig(d_model=32, **{**SMALL, **overrides})
    n_params = sum(p.numel() for p in GPT(cfg).parameters())  # shared weights counted once
    m1, m2, m3 = (memory_estimate(cfg, b) for b in (1, 2, 3))
    per_sequence = m2 - m1
    assert per_sequence > 0 and m3 - m2 == per_sequence
    assert m1 - per_sequence == 16 * n_params  # what is left at batch 0: the weights' part
    assert memory_parts(cfg, 5).state == 16 * n_params
    sgd = TrainConfig(optimizer="sgd")  # one momentum buffer instead of AdamW's two moments
    assert memory_parts(cfg, 5, sgd).state == 12 * n_params
    plain = TrainConfig(optimizer="sgd", momentum=0.0)  # nothing kept: weights and gradients
    assert memory_estimate(cfg, 1, plain) == m1 - 8 * n_params


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
    from viz_model.training import estimate

    cfg = GPTConfig(vocab_size=37, n_ctx=16, d_model=32, n_layer=1, n_head=2, d_mlp=64)
    first = estimate.n_params(cfg)
    monkeypatch.setattr(estimate, "build_model", None)  # a second build would fail
    assert estimate.n_params(cfg) == first == GPT(cfg).n_params()
    assert estimate.memory_parts(cfg, 2).state == 16 * first
