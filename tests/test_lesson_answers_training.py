"""The training lesson (assets/lessons/5_training.toml): every stop's answer, measured on the model
it names, agrees with a computation of its own (history.json read directly, the corpus counted
with Python, the snapshots run prefix by prefix, the copy losses computed by hand), and each kind
says so when the lecture's observation does not hold."""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.lesson_util import bundle, measured, stops
from tests.test_lesson_answers_output import prefix_surprisals
from viz_model.analysis import dynamics as dyn
from viz_model.analysis import training as tr
from viz_model.analysis.tokens import token_text
from viz_model.bundles.checkpoint import load_snapshot
from viz_model.lessons import answers_training as tr_kinds
from viz_model.lessons.kinds import subject_for
from viz_model.text.data import load_text

PROMPT = "ROMEO:\nBut soft, what light through yonder window br"


def history_json(name: str) -> list[dict]:
    return json.loads((bundle(name).path / "history.json").read_text())


def val_losses(history: list[dict]) -> list[float]:
    return [r["val_loss"] for r in history if isinstance(r.get("val_loss"), int | float)]


def words(text: str) -> list[str]:
    """Runs of letters and apostrophes, apostrophes trimmed from the ends, lower case."""
    runs = re.sub(r"[^A-Za-z']+", " ", text).split()
    return [w.strip("'").lower() for w in runs if w.strip("'")]


# ---- independent answers -------------------------------------------------------------------------


def _blind_guess_loss(subject, args, truth):
    V = len(json.loads((subject.bundle.path / "tokenizer.json").read_text())["model"]["vocab"])
    assert truth.value == pytest.approx(math.log(V))
    first = history_json(subject.bundle.name)[0]["train_loss"]
    return abs(first - math.log(V)) <= 0.1 * math.log(V)


def _loss_among_baselines(subject, args, truth):
    last = val_losses(history_json(subject.bundle.name))[-1]
    # shakespeare-tiny stored the baselines its run counted on the same text and characters
    stored = bundle("shakespeare-tiny").meta["baselines"]
    assert truth.numbers["bigram"] == pytest.approx(stored["bigram"], abs=1e-6)
    if last < stored["bigram"]:
        expected = "below the bigram line"
    elif last < stored["unigram"]:
        expected = "between the unigram and bigram lines"
    else:
        expected = "between the blind-guess and unigram lines"
    assert truth.value == expected
    return expected == "below the bigram line"


def _val_loss_at(subject, args, truth):
    evaluated = [(r["step"], r["val_loss"]) for r in history_json(subject.bundle.name)
                 if "val_loss" in r]  # fmt: skip
    at = [loss for step, loss in evaluated if step <= args["step"]][-1]
    assert truth.value == pytest.approx(at)
    assert truth.check(at + 0.1) and not truth.check(at + 0.2)
    return evaluated[-1][1] < at - 0.02


def _sample_real_words(subject, args, truth):
    samples = {r["step"]: r["sample"] for r in history_json(subject.bundle.name) if "sample" in r}
    known = set(words(load_text(subject.bundle.meta["data"])))
    found = words(samples[args["step"]])
    share = 100 * sum(w in known for w in found) / len(found)
    assert truth.value == pytest.approx(share, abs=100 / len(found))
    first, last = (words(samples[s]) for s in (min(samples), max(samples)))
    p0, p1 = (sum(w in known for w in ws) / len(ws) for ws in (first, last))
    se = math.sqrt(p0 * (1 - p0) / len(first) + p1 * (1 - p1) / len(last))
    return bool(p1 - p0 > 2 * se)


def _snapshot_model(subject, step):
    return load_snapshot(subject.bundle.path, step, subject.bundle.config)


def _snapshot_next_token(subject, args, truth):
    model = _snapshot_model(subject, args["step"])
    with torch.no_grad():
        top = int(model(torch.tensor(list(subject.ids)))[-1].argmax())
    assert truth.value == token_text(subject.bundle.tokenizer, top)
    common = collections.Counter(load_text(subject.bundle.meta["data"])).most_common(1)[0][0]
    # what it has learned follows from its validation loss against the counting baselines
    base = tr.bundle_baselines(subject.bundle)
    loss = truth.numbers["val_loss"]
    assert truth.numbers["unigram"] == pytest.approx(base.unigram)
    assert f"validation loss is {loss:.3f}" in truth.why
    if truth.value == common and loss < base.unigram:
        assert "not yet what follows what" not in truth.why
        assert f"below the unigram line ({base.unigram:.3f})" in truth.why
        assert "begun to learn what follows what" in truth.why
    elif truth.value == common:
        assert "not yet what follows what" in truth.why
    return truth.value == common


def _snapshot_perplexity(subject, args, truth):
    ids = list(subject.ids)
    ppl = math.exp(np.mean(prefix_surprisals(_snapshot_model(subject, args["step"]), ids)))
    final = math.exp(np.mean(prefix_surprisals(subject.bundle.model, ids)))
    assert truth.value == pytest.approx(ppl, rel=1e-3)
    return bool(ppl > final)


def _copy_losses(b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, first-copy loss, second-copy loss) at every saved step, by hand."""
    k = dyn.probe(b.tokenizer, b.meta, b.config.n_ctx, n=1).shape[1] // 2
    x = torch.as_tensor(dyn.probe(b.tokenizer, b.meta, b.config.n_ctx, n=dyn.copy_probes(k)))
    steps = [s for s in b.snapshot_steps() if s < b.meta["step"]] + [b.meta["step"]]
    first, second = [], []
    for s in steps:
        model = b.model if s == b.meta["step"] else load_snapshot(b.path, s, b.config)
        with torch.no_grad():
            logits = model(x)
        nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), x[:, 1:], reduction="none")
        first.append(float(nll[:, : k - 1].mean()))
        second.append(float(nll[:, k : 2 * k - 1].mean()))
    return np.array(steps), np.array(first), np.array(second)


def _copy_phase_change(subject, args, truth):
    steps, _, second = _copy_losses(subject.bundle)
    fall = second[0] - second.min()
    window = 0.1 * steps[-1]
    best = max(
        (second[i] - second[j] for i in range(len(steps)) for j in range(i + 1, len(steps))
         if steps[j] - steps[i] <= window),
        default=0.0,
    )  # fmt: skip
    sudden = bool(best >= 0.5 * fall)
    assert (truth.value == "a sudden drop") == sudden
    return sudden


def _copy_half_learned_step(subject, args, truth):
    steps, first, second = _copy_losses(subject.bundle)
    gap = first - second
    half = steps[int(np.argmax(gap >= gap[0] + (gap[-1] - gap[0]) / 2))]
    assert truth.value == half
    return True


CHECKS = {
    "blind_guess_loss": _blind_guess_loss,
    "loss_among_baselines": _loss_among_baselines,
    "val_loss_at": _val_loss_at,
    "sample_real_words": _sample_real_words,
    "snapshot_next_token": _snapshot_next_token,
    "snapshot_perplexity": _snapshot_perplexity,
    "copy_phase_change": _copy_phase_change,
    "copy_half_learned_step": _copy_half_learned_step,
}


@pytest.mark.parametrize(("n", "stop"), stops("5_training"), ids=lambda x: str(x)[:20])
def test_each_stop_is_answered_by_its_model_as_an_independent_computation_says(n, stop):
    subject, truth = measured("5_training", stop)
    holds = CHECKS[stop.answer](subject, stop.args, truth)
    assert truth.holds == holds
    assert truth.holds, f"stop {n}: the bundled model should show what the lesson teaches"


def test_every_kind_of_the_lesson_is_checked_here():
    used = {stop.answer for _, stop in stops("5_training")}
    assert used <= set(CHECKS) and len(stops("5_training")) >= 6


def test_a_stop_about_a_snapshot_opens_the_page_at_that_step():
    for _, stop in stops("5_training"):
        if "step" in stop.args and stop.page != "Training":
            assert stop.view["train_step"] == stop.args["step"]
            assert stop.args["step"] in bundle(stop.model).snapshot_steps()
        if stop.view.get("hist_sample") is not None:
            assert stop.view["hist_sample"] == stop.args["step"]


def test_the_one_minute_run_trains_on_the_characters_the_stop_measures():
    """The run the first stop starts (Shakespeare, characters) has the vocabulary, so the blind
    guess, of the model the stop is measured on."""
    from viz_model.text.tokenization import Tokenizer

    _, first = stops("5_training")[0]
    assert first.page == "Training" and first.view["t_minutes"] == 1.0
    assert first.view["t_data"] == "corpus"  # the Training page's bundled corpus: Shakespeare
    corpus = load_text({"corpus": "shakespeare"})
    run_vocab = Tokenizer.train(corpus, first.view["t_tok"]).vocab_size
    assert run_vocab == bundle(first.model).tokenizer.vocab_size


# ---- when the lesson's observation does not hold --------------------------------------------------


def test_a_first_loss_far_from_a_blind_guess_is_said_to_be_one():
    b = dataclasses.replace(bundle("shakespeare-tiny"), history=[{"step": 1, "train_loss": 1.0}])
    truth = tr_kinds.blind_guess_loss(subject_for(b, PROMPT))
    assert truth.value == pytest.approx(math.log(77)) and not truth.holds
    empty = dataclasses.replace(b, history=[])
    assert not tr_kinds.blind_guess_loss(subject_for(empty, PROMPT)).holds


def test_a_model_without_the_causal_mask_is_not_compared_with_counting():
    truth = tr_kinds.loss_among_baselines(subject_for(bundle("shakespeare-nomask"), PROMPT))
    assert truth.value.startswith("not compared") and not truth.holds


def test_a_loss_that_did_not_fall_after_the_step_is_not_said_to_have():
    rose = [{"step": 1, "val_loss": 2.0}, {"step": 2, "val_loss": 2.5}]
    b = dataclasses.replace(bundle("shakespeare-tiny"), history=rose)
    truth = tr_kinds.val_loss_at(subject_for(b, PROMPT), step=1)
    assert truth.value == pytest.approx(2.0) and not truth.holds and "did not lower" in truth.why
    early = tr_kinds.val_loss_at(subject_for(bundle("shakespeare-tiny"), PROMPT), step=10)
    assert not early.holds and "no validation loss" in early.why  # no evaluation before step 250


def test_a_rise_in_real_words_within_the_noise_of_short_samples_is_not_claimed():
    """shakespeare-tiny's samples go from 25% to 50% real words, on about 20 words each."""
    subject = subject_for(bundle("shakespeare-tiny"), PROMPT)
    truth = tr_kinds.sample_real_words(subject, step=500)
    assert not truth.holds and "within the noise" in truth.why
    assert _sample_real_words(subject, {"step": 500}, truth) is False
    assert not tr_kinds.sample_real_words(subject, step=7).holds  # no sample at that step


def test_random_weights_do_not_yet_predict_the_most_common_character():
    subject = subject_for(bundle("shakespeare-char"), PROMPT)
    truth = tr_kinds.snapshot_next_token(subject, step=0)
    assert not truth.holds and _snapshot_next_token(subject, {"step": 0}, truth) is False
    missing = tr_kinds.snapshot_next_token(subject, step=5)
    assert not missing.holds and "no snapshot" in missing.why


def test_a_model_without_the_causal_mask_has_no_perplexity_to_compare():
    truth = tr_kinds.snapshot_perplexity(subject_for(bundle("shakespeare-nomask"), PROMPT), step=0)
    assert not truth.holds and "causal mask" in truth.why


def test_a_model_that_never_learned_to_copy_has_no_phase_change_and_no_half_step():
    subject = subject_for(bundle("shakespeare-nomask"), PROMPT)
    phase = tr_kinds.copy_phase_change(subject)
    assert phase.value.startswith("no fall") and not phase.holds
    half = tr_kinds.copy_half_learned_step(subject)
    assert half.value == 0 and not half.holds


def test_saved_steps_too_far_apart_cannot_show_a_phase_change():
    """induction-1l kept no snapshot between steps 252 and 4,000, where its loss fell."""
    subject = subject_for(bundle("induction-1l"), "abcabc")
    truth = tr_kinds.copy_phase_change(subject)
    assert truth.value.startswith("cannot tell") and not truth.holds
    assert _copy_phase_change(subject, {}, truth) is False
