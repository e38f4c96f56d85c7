"""The Generation stepper's history in a link: encode, decode, rebuild, and bad links."""

from __future__ import annotations

import pytest

from tests.conftest import VOCAB
from viz_model.analysis.generation import (
    LINK_MAX_STEPS,
    Action,
    LinkedStep,
    Step,
    decode_steps,
    encode_steps,
    rebuild,
    replay,
    restore_link,
)
from viz_model.model.sampling import SamplingSettings

PROMPT = [3, 7, 1, 3]
HOT = SamplingSettings(1.5)
COOL = SamplingSettings(0.5, 5, 0.9)


def _history(model, seed: int = 3) -> list[Step]:
    """Six hot steps, a forced one at index 2, then three at other settings (one forced)."""
    actions = [Action(HOT)] * 2 + [Action(HOT, 11)] + [Action(HOT)] * 3
    actions += [Action(COOL), Action(COOL, 0), Action(COOL)]
    return replay(model, PROMPT, actions, seed)


def test_encode_writes_ids_forced_marks_and_settings_only_where_they_change():
    steps = [
        Step(5, 0.2, 5, False, HOT),
        Step(7, 0.1, 4, True, HOT),
        Step(2, 0.3, 2, False, COOL),
        Step(9, 0.3, 2, True, COOL),
    ]
    assert encode_steps(steps, HOT) == "5_f7_t0.5k5p0.9_2_f9"
    # the first run's settings are written when they are not the page's current ones
    assert encode_steps(steps[:1], COOL) == "t1.5k0p1_5"
    assert encode_steps([], HOT) == ""


def test_a_history_round_trips_through_its_link(model):
    steps = _history(model)
    text = encode_steps(steps, HOT)
    linked, problem = decode_steps(text, VOCAB, HOT)
    assert problem is None
    assert linked == [LinkedStep(s.token, s.forced, s.settings) for s in steps]
    rebuilt, misfit = rebuild(model, PROMPT, linked, seed=3)
    assert misfit is None and rebuilt == steps  # same tokens, probabilities, sampler's picks
    assert restore_link(model, PROMPT, text, 3, HOT) == (steps, [])


def test_a_sampled_token_that_no_longer_follows_cuts_the_history_there(model):
    steps = _history(model)
    linked, _ = decode_steps(encode_steps(steps, HOT), VOCAB, HOT)
    i = 4  # a sampled step: give it a token the sampler did not draw
    assert not linked[i].forced
    linked[i] = LinkedStep((linked[i].token + 1) % VOCAB, False, linked[i].settings)
    rebuilt, misfit = rebuild(model, PROMPT, linked, seed=3)
    assert misfit == i and rebuilt == steps[:i]
    # forced tokens are forced again whatever the seed: an all-forced link always fits
    forced = [LinkedStep(s.token, True, s.settings) for s in steps]
    assert [s.token for s in rebuild(model, PROMPT, forced, seed=99)[0]] == [s.token for s in steps]


@pytest.mark.parametrize(
    ("text", "kept", "words"),
    [
        ("abc", [], "entry 1 of gen= is neither"),
        ("5_x_7", [5], "entry 2 of gen= is neither"),
        ("5__7", [5], "entry 2 of gen= is neither"),
        ("5_f-3", [5], "entry 2 of gen= is neither"),
        ("5_99999_6", [5], "token id 99999, outside this model's vocabulary of 23"),
        ("4_t1k0p2_5", [4], "entry 2 of gen= holds impossible sampling settings"),
        ("t-1k0p1_5", [], "entry 1 of gen= is neither"),
        ("5_tinfk0p1", [5], "entry 2 of gen= is neither"),
    ],
)
def test_a_bad_link_keeps_what_fits_and_says_what_did_not(text, kept, words):
    linked, problem = decode_steps(text, VOCAB, HOT)
    assert [s.token for s in linked] == kept
    assert problem is not None and words in problem


def test_links_carry_at_most_link_max_steps(model):
    too_long = "_".join(["1"] * (LINK_MAX_STEPS + 5))
    linked, problem = decode_steps(too_long, VOCAB, HOT)
    assert len(linked) == LINK_MAX_STEPS and str(LINK_MAX_STEPS) in problem
    steps = [Step(1, 0.5, 1, False, HOT)] * (LINK_MAX_STEPS + 5)
    assert encode_steps(steps, HOT).split("_") == ["1"] * LINK_MAX_STEPS


def test_restore_link_names_the_misfit_and_keeps_the_steps_before_it(model):
    steps = _history(model)
    text = encode_steps(steps, HOT) + "_junk"
    rebuilt, problems = restore_link(model, PROMPT, text, 3, HOT)
    assert rebuilt == steps and len(problems) == 1 and "entry 11 of gen= is neither" in problems[0]
    # another seed than the link's: a sampled step draws another token; the steps before it stay
    rebuilt, problems = restore_link(model, PROMPT, encode_steps(steps, HOT), 4, HOT)
    assert len(rebuilt) < len(steps) and "is not what this model draws" in problems[0]
    assert [s.token for s in rebuilt] == [s.token for s in steps[: len(rebuilt)]]
