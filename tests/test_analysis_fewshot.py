"""Few-shot prompting (viz_model/analysis/labs/fewshot.py) and its task (text/data.py): the task's
lines follow one rule each, the prompts are what the model trained on, chance is exact, and the
claim follows the numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import tiny_model
from viz_model.analysis.labs import fewshot
from viz_model.analysis.labs.fewshot import FewShotCurve, fewshot_claim
from viz_model.text.data import FEWSHOT_RULES, fewshot_pairs, task_loss_floor, task_text


def test_every_task_line_follows_one_rule_that_only_its_examples_reveal():
    lines = task_text("fewshot", 300, seed=2, seq_len=48).splitlines()
    rules_seen = set()
    for line in lines:
        pairs = [p.split(">") for p in line.split(" ")]
        assert len(pairs) == fewshot_pairs(48) == 6
        fitting = {r for r, f in FEWSHOT_RULES.items() if all(f(a) == b for a, b in pairs)}
        assert fitting  # at least one rule explains the whole line
        rules_seen |= fitting
    assert rules_seen == set(FEWSHOT_RULES)
    assert FEWSHOT_RULES["shift"]("abh") == "bca"


def test_the_loss_floor_is_the_rule_and_the_words_over_the_characters():
    n = fewshot_pairs(48)
    expected = (math.log(3) + n * 3 * math.log(8)) / (n * 8)
    assert task_loss_floor("fewshot", 48) == pytest.approx(expected)


def test_prompts_are_seeded_lines_cut_before_the_answer():
    prompts = fewshot.make_prompts(2, 20, seed=5)
    assert prompts == fewshot.make_prompts(2, 20, seed=5)
    assert prompts != fewshot.make_prompts(2, 20, seed=6)
    for prompt, answer in prompts:
        body = prompt.removeprefix("\n")
        *examples, query = body.split(" ")
        assert len(examples) == 2 and query.endswith(">") and len(answer) == 3
        rules = [r for r, f in FEWSHOT_RULES.items() if f(query[:-1]) == answer]
        assert any(
            all(FEWSHOT_RULES[r](a) == b for a, b in (e.split(">") for e in examples))
            for r in rules
        )
    assert all(len(p) == len(prompts[0][0]) for p, _ in prompts)  # one batch, one length


def test_chance_is_the_best_rule_blind_guess():
    assert fewshot.rule_blind_accuracy() == pytest.approx(7 / 8 * 1 / 3 + 1 / 8 * 2 / 3)


def test_the_curve_runs_on_any_model_and_an_untrained_one_stays_near_nothing():
    model = tiny_model(vocab_size=12, n_ctx=64)
    stoi = {c: i for i, c in enumerate("\nabcdefgh> ")}
    curve = fewshot.fewshot_curve(model, lambda s: [stoi[c] for c in s], 2, n_prompts=30)
    assert curve.ks == [0, 1, 2] and curve.accuracy.shape == (3,)
    assert (curve.loss > 0).all() and (curve.accuracy <= 0.2).all()
    assert not fewshot_claim(curve).made


def _curve(acc, n=200) -> FewShotCurve:
    return FewShotCurve(list(range(len(acc))), np.array(acc), np.ones(len(acc)), n, 0.375)


@pytest.mark.parametrize(
    ("acc", "made"),
    [
        ([0.2, 0.4, 0.6], True),  # rises, well above chance
        ([0.2, 0.3, 0.4], False),  # rises, but not beyond chance
        ([0.5, 0.5, 0.52], False),  # above chance from the start: no rise
        ([0.6, 0.4, 0.3], False),
    ],
)
def test_the_claim_needs_a_rise_and_a_level_beyond_chance(acc, made):
    claim = fewshot_claim(_curve(acc))
    assert claim.made == made
    assert ("rises with the examples" in claim.text) == made
    assert "37.5%" in claim.text
