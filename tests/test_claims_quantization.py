"""Claims of the Quantization page (docs/ARCHITECTURE.md, Claims) on the bundled Shakespeare models and on a
model trained by the Training job's code: each sentence's decision recomputed from its numbers, the
numbers it prints checked against the measurement, and what any trained model must show (float16
within noise, int2 a loss beyond it, int8 per row agreeing at nearly every position).

Every claim model is measured once (16 windows, eight schemes) for the decisions; what any trained
model must show is checked on the three trained ones the brief names (a random GPT-2 folder has
nothing to lose).
"""

from __future__ import annotations

import pytest

from tests.claims_models import CLASS_TRAINED, GPT_CLAIM_MODELS, claim_bundle
from viz_model.analysis.labs import quantization as qa
from viz_model.model.quantize import QuantSpec

MODELS = ["shakespeare-char", "shakespeare-tiny", CLASS_TRAINED]
SPECS = [QuantSpec(16), QuantSpec(8), QuantSpec(8, "tensor"), QuantSpec(4), QuantSpec(2)]
SPECS += [QuantSpec(4, "channel", True), QuantSpec(4, "tensor"), QuantSpec(4, "tensor", True)]
_measured: dict[str, qa.Measured] = {}


@pytest.fixture
def measured(request, claim_bundles) -> qa.Measured:
    name = request.param
    if name not in _measured:
        b = claim_bundle(claim_bundles, name)
        val, note = qa.validation_ids(b.meta, b.tokenizer)
        assert note.startswith("the validation split of its own") == ("data" in b.meta)
        _measured[name] = qa.measure(b.model, val, b.tokenizer, SPECS, n_windows=16)
    return _measured[name]


@pytest.mark.parametrize("measured", GPT_CLAIM_MODELS, indirect=True)
def test_cost_claims_follow_their_numbers(measured):
    ref = measured.reference
    for spec in SPECS:
        claim = qa.cost_claim(measured, spec.name)
        row = measured.get(spec.name)
        diff = row.bits_per_char - ref.bits_per_char
        assert claim.made == (abs(diff) > qa.paired_noise(row.window_bpc, ref.window_bpc))
        assert f"{100 * (1 - row.agree):.1f}%" in claim.text or "0.0" in claim.text
        if claim.made:
            assert f"{abs(diff):.3f} bits per character" in claim.text


@pytest.mark.parametrize("measured", MODELS, indirect=True)
def test_what_any_trained_model_shows(measured):
    assert not qa.cost_claim(measured, "float16").made  # float16 is within noise
    int2 = qa.cost_claim(measured, "int2")
    assert int2.made and int2.numbers["diff"] > 0.1  # two bits a weight collapse the model
    assert measured.get("int8").agree > 0.95
    assert measured.get("int8").agree > measured.get("int4").agree > measured.get("int2").agree
    per_row = qa.compare_claim(measured, "int4-tensor", "int4", "one scale per row")
    assert per_row.numbers["gap"] > -per_row.numbers["noise"]  # never worse beyond noise
    if measured is _measured.get("shakespeare-char"):  # long trained: weights with outliers
        assert per_row.made and per_row.numbers["gap"] > 0.1


@pytest.mark.parametrize("measured", GPT_CLAIM_MODELS, indirect=True)
def test_compare_and_smallest_claims_follow_their_numbers(measured):
    for without, with_ in [("int4", "int4-outliers"), ("int4-tensor", "int4-tensor-outliers")]:
        claim = qa.compare_claim(measured, without, with_, "keeping outliers aside")
        a, b = measured.get(without), measured.get(with_)
        gap = a.bits_per_char - b.bits_per_char
        assert claim.made == (abs(gap) > qa.paired_noise(a.window_bpc, b.window_bpc))
        assert f"{a.bits_per_char - measured.reference.bits_per_char:+.3f}" in claim.text
    smallest = qa.smallest_claim(measured)
    assert smallest.made  # float16 at least is within noise
    assert smallest.numbers["bytes"] <= measured.get("float16").nbytes
    assert smallest.numbers["ratio"] == pytest.approx(
        measured.reference.nbytes / smallest.numbers["bytes"]
    )
