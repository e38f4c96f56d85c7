"""The cost curves' sentences against synthetic numbers: the GPT faster, the LSTM faster, the two
equal within the noise, a mix; each printed number is the one the figure shows, rounded as the
page rounds it, and the GPU is named only as the known reason, when the GPT is not faster."""

from __future__ import annotations

import dataclasses

import pytest

from viz_model.analysis import cost_curves as cc

LENGTHS = (64, 256, 1024)
BASE = cc.CostCurves(
    lengths=LENGTHS,
    batch=2,
    repeats=5,
    threads=1,
    weights={"GPT": 109_952, "LSTM": 116_237},
    shapes={
        "GPT": {"n_layer": 2, "d_model": 64, "n_head": 4},
        "LSTM": {"n_layer": 2, "d_model": 80},
    },
    step_s={"GPT": (0.001, 0.002, 0.004), "LSTM": (0.002, 0.008, 0.032)},
    forward_s={"GPT": (0.001, 0.001, 0.002), "LSTM": (0.001, 0.002, 0.004)},
    attention_bytes=tuple(2 * 2 * 4 * T * T * 4 for T in LENGTHS),
    state_bytes=tuple(2 * 2 * T * 160 * 4 for T in LENGTHS),
    recorded_bytes=(2 * 2 * 4 * 64 * 64 * 4, None, None),
    seconds=1.0,
)


def _with_steps(gpt, lstm) -> cc.CostCurves:
    return dataclasses.replace(BASE, step_s={"GPT": gpt, "LSTM": lstm})


def test_a_gpt_faster_at_every_length_is_said_so_without_the_gpu_reason():
    claim = cc.step_claim(BASE)
    assert claim.made
    assert "the GPT's step was faster at every length measured" in claim.text
    assert "1.00 ms for the GPT and 2.00 ms for the LSTM at T = 64" in claim.text
    assert "4.00 and 32.0 ms at T = 1,024" in claim.text
    assert "×4.0 for the GPT, ×16.0 for the LSTM, while T grew ×16" in claim.text
    assert "GPU" not in claim.text


def test_an_lstm_faster_at_every_length_is_said_so_with_the_gpu_named_as_known_not_measured():
    claim = cc.step_claim(_with_steps((0.003, 0.03, 0.3), (0.002, 0.008, 0.032)))
    assert not claim.made
    assert "the LSTM's step was faster at every length measured" in claim.text
    assert "300 and 32.0 ms at T = 1,024" in claim.text
    assert "(known, not measured here)" in claim.text


def test_steps_within_the_noise_are_called_equal_not_a_win():
    claim = cc.step_claim(_with_steps((0.0100, 0.0200, 0.0400), (0.0105, 0.0190, 0.0420)))
    assert f"within {cc.NOISE:.0%} at every length measured" in claim.text
    assert "faster" not in claim.text.split("(known")[0].replace("trains faster", "")
    assert not claim.made


def test_a_crossing_names_the_lengths_where_each_was_faster():
    claim = cc.step_claim(_with_steps((0.001, 0.008, 0.010), (0.004, 0.008, 0.050)))
    assert "the GPT's step was faster at T = 64 and 1,024" in claim.text
    assert "within 15% at T = 256" in claim.text
    assert claim.made


@pytest.mark.parametrize(
    ("gpt", "lstm", "want"),
    [
        (1.0, 1.1, "equal"),
        (1.0, 2.0, "GPT"),
        (2.0, 1.0, "LSTM"),
        (1.0, 1.17, "equal"),
        (1.0, 1.19, "GPT"),
    ],
)
def test_faster_uses_the_noise_of_the_slower_time(gpt, lstm, want):
    assert cc.faster(gpt, lstm) == want


def test_the_memory_sentence_states_the_counted_bytes_and_their_growth():
    claim = cc.memory_claim(BASE)
    assert claim.made
    assert "grow from 0.26 to 67 MB (×256: with T squared)" in claim.text
    assert "from 0.16 to 2.6 MB (×16: with T)" in claim.text
    assert claim.numbers["attention at last"] == BASE.attention_bytes[-1]


def test_an_lstm_faster_except_where_equal_names_both_sets_of_lengths():
    claim = cc.step_claim(_with_steps((0.0021, 0.005, 0.03), (0.002, 0.0025, 0.01)))
    assert (
        "On this machine the LSTM's step was faster at T = 256 and 1,024; the two were within 15% at T = 64."
        in claim.text
    )
    assert not claim.made


def _run(name, kind, points):
    return cc.TimedRun(name, kind, tuple(points))


def test_at_equal_time_the_shorter_runs_length_is_the_budget_and_the_lower_loss_is_ahead():
    gpt = _run("tiny", "GPT", [(7.4, 250, 2.501), (46.0, 1500, 1.855)])
    lstm = _run("lstm", "LSTM", [(9.2, 250, 1.882), (41.4, 750, 1.67), (90.2, 1500, 1.6)])
    claim = cc.same_time_claim(gpt, lstm)
    assert claim.made and claim.numbers["seconds"] == 46.0
    assert "By 46 s of training" in claim.text
    assert "tiny (GPT) had reached a validation loss of 1.855 (step 1,500, 46 s)" in claim.text
    assert "lstm (LSTM) 1.670 (step 750, 41 s)" in claim.text
    assert claim.text.endswith("the LSTM was ahead at equal time.")


def test_at_equal_time_losses_within_the_margin_are_about_equal():
    a = _run("a", "GPT", [(5.0, 50, 2.0), (10.0, 100, 1.700)])
    b = _run("b", "LSTM", [(5.0, 50, 2.0), (9.0, 90, 1.71), (12.0, 120, 1.6)])
    claim = cc.same_time_claim(a, b)
    assert not claim.made and claim.text.endswith(": about equal.")


def test_at_equal_time_a_run_without_a_timed_evaluation_is_refused_in_words():
    a = _run("a", "GPT", [])
    claim = cc.same_time_claim(a, _run("b", "LSTM", [(9.0, 90, 1.71)]))
    assert not claim.made and "cannot be set side by side" in claim.text
    late = cc.same_time_claim(_run("a", "GPT", [(3.0, 9, 2.0)]), _run("b", "LSTM", [(5.0, 9, 2.0)]))
    assert not late.made and "had not been evaluated yet" in late.text


def test_timed_run_keeps_only_records_with_a_clock_a_step_and_a_validation_loss():
    history = [
        {"step": 10, "elapsed": 1.0, "loss": 3.0},
        {"step": 20, "elapsed": 2.0, "val_loss": 2.5},
        {"step": 30, "val_loss": 2.4},
    ]
    assert cc.timed_run("m", "GPT", history).points == ((2.0, 20, 2.5),)
