"""Training dynamics: the scores over snapshots are each snapshot's own scores, and on
induction-2l the copying phase change falls between saved steps dense enough to see it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from viz_model.analysis.attention import attention_run, head_scores
from viz_model.analysis.dynamics import (
    N_PROBES,
    ROLES,
    chance_accuracy,
    copy_probes,
    copying_claim,
    dynamics,
    probe,
)
from viz_model.analysis.training import final_step, training_steps
from viz_model.bundles.load import load_bundle

INDUCTION_2L = Path(__file__).resolve().parent.parent / "assets" / "models" / "induction-2l"
EPS32 = torch.finfo(torch.float32).eps  # 1.2e-7, float32's rounding step at 1


def _measured(path: Path):
    b = load_bundle(path)
    final = final_step(b.history, b.meta)
    steps = training_steps(b.snapshot_steps(), final)
    k = probe(b.tokenizer, b.meta, b.config.n_ctx, n=1).shape[1] // 2
    ids = probe(b.tokenizer, b.meta, b.config.n_ctx, n=copy_probes(k))
    load = lambda s: b.model if s == final else b.load_snapshot(s)  # noqa: E731
    return b, ids, dynamics(steps, load, ids, chance_accuracy(b.tokenizer))


def test_training_steps_are_the_earlier_snapshots_then_the_final_step():
    assert training_steps([0, 5, 40], 40) == [0, 5, 40]
    assert training_steps([0, 5, 40, 60], 40) == [0, 5, 40]  # a later file is not this model's
    assert training_steps([40], 40) == [] and training_steps([0, 5], None) == []


def test_scores_over_snapshots_equal_each_snapshot_loaded_alone(models_dir):
    b, ids, d = _measured(models_dir / "test-char")
    assert list(d.steps) == [0, 1, 37, 150] and d.copy_length == ids.shape[1] // 2
    k = d.copy_length
    for i, step in enumerate(d.steps):
        alone = load_bundle(models_dir / "test-char")  # a fresh load, one sequence at a time
        model = alone.model if step == 150 else alone.load_snapshot(int(step))
        each = [head_scores(attention_run(model, row).pattern, row) for row in ids[:N_PROBES]]
        np.testing.assert_allclose(
            d.scores["previous-token"][i], np.mean([s.previous_token for s in each], 0), atol=1e-5
        )
        np.testing.assert_allclose(
            d.scores["induction"][i], np.mean([s.induction for s in each], 0), atol=1e-5
        )
        np.testing.assert_allclose(
            d.scores["first-token sink"][i], np.mean([s.first_token for s in each], 0), atol=1e-5
        )
        back = np.mean([s.looks_back for s in each], 0)[..., 2:]  # (L, H, offsets from 2)
        np.testing.assert_allclose(d.scores["looks k back"][i], np.nanmax(back, -1), atol=1e-5)
        np.testing.assert_array_equal(d.offset_k[i], np.nanargmax(back, -1) + 2)
        with torch.no_grad():
            x = torch.as_tensor(ids)
            losses = [
                F.cross_entropy(model(row[None])[0, :-1], row[1:], reduction="none") for row in x
            ]
        second = torch.stack(losses)[:, k : 2 * k - 1]
        # the probes in one batch against one at a time: float32 rounding apart on losses of 4
        # to 7 (5e-7 here, 3.3e-6 with other CPU kernels), so a tolerance relative to the loss
        assert d.loss_second[i] == pytest.approx(float(second.mean()), rel=64 * EPS32)
    assert not np.allclose(d.scores["previous-token"][0], d.scores["previous-token"][-1])


def test_induction_2l_learns_to_copy_in_a_phase_change_the_snapshots_can_see():
    b, ids, d = _measured(INDUCTION_2L)
    assert d.copy_length == 16 and ids.shape == (256, 32) and d.n_sequences == 256
    # untrained: no copying (accuracy about 1/26); trained: the second copy is copied
    assert d.copy_accuracy[0] < 0.15 and d.loss_second[0] > 3.0
    assert d.copy_accuracy[-1] > 0.8 and d.loss_second[-1] < 0.6 < 3.0 < d.loss_first[-1]
    assert 0 <= d.exact_copy[-1] <= d.copy_accuracy[-1]
    # at least three saved steps inside the change: copying gain between 10% and 90% of its end
    gain = d.loss_first - d.loss_second
    inside = (gain > 0.1 * gain[-1]) & (gain < 0.9 * gain[-1])
    assert inside.sum() >= 3, dict(zip(d.steps.tolist(), gain.round(2).tolist(), strict=True))
    claim = copying_claim(d)
    assert claim.made and claim.numbers["half_step"] in d.steps[inside]
    # the head with the final induction score rises with it, from nothing
    layer, head = np.unravel_index(
        d.scores["induction"][-1].argmax(), d.scores["induction"][-1].shape
    )
    induction = d.scores["induction"][:, layer, head]
    assert layer == 1 and induction[-1] > 0.6 and induction[0] < 0.2
    assert set(d.scores) == set(ROLES)
