"""Claims of Inside a block's gradient step and probes, on every claim model (tests/claims_models.py):
the default learning rate lowers the loss on the default prompt, as the printed sentence and the
first-order estimate say; the overshoot sentence matches the losses along the gradient; a probe
sentence claims a property only beyond the majority baseline plus the held-out noise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.claims_models import GPT_CLAIM_MODELS, GPT_MODELS, claim_bundle
from ui.frame import DEFAULT_PROMPT
from viz_model.analysis.labs import contextual as cx
from viz_model.analysis.labs import gradient as gx
from viz_model.analysis.labs import probes as pr
from viz_model.analysis.residual import layer_labels
from viz_model.analysis.untrained import untrained_twin

PROBE_WINDOWS = 30  # the page reads up to 120 snippets; the claim's logic is the same on fewer


def _prompt_ids(bundle) -> list[int]:
    return list(bundle.tokenizer.encode(DEFAULT_PROMPT))[-bundle.config.n_ctx :]


@pytest.fixture(scope="module")
def scans(claim_bundles):
    """name -> (ids, loss along the gradient, the step at the default lr) for each claim model."""
    out = {}
    for name in GPT_MODELS:
        bundle = claim_bundle(claim_bundles, name)
        ids = _prompt_ids(bundle)
        before = [p.detach().clone() for p in bundle.model.parameters()]
        scan = gx.loss_along_gradient(bundle.model, ids)
        step = gx.gradient_step(bundle.model, ids, scan.default_lr, len(ids) - 2)
        for p, q in zip(bundle.model.parameters(), before, strict=True):
            assert torch.equal(p, q), "the shared model must not move"
        out[name] = (ids, scan, step)
    return out


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_default_step_lowers_the_loss_as_the_sentence_and_first_order_say(name, scans):
    _, scan, step = scans[name]
    assert step.loss_before == pytest.approx(scan.loss)
    assert step.grad_sq == pytest.approx(scan.grad_sq, rel=1e-9)
    assert step.loss_after == pytest.approx(scan.losses[scan.default], rel=1e-6, abs=1e-7)
    assert step.loss_after < step.loss_before  # the lesson: a modest step lowers the loss
    # the default: a first-order fall of at most DEFAULT_SHARE of the loss, and a rung of 1-2-5
    assert scan.default_lr * scan.grad_sq <= gx.DEFAULT_SHARE * scan.loss * (1 + 1e-9)
    assert scan.default_lr in [gx.rung(i) for i in range(-60, 30)]  # 1, 2 or 5 x 10^k
    claim = gx.step_claim(step.loss_before, step.loss_after, step.lr, step.grad_sq)
    n = claim.numbers
    change, predicted = step.loss_after - step.loss_before, -step.lr * step.grad_sq
    assert n["change"] == change and n["predicted"] == predicted
    assert claim.made and abs(change - predicted) <= n["tolerance"] * abs(predicted)
    assert claim.text.startswith(
        f"The loss fell from {step.loss_before:.4f} to {step.loss_after:.4f}"
    )
    assert f"{predicted:+.3g}".replace("-", "−") in claim.text
    assert f"{step.lr:g} × {step.grad_sq:.4g}" in claim.text


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_every_rung_on_the_slider_prints_what_its_step_did(name, scans):
    _, scan, _ = scans[name]
    assert scan.losses[0] < scan.loss  # even the smallest η on the slider lowers the loss
    assert np.all(np.diff(scan.etas) > 0) and len(scan.etas) == gx.BELOW + gx.ABOVE + 1
    for lr, after, predicted in zip(scan.etas, scan.losses, scan.predicted, strict=True):
        claim = gx.step_claim(scan.loss, float(after), float(lr), scan.grad_sq)
        fell = after < scan.loss
        assert claim.made == gx.first_order_agrees(after - scan.loss, predicted)
        assert claim.text.startswith("At this η the step overshoots") == (not fell)
        assert f"to {after:.4f}" in claim.text
    over = gx.overshoot_claim(scan)
    rose = scan.losses >= scan.loss
    assert over.made == bool(rose.any())
    if over.made:
        first = int(np.argmax(rose))
        assert over.numbers["overshoot_lr"] == scan.etas[first]
        assert (
            f"is {scan.etas[first]:g}:" in over.text and f"to {scan.losses[first]:.4f}" in over.text
        )
    else:
        assert f"η = {scan.etas[-1]:g} lowers" in over.text


@pytest.fixture(scope="module")
def probe_results(claim_bundles):
    """name -> (stations, labels, property -> ProbeResult, the same on the untrained twin) on
    the first PROBE_WINDOWS snippets."""
    out = {}
    for name in GPT_MODELS:
        b = claim_bundle(claim_bundles, name)
        windows = cx.windows_for(b.model, b.tokenizer, cx.corpus_text(b.meta))
        texts, ids = windows.texts[:PROBE_WINDOWS], windows.ids[:PROBE_WINDOWS]
        labels = pr.properties(texts, (b.meta.get("data") or {}).get("task") or "shakespeare")
        found = []
        for model in (b.model, untrained_twin(b).model):
            resid = cx.resid_by_station(model, ids)
            found.append({p: pr.probe_by_station(resid, y) for p, y in labels.items()})
        out[name] = (layer_labels(b.config.n_layer), labels, *found)
    return out


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_a_probe_claims_a_property_only_beyond_baseline_and_noise(name, probe_results):
    stations, labels, results, _ = probe_results[name]
    assert results
    for prop, r in results.items():
        held_out = labels[prop][np.arange(len(labels[prop])) % pr.TEST_EVERY == pr.TEST_EVERY - 1]
        yes = held_out[:, pr.FIRST_POSITION :].mean()
        assert r.baseline == pytest.approx(max(yes, 1 - yes))  # the chance baseline: majority
        margin = pr.noise_margin(r)
        assert margin == pytest.approx(
            pr.NOISE_SE * np.sqrt(r.baseline * (1 - r.baseline) / r.n_test)
        )
        claim = pr.probe_claim(prop, stations, r)
        beyond = r.test_accuracy - r.baseline > margin
        assert claim.made == bool(beyond.any())
        assert f"({r.baseline:.1%})" in claim.text and f"{100 * margin:.1f} points" in claim.text
        best = int(np.argmax(r.test_accuracy))
        assert f"{r.test_accuracy[best]:.1%} {pr.at(stations[best])}" in claim.text
        if claim.made:  # every station named is beyond the margin, every other is not
            named = claim.text.split(f"({r.baseline:.1%}) ")[1].split("; best")[0]
            for s, b in zip(stations, beyond, strict=True):
                assert (pr.at(s) in named.replace(" and ", ", ").split(", ")) == bool(b)


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_a_probe_claims_only_what_random_weights_of_the_shape_do_not_give(name, probe_results):
    """Issue 36, class 1: a property is 'held' only beyond the model that learned nothing. A
    random embedding tells tokens apart, so 'vowel' reads far above its baseline from random
    weights; the claim then says so, with the random weights' number, and is not made."""
    stations, _, results, blank = probe_results[name]
    for prop, r in results.items():
        u = blank[prop]
        claim = pr.probe_claim(prop, stations, r, u)
        margin = pr.noise_margin(r)
        learned = (r.test_accuracy - r.baseline > margin) & (
            r.test_accuracy - u.test_accuracy > margin
        )
        assert claim.made == bool(learned.any()), claim.text
        u_best = int(np.argmax(u.test_accuracy))
        said = f"random weights of this shape: best {u.test_accuracy[u_best]:.1%}"
        readable = (r.test_accuracy - r.baseline > margin).any()
        assert (said in claim.text) == bool(readable), claim.text  # beside any reading
        if readable and not claim.made:
            assert "no better than from the same shape with random weights" in claim.text
        assert not pr.probe_claim(prop, stations, u, u).made  # random weights learned nothing
