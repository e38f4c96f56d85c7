"""analysis/labs/facts.py: facts found in a hand-made text, recall batched as one pass per length
equals recall one fact at a time, the knock-outs run through the shared hooks, and the claim
follows its numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.labs import facts as fa


def test_a_fact_is_a_frequent_word_its_first_letters_almost_always_finish():
    text = ("the castle stands. " * 6) + ("the cat sat. " * 6) + "\nHAMLET. yes\n" * 6
    facts = {f.word: f for f in fa.corpus_facts(text)}
    assert facts["castle"].prompt == " cas" and facts["castle"].answer == "tle"  # "ca" is cat too
    assert facts["stands"].prompt == " st"
    assert facts["HAMLET"].prompt == "\nHA"  # a word that starts lines is asked after a new line
    assert "cat" not in facts  # shorter than MIN_LEN
    assert all(f.count >= fa.MIN_COUNT for f in facts.values())


def _chars():
    vocab = sorted(set(" \nabcdefghijklmnopqrstuvwxyzHAMLET."))
    index = {c: i for i, c in enumerate(vocab)}
    return (lambda s: [index[c] for c in s]), (lambda ids: "".join(vocab[i] for i in ids)), vocab


def test_batched_recall_equals_one_fact_at_a_time():
    encode, decode, vocab = _chars()
    model = tiny_model(seed=2, vocab_size=len(vocab))
    facts = [fa.Fact(" cas", "tle", 5), fa.Fact(" st", "ands", 5), fa.Fact("\nHA", "MLET", 5)]
    batched = fa.recalls(model, encode, decode, facts)
    for fact, got in zip(facts, batched, strict=True):
        ids = encode(fact.prompt)
        for _ in range(len(fact.answer)):
            ids.append(int(model(torch.tensor(ids))[-1].argmax()))
        assert got == (decode(ids[len(encode(fact.prompt)) :]) == fact.answer)
    # A fact is recalled when its answer is what greedy writes: make one so, by definition.
    ids = encode(" cas")
    for _ in range(3):
        ids.append(int(model(torch.tensor(ids))[-1].argmax()))
    written = fa.Fact(" cas", decode(ids[4:]), 5)
    assert fa.recalls(model, encode, decode, [written])[0]


def test_knock_outs_cover_every_layer_and_leave_the_model_as_it_was():
    encode, decode, vocab = _chars()
    model = tiny_model(seed=2, vocab_size=len(vocab))
    before = [p.detach().clone() for p in model.parameters()]
    facts = [fa.Fact(" cas", "tle", 5), fa.Fact(" st", "ands", 5)]
    windows = torch.randint(0, len(vocab), (4, 9), generator=torch.Generator().manual_seed(0))
    result = fa.fact_ablations(model, encode, decode, facts, windows)
    L = model.cfg.n_layer
    assert result.attention.shape == (L, 2) and result.mlp.shape == (L, 2)
    assert len(result.layer0_damage) == 2
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def _result(clean, attention, mlp, damage=(1.0, 1.2)):
    return fa.FactAblations(
        np.array(clean, bool), np.array(attention, bool), np.array(mlp, bool), damage
    )


def test_the_claim_compares_beyond_layer_zero_and_its_margin():
    clean = [True] * 16
    keep = [True] * 16
    lose8 = [False] * 8 + [True] * 8
    mlp_wins = fa.ablation_claim(_result(clean, [[False] * 16, keep], [[False] * 16, lose8]))
    assert (
        mlp_wins.made
        and "MLP 1 loses 8" in mlp_wins.text
        and "Layer 0 is left out" in mlp_wins.text
    )
    assert fa.margin(16) == 4.0
    close = fa.ablation_claim(
        _result(
            clean,
            [[False] * 16, [False] * 2 + [True] * 14],
            [[False] * 16, [False] * 4 + [True] * 12],
        )
    )
    assert not close.made and "within 4 facts" in close.text
    none = fa.ablation_claim(_result([False] * 4, [[False] * 4] * 2, [[False] * 4] * 2))
    assert not none.made and "recalls none" in none.text


@pytest.mark.parametrize("name", ["shakespeare-char", "shakespeare-tiny"])
def test_the_claim_on_bundled_models_matches_its_numbers(name):
    from pathlib import Path

    from viz_model.analysis.labs.interventions import validation_text, validation_windows
    from viz_model.bundles.load import load_bundle
    from viz_model.text.data import load_text

    b = load_bundle(Path(__file__).resolve().parents[1] / "assets" / "models" / name)
    text = load_text(b.meta["data"])
    facts = fa.corpus_facts(text[: int(len(text) * 0.9)], n=12)
    windows = validation_windows(b.tokenizer.encode(validation_text(b.meta)), b.config.n_ctx, 256)
    result = fa.fact_ablations(b.model, b.tokenizer.encode, b.tokenizer.decode, facts, windows)
    claim = fa.ablation_claim(result)
    n = claim.numbers
    assert n["known"] == result.clean.sum()
    if "mlp lost" in n:
        gap = n["mlp lost"] - n["attention lost"]
        assert claim.made == (abs(gap) > fa.margin(int(n["known"])))
    assert f"recalls {int(n['known'])} of 12 facts" in claim.text


def test_lost_counts_are_facts_known_and_then_missed():
    clean = [True, True, False, True]
    result = _result(clean, [[False, True, True, True], [True] * 4], [[True] * 4, [False] * 4])
    lost = fa.lost_counts(result)
    assert lost == {"attention": [1, 0], "mlp": [0, 3]}  # a newly recalled fact is not counted
