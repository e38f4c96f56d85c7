"""What quantisation changes (viz_model/analysis/labs/quantization.py) on a seeded tiny GPT: float32
against itself is exact, the measured bits per character are the cross-entropy, wider codes agree
more, every claim's decision follows its numbers, and one matrix's grid is what the formula says."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import VOCAB, tiny_model
from viz_model.analysis.labs import quantization as qa
from viz_model.model import quantize as q
from viz_model.model.quantize import QuantSpec

SPECS = [QuantSpec(16), QuantSpec(8), QuantSpec(4), QuantSpec(4, "tensor"), QuantSpec(2)]
SPECS += [QuantSpec(4, "channel", True), QuantSpec(4, "tensor", True)]


class OneCharEach:
    """A tokenizer stand-in: every token is one character."""

    def decode(self, ids: list[int]) -> str:
        return "x" * len(ids)


@pytest.fixture(scope="module")
def measured() -> qa.Measured:
    gen = torch.Generator().manual_seed(1)
    val = torch.randint(0, VOCAB, (600,), generator=gen)
    return qa.measure(tiny_model(), val, OneCharEach(), SPECS, n_windows=12)


def test_float32_is_the_cross_entropy_and_agrees_with_itself(measured):
    ref = measured.reference
    assert ref.name == "float32" and ref.agree == 1.0 and ref.kl_bits == 0.0
    assert ref.nbytes == 4 * tiny_model().n_params()
    val = torch.randint(0, VOCAB, (600,), generator=torch.Generator().manual_seed(1))
    batch = qa.windows(val, measured.length, 12)
    with torch.no_grad():
        logits = tiny_model()(batch[:, :-1])
    nats = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:]).item()
    assert ref.bits_per_char == pytest.approx(nats / math.log(2), rel=1e-5)
    assert ref.window_bpc.shape == (12,)


def test_fewer_bits_move_the_predictions_more(measured):
    f16, int8, int4, int2 = (measured.get(n) for n in ("float16", "int8", "int4", "int2"))
    assert f16.agree > 0.99 and f16.kl_bits < 1e-5
    assert int8.kl_bits < int4.kl_bits < int2.kl_bits
    assert int8.agree > int2.agree
    assert measured.get("int4-tensor").kl_bits > int4.kl_bits  # one shared grid is coarser


def test_bytes_are_the_engine_count(measured):
    model = tiny_model()
    for row in measured.rows[1:]:
        assert row.size == q.size_of(model, row.spec)
    assert [r.nbytes for r in measured.rows[:3]] == sorted(
        [r.nbytes for r in measured.rows[:3]], reverse=True
    )


def test_the_noise_threshold_is_twice_the_paired_standard_error_or_the_floor():
    a = np.array([1.0, 1.2, 0.9, 1.1])
    b = np.array([1.0, 1.0, 1.0, 1.0])
    se = np.std(a - b, ddof=1) / 2
    assert qa.paired_noise(a, b) == pytest.approx(2 * se)
    assert qa.paired_noise(b, b) == qa.MIN_DIFF


@pytest.mark.parametrize("name", [s.name for s in SPECS])
def test_each_cost_claim_follows_its_numbers(measured, name):
    claim = qa.cost_claim(measured, name)
    row, ref = measured.get(name), measured.reference
    diff = row.bits_per_char - ref.bits_per_char
    noise = qa.paired_noise(row.window_bpc, ref.window_bpc)
    assert claim.numbers["diff"] == pytest.approx(diff)
    assert claim.numbers["noise"] == pytest.approx(noise)
    assert claim.made == (abs(diff) > noise)
    assert f"{row.bits_per_char:.3f}" in claim.text
    assert ("costs" in claim.text or "lowers the loss by" in claim.text) == claim.made
    assert ("within noise" in claim.text) != claim.made


def test_compare_claims_follow_their_numbers(measured):
    pairs = [
        ("int4", "int4-outliers"),
        ("int4-tensor", "int4-tensor-outliers"),
        ("int4-tensor", "int4"),
    ]
    for without, with_ in pairs:
        claim = qa.compare_claim(measured, without, with_, "the choice")
        a, b = measured.get(without), measured.get(with_)
        gap = a.bits_per_char - b.bits_per_char
        assert claim.made == (abs(gap) > qa.paired_noise(a.window_bpc, b.window_bpc))
        if claim.made:
            assert ("helps" if gap > 0 else "hurts") in claim.text
        else:
            assert "no difference beyond noise" in claim.text


def test_the_smallest_claim_names_the_smallest_within_noise(measured):
    claim = qa.smallest_claim(measured)
    ref = measured.reference
    fine = [
        r
        for r in measured.rows[1:]
        if r.bits_per_char - ref.bits_per_char <= qa.paired_noise(r.window_bpc, ref.window_bpc)
    ]
    assert claim.made == bool(fine)
    if fine:
        best = min(fine, key=lambda r: r.nbytes)
        assert f"**{best.spec.label}**" in claim.text and f"{best.nbytes:,}" in claim.text


def test_the_size_claim_adds_up(measured):
    claim = qa.size_claim(measured, "int8")
    s = measured.get("int8").size
    assert s.matrices + s.scales + s.outliers + s.float32_parts == claim.numbers["bytes"]
    for part in (s.matrices, s.scales, s.float32_parts, measured.reference.nbytes):
        assert f"{part:,}" in claim.text


def test_the_grid_is_the_formula():
    w = tiny_model().blocks[0].mlp.fc_out.weight.detach()
    levels = qa.grid_levels(w, 4, "tensor", False)
    assert len(levels) == 15 and np.allclose(levels, -levels[::-1])
    assert levels[-1] >= w.abs().max().item() - 1e-9  # the grid reaches the largest weight
    aside = qa.grid_levels(w, 4, "tensor", True)
    assert aside[-1] < levels[-1]  # without the outliers it is finer
    row = qa.grid_levels(w, 4, "channel", False, row=3)
    assert row[-1] == pytest.approx(w[3].abs().max().item(), rel=1e-3)


def test_a_matrix_view_counts_the_weights_rounded_to_zero():
    w = tiny_model().blocks[0].attn.qkv.weight.detach()
    view = qa.matrix_view(w, 2, "tensor")
    stored = q.quantize_matrix(w, QuantSpec(2, "tensor"))
    assert view.zero_share == pytest.approx(float((stored.codes == 0).float().mean()))
    assert view.weights.size == w.numel() and view.kept_aside.size == 0
    kept = qa.matrix_view(w, 4, "tensor-outliers")
    assert kept.kept_aside.size == max(1, round(q.OUTLIER_FRACTION * w.numel()))
    one_row = qa.matrix_view(w, 4, "row", row=5)
    assert np.array_equal(one_row.weights, w[5].numpy().astype(float))
    errors = qa.row_errors(w, 4)
    assert set(errors) == {s.label for s in q.all_specs() if s.bits == 4}
    assert all(e.shape == (w.shape[0],) for e in errors.values())


def test_the_widest_matrix_is_the_one_with_the_furthest_weight():
    model = tiny_model()
    weights = q.matrices(model)
    w = weights["blocks.1.attn.out.weight"].detach().clone()
    w[0, 0] = 50 * w.std()
    weights = {**weights, "blocks.1.attn.out.weight": w}
    assert qa.widest(weights) == "blocks.1.attn.out.weight"


def test_drift_is_zero_against_itself_and_grows_with_fewer_bits(ids):
    model = tiny_model()
    same = qa.drift(model, model, ids.tolist())
    assert same.shape == (model.cfg.n_layer + 1,) and np.all(same == 0)
    int8 = qa.drift(model, q.quantized_copy(model, QuantSpec(8)), ids.tolist())
    int2 = qa.drift(model, q.quantized_copy(model, QuantSpec(2)), ids.tolist())
    assert np.all(int8 < int2) and np.all(int8 > 0)
    _, cache = model.run_with_cache(ids, names=qa.stations(model.cfg.n_layer))
    copy = q.quantized_copy(model, QuantSpec(4))
    _, other = copy.run_with_cache(ids, names=qa.stations(model.cfg.n_layer))
    last = qa.stations(model.cfg.n_layer)[-1]
    expected = ((other[last] - cache[last]).norm(dim=-1) / cache[last].norm(dim=-1)).mean()
    assert qa.drift(model, copy, ids.tolist())[-1] == pytest.approx(float(expected), rel=1e-5)


def test_the_drift_claim_says_growth_only_past_its_factor():
    grows = qa.drift_claim("int4", np.array([0.01, 0.015, 0.03]))
    assert grows.made and "grows through the layers" in grows.text and "3.0%" in grows.text
    flat = qa.drift_claim("int4", np.array([0.1, 0.15, 0.19]))
    assert not flat.made and "does not build up" in flat.text


def test_a_big_model_is_measured_on_the_schemes_the_sentences_name():
    assert qa.specs_for(1_000_000) == q.all_specs()
    core = qa.specs_for(124_000_000)
    assert [s.name for s in core] == [s.name for s in q.all_specs() if s.name in qa.CORE]
    assert set(qa.CORE) == {s.name for s in core}
    assert qa.drift_copies(124_000_000) == ("int8", "int4")
    assert set(qa.drift_copies(1_000_000)) <= set(qa.CORE)
