"""The N-grams page's numbers on tiny texts: count ratios (and the undefined 0/0), Shannon's
samples, memorisation spans on a crafted text, bits per character, and the model's own
probability of a generated text."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.claims_models import CLASS_RUNS, claim_bundle
from tests.conftest import tiny_model
from viz_model.analysis import next_token as nt
from viz_model.analysis import ngrams as ng
from viz_model.text.corpus_index import CorpusIndex
from viz_model.text.tokenization import Tokenizer

TEXT = (
    "to be or not to be, that is the question.\n"
    "whether tis nobler in the mind to suffer\n"
    "the slings and arrows of outrageous fortune,\n"
) * 30


@pytest.fixture(scope="module")
def char_models():
    tok = Tokenizer.train(TEXT + "QXZ", "char")
    return tok, ng.token_models(TEXT, tok, val_fraction=0.1)


def test_count_table_is_the_count_ratio(char_models):
    tok, models = char_models
    context = tok.encode("to b")
    table = ng.count_table(models, context)
    train = tok.decode(models.index.tokens[: models.index.n_train].tolist())
    after = [train[i + 4] for i in range(len(train) - 4) if train[i : i + 4] == "to b"]
    assert table.total == len(after) > 0
    e = tok.encode("e")[0]
    assert table.probs()[e] == pytest.approx(after.count("e") / len(after))
    assert table.probs().sum() == pytest.approx(1.0)
    assert tok.decode(table.top(1).tolist()) == max(set(after), key=after.count)


def test_an_unseen_context_has_no_count_ratio(char_models):
    tok, models = char_models
    table = ng.count_table(models, tok.encode("QXZ"))  # in the vocabulary, never in the text
    assert table.total == 0 and not table.defined
    assert np.isnan(table.probs()).all()  # 0/0, not a distribution
    assert table.top(5).size == 0
    smoothed = models.kn_distribution(tok.encode("QXZ"), 4)
    assert smoothed.sum() == pytest.approx(1.0)  # Kneser-Ney backs off to shorter contexts


def test_token_models_count_the_validation_text(char_models):
    tok, models = char_models
    assert models.val_tokens == len(models.index.tokens) - models.index.n_train
    assert models.val_chars == models.val_tokens  # a char model: one character per token
    assert models.chars_per_token == 1.0
    kn = models.scores.kneser_ney
    assert kn[2] < kn[0]  # three characters of context beat none on a repetitive text
    assert len(models.unseen) == 8


def test_bits_per_char_converts_units():
    assert ng.bits_per_char(math.log(2) * 3.8, 1.9) == pytest.approx(2.0)


def test_words_split_and_join_back():
    text = "Ay, my lord.\nI'll go (now)!"
    words = ng.split_words(text)
    assert words == ["Ay", ",", "my", "lord", ".", "\n", "I'll", "go", "(", "now", ")", "!"]
    assert ng.join_words(words) == text


@pytest.mark.parametrize("unit, order", [("letters", 2), ("letters", 3), ("words", 2)])
def test_shannon_samples_only_use_what_the_text_holds(unit, order):
    source = ng.symbol_index(TEXT, unit)
    pieces = list(TEXT) if unit == "letters" else ng.split_words(TEXT)
    seen = {tuple(pieces[i : i + order]) for i in range(len(pieces) - order + 1)}
    out = ng.shannon_text(source, order, 200, seed=3)
    sample = list(out) if unit == "letters" else ng.split_words(out)
    grams = [tuple(sample[i : i + order]) for i in range(len(sample) - order + 1)]
    assert grams and all(g in seen for g in grams)  # every n-gram of the sample is in the text
    assert ng.shannon_text(source, order, 200, seed=3) == out  # same seed, same text
    assert ng.shannon_text(source, order, 200, seed=4) != out


def test_order_zero_draws_every_letter_equally():
    source = ng.symbol_index(TEXT, "letters")
    sample = ng.shannon_text(source, 0, 20_000, seed=0)
    counts = np.array([sample.count(s) for s in source.symbols])
    assert set(sample) == set(TEXT)
    assert counts.min() > 0.7 * counts.mean()  # uniform, unlike "e" against "q" in the text


# ---- memorisation on a crafted text --------------------------------------------------------------


def _crafted():
    """Training "abcdefghij" + filler, validation "qrstuvwxyz": ids of letters."""
    train = list("abcdefghij") + list("klmnop") * 2
    val = list("qrstuvwxyz")
    stream = [ord(c) - 97 for c in train + val]
    return CorpusIndex.build(stream, n_train=len(train)), [ord(c) - 97 for c in "abcdefghij"]


def test_memorised_spans_find_copies_and_their_split():
    index, _ = _crafted()
    seq = [ord(c) - 97 for c in "zz" + "bcdefgh" + "z" + "rstuvw"]  # prompt "zz", then generated
    spans = ng.memorised_spans(index, seq, min_len=5, first=2)
    assert [(s.start, s.end, s.source) for s in spans] == [
        (2, 9, "training"),  # "bcdefgh": 7 letters from the training split
        (10, 16, "validation only"),  # "rstuvw": only in the validation split
    ]
    assert (spans[0].in_train, spans[0].in_val) == (1, 0)
    assert ng.covered(spans, len(seq)).tolist() == [
        i in range(2, 9) or 10 <= i < 16 for i in range(len(seq))
    ]


def test_short_copies_and_the_prompt_alone_are_not_reported():
    index, abc = _crafted()
    seq = [*abc[:8], 25, *abc[3:7]]  # a prompt copied from training, then a 4-letter copy
    assert ng.memorised_spans(index, seq, min_len=5, first=8) == []
    spans = ng.memorised_spans(
        index, seq, min_len=5, first=6
    )  # the copy reaches the generated part
    assert [(s.start, s.end) for s in spans] == [(0, 8)]


def test_spans_do_not_cross_the_seam():
    index, _ = _crafted()
    seq = [ord(c) - 97 for c in "nopqrs"]  # "nop" ends training, "qrs" starts validation
    assert ng.memorised_spans(index, seq, min_len=4) == []
    assert index.match_lengths(seq).tolist() == [3, 2, 1, 3, 2, 1]


# ---- the model's own probability of a generated text ---------------------------------------------


def test_text_log_probs_equal_one_pass_within_the_context():
    model = tiny_model()
    seq = [3, 7, 1, 3, 7, 1, 9, 4, 3, 7]
    direct = -nt.surprisal(nt.prompt_logits(model, seq), seq)
    assert np.allclose(ng.text_log_probs(model, seq, 4), direct[4:])


def test_text_log_probs_past_the_context_use_each_tokens_window():
    model = tiny_model()  # n_ctx 16
    seq = [int(x) for x in torch.randint(0, 23, (40,), generator=torch.Generator().manual_seed(0))]
    got = ng.text_log_probs(model, seq, 10)
    for t in (10, 15, 16, 30, 39):
        logits = nt.prompt_logits(model, seq[max(0, t - 16) : t])[-1]  # the 16 before t
        expected = torch.log_softmax(torch.tensor(logits, dtype=torch.float64), -1)[seq[t]]
        assert got[t - 10] == pytest.approx(float(expected), abs=1e-5)


def test_order_ranges_joins_consecutive_orders():
    assert ng.order_ranges([3, 4, 5, 6]) == "n = 3–6"
    assert ng.order_ranges([2, 4, 5]) == "n = 2, 4–5"


def test_kneser_ney_is_called_the_best_counting_model_only_where_it_is():
    """Issue 36: "in its modified form, the best of the classic counting models" was printed
    above induction-2l's table, where Kneser-Ney is worse than add-k at n = 3-6 and worse than
    a blind guess at n = 4-6."""
    orders = (1, 2, 3, 4, 5, 6)
    add_k = [6.0, 5.5, 5.4, 5.5, 5.6, 5.7]
    kn = [6.0, 5.4, 5.9, 6.1, 6.3, 6.5]  # a blind guess over 64 tokens: 6.00 bits
    claim = ng.kneser_ney_claim(orders, add_k, kn, 64)
    assert not claim.made
    assert (
        "**worse** than add-k at n = 3–6, by more than 0.05 bits (at n = 6: 6.50 against 5.70"
        in claim.text
    )
    assert "worse than a blind guess over the 64 tokens (6.00 bits) at n = 4–6" in claim.text
    assert "does not hold on this text" in claim.text
    better = ng.kneser_ney_claim(
        orders, add_k, [add_k[0] + 0.01, *(x - 0.1 for x in add_k[1:])], 64
    )
    assert better.made and "best of the classic counting models" in better.text
    assert "beats add-k at n = 2–6 and is within 0.05 bits of it at n = 1" in better.text
    assert "blind guess" not in better.text
    tied = ng.kneser_ney_claim(orders, add_k, add_k, 64)
    assert not tied.made and "best of" not in tied.text


def test_the_model_beside_the_counts_is_the_one_on_screen_or_says_whose_loss_it_is():
    """Issue 36: at step 0 the page said "“our-model” (2.84 bits per token) does not beat the
    best Kneser-Ney model" of the step-650 loss, beside the step-0 weights' sample."""
    from viz_model.analysis.training import val_loss_at

    history = [{"step": 0}, {"step": 300, "val_loss": 2.29}, {"step": 650, "val_loss": 1.97}]
    orders, kn = (1, 2, 3), [4.0, 3.0, 2.1]

    def said(step):
        found = val_loss_at(history, {}, step)
        return ng.gpt_vs_counts_claim("m", found.loss / ng.LN2, orders, kn, True, found, step)

    final_bits = f"{1.97 / ng.LN2:.2f}"
    assert said(None).text == (  # the final weights: the sentence as before
        f"“m” ({final_bits} bits per token) does not beat the best Kneser-Ney model "
        "(n = 3, 2.10 bits per token): counting wins here."
    )
    at_zero = said(0)
    assert f"“m” ({final_bits} bits per token at its final step, 650) does not beat" in at_zero.text
    assert at_zero.text.endswith("No validation loss was recorded by step 0, the step on screen.")
    assert at_zero.numbers["loss_step"] == 650
    later = said(316)
    assert (
        f"“m” ({2.29 / ng.LN2:.2f} bits per token at step 300, its last evaluation by step 316)"
        in later.text
    )
    assert later.numbers["loss_step"] == 300


_KN_BITS: dict[str, tuple[tuple[int, ...], list[float]]] = {}


@pytest.mark.parametrize("name", CLASS_RUNS)
def test_at_each_snapshot_a_class_runs_loss_is_that_steps_or_said_to_be_the_final(
    name, claim_bundles
):
    """Issue 36 on the class runs, which keep their random weights at step 0: before the first
    evaluation the sentence names the final step its number is from; after it, the step of the
    last evaluation by the step shown, as the sidebar's card (training.losses_at) reads it."""
    from viz_model.analysis import training as tr
    from viz_model.text.data import VAL_FRACTION, load_text

    bundle = claim_bundle(claim_bundles, name)
    final = tr.final_step(bundle.history, bundle.meta)
    steps = tr.training_steps(bundle.snapshot_steps(), final)
    assert steps[0] == 0 and len(steps) > 2
    if bundle.tokenizer.sha256 not in _KN_BITS:
        source = bundle.meta["data"]
        found = ng.token_models(
            load_text(source), bundle.tokenizer, source.get("val_fraction", VAL_FRACTION)
        )
        kn = [x / ng.LN2 for x in found.scores.kneser_ney]
        _KN_BITS[bundle.tokenizer.sha256] = (found.scores.orders, kn)
    orders, kn = _KN_BITS[bundle.tokenizer.sha256]
    for step in steps[:-1]:
        found = tr.val_loss_at(bundle.history, bundle.meta, step)
        then = tr.losses_at(bundle.history, step)[1]
        bits = found.loss / ng.LN2
        claim = ng.gpt_vs_counts_claim(name, bits, orders, kn, True, found, step)
        if then is None:  # step 0 always: the random weights were never evaluated
            assert found.of_final and found.loss == tr.val_loss_at(bundle.history, {}, None).loss
            assert f"({bits:.2f} bits per token at its final step, {found.step:,})" in claim.text
            assert f"No validation loss was recorded by step {step:,}" in claim.text
        else:
            assert found.loss == then and not found.of_final
            assert f"({then / ng.LN2:.2f} bits per token at step {found.step:,}" in claim.text
