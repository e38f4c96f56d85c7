"""Hyperfitting (viz_model/analysis/labs/hyperfit.py, scripts/hyperfit.py): the measures on hand-made
texts, the claim against the numbers it prints, a model compared with itself (no change to
report), the script's bundle reading its few pages back, and the bundled pair measured."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from types import SimpleNamespace

import pytest

from tests.claims_models import ASSETS
from viz_model.analysis.labs import hyperfit
from viz_model.analysis.training import training_data
from viz_model.analysis.usage import REPEAT_MARGIN, repetition_stats
from viz_model.bundles.load import load_bundle
from viz_model.text.data import TokenData, load_corpus, load_text

FITTED = "shakespeare-tiny-hyperfit"


def _greedy(text: str, recited: float = 0.0) -> hyperfit.Greedy:
    return hyperfit.Greedy(text, repetition_stats(text), recited)


LOOP = "the king the king the king the king the king the king"  # 3-word phrases: 8 of 10 repeated
FRESH = "a b c d e f g h i j k l"  # none repeated


def _report(base: list[str], fitted: list[str], recited: float = 0.0) -> hyperfit.HyperfitReport:
    return hyperfit.HyperfitReport(
        ["p"] * len(base),
        200,
        4000,
        [_greedy(t) for t in base],
        [_greedy(t, recited) for t in fitted],
        hyperfit.Losses(1.9, 1.86),
        hyperfit.Losses(0.05, 6.95),
    )


def test_recited_share_counts_the_text_s_phrases_found_in_the_pages():
    pages = hyperfit.phrases("to be or not to be that is the question")
    assert hyperfit.recited_share("that is the question", pages) == 1.0
    assert hyperfit.recited_share("x y z w", pages) == 0.0
    assert hyperfit.recited_share("to be or x y", pages) == pytest.approx(1 / 3)
    assert math.isnan(hyperfit.recited_share("two words", pages))


def test_held_out_prompts_are_evenly_spaced_windows_of_the_validation_split():
    data = SimpleNamespace(val=SimpleNamespace(tolist=lambda: list(range(1000))))
    prompts = hyperfit.held_out_prompts(data, n=5, length=10)
    assert [p[0] for p in prompts] == [0, 248, 495, 742, 990]
    assert all(p == list(range(p[0], p[0] + 10)) for p in prompts)
    short = SimpleNamespace(val=SimpleNamespace(tolist=lambda: [1, 2]))
    assert hyperfit.held_out_prompts(short, n=5, length=10) == []


def test_less_needs_a_margin_and_most_prompts():
    claim = hyperfit.hyperfit_claim(_report([LOOP] * 4, [FRESH] * 4))
    assert (
        claim.made and "repeated itself less than its base (lower on 4 of 4 prompts)" in claim.text
    )
    # lower on only half the prompts, however large the mean's drop: no verdict
    half = hyperfit.hyperfit_claim(_report([LOOP] * 4, [FRESH, FRESH, LOOP, LOOP]))
    assert not half.made and "about as much" in half.text
    more = hyperfit.hyperfit_claim(_report([FRESH] * 3, [LOOP] * 3))
    assert more.made and "more than its base (higher on 3 of 3 prompts)" in more.text


def test_the_claim_prints_its_own_numbers_and_says_how_much_is_recited():
    claim = hyperfit.hyperfit_claim(_report([LOOP] * 2, [FRESH] * 2, recited=0.9))
    n = claim.numbers
    assert f"the base repeated {n['base_repeated']:.0%}" in claim.text
    assert f"the hyperfitted model {n['fitted_repeated']:.0%}" in claim.text
    assert "from 1.90 to 0.05 nats a token" in claim.text and "from 1.86 to 6.95" in claim.text
    assert "90% of its 3-word phrases occur in the pages" in claim.text
    assert "most of what it writes is recited" in claim.text
    some = hyperfit.hyperfit_claim(_report([LOOP] * 2, [FRESH] * 2, recited=0.3))
    assert "part of its variety is recited" in some.text
    none = hyperfit.hyperfit_claim(_report([LOOP] * 2, [FRESH] * 2, recited=REPEAT_MARGIN / 2))
    assert "recited" not in none.text


def test_a_model_compared_with_itself_reports_no_change(models_dir):
    bundle = load_bundle(models_dir / "test-char")
    text = load_corpus("shakespeare")[:3000]
    data = TokenData.from_text(text, bundle.tokenizer, 0.3)
    report = hyperfit.compare(bundle.model, bundle.model, bundle.tokenizer, text, data, data, 60)
    assert [g.text for g in report.base] == [g.text for g in report.fitted]
    assert report.base_loss == report.fitted_loss and report.lower_on() == 0
    claim = hyperfit.hyperfit_claim(report)
    assert not claim.made and "about as much as its base" in claim.text


def test_a_corpus_s_first_characters_are_read_back_as_the_bundle_s_text():
    source = {"corpus": "shakespeare", "first_chars": 123}
    assert load_text(source) == load_corpus("shakespeare")[:123]
    assert load_text({"corpus": "shakespeare"}) == load_corpus("shakespeare")


def test_the_script_makes_a_bundle_that_names_its_base_and_measures_forgetting(tmp_path):
    from scripts.hyperfit import hyperfit_run, parse_args

    out = tmp_path / "fit"
    args = parse_args(["--out", str(out), "--chars", "3000", "--steps", "4"])
    run = hyperfit_run(args, "python scripts/hyperfit.py --steps 4")
    run = dataclasses.replace(run, cfg=dataclasses.replace(run.cfg, eval_every=2))
    records = [r for r in run.steps() if r.val_loss is not None]
    assert records and all(r.old_val_loss is not None for r in records)
    fitted = load_bundle(out)
    assert fitted.meta["base"] == "shakespeare-tiny" and fitted.meta["hyperfit"] == {
        "first_chars": 3000
    }
    assert load_text(fitted.meta["data"]) == load_corpus("shakespeare")[:3000]


@pytest.mark.system  # 16 greedy continuations of 200 tokens: seconds
def test_the_bundled_hyperfitted_model_memorised_its_pages_and_the_page_says_what_it_measures():
    fitted, base = load_bundle(ASSETS / FITTED), load_bundle(ASSETS / "shakespeare-tiny")
    history = json.loads((ASSETS / FITTED / "history.json").read_text())
    assert history[-1]["train_loss"] < 0.1  # near zero: what makes it hyperfitted
    pages, rest = training_data(fitted), training_data(base)
    text = load_text(fitted.meta["data"])
    report = hyperfit.compare(base.model, fitted.model, base.tokenizer, text, pages, rest, 200)
    claim = hyperfit.hyperfit_claim(report)
    assert report.fitted_loss.pages < 0.2 < report.base_loss.pages
    assert report.fitted_loss.rest > report.base_loss.rest  # memorising cost the rest
    said = re.search(r"it repeated itself (less|more|about as much)", claim.text).group(1)
    b, f = report.mean("base", "repeated"), report.mean("fitted", "repeated")
    assert said == (
        "less" if f <= b - REPEAT_MARGIN else "more" if f >= b + REPEAT_MARGIN else "about as much"
    )
