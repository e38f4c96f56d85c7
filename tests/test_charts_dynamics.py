"""Training-dynamics figures: one line per head in every role row, a few of them in colour and
named at their line's end (the followed head thick), the rest grey; the marks in every row and
named once; and accuracy on its own 0..1 axis."""

from __future__ import annotations

import itertools

import numpy as np

from ui.charts.common import (
    CONTRAST_MIN,
    FEW_SERIES,
    MIN_HUE_GAP,
    contrast_on_white,
    hue_degrees,
    hue_gap,
)
from ui.charts.dynamics import loss_against_accuracy, roles_over_training
from viz_model.analysis.dynamics import ROLES, Dynamics
from viz_model.analysis.training import curves

S, L, H = 4, 2, 3


def _dynamics(L: int = L, H: int = H) -> Dynamics:
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
    assert sorted(t.name for t in heads[: L * H]) == [
        "L0 H0",
        "L0 H1",
        "L0 H2",
        "L1 H0",
        "L1 H1",
        "L1 H2",
    ]
    assert not any(t.showlegend for t in heads)  # named at the line's end or on hover instead
    induction_l0h2 = [t for t in heads if t.name == "L0 H2"][1]  # the second row
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


def _rows(fig) -> dict[str, list]:
    """The head lines of each role row, by the row's y axis."""
    rows: dict[str, list] = {}
    for t in fig.data:
        if t.legendgroup:
            rows.setdefault(t.yaxis, []).append(t)
    return rows


def test_a_projector_sees_a_few_heads_in_distinct_strong_colours_and_the_rest_in_grey():
    """Ten heads in ten pastel colours do not read in a lecture hall: in every row at most
    FEW_SERIES lines have a hue, no two of them (or the loss row's) share one, and each is dark
    enough to survive a washed-out projector; the other heads are grey, so no hue is spent."""
    d = _dynamics(L=2, H=5)  # ten heads, as the model
    top_induction = d.head_names()[int(d.scores["induction"][-1].argmax())]
    top_previous = d.head_names()[int(d.scores["previous-token"][-1].argmax())]
    fig = roles_over_training(d, focus="L0 H0")
    rows = _rows(fig)
    assert len(rows) == len(ROLES)
    losses = {t.line.color for t in fig.data if not t.legendgroup and t.x[0] is not None}
    for axis, traces in rows.items():
        assert len(traces) == 10  # every head is still drawn (and named on hover)
        coloured = {t.name: t.line.color for t in traces if hue_degrees(t.line.color) is not None}
        assert 1 <= len(coloured) <= FEW_SERIES, axis
        assert {"L0 H0", top_induction, top_previous} <= set(coloured)  # followed + key heads
        for a, b in itertools.combinations([*coloured.values(), *losses], 2):
            assert hue_gap(a, b) >= MIN_HUE_GAP, (axis, a, b)
        assert all(contrast_on_white(c) >= CONTRAST_MIN for c in coloured.values())
        drawn_over = [t.name for t in traces].index(next(iter(coloured)))
        assert all(t.name in coloured for t in traces[drawn_over:])  # colour on top of the grey


def test_the_coloured_lines_are_named_at_their_end_and_the_legend_holds_only_the_marks():
    d = _dynamics(L=2, H=5)
    d.scores["first-token sink"][-1] = 0.0  # every head ends at 0 there: labels pile up
    fig = roles_over_training(d, focus="L1 H3", formed=20, chosen=10)
    last = float(d.steps[-1])
    labels = [a for a in fig.layout.annotations if a.x == last]
    for axis, traces in _rows(fig).items():
        for t in traces:
            if hue_degrees(t.line.color) is None:
                continue
            suffix = axis[1:]
            (label,) = [a for a in labels if a.yref == f"y{suffix}" and t.name in a.text]
            assert label.xref == f"x{suffix}" and label.font.color == t.line.color
            assert label.xanchor == "left" and not label.showarrow  # just right of the end
        ys = sorted(a.y for a in labels if a.yref == f"y{axis[1:]}")
        assert all(b - a > 0.1 for a, b in zip(ys, ys[1:], strict=False))  # they do not overlap
        low, high = fig.layout[f"yaxis{axis[1:]}"].range
        assert low <= ys[0] and ys[-1] <= high  # plotly hides a label outside its axis range
    loss_labels = [a.text for a in labels if a.yref == f"y{len(ROLES) + 1}"]
    assert any("first copy" in t for t in loss_labels) and any("second" in t for t in loss_labels)
    in_legend = [t.name for t in fig.data if t.showlegend is not False]
    assert sorted(in_legend) == ["copying half learned: step 20", "the sidebar's step: 10"]
    assert fig.layout.legend.yref == "container"  # under the axis title, never over it


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
