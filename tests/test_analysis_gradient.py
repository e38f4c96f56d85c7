"""One gradient step: the same as torch.optim.SGD, on a copy only; the chain rule for one weight
equals autograd's gradient."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.labs import gradient as gx

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


def test_the_ladder_of_learning_rates_is_1_2_5():
    assert [gx.rung(i) for i in range(-3, 4)] == [0.1, 0.2, 0.5, 1, 2, 5, 10]
    assert gx.rung(-12) == 0.0001
    assert gx.rung(gx.rung_below(0.0042)) == 0.002
    assert gx.rung(gx.rung_below(0.005)) == 0.005
    assert gx.rung(gx.rung_below(7.0)) == 5
    assert gx.rung(gx.rung_below(1e-7)) == 1e-7


def test_a_tiny_step_changes_the_loss_by_the_first_order_estimate():
    # theta - eta g on the same loss the gradient was taken of: for small eta the change is
    # -eta |g|^2 (the wrong sign, a missing parameter or another loss would break this)
    model = tiny_model()
    for lr in (1e-4, 1e-3):
        step = gx.gradient_step(model, IDS, lr=lr, position=3)
        change = step.loss_after - step.loss_before
        assert change == pytest.approx(-lr * step.grad_sq, rel=0.05)
    assert step.grad_sq == pytest.approx(sum(g[1] ** 2 for g in step.groups))


def test_the_default_learning_rate_lowers_the_loss_as_first_order_predicts():
    model = tiny_model()
    scan = gx.loss_along_gradient(model, IDS)
    lr = scan.default_lr
    assert lr * scan.grad_sq <= gx.DEFAULT_SHARE * scan.loss * (1 + 1e-9)
    assert gx.first_order_agrees(scan.losses[scan.default] - scan.loss, -lr * scan.grad_sq)
    step = gx.gradient_step(model, IDS, lr=lr, position=3)
    assert step.loss_after == pytest.approx(scan.losses[scan.default], rel=1e-6)
    assert scan.etas[scan.default - 1] == pytest.approx(gx.rung(gx.rung_below(lr) - 1))


def test_a_sharp_loss_moves_the_default_down_to_where_the_step_still_falls(monkeypatch):
    # with DEFAULT_SHARE far too large, the first-order choice overshoots; the default walks
    # down the ladder to a rung where the measured fall agrees with first order
    monkeypatch.setattr(gx, "DEFAULT_SHARE", 50.0)
    scan = gx.loss_along_gradient(tiny_model(), IDS)
    assert scan.default < scan.first_order
    assert scan.losses[scan.default] < scan.loss
    assert gx.first_order_agrees(
        scan.losses[scan.default] - scan.loss, scan.predicted[scan.default]
    )


@pytest.mark.parametrize(
    ("after", "made", "start"),
    [
        (1.9, True, "The loss fell from 2.0000 to 1.9000"),  # -0.1 against -0.1
        (1.95, False, "The loss fell from 2.0000 to 1.9500 (−0.05 nats), less than"),
        (1.8, False, "The loss fell from 2.0000 to 1.8000 (−0.2 nats), more than"),
        (2.3, False, "At this η the step overshoots: the loss rose from 2.0000 to 2.3000"),
    ],
)
def test_the_step_sentence_follows_the_measured_change(after, made, start):
    claim = gx.step_claim(2.0, after, 0.001, 100.0)  # first order: -0.001 * 100 = -0.1
    assert claim.made == made and claim.text.startswith(start)
    assert "−0.001 × 100 = −0.1" in claim.text
    assert claim.numbers["predicted"] == pytest.approx(-0.1)
    assert not gx.step_claim(2.0, 2.0, 0.1, 0.0).made


def test_chain_figures_reproduce_by_hand_from_the_printed_numbers():
    model = tiny_model()
    for lr in (1e-5, 0.05, 2.0):
        step = gx.gradient_step(model, IDS, lr=lr, position=4)
        f = gx.chain_figures(step.chain, lr)
        q = Decimal(1).scaleb(-f.places)
        for p, y, u, t in zip(f.p, f.y, f.u, f.terms, strict=True):
            assert ((p - y) / f.n * u).quantize(q) == t
            assert len(p.normalize().as_tuple().digits) <= gx.SIG
        assert f.total == sum(f.terms)
        assert abs(f.total - f.autograd) <= f.n * q
        assert f.delta == f.lr * f.autograd and f.new == f.weight - f.delta
        assert f.new != f.weight  # the printed update moves the printed weight
        assert abs(float(f.weight) - step.chain.weight) <= 0.5 * 10.0**-4
