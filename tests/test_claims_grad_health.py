"""The gradient-health claims (docs/ARCHITECTURE.md, Claims) on every claim model: a model trained before
gradient health was recorded says so, and the class's freshly trained model has it; each claim's
decision is recomputed here from the history's own records."""

from __future__ import annotations

import numpy as np
import pytest

from tests.claims_models import CLAIM_MODELS, CLASS_RUNS, claim_bundle
from viz_model.analysis import grad_health as gh
from viz_model.model.config import TrainConfig

CLAIMS = (gh.depth_claim, gh.growth_claim, gh.clipping_claim, gh.update_claim)


def _layer_values(history: list[dict], layer: str) -> list[tuple[int, float]]:
    return [(r["step"], r["grad_layers"][layer]) for r in history if "grad_layers" in r]


def _check(h: gh.GradHealth, history: list[dict], clip: float) -> None:
    norms = [r["grad_norm"] for r in history if "grad_norm" in r]
    clipping = gh.clipping_claim(h)
    clipped = sum(n > clip for n in norms)
    assert clipping.made == (clip > 0 and clipped > 0)
    if clip > 0:
        assert clipping.numbers["clipped"] == clipped and clipping.numbers["steps"] == len(norms)

    growth = gh.growth_claim(h)
    q = max(1, len(norms) // 4)
    first, last = float(np.median(norms[:q])), float(np.median(norms[-q:]))
    assert growth.numbers["first"] == pytest.approx(first)
    assert growth.made == (last / first >= gh.GROWTH_RATIO)

    if h.steps.size == 0:  # trained with --health-every 0: the norm only, no per-layer records
        for claim in (gh.depth_claim, gh.update_claim):
            said = claim(h)
            assert not said.made and said.text == gh.NOT_RECORDED
        return
    depth = gh.depth_claim(h)
    blocks = sorted(
        {k for r in history for k in r.get("grad_layers", {}) if k.startswith("blocks.")}
    )
    bottom = _layer_values(history, "blocks.0")
    top = _layer_values(history, max(blocks, key=lambda b: int(b[7:])))
    late = max(1, len(bottom) // 4)
    ratio = float(np.median([v for _, v in top[-late:]])) / float(
        np.median([v for _, v in bottom[-late:]])
    )
    assert depth.numbers["ratio"] == pytest.approx(ratio)
    assert depth.made == (ratio >= gh.DEPTH_RATIO or ratio <= 1 / gh.DEPTH_RATIO)
    word = "vanishes" if ratio >= gh.DEPTH_RATIO else "grows" if depth.made else "neither"
    assert word in depth.text

    update = gh.update_claim(h)
    peak = max(r["lr"] for r in history if "update_layers" in r)
    record = [r for r in history if "update_layers" in r and r["lr"] == peak][-1]
    ratios = [v for k, v in record["update_layers"].items() if k.startswith("blocks.")]
    assert update.numbers["step"] == record["step"]
    assert update.numbers["median"] == pytest.approx(float(np.median(ratios)))
    median = update.numbers["median"]
    assert update.made == (not gh.RULE_OF_THUMB / 10 <= median <= gh.RULE_OF_THUMB * 10)
    if median > gh.RULE_OF_THUMB * 10:  # large steps: unstable only where the record shows it
        losses = [r["train_loss"] for r in history if isinstance(r.get("train_loss"), float)]
        rise = gh.loss_rise(h)
        assert (rise is None) == (len(losses) < 10)
        shown = growth.made or (rise is not None and rise[0] > gh.LOSS_RISE)
        if rise is not None:
            assert ("can make training unstable" in update.text) == shown
            assert update.numbers["loss_rise"] == pytest.approx(rise[0])


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_gradient_health_claims_hold_on_every_claim_model(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    cfg = TrainConfig.from_dict(bundle.train_config or {})
    h = gh.grad_health(bundle.history, cfg.grad_clip)
    if name in CLASS_RUNS:  # trained by the job's own code: recorded every health_every steps
        assert h is not None and h.steps.size == 1 + len(bundle.history) // cfg.health_every
    if h is None:
        for claim in CLAIMS:
            said = claim(h)
            assert not said.made and said.text == gh.NOT_RECORDED
        return
    _check(h, bundle.history, cfg.grad_clip)
