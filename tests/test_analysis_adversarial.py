"""analysis/labs/adversarial.py on a tiny seeded GPT: the gradient is the one-hot's, the search only
climbs and its recorded probabilities are the model's, an exhaustive step is the best single
swap, the shared model gets no gradient, and the claims say what the numbers say."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.claims_models import GPT_CLAIM_MODELS, claim_bundle
from tests.conftest import tiny_model
from viz_model.analysis.labs import adversarial as adv

PROMPT = [1, 4, 2, 7, 3]
TARGET = 5


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=3)


def _p(model, ids, target=TARGET) -> float:
    with torch.no_grad():
        return float(F.softmax(model(torch.tensor(ids))[-1], -1)[target])


def test_the_gradient_predicts_a_swap_to_first_order(model):
    suffix = (0, 0, 0)
    grad = adv.suffix_gradient(model, PROMPT, suffix, TARGET)  # (L, V)
    V = model.cfg.vocab_size
    assert grad.shape == (3, V)
    # The linearisation's directional derivative equals a finite difference of the embedding,
    # taken in float64: this derivative is 3.3e-4, and a float32 difference of two losses near
    # 3 over 2e-3 is only good to about 1e-4 (it read 3.6e-4 here, 2.4e-4 on other kernels).
    model64 = copy.deepcopy(model).double()
    W_E = model64.W_E.detach()
    i, v, eps = 1, 6, 1e-3
    base = torch.tensor([*PROMPT, *suffix])

    def loss_with(delta: torch.Tensor) -> float:
        def shift(act, hook):
            act = act.clone()
            act[0, len(PROMPT) + i] += delta
            return act

        with torch.no_grad():
            logits = model64.run_with_hooks(base[None], fwd_hooks=[("hook_embed", shift)])
        return float(-F.log_softmax(logits[0, -1], -1)[TARGET])

    direction = W_E[v] - W_E[suffix[i]]
    numeric = (loss_with(eps * direction) - loss_with(-eps * direction)) / (2 * eps)
    # float32's gradient and the difference's eps**2 error: both about 1e-6 of the value
    assert numeric == pytest.approx(grad[i, v] - grad[i, suffix[i]], rel=1e-3)


def test_the_search_only_climbs_and_its_numbers_are_the_model_s(model):
    result = adv.search(model, PROMPT, TARGET, suffix_len=3, steps=6, top_k=4)
    assert all(b >= a for a, b in itertools.pairwise(result.p_target))
    assert result.p_target[-1] > result.p_target[0]
    assert result.p_target[-1] == pytest.approx(_p(model, list(result.final)), rel=1e-5)
    assert len(result.suffixes) == len(result.p_target)
    assert result.evaluated == 1 + 3 * 4 * (len(result.suffixes) - 1 + result.stopped_early)


def test_an_exhaustive_step_finds_the_best_single_swap(model):
    V = model.cfg.vocab_size
    result = adv.search(model, PROMPT, TARGET, suffix_len=2, steps=1, top_k=V)
    start = (0, 0)
    swaps = [start[:i] + (v,) + start[i + 1 :] for i in range(2) for v in range(V) if v != start[i]]
    best = max(_p(model, PROMPT + list(s)) for s in swaps)
    assert result.p_target[-1] == pytest.approx(max(best, result.p_target[0]), rel=1e-5)


def test_the_shared_model_gets_no_gradient(model):
    adv.search(model, PROMPT, TARGET, suffix_len=2, steps=2, top_k=3)
    assert all(p.grad is None for p in model.parameters())


def test_a_long_prompt_is_cropped_on_the_left_to_leave_room():
    small = tiny_model(seed=0, n_ctx=8)
    result = adv.search(small, list(range(1, 8)) * 2, TARGET, suffix_len=3, steps=1, top_k=2)
    assert len(result.final) == 8 and result.prompt == tuple((list(range(1, 8)) * 2)[-5:])
    with pytest.raises(ValueError, match="no room"):
        adv.search(small, PROMPT, TARGET, suffix_len=8)


def test_suffix_attention_is_the_pattern_s_mass_on_the_suffix(model):
    ids = [*PROMPT, 2, 2, 2]
    shares = adv.suffix_attention(model, ids, 3)
    _, cache = model.run_with_cache(torch.tensor(ids), names=["blocks.0.attn.hook_pattern"])
    expected = cache["blocks.0.attn.hook_pattern"][:, -1, -3:].sum(-1).mean()
    assert shares.shape == (model.cfg.n_layer,)
    assert shares[0] == pytest.approx(float(expected))
    assert np.all((shares >= 0) & (shares <= 1 + 1e-6))


def test_the_claims_follow_their_numbers():
    rose = adv.SuffixSearch((1,), ((0,), (3,)), (0.01, 0.5), 10, False)
    assert adv.search_claim(rose, "x").made
    assert "from 1.0% to 50.0%" in adv.search_claim(rose, "x").text
    unlikely = adv.SuffixSearch((1,), ((0,), (3,)), (2e-5, 1.1e-4), 10, False)
    failed = adv.search_claim(unlikely, "x")
    assert not failed.made and "failed to make x likely" in failed.text
    assert "from 2.0e-05 to 0.011%" in failed.text
    flat = adv.SuffixSearch((1,), ((0,), (3,)), (0.01, 0.015), 10, True)
    claim = adv.search_claim(flat, "x")
    assert not claim.made and "no proposed swap helped" in claim.text
    moved = adv.attention_claim(np.array([0.2, 0.5]), np.array([0.25, 0.8]))
    assert moved.made and "layer 0 20% to 25%, layer 1 50% to 80%" in moved.text
    assert "more of it in layer 1 and about as much in layer 0" in moved.text
    assert not adv.attention_claim(np.array([0.2, 0.5]), np.array([0.25, 0.55])).made
    # the review's case: 13% to 22% is under 10 points but 1.7 times: it counts
    assert adv.attention_claim(np.array([0.13]), np.array([0.22])).made


def test_the_attention_claim_says_every_layer_not_the_one_that_agrees():
    """Issue 36: "In layer 1 ... from 20% to 46%: the tokens found draw more of its attention"
    beside a chart where layers 0 and 3 fell."""
    claim = adv.attention_claim(np.array([0.35, 0.2, 0.3, 0.4]), np.array([0.2, 0.46, 0.31, 0.25]))
    assert claim.made
    assert "layer 0 35% to 20%, layer 1 20% to 46%, layer 2 30% to 31%, layer 3 40% to 25%" in (
        claim.text
    )
    assert (
        "more of it in layer 1, less in layers 0 and 3, and about as much in layer 2" in claim.text
    )


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_attention_claim_on_every_claim_model_names_each_layer_as_it_moved(name, claim_bundles):
    b = claim_bundle(claim_bundles, name)
    prompt = b.tokenizer.encode("ROMEO: But soft, what light")[: b.config.n_ctx - 4]
    start, found = [prompt[0]] * 4, prompt[-4:]  # two suffixes of 4 tokens
    before = adv.suffix_attention(b.model, prompt + start, 4)
    after = adv.suffix_attention(b.model, prompt + found, 4)
    claim = adv.attention_claim(before, after)
    for i, (x, y) in enumerate(zip(before, after, strict=True)):
        assert f"layer {i} {x:.0%} to {y:.0%}" in claim.text
    d = after - before
    ratio = np.maximum(after, before) / np.maximum(np.minimum(after, before), 1e-9)
    counts = (abs(d) >= adv.ATTENTION_MARGIN) | ((abs(d) >= 0.05) & (ratio >= adv.ATTENTION_RATIO))
    more = [i for i in range(len(d)) if counts[i] and d[i] > 0]
    less = [i for i in range(len(d)) if counts[i] and d[i] < 0]
    same = [i for i in range(len(d)) if not counts[i]]
    assert claim.made == bool(more or less)
    if more:
        assert f"more of it in {adv.layer_list(more)}" in claim.text
    if less:
        assert f"less in {adv.layer_list(less)}" in claim.text
    if same and claim.made:
        assert f"about as much in {adv.layer_list(same)}" in claim.text
