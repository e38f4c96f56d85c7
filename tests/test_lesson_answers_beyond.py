"""The before-and-beyond lesson (assets/lessons/6_beyond.toml): every stop's answer, measured on
the model it names, agrees with a computation of its own (the corpus counted with Python strings,
each head ablated and patched with its own hooks on whole runs), and each kind says so when the
lecture's observation does not hold."""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np
import pytest
import torch

from tests.lesson_util import bundle, measured, snapshot, stops
from ui import interventions as ui_interventions
from viz_model.analysis import ngrams as ng
from viz_model.analysis.labs import interventions as iv
from viz_model.lessons import answers_beyond as beyond
from viz_model.lessons.kinds import subject_for
from viz_model.model.hooks import custom
from viz_model.text.data import TokenData, load_text

REPEAT = "ipeedzkoqunhksodipeedzkoqunhksod"


def split_text(b) -> tuple[str, str]:
    """The training and validation text of a character model, split as training split it."""
    data = TokenData.from_text(load_text(b.meta["data"]), b.tokenizer)
    return b.tokenizer.decode(data.train.tolist()), b.tokenizer.decode(data.val.tolist())


# ---- independent answers -------------------------------------------------------------------------


def _ngram_top_follower(subject, args, truth):
    context = args["context"][-args["k"] :]  # a character model: k tokens are k characters
    train, _ = split_text(subject.bundle)
    followers = collections.Counter(
        train[i + len(context)]
        for i in range(len(train) - len(context))
        if train.startswith(context, i)
    )
    top, count = followers.most_common(1)[0]
    assert truth.value == top
    # the split's pieces are counted apart, so an occurrence across a join may be missing
    assert abs(truth.numbers["count"] - count) <= 2
    return True


def _context_occurrences(subject, args, truth):
    context = args["context"][-args["k"] :]
    train, _ = split_text(subject.bundle)
    count = sum(train.startswith(context, i) for i in range(len(train) - len(context)))
    assert abs(truth.value - count) <= 2  # an occurrence across a join of the split may be missing
    assert (truth.value == 0) == (count == 0)
    return True


def _unseen_context_share(subject, args, truth):
    n = args["n"]
    train, val = split_text(subject.bundle)
    seen = {train[i : i + n] for i in range(len(train) - n)}  # each followed by a character
    contexts = [val[i - n : i] for i in range(2 * n, len(val))]
    share = 100 * sum(c not in seen for c in contexts) / len(contexts)
    assert truth.value == pytest.approx(share, abs=1.0)
    return True


def _ngram_best_order(subject, args, truth):
    b = subject.bundle
    models = ng.token_models(load_text(b.meta["data"]), b.tokenizer)
    nats = models.scores.kneser_ney if args["method"] == "kneser-ney" else models.scores.add_k
    best = models.scores.orders[int(np.argmin(nats))]
    assert truth.value == f"n = {best}"
    if args["method"] == "kneser-ney":
        return best == models.scores.orders[-1]
    return bool(nats[-1] > min(nats))  # add-k gets worse past its best order


def _gpt_beats_counts(subject, args, truth):
    b = subject.bundle
    models = ng.token_models(load_text(b.meta["data"]), b.tokenizer)
    beats = b.meta["val_loss"] < min(models.scores.kneser_ney) and b.config.causal
    assert truth.value == ("yes" if beats else "no")
    return beats


def _most_damaging_head(subject, args, truth):
    b = subject.bundle
    windows = beyond.validation_windows(subject)
    base = iv.loss(b.model, windows)
    L, H = b.config.n_layer, b.config.n_head
    rise = np.array(
        [
            [iv.loss(b.model, windows, iv.ablation_hooks(b.model, iv.Ablation(((a, h),))))
             for h in range(H)]
            for a in range(L)
        ]
    ) - base  # fmt: skip
    layer, head = np.unravel_index(int(np.argmax(rise)), rise.shape)
    assert truth.value == f"L{layer} H{head}"
    assert truth.numbers["increase"] == pytest.approx(rise[layer, head], abs=1e-4)
    return True


def _patched_head_restores(subject, args, truth):
    b = subject.bundle
    ids = list(subject.ids)
    end, pos, token = (truth.numbers[k] for k in ("end", "position", "token"))
    clean = ids[: int(end) + 1]
    bad = iv.corrupt(clean, int(pos), int(token))
    model = b.model
    z_clean = {}

    def keep(z, hook):
        z_clean[hook.name] = z.clone()

    with torch.no_grad():
        with model.intervene([(f"blocks.{a}.attn.hook_z", keep) for a in range(b.config.n_layer)]):
            clean_logits = model(torch.tensor(clean))[-1]
        bad_logits = model(torch.tensor(bad))[-1]
    answer, wrong = int(clean_logits.argmax()), int(bad_logits.argmax())
    assert answer != wrong  # the experiment the page opens on flips the prediction

    def ld(logits):
        return float(logits[answer] - logits[wrong])

    restored = np.zeros((b.config.n_layer, b.config.n_head))
    for a in range(b.config.n_layer):
        for h in range(b.config.n_head):
            name = f"blocks.{a}.attn.hook_z"

            def patch(z, hook, h=h, name=name):
                z = z.clone()
                z[..., h, :] = z_clean[name][..., h, :]
                return z

            with torch.no_grad(), model.intervene(custom(name, patch)):
                patched = model(torch.tensor(bad))[-1]
            restored[a, h] = (ld(patched) - ld(bad_logits)) / (ld(clean_logits) - ld(bad_logits))
    layer, head = np.unravel_index(int(np.argmax(restored)), restored.shape)
    assert truth.value == f"L{layer} H{head}"
    return bool(restored[layer, head] >= 0.5)


CHECKS = {
    "ngram_top_follower": _ngram_top_follower,
    "context_occurrences": _context_occurrences,
    "unseen_context_share": _unseen_context_share,
    "ngram_best_order": _ngram_best_order,
    "gpt_beats_counts": _gpt_beats_counts,
    "most_damaging_head": _most_damaging_head,
    "patched_head_restores": _patched_head_restores,
}


@pytest.mark.parametrize(("n", "stop"), stops("6_beyond"), ids=lambda x: str(x)[:20])
def test_each_stop_is_answered_by_its_model_as_an_independent_computation_says(n, stop):
    subject, truth = measured("6_beyond", stop)
    holds = CHECKS[stop.answer](subject, stop.args, truth)
    assert truth.holds == holds
    assert truth.holds, f"stop {n}: the bundled model should show what the lesson teaches"


def test_every_kind_of_the_lesson_is_checked_here():
    used = {stop.answer for _, stop in stops("6_beyond")}
    assert used <= set(CHECKS) and len(stops("6_beyond")) >= 6


def test_the_n_gram_stops_ask_about_the_context_the_page_shows():
    for _, stop in stops("6_beyond"):
        if stop.answer in ("ngram_top_follower", "context_occurrences"):
            assert (stop.view["ng_context"], stop.view["ng_k"]) == (
                stop.args["context"],
                stop.args["k"],
            )


def test_ablations_are_measured_on_the_text_the_interventions_page_uses():
    assert beyond.VAL_TOKENS == ui_interventions.VAL_TOKENS


# ---- when the lesson's observation does not hold --------------------------------------------------


def test_a_context_never_seen_has_no_count_ratio():
    subject = subject_for(bundle("shakespeare-char"), "x")
    truth = beyond.ngram_top_follower(subject, context="xqzj", k=4)
    assert truth.value == "" and not truth.holds and "0/0" in truth.why


def test_on_random_letters_longer_contexts_do_not_help_kneser_ney():
    """induction-2l's text is random letters (then a copy): past one letter of context, counts
    only add noise."""
    subject = subject_for(bundle("induction-2l"), REPEAT)
    truth = beyond.ngram_best_order(subject, method="kneser-ney")
    assert not truth.holds and truth.value != "n = 6"
    assert _ngram_best_order(subject, {"method": "kneser-ney"}, truth) is False


def test_without_rising_sparsity_or_a_worse_add_k_nothing_is_claimed(monkeypatch):
    real = beyond.token_models(bundle("shakespeare-char"))
    flat = dataclasses.replace(real, unseen=(0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1))
    scores = dataclasses.replace(real.scores, add_k=(3.0, 2.5, 2.0, 1.9, 1.8, 1.7))
    fake = dataclasses.replace(flat, scores=scores)
    monkeypatch.setattr(beyond, "token_models", lambda b: fake)
    subject = subject_for(bundle("shakespeare-char"), "x")
    sparse = beyond.unseen_context_share(subject, n=8)
    assert sparse.value == pytest.approx(10.0) and not sparse.holds
    add_k = beyond.ngram_best_order(subject, method="add-k")
    assert add_k.value == "n = 6" and not add_k.holds


def test_a_model_without_the_causal_mask_is_not_set_against_counting():
    truth = beyond.gpt_beats_counts(subject_for(bundle("shakespeare-nomask"), "x"))
    assert truth.value == "no" and not truth.holds and "causal mask" in truth.why


def test_at_a_snapshot_the_gpt_is_set_against_counting_with_the_loss_of_that_step():
    """The N-grams page compares the weights on screen; so does its lesson's reveal. At a step
    after an evaluation that evaluation's loss is used; at step 0 (none yet) the final step's
    stands in and the sentence says so."""
    final = bundle("shakespeare-char")
    models = ng.token_models(load_text(final.meta["data"]), final.tokenizer)
    evals = [(r["step"], r["val_loss"]) for r in final.history if r.get("val_loss") is not None]
    middle = next(s for s in final.snapshot_steps() if evals[0][0] <= s < evals[-1][0])
    loss_then = [loss for step, loss in evals if step <= middle][-1]
    assert loss_then != evals[-1][1]  # the test could tell the two apart
    truth = beyond.gpt_beats_counts(subject_for(snapshot("shakespeare-char", middle), "x"))
    assert truth.numbers["gpt"] == pytest.approx(loss_then / ng.LN2)
    beats = loss_then < min(models.scores.kneser_ney)
    assert truth.value == ("yes" if beats else "no")
    at_zero = beyond.gpt_beats_counts(subject_for(snapshot("shakespeare-char", 0), "x"))
    assert "final step" in at_zero.why


def test_a_model_that_says_nothing_of_its_text_has_nothing_to_count():
    b = dataclasses.replace(bundle("shakespeare-char"), meta={})
    subject = subject_for(b, "x")
    kinds = (beyond.ngram_best_order, beyond.unseen_context_share, beyond.gpt_beats_counts)
    for kind in (*kinds, beyond.context_occurrences, beyond.ngram_top_follower):
        assert not kind(subject).holds, kind.__name__


def test_no_head_is_named_when_the_text_is_too_short_to_tell_from_noise():
    """Without its training text, the page measures on the prompt; ten tokens are too few."""
    b = dataclasses.replace(bundle("induction-2l"), meta={})
    truth = beyond.most_damaging_head(subject_for(b, REPEAT[:10]))
    assert truth.value == beyond.NONE and not truth.holds and "too short" in truth.why


def test_no_head_is_named_when_no_head_restores_half_of_the_answer():
    """At step 0 (random weights) of induction-2l no single head carries the answer."""
    subject = subject_for(snapshot("induction-2l", 0), REPEAT)
    truth = beyond.patched_head_restores(subject)
    assert truth.value == beyond.NO_HEAD and not truth.holds
    assert math.isfinite(truth.numbers.get("restored", 0.0))
