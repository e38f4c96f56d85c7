"""One gradient step: the same as torch.optim.SGD, on a copy only; the chain rule for one weight
equals autograd's gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis import gradient as gx

IDS = torch.tensor([3, 7, 1, 3, 7, 1, 9, 4, 3, 7, 12, 0])


def test_the_step_equals_optimizer_step_with_sgd_and_leaves_the_model_alone():
    model = tiny_model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    stepped, loss = gx.sgd_step(model, IDS, lr=0.5)

    reference = gx.train_copy(model)
    opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    ref_loss = gx.prompt_loss(reference, IDS)
    ref_loss.backward()
    opt.step()
    assert loss == pytest.approx(float(ref_loss.detach()))
    ref = dict(reference.named_parameters())
    for name, p in stepped.named_parameters():
        torch.testing.assert_close(p, ref[name], rtol=0, atol=1e-6)
        assert not torch.equal(p, before[name]) or ref[name].grad.abs().max() == 0
    for name, p in model.named_parameters():  # the shared model: unchanged, no gradients
        assert torch.equal(p, before[name]) and p.grad is None


def test_loss_and_probabilities_move_as_a_small_step_promises():
    model = tiny_model()
    step = gx.gradient_step(model, IDS, lr=0.05, position=3)
    assert step.loss_after < step.loss_before
    # the loss is the mean of -log p of the targets, before and after
    assert step.loss_before == pytest.approx(-np.log(step.p_before).mean(), rel=1e-5)
    assert step.loss_after == pytest.approx(-np.log(step.p_after).mean(), rel=1e-5)
    np.testing.assert_array_equal(step.targets, IDS[1:].numpy())
    names = [g[0] for g in step.groups]
    assert names[:2] == ["token embedding", "position embedding"]
    assert "block 1 MLP" in names and names[-1] == "unembedding"
    total = sum(g[3] for g in step.groups)
    assert total == model.n_params()


@pytest.mark.parametrize("position", [0, 6, 10])
def test_chain_rule_by_hand_equals_autograd(position):
    model = tiny_model()
    twin, _ = gx.sgd_step(model, IDS, lr=0.1)
    c = gx.chain_rule(model, twin, IDS, position)
    assert c.j == int(IDS[position + 1])
    assert c.by_hand == pytest.approx(c.autograd, rel=1e-4, abs=1e-7)
    assert c.autograd != 0
    assert c.weight == pytest.approx(float(model.unembed.weight[c.j, c.d].detach()))


def test_tied_model_the_unembedding_path_is_only_part_of_the_gradient():
    model = tiny_model(tie_embeddings=True)
    twin, _ = gx.sgd_step(model, IDS, lr=0.1)
    c = gx.chain_rule(model, twin, IDS, 2)
    assert c.tied and abs(c.by_hand - c.autograd) > 1e-6


def test_one_token_prompt_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="at least 2 tokens"):
        gx.gradient_step(tiny_model(), [3], lr=0.1, position=0)


def test_a_model_too_large_to_copy_is_refused_with_its_size(monkeypatch):
    monkeypatch.setattr(gx, "MAX_STEP_PARAMS", 1000)
    with pytest.raises(ValueError, match="parameters; a step here copies the model"):
        gx.gradient_step(tiny_model(), IDS, lr=0.1, position=0)
