"""Every sentence the Using a model page prints about the model on screen is a claim: here each
claim function runs on the bundled models (shakespeare-char, shakespeare-tiny, the few-shot task
model) and on a freshly trained one (conftest's test-char), and each decision is recomputed from
the numbers the claim carries."""

from __future__ import annotations

from functools import cache

import pytest

from tests.claims_models import ASSETS
from viz_model.analysis import noisy_channel as nc
from viz_model.analysis import scoring, usage
from viz_model.analysis.labs import fewshot
from viz_model.bundles.load import load_bundle
from viz_model.model.decoding import beam_search, decode
from viz_model.text.data import load_corpus

PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"
MODELS = ["shakespeare-char", "shakespeare-tiny", "fewshot-tiny", "test-char"]


@cache
def _bundle(name: str, models_dir: str):
    folder = ASSETS / name if name != "test-char" else f"{models_dir}/test-char"
    return load_bundle(folder)


@pytest.fixture(params=MODELS)
def bundle(request, models_dir):
    return _bundle(request.param, str(models_dir))


def _prompt(bundle) -> list[int]:
    data = bundle.meta.get("data") or {}
    text = bundle.meta["example_prompts"][0] if data.get("task") else PROMPT
    return bundle.tokenizer.encode(text)[-bundle.config.n_ctx :]


def test_the_teacher_forcing_claim(bundle):
    race = usage.forcing_race(bundle.model, _prompt(bundle)[:40])
    claim = usage.forcing_claim(race)
    assert claim.made == (claim.numbers["max_difference"] <= claim.numbers["tolerance"])
    assert claim.made  # every bundled model is causal: one pass equals the passes
    assert ("faster" in claim.text) == (claim.numbers["ratio"] > 1)


def test_the_forced_token_claim(bundle):
    ids = _prompt(bundle)
    alts, _ = usage.alternatives(bundle.model, ids, 10)
    claim = usage.forced_claim(usage.force_token(bundle.model, ids, 30, 0, alts[-1]))
    diff, threshold = claim.numbers["difference"], claim.numbers["threshold"]
    assert claim.made == (abs(diff) > threshold)
    assert ("raised" in claim.text) == (diff > threshold)
    assert ("lowered" in claim.text) == (diff < -threshold)


def test_the_repetition_claim(bundle):
    out = usage.compare_decoders(bundle.model, _prompt(bundle), 80, 1.0, 0, 1.3)
    stats = {k: usage.repetition_stats(bundle.tokenizer.decode(v)) for k, v in out.items()}
    claim = usage.repetition_claim(stats)
    g, s, p = (stats[k].repeated_phrases for k in usage.DECODERS)
    m = claim.numbers["margin"]
    words = {"sampling": "sampling", "penalty": "greedy with the penalty"}
    for other, name in zip((s, p), words.values(), strict=True):  # each comparison on its own
        said = (
            "more than" if g >= other + m else "less than" if g <= other - m else "about as much as"
        )
        assert f"{said} {name} ({g:.0%} against {other:.0%})" in claim.text
    assert claim.made == any(g >= o + m or g <= o - m for o in (s, p))
    assert f"greedy {g:.0%}" in claim.text


def test_the_beam_claim_and_width_one_is_greedy(bundle):
    ids = _prompt(bundle)
    steps = beam_search(bundle.model, ids, 3, 8)
    greedy = beam_search(bundle.model, ids, 1, 8)[-1][0]
    assert list(greedy.tokens) == decode(bundle.model, ids, 8, use_kv_cache=False)
    claim = usage.beam_claim(steps[-1][0], greedy, 3)
    assert claim.made == (claim.numbers["difference"] > 0 and steps[-1][0].tokens != greedy.tokens)
    assert ("below greedy" in claim.text) == (claim.numbers["difference"] < 0)


def test_the_ranking_claim(bundle):
    tok = bundle.tokenizer
    cands = [(c, tok.encode(c)) for c in (" hate", " death", " war", " a thing of nothing")]
    scores = scoring.score_candidates(bundle.model, tok.encode("The opposite of love is"), cands)
    by_total, by_token = scoring.rankings(scores)
    claim = scoring.ranking_claim(scores)
    assert claim.made == (by_total != by_token)
    assert ("disagree" in claim.text) == (by_total[0] != by_token[0])


def test_the_noisy_channel_claim(bundle):
    words = nc.vocabulary(load_corpus("shakespeare"))
    ranked = nc.correct(
        bundle.model, bundle.tokenizer.encode, "But soft, what ", "lihgt", " ", words, 0.01
    )
    claim = nc.correction_claim("lihgt", ranked)
    assert claim.made == bool(ranked)
    assert claim.numbers["best_score"] == pytest.approx(max(c.score for c in ranked))
    by_prior = max(ranked, key=lambda c: c.log_prior)
    assert ("alone would pick" in claim.text) == (by_prior.word != ranked[0].word)


def test_the_fewshot_claim_on_the_task_model_and_its_absence_elsewhere(bundle):
    task_len = fewshot.task_len_of(bundle.meta)
    if task_len is None:
        assert (bundle.meta.get("data") or {}).get("task") != fewshot.TASK
        return
    curve = fewshot.fewshot_curve(
        bundle.model, bundle.tokenizer.encode, fewshot.max_examples(task_len)
    )
    claim = fewshot.fewshot_claim(curve)
    n = claim.numbers
    rose = n["accuracy_last"] - n["accuracy_0"] > fewshot.Z * n["rise_se"]
    above = n["accuracy_last"] > n["chance"] + fewshot.Z * n["last_se"]
    assert claim.made == (rose and above)
    assert claim.made  # the bundled task model learned to read the rule from its examples
