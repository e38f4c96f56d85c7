"""Issue 36: each lesson reveal agrees with what its page shows on a model trained in class, at its
step-0 snapshot (random weights) and at its final step. A class run of the Training page's tiny
preset is trained here (tests/claims_models.py) and its snapshots are opened as the scrubber does.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.claims_models import train_class_model
from tests.lesson_util import bundle
from viz_model.analysis.labs import interventions as iv
from viz_model.analysis.untrained import untrained_twin
from viz_model.bundles.load import load_bundle
from viz_model.lessons import answers_attention, answers_beyond
from viz_model.lessons.kinds import subject_for
from viz_model.lessons.registry import ANSWERS
from viz_model.lessons.truth import apart, nonzero

PROMPT = "To be, or not to be, that is the question"
STEPS = 60


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    return load_bundle(train_class_model(tmp_path_factory.mktemp("class") / "run", steps=STEPS))


def at(final, step: int | None):
    """The bundle the scrubber opens at `step` (None: the final model)."""
    if step is None:
        return final
    return dataclasses.replace(final, model=final.load_snapshot(step), step=step)


@pytest.mark.parametrize(
    ("kind", "windows", "none"),
    [
        ("most_needed_head", answers_attention.page_windows, answers_attention.NONE),
        ("most_damaging_head", None, answers_beyond.NONE),
    ],
)
@pytest.mark.parametrize("step", [0, None])
def test_the_head_sweep_reveal_is_the_interventions_pages_claim_against_random_weights(
    class_run, kind, windows, none, step
):
    """The page names a head only beyond what a head of random weights raises the loss
    (iv.head_sweep_claim with the untrained twin's sweep); the reveal named L0H2 at step 0, the
    random weights themselves, where the page said no head stands out."""
    b = at(class_run, step)
    subject = subject_for(b, PROMPT)
    truth = ANSWERS[kind](subject, {})
    cut = windows(b, subject.ids) if windows else (answers_beyond.validation_windows(subject))
    sweep = iv.head_sweep_stats(b.model, cut, "zero")
    blank = iv.head_sweep_stats(untrained_twin(b).model, cut, "zero")
    page = iv.head_sweep_claim(sweep, k=1 if kind == "most_needed_head" else 3, untrained=blank)
    assert truth.why == page.text
    assert (truth.value != none) == page.made
    if step == 0:  # the random weights are their own twin: no head beats them
        assert truth.value == none and not truth.holds


def test_a_loss_asked_past_the_end_of_a_short_run_says_the_run_stopped(class_run):
    """'By step 60 it was 2.9: training on from there did not lower it' of a run that ended at
    step 60, asked for step 1,500 (the stop is written for shakespeare-char)."""
    truth = ANSWERS["val_loss_at"](subject_for(class_run, PROMPT), {"step": 1500})
    assert not truth.holds
    assert "training on from there" not in truth.why
    assert f"trained only to step {STEPS}" in truth.why


def test_helpers_print_a_winner_apart_and_no_nonzero_value_as_zero():
    assert apart(0.2712, 0.2587) == 2 and apart(0.2612, 0.2587) == 3
    assert apart(0.2612, 0.2608) == 4
    assert nonzero([0.0012, -0.0031, 0.0]) == 3 and nonzero([0.5]) == 2


def _printed(text: str) -> list[str]:
    import re

    return re.findall(r"[-+]?\d+\.\d+", text)


def test_at_random_weights_a_reveal_that_names_a_winner_prints_it_apart(class_run):
    """At step 0 the reveals read 'neuron 127 fires hardest, at 0.26; the next is neuron 48 at
    0.26', 'σ = 0.033; the next largest is 0.033', ''l' probability 0.02; the runner-up gets
    0.02' and 'promotes '5' (+0.00) ... suppresses 'J' (-0.00)'."""
    subject = subject_for(at(class_run, 0), PROMPT)
    neuron = ANSWERS["top_neuron"](subject, {"layer": 0, "token": ","})
    first, second = _printed(neuron.why.split("fires hardest")[1])[:2]
    assert first != second
    sigma = ANSWERS["largest_sigma_token"](subject, {"ln": "blocks.0.ln1"})
    top, runner = _printed(sigma.why)[:2]
    assert top != runner
    token = ANSWERS["top_next_token"](subject, {})
    p1, p2 = _printed(token.why)[:2]
    assert p1 != p2 and len(p1.split(".")[1]) >= 3  # as the Next token page's bars: 3 decimals
    promoted = ANSWERS["promoted_token"](subject, {"layer": 0, "neuron": 5})
    listed = _printed(promoted.why.split("promotes")[1].split("On this prompt")[0])
    assert listed and all(float(v) != 0 for v in listed)
    assert listed[0] != listed[1]


def test_the_printed_tie_rule_keeps_two_decimals_on_a_trained_model():
    subject = subject_for(bundle("shakespeare-char"), PROMPT)
    neuron = ANSWERS["top_neuron"](subject, {"layer": 0, "token": ","})
    first, second = (float(v) for v in _printed(neuron.why.split("fires hardest")[1])[:2])
    assert first > second
    assert np.isclose(first, neuron.numbers["activation"], atol=0.005)
