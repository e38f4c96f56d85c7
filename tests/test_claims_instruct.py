"""The Instruction tuning part's analysis (viz_model/analysis/labs/instruct.py): greedy answers
that stop at <|end|>, the baseline, and the claims, recomputed from their numbers on the bundled
instruction-tuned model against its base grown by extend_vocab, and refused on a model with no
template (the freshly trained test-char)."""

from __future__ import annotations

import math
from functools import cache

import pytest
import torch

from tests.claims_models import ASSETS
from viz_model.analysis.labs import instruct
from viz_model.bundles.load import load_bundle
from viz_model.model.vocab import extend_vocab
from viz_model.text.instructions import END, SPECIAL_TOKENS, Instruction, instructions
from viz_model.text.tokenization import Tokenizer

TUNED = "shakespeare-instruct"


class Says(torch.nn.Module):
    """A stand-in model whose next token is always `ids[t]` in turn, then `last` for ever."""

    def __init__(self, ids: list[int], last: int, vocab: int):
        super().__init__()
        self.ids, self.last, self.vocab = ids, last, vocab
        self.anchor = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1] - self.start
        logits = torch.zeros(*x.shape, self.vocab)
        logits[:, -1, self.ids[n] if n < len(self.ids) else self.last] = 1.0
        return logits


def _tok() -> Tokenizer:
    return Tokenizer.train("abcdefghijklmnopqrstuvwxyz :", "char").with_special_tokens(
        SPECIAL_TOKENS
    )


def test_a_greedy_answer_stops_at_end_and_is_exact_only_with_it():
    tok = _tok()
    item = Instruction("reverse", "bard")
    model = Says(tok.encode("drab"), tok.token_to_id(END), tok.vocab_size)
    model.start = len(tok.encode(item.prompt))
    (answer,) = instruct.answer_all(model, tok, [item])
    assert (answer.text, answer.ended, answer.exact) == ("drab", True, True)
    rambler = Says(tok.encode("drab"), tok.token_to_id("a"), tok.vocab_size)
    rambler.start = model.start
    (answer,) = instruct.answer_all(rambler, tok, [item])
    assert not answer.ended and not answer.exact and answer.starts_right
    assert len(tok.encode(answer.text)) == instruct.MAX_ANSWER


def test_the_baseline_is_echo_or_one_letter_in_26():
    assert instruct.baseline([Instruction("reverse", "aba"), Instruction("reverse", "abc")]) == 0.5
    assert instruct.baseline([Instruction("first", "abc")]) == pytest.approx(1 / 26)
    assert instruct.baseline([Instruction("upper", "abc")]) == 0.0


def _report(kind: str, n_right: int, n: int, ended: bool = True) -> instruct.InstructReport:
    items = [Instruction(kind, "abc")] * n
    return instruct.InstructReport(
        [instruct.Answer(i, i.answer if k < n_right else "x", ended) for k, i in enumerate(items)]
    )


def test_a_gain_within_noise_is_neutral_and_a_clear_one_is_said():
    small = instruct.kind_claim("reverse", _report("reverse", 1, 25), _report("reverse", 3, 25))
    assert not small.made and "No clear gain" in small.text
    big = instruct.kind_claim("reverse", _report("reverse", 0, 25), _report("reverse", 23, 25))
    assert big.made and "92% of 25 held-out reversals are exact, before 0%" in big.text
    assert big.text.startswith("Tuning taught reversals:") and "two-proportion" in big.text
    same = instruct.stop_claim(_report("upper", 0, 25), _report("upper", 0, 25))
    assert not same.made and same.numbers["z"] == 0.0


def test_the_two_proportion_test_pools_and_the_wilson_interval_is_not_zero_wide():
    # 10 of 25 against 4 of 25: pooled 14/50, se sqrt(.28 * .72 * 2/25) = 0.127, z = 1.89
    z, se = instruct.two_proportion_z(0.4, 25, 0.16, 25)
    assert se == pytest.approx(math.sqrt(0.28 * 0.72 * 2 / 25)) and z == pytest.approx(0.24 / se)
    assert z < instruct.Z
    low, high = instruct.wilson(1.0, 25)
    assert high == 1.0 and 0.8 < low < 0.9  # 100% still has an interval below it
    low, high = instruct.wilson(0.0, 25)
    assert low == 0.0 and 0.1 < high < 0.2
    low, high = instruct.wilson(0.5, 100)
    assert low == pytest.approx(0.5 - 0.098, abs=0.002) and high == pytest.approx(0.598, abs=2e-3)


def test_a_long_word_gets_room_to_be_exact():
    tok = _tok()
    item = Instruction("twice", "abcdefghijkl")  # 24 letters of answer, past MAX_ANSWER
    room = instruct.answer_room(tok, item)
    assert room == 26 > instruct.MAX_ANSWER
    model = Says(tok.encode(item.answer), tok.token_to_id(END), tok.vocab_size)
    model.start = len(tok.encode(item.prompt))
    (cut,) = instruct.answer_all(model, tok, [item])
    assert not cut.exact and len(cut.text) == instruct.MAX_ANSWER
    (answer,) = instruct.answer_all(model, tok, [item], room)
    assert answer.exact


def test_a_model_without_the_template_is_refused(models_dir):
    b = load_bundle(models_dir / "test-char")
    assert not instruct.has_template(b.tokenizer)
    with pytest.raises(ValueError, match="template"):
        instruct.answer_all(b.model, b.tokenizer, instructions(4, held_out=True))


@cache
def _reports():
    tuned = load_bundle(ASSETS / TUNED)
    base = load_bundle(ASSETS / tuned.meta["base"])
    before_model = extend_vocab(base.model, tuned.tokenizer.vocab_size - base.tokenizer.vocab_size)
    items = instructions(instruct.N_HELD_OUT, seed=0, held_out=True)
    before = instruct.evaluate_instructions(before_model, tuned.tokenizer, items)
    return before, instruct.evaluate_instructions(tuned.model, tuned.tokenizer, items)


@pytest.mark.parametrize("kind", list(instruct.KIND_PLURAL))
def test_each_kind_claim_on_the_bundle_is_recomputed_from_its_numbers(kind):
    before, after = _reports()
    claim = instruct.kind_claim(kind, before, after)
    n = claim.numbers
    assert n["after"] == after.exact_by_kind()[kind] and n["before"] == before.exact_by_kind()[kind]
    k = n["n"]
    pooled = (n["after"] + n["before"]) / 2  # the same n before and after
    se = math.sqrt(pooled * (1 - pooled) * 2 / k)
    assert n["pooled_se"] == pytest.approx(se)
    z = (n["after"] - n["before"]) / se if se else 0.0
    assert n["z"] == pytest.approx(z)
    assert claim.made == (z > instruct.Z and instruct.wilson(n["after"], k)[0] > n["baseline"])
    assert (
        f"after tuning {n['after']:.0%}" in claim.text and f"before {n['before']:.0%}" in claim.text
    )


def test_the_stop_claim_on_the_bundle_and_the_headline_numbers():
    before, after = _reports()
    claim = instruct.stop_claim(before, after)
    n = claim.numbers
    assert n["after"] == after.stop_share() and n["before"] == before.stop_share()
    assert claim.made == (n["z"] > instruct.Z)
    assert f"two-proportion z = {n['z']:.1f}" in claim.text
    # the headline: the tuned bundle stops by itself and does most held-out instructions
    assert claim.made and n["after"] > 0.9
    assert sum(after.exact_by_kind().values()) / 4 > 0.5
