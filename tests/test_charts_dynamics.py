"""Training-dynamics figures: one line per head in every role row, the followed head drawn
thick, the marks in every row and named once, and accuracy on its own 0..1 axis."""

from __future__ import annotations

import numpy as np

from ui.charts.dynamics import loss_against_accuracy, roles_over_training
from viz_model.analysis.dynamics import ROLES, Dynamics
from viz_model.analysis.training import curves

S, L, H = 4, 2, 3


def _dynamics() -> Dynamics:
    rng = np.random.default_rng(0)
    return Dynamics(
        steps=np.array([0, 10, 20, 40]),
        scores={role: rng.random((S, L, H)) for role in ROLES},
        offset_k=rng.integers(2, 6, (S, L, H)),
        loss_first=np.full(S, 3.3),
        loss_second=np.array([3.3, 3.0, 1.0, 0.5]),
        copy_accuracy=np.array([0.04, 0.2, 0.7, 0.9]),
        exact_copy=np.array([0.0, 0.0, 0.2, 0.5]),
        copy_length=8,
        gap_se=np.full(S, 0.01),
        accuracy_se=np.full(S, 0.01),
        position_accuracy=np.full((S, 7), 0.5),
        miss_token=np.zeros(S, dtype=np.int64),
        miss_share=np.full(S, 0.5),
        n_sequences=64,
        chance=1 / 26,
    )


def test_roles_chart_draws_each_head_in_each_role_row_and_the_losses_below():
    d = _dynamics()
    fig = roles_over_training(d, focus="L1 H0", formed=20, chosen=10)
    heads = [t for t in fig.data if t.legendgroup]
    assert len(heads) == len(ROLES) * L * H
    assert [t.name for t in heads[: L * H]] == [
        "L0 H0",
        "L0 H1",
        "L0 H2",
        "L1 H0",
        "L1 H1",
        "L1 H2",
    ]
    assert sum(bool(t.showlegend) for t in heads) == L * H  # one legend entry per head
    induction_l0h2 = heads[L * H + 2]  # the second row, head L0 H2
    np.testing.assert_allclose(induction_l0h2.y, d.scores["induction"][:, 0, 2])
    followed = {t.line.width for t in heads if t.name == "L1 H0"}  # the followed head: thick
    assert len(followed) == 1 and min(followed) > max(
        t.line.width for t in heads if t.name != "L1 H0"
    )
    offsets = [t for t in heads if t.name == "L0 H1"][3]  # "looks k back" carries k for hover
    np.testing.assert_array_equal(offsets.customdata, d.offset_k[:, 0, 1])
    losses = [t for t in fig.data if t.name and "copy (" in t.name]
    np.testing.assert_allclose(losses[1].y, d.loss_second)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted({s.x0 for s in lines}) == [10, 20] and len(lines) == 2 * (len(ROLES) + 1)
    names = [t.name for t in fig.data if not t.legendgroup]
    assert "copying half learned: step 20" in names and "the sidebar's step: 10" in names


def test_accuracy_chart_puts_accuracy_on_the_right_axis_and_the_loss_on_the_left():
    d = _dynamics()
    history = [{"step": s, "train_loss": 3.5 - s / 20} for s in range(1, 41)]
    fig = loss_against_accuracy(d, curves(history), formed=20)
    by_name = {t.name: t for t in fig.data}
    assert by_name["copy accuracy (per token)"].yaxis == "y2"
    assert (
        by_name["whole copy right"].yaxis == "y2"
        and by_name["loss on the second copy"].yaxis == "y"
    )
    assert by_name["training loss (all tokens)"].yaxis == "y"
    np.testing.assert_allclose(by_name["whole copy right"].y, d.exact_copy)
    predicted = by_name["(per-token accuracy)^7"]  # the whole copy, if tokens were independent
    assert predicted.yaxis == "y2"  # a prediction, drawn unlike the measured curve
    assert predicted.line.dash not in (None, "solid", by_name["whole copy right"].line.dash)
    np.testing.assert_allclose(predicted.y, d.copy_accuracy**7)
    assert tuple(fig.layout.yaxis2.range) == (0, 1.02)
    assert fig.layout.yaxis.range[1] >= 3.45  # the highest loss drawn fits
    assert "copying half learned: step 20" in by_name
    no_train = loss_against_accuracy(d, None, None)
    assert "training loss (all tokens)" not in {t.name for t in no_train.data}
    assert not no_train.layout.shapes
