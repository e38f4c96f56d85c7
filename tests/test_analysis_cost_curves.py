"""The cost curves' measurement on tiny sizes: the shapes it returns, the counted memory exactly
(B x H x T x T float32 patterns, as recorded), growing with T, and the two models' weights within
the stated tolerance. No time is asserted: only that each is a positive number."""

from __future__ import annotations

import pytest

from viz_model.analysis import cost_curves as cc

LENGTHS = (8, 16, 32)


@pytest.fixture(scope="module")
def curves() -> cc.CostCurves:
    return cc.measure(11, LENGTHS, batch=2, repeats=1, record_up_to=16)


def test_every_series_has_one_number_per_length(curves):
    assert curves.lengths == LENGTHS
    for series in (*curves.step_s.values(), *curves.forward_s.values()):
        assert len(series) == len(LENGTHS) and all(s > 0 for s in series)
    assert set(curves.step_s) == set(curves.forward_s) == {"GPT", "LSTM"}
    assert len(curves.attention_bytes) == len(curves.state_bytes) == len(LENGTHS)


def test_the_attention_bytes_are_layers_batch_heads_t_squared_float32(curves):
    gpt = curves.shapes["GPT"]
    for T, counted in zip(LENGTHS, curves.attention_bytes, strict=True):
        assert counted == gpt["n_layer"] * 2 * gpt["n_head"] * T * T * 4


def test_the_state_bytes_are_layers_batch_t_hidden_and_cell(curves):
    lstm = curves.shapes["LSTM"]
    for T, counted in zip(LENGTHS, curves.state_bytes, strict=True):
        assert counted == lstm["n_layer"] * 2 * T * 2 * lstm["d_model"] * 4


def test_the_recorded_patterns_take_exactly_the_counted_bytes_up_to_the_cap(curves):
    assert curves.recorded_bytes[:2] == curves.attention_bytes[:2]
    assert curves.recorded_bytes[2] is None  # past record_up_to: not recorded


def test_the_counted_memory_grows_with_t_the_patterns_quadratically(curves):
    for series in (curves.attention_bytes, curves.state_bytes):
        assert all(a < b for a, b in zip(series, series[1:], strict=False))
    assert curves.attention_bytes[-1] / curves.attention_bytes[0] == (LENGTHS[-1] / LENGTHS[0]) ** 2
    assert curves.state_bytes[-1] / curves.state_bytes[0] == LENGTHS[-1] / LENGTHS[0]


def test_the_two_models_have_about_the_same_weights_the_position_table_aside():
    gpt, lstm = cc.cost_models(77, 1024)
    a, b = cc.weights(gpt), cc.weights(lstm)
    assert abs(a - b) <= cc.PARAMS_TOLERANCE * max(a, b)
    table = gpt.pos_embed.weight.numel()
    assert table == 1024 * gpt.cfg.d_model
    assert a == sum(p.numel() for p in gpt.parameters()) - table
    assert gpt.cfg.pos == "learned" and gpt.cfg.n_ctx == 1024


def test_median_seconds_runs_the_warm_up_and_the_repeats():
    calls = []
    assert cc.median_seconds(lambda: calls.append(1), repeats=3, warmup=2) >= 0
    assert len(calls) == 5


def test_the_committed_benchmark_run_reads_back_with_its_own_sentences():
    import json

    doc = json.loads(cc.BENCHMARK_FILE.read_text(encoding="utf-8"))
    b = cc.from_benchmark(doc)
    assert b.lengths[-1] >= 1024 and b.recorded_bytes[0] == b.attention_bytes[0]
    assert cc.step_claim(b).text == doc["step_claim"]
    assert cc.memory_claim(b).text == doc["memory_claim"]
    with pytest.raises(ValueError, match="damaged"):
        cc.from_benchmark({k: v for k, v in doc.items() if k != "step_ms"})


def test_no_benchmark_file_is_none(tmp_path):
    assert cc.load_benchmark(tmp_path / "absent.json") is None
