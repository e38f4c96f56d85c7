"""Weight quantisation (viz_model/model/quantize.py) on a seeded tiny GPT: the rounding error is
at most half a step, int8 per row barely moves the logits while int2 wrecks them, the bytes equal a
count by hand, outliers keep their float16 values, and the model given is never changed."""

from __future__ import annotations

import math

import pytest
import torch

from serving import models
from tests.conftest import tiny_model
from viz_model.model import quantize as q
from viz_model.model.quantize import QuantSpec


@pytest.mark.parametrize("bits", [8, 4, 3, 2])
@pytest.mark.parametrize("per", ["channel", "tensor"])
def test_each_weight_is_within_half_a_step_of_its_stored_value(bits, per):
    w = tiny_model().blocks[0].attn.qkv.weight
    stored = q.quantize_matrix(w, QuantSpec(bits, per))
    step = stored.scales[:, None] if per == "channel" else stored.scales
    error = (stored.values - w.detach()).abs()
    assert (error <= step / 2 + 1e-7).all()
    assert stored.codes.abs().max() <= q.qmax(bits)
    # the grid is no finer than it must be: the largest weight uses (nearly) the top code
    assert stored.codes.abs().max() >= q.qmax(bits) - (1 if bits > 2 else 0)


def test_one_scale_per_row_fits_each_row():
    w = tiny_model().blocks[1].mlp.fc_in.weight.detach()
    stored = q.quantize_matrix(w, QuantSpec(8, "channel"))
    assert stored.scales.shape == (w.shape[0],)
    expected = w.abs().amax(1) / 127
    assert torch.all(stored.scales >= expected)
    assert torch.allclose(stored.scales, expected, rtol=1e-3)  # float16, rounded up
    assert q.quantize_matrix(w, QuantSpec(8, "tensor")).scales.shape == (1,)


def test_scales_round_up_to_float16():
    x = torch.tensor([1e-3, 0.1234567, 3.0, 1e-9])
    up = q.float16_at_least(x)
    assert torch.all(up >= x)
    assert torch.equal(up.half().float(), up)


def test_int8_per_row_keeps_the_logits_close_and_int2_does_not(ids):
    model = tiny_model()
    with torch.no_grad():
        ref = model(ids)
        int8 = q.quantized_copy(model, QuantSpec(8))(ids)
        int2 = q.quantized_copy(model, QuantSpec(2))(ids)
    spread = ref.std().item()
    assert (int8 - ref).abs().max().item() < 0.02 * spread
    assert (int2 - ref).abs().max().item() > 0.2 * spread
    assert (int8.argmax(-1) == ref.argmax(-1)).float().mean() >= 0.9


def test_float16_round_trips_and_float32_is_exact(ids):
    model = tiny_model()
    half = q.quantized_copy(model, QuantSpec(16))
    for name, w in q.matrices(model).items():
        got = dict(half.named_parameters())[name]
        assert torch.equal(got, w.detach().half().float())
    with torch.no_grad():
        assert torch.equal(q.quantized_copy(model, QuantSpec(32))(ids), model(ids))


def test_the_model_given_is_never_changed():
    model = tiny_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for spec in q.all_specs():
        copy = q.quantized_copy(model, spec)
        assert copy is not model
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_layernorms_and_biases_stay_float32():
    model = tiny_model()
    copy = q.quantized_copy(model, QuantSpec(2, "tensor"))
    for name, p in model.named_parameters():
        if p.dim() != 2:
            assert torch.equal(dict(copy.named_parameters())[name], p)


def test_outliers_keep_their_float16_values_and_set_no_scale():
    w = tiny_model().blocks[0].mlp.fc_out.weight.detach().clone()
    w[3, 5] = 1.0  # one weight far outside the rest (std 0.02)
    plain = q.quantize_matrix(w, QuantSpec(4, "tensor"))
    aside = q.quantize_matrix(w, QuantSpec(4, "tensor", outliers=True))
    k = round(q.OUTLIER_FRACTION * w.numel())
    assert int(aside.outliers.sum()) == max(1, k)
    assert aside.outliers[3, 5]
    assert torch.equal(aside.values[aside.outliers], w[aside.outliers].half().float())
    assert aside.scales[0] < plain.scales[0] / 5  # the big weight no longer stretches the grid
    assert aside.nbytes == math.ceil(w.numel() / 2) + 2 + 6 * max(1, k)
    rest = ~aside.outliers
    assert (aside.values - w)[rest].pow(2).mean() < (plain.values - w)[rest].pow(2).mean() / 10


def test_bytes_equal_a_count_by_hand():
    model = tiny_model()  # V=23, n_ctx=16, D=32, 2 layers, d_mlp=128, biases, untied
    shapes = [(23, 32), (16, 32)] + [(96, 32), (32, 32), (128, 32), (32, 128)] * 2 + [(23, 32)]
    n_matrix = sum(r * c for r, c in shapes)
    n_rows = sum(r for r, _ in shapes)
    n_rest = model.n_params() - n_matrix
    assert q.size_of(model, QuantSpec(32)).total == 4 * model.n_params()
    assert q.float32_size(model).total == 4 * model.n_params()
    assert q.size_of(model, QuantSpec(16)).total == 2 * n_matrix + 4 * n_rest
    int8 = q.size_of(model, QuantSpec(8))
    assert (int8.matrices, int8.scales, int8.outliers) == (n_matrix, 2 * n_rows, 0)
    assert int8.total == n_matrix + 2 * n_rows + 4 * n_rest
    int4 = q.size_of(model, QuantSpec(4, "tensor", outliers=True))
    n_out = sum(max(1, round(q.OUTLIER_FRACTION * r * c)) for r, c in shapes)
    assert int4.matrices == sum(math.ceil(r * c * 4 / 8) for r, c in shapes)
    assert int4.scales == 2 * len(shapes)
    assert int4.outliers == 6 * n_out
    int3 = q.size_of(model, QuantSpec(3))
    assert int3.matrices == sum(math.ceil(r * c * 3 / 8) for r, c in shapes)


def test_tied_embeddings_are_counted_once():
    model = tiny_model(tie_embeddings=True)
    assert "unembed.weight" not in q.matrices(model)
    assert q.size_of(model, QuantSpec(32)).total == 4 * model.n_params()


def test_names_parse_back_and_bad_ones_are_refused():
    for spec in q.all_specs():
        assert q.parse_spec(spec.name) == spec
    assert q.parse_spec("float32") == QuantSpec(32)
    assert q.parse_spec(" INT8 ") == QuantSpec(8)
    for bad in ["int5", "int8-row", "", "float64", "<b>int8</b>"]:
        with pytest.raises(ValueError):
            q.parse_spec(bad)


def test_a_quantised_copy_has_an_id_that_combines_with_a_step(tmp_path):
    final = models.bundle_id(tmp_path)
    snap = models.bundle_id(tmp_path, 30)
    assert models.split_precision(models.with_precision(final, "int4")) == (final, "int4")
    both = models.with_precision(snap, "int8-tensor")
    assert models.split_precision(both) == (snap, "int8-tensor")
    assert models.split_step(both) == (final, 30)  # pages asking for the step still get it
    assert models.path_of(both) == tmp_path
    assert models.with_precision(both, "int2") == models.with_precision(snap, "int2")
    assert models.split_precision(final) == (final, None)


def test_the_docstring_examples_run():
    import doctest

    import serving.models
    import ui.charts.quantization
    import viz_model.analysis.labs.quantization
    import viz_model.model.quantize

    for module in (viz_model.model.quantize, viz_model.analysis.labs.quantization, serving.models):
        result = doctest.testmod(module)
        assert result.attempted >= 1 and result.failed == 0, module.__name__
    assert doctest.testmod(ui.charts.quantization).failed == 0
