"""A run's records read at a training step: the validation loss of the weights at that step, and
whose it is when none was recorded by then (training.val_loss_at, loss_step_label)."""

from __future__ import annotations

from viz_model.analysis.training import RecordedLoss, loss_step_label, val_loss_at

# a run like a class's: step 0 kept (random weights), evaluations from step 100, final at 650
HISTORY = [
    {"step": 0, "lr": 0.0},
    *({"step": s, "train_loss": 3.0} for s in range(1, 651)),
]
for record in HISTORY:
    if record["step"] in (100, 300, 650):
        record["val_loss"] = {100: 2.57, 300: 2.29, 650: 1.97}[record["step"]]


def test_the_final_weights_get_the_last_evaluation():
    assert val_loss_at(HISTORY, {}, None) == RecordedLoss(1.97, 650, True)
    assert loss_step_label(val_loss_at(HISTORY, {}, None), None) == ""


def test_a_step_gets_the_last_evaluation_by_then_labelled_with_its_step():
    assert val_loss_at(HISTORY, {}, 316) == RecordedLoss(2.29, 300, False)
    assert loss_step_label(val_loss_at(HISTORY, {}, 316), 316) == "step 300"
    assert val_loss_at(HISTORY, {}, 100) == RecordedLoss(2.57, 100, False)


def test_a_step_before_any_evaluation_gets_the_final_steps_and_says_so():
    """Issue 36: at step 0 the pages printed the step-650 loss under a "(step 0)" heading."""
    for step in (0, 3, 99):
        found = val_loss_at(HISTORY, {}, step)
        assert found == RecordedLoss(1.97, 650, True)
        assert loss_step_label(found, step) == "final step 650"


def test_meta_stands_in_for_a_history_without_evaluations():
    history = [{"step": s, "train_loss": 3.0} for s in range(1, 151)]
    assert val_loss_at(history, {"val_loss": 2.0}, 37) == RecordedLoss(2.0, 150, True)
    assert val_loss_at(history, {"val_loss": 2.0, "step": 160}, None) == RecordedLoss(
        2.0, 160, True
    )
    assert val_loss_at(history, {}, 37) is None and val_loss_at([], {}, None) is None
