"""Temperature, top-k, top-p, greedy and seeded sampling, and KV-cache generation."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import tiny_model
from viz_model.model.sampling import (
    SamplingSettings,
    generate,
    generate_steps,
    next_token_distribution,
    pick,
)

LOGITS = torch.tensor([2.0, 1.0, 0.5, 0.1, -1.0, 3.0])


def test_temperature_zero_is_greedy():
    dist = next_token_distribution(LOGITS, SamplingSettings(temperature=0))
    assert int(dist.kept.sum()) == 1 and bool(dist.kept[5])
    assert pick(dist, torch.Generator().manual_seed(1)) == 5
    assert dist.probs[5] == 1.0 and dist.entropy == 0.0


def test_temperature_flattens_or_sharpens_without_cutting():
    cold = next_token_distribution(LOGITS, SamplingSettings(temperature=0.5))
    hot = next_token_distribution(LOGITS, SamplingSettings(temperature=2.0))
    assert cold.probs.max() > hot.probs.max()
    assert cold.entropy < hot.entropy
    assert cold.kept.all() and hot.kept.all()
    torch.testing.assert_close(hot.base_probs, torch.softmax(LOGITS, -1))


@pytest.mark.parametrize("k", [1, 2, 4])
def test_top_k_keeps_exactly_the_k_most_likely(k):
    dist = next_token_distribution(LOGITS, SamplingSettings(top_k=k))
    assert int(dist.kept.sum()) == k
    top = set(torch.topk(LOGITS, k).indices.tolist())
    assert set(dist.kept.nonzero().flatten().tolist()) == top
    assert abs(float(dist.probs.sum()) - 1) < 1e-6
    assert (dist.probs[~dist.kept] == 0).all()


@pytest.mark.parametrize("p", [0.3, 0.6, 0.9, 0.995])
def test_top_p_keeps_the_smallest_set_reaching_p(p):
    dist = next_token_distribution(LOGITS, SamplingSettings(top_p=p))
    probs = torch.softmax(LOGITS, -1)
    kept = dist.kept.nonzero().flatten()
    assert probs[kept].sum() >= p  # reaches p
    smaller = probs[kept].sum() - probs[kept].min()
    assert smaller < p  # and no smaller set of the most likely would
    if not dist.kept.all():
        assert probs[kept].min() >= probs[~dist.kept].max()  # the most likely ones


def test_renormalised_probabilities_keep_their_ratios():
    dist = next_token_distribution(LOGITS, SamplingSettings(top_k=3))
    kept = dist.kept.nonzero().flatten()
    ratio = dist.probs[kept] / dist.scaled_probs[kept]
    torch.testing.assert_close(ratio, torch.full_like(ratio, float(ratio[0])))


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="top_p"):
        SamplingSettings(top_p=0)
    with pytest.raises(ValueError, match="temperature"):
        SamplingSettings(temperature=-1)


def test_seeded_sampling_repeats_and_seeds_differ():
    model = tiny_model()
    s = SamplingSettings(temperature=1.5)
    a = generate(model, [1, 2, 3], 20, s, seed=7)
    b = generate(model, [1, 2, 3], 20, s, seed=7)
    c = generate(model, [1, 2, 3], 20, s, seed=8)
    assert a == b and a != c


@pytest.mark.parametrize(
    "variant",
    [{}, {"pos": "sinusoidal"}, {"attn_only": True}, {"norm": "post"}, {"causal": False}],
)
@pytest.mark.parametrize("settings", [SamplingSettings(temperature=0), SamplingSettings(top_k=5)])
def test_kv_cache_generation_equals_uncached(variant, settings):
    model = tiny_model(**variant)
    # 30 new tokens on a context of 16: crosses the context limit, where the window slides.
    cached = generate(model, [1, 2, 3, 4], 30, settings, seed=3, use_kv_cache=True)
    plain = generate(model, [1, 2, 3, 4], 30, settings, seed=3, use_kv_cache=False)
    assert cached == plain
    assert len(cached) == 30


def test_greedy_generation_follows_the_argmax():
    model = tiny_model()
    seq = [5, 6]
    for step in generate_steps(model, seq, 5, SamplingSettings(temperature=0)):
        expected = int(model(torch.tensor(seq))[-1].argmax())
        assert step.token == expected and step.prob == 1.0
        seq.append(step.token)


def test_empty_prompt_is_refused():
    with pytest.raises(ValueError, match="at least one"):
        generate(tiny_model(), [], 3)


def test_greedy_entropy_is_zero_not_minus_zero():
    dist = next_token_distribution(LOGITS, SamplingSettings(temperature=0))
    assert dist.entropy == 0.0 and f"{dist.entropy:.3f}" == "0.000"
    spread = next_token_distribution(LOGITS, SamplingSettings())
    p = spread.probs[spread.probs > 0]
    assert spread.entropy == pytest.approx(float(-(p * p.log()).sum()))
