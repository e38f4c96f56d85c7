"""The sweep contrasts' claims (viz_model/analysis/labs/sweeps.py) on constructed numbers, each
side of each margin, and on the committed results files (assets/contrasts/*.json)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from viz_model.analysis.claims import times
from viz_model.analysis.grad_health import DEPTH_RATIO
from viz_model.analysis.labs import sweeps as sw

M = sw.MARGIN


def run(
    name: str = "r",
    *,
    n_layer: int = 2,
    residual: bool = True,
    norm_kind: str = "layernorm",
    dropout: float = 0.0,
    lr: float = 3e-3,
    optimizer: str = "adamw",
    warmup: int = 50,
    initial: float = 4.35,
    final_train: float = 2.5,
    final_val: float | None = 2.5,
    stopped: str | None = None,
    steps: int = 400,
    grads: dict[str, float] | None = None,
    eval_curves: tuple[list[float], list[float]] | None = None,
) -> sw.Run:
    """A run as a results file would describe it, with only the numbers a claim reads."""
    grads = grads or {}
    ev_steps = np.arange(1, len(eval_curves[0]) + 1) * 100.0 if eval_curves else None
    return sw.Run(
        name=name,
        command="python -m viz_model.training ...",
        model=dict(n_layer=n_layer, residual=residual, norm_kind=norm_kind, dropout=dropout),
        train=dict(lr=lr, optimizer=optimizer, warmup_steps=warmup),
        steps=steps,
        stopped=stopped,
        initial_loss=initial,
        final_train=final_train,
        final_val=final_val,
        peak_train=max(initial, final_train),
        curve=sw.Curve(np.array([10.0, 20.0]), np.array([initial, final_train])),
        val=sw.Curve(np.array([float(steps)]), np.array([final_val or np.nan])),
        grad_layers=tuple(grads),
        grad_median=np.array(list(grads.values()), dtype=float),
        seconds=1.0,
        eval_train=sw.Curve(ev_steps, np.array(eval_curves[0])) if eval_curves else None,
        eval_val=sw.Curve(ev_steps, np.array(eval_curves[1])) if eval_curves else None,
    )


def sweep(*runs: sw.Run, key: str = "depth") -> sw.Sweep:
    return sw.Sweep(key, "t", f"python scripts/contrast_sweeps.py --only {key}", 1.0, "", runs)


def depth_sweep(shallow_with, deep_with, shallow_without, deep_without) -> sw.Sweep:
    return sweep(
        run("2", n_layer=2, final_val=shallow_with),
        run("2n", n_layer=2, residual=False, final_val=shallow_without),
        run("8", n_layer=8, final_val=deep_with),
        run("8n", n_layer=8, residual=False, final_val=deep_without),
    )


# ---- depth ---------------------------------------------------------------------------------


def test_depth_claim_is_made_when_depth_hurts_only_without_residuals():
    claim = sw.depth_claim(depth_sweep(2.4, 2.3, 2.5, 2.5 + M + 0.01))
    assert claim.made and "nats better" in claim.text
    assert "2.40" in claim.text and "2.30" in claim.text and "2.56" in claim.text
    assert sw.depth_claim(depth_sweep(2.4, 2.4 + M - 0.01, 2.5, 2.7)).made  # within the margin


@pytest.mark.parametrize(
    "values",
    [
        (2.4, 2.3, 2.5, 2.5 + M - 0.01),  # without residuals, depth costs less than the margin
        (2.4, 2.4 + M + 0.01, 2.5, 2.9),  # with them, depth hurts too
    ],
)
def test_depth_claim_is_neutral_when_the_pattern_is_within_the_margin(values):
    claim = sw.depth_claim(depth_sweep(*values))
    assert not claim.made and "does not show" in claim.text


def test_depth_claim_says_what_it_lacks():
    assert not sw.depth_claim(sweep(run(n_layer=2))).made


def test_baseline_claim_places_the_loss_against_letter_frequencies_and_bigrams():
    base = {"unigram": 3.32, "bigram": 2.50, "blind guess": 4.34}

    def at(v: float) -> sw.Run:
        r = run("8n", final_val=v)
        return sw.Run(**{**r.__dict__, "baselines": base})

    stuck = sw.baseline_claim(at(3.32 - M + 0.01))
    assert stuck.made and "nothing more" in stuck.text and "3.32" in stuck.text
    assert sw.baseline_claim(at(3.5)).made  # worse than the unigram: nothing more either
    better = sw.baseline_claim(at(2.50 - M - 0.01))
    assert better.made and "more than the previous character" in better.text
    for v in (3.32 - M - 0.01, 2.50 - M + 0.01):
        assert not sw.baseline_claim(at(v)).made
    assert not sw.baseline_claim(run()).made  # no baselines recorded


@pytest.mark.parametrize(
    "val, words",
    [
        (3.50, "above the unigram's, it predicts **worse**"),
        (3.33, "within 0.05 nats of the unigram's (0.01 above), it learned"),
        (3.00, "below the unigram's and above the bigram's, between the two"),
        (2.52, "below the unigram's and within 0.05 nats of the bigram's (0.02 above)"),
        (2.48318, "below the unigram's and within 0.05 nats of the bigram's (0.02 below)"),
        (2.45642, "below the unigram's and within 0.05 nats of the bigram's (0.04 below)"),
        (2.40, "below both, it uses more than the previous character"),
    ],
)
def test_baseline_claim_compares_with_each_baseline_it_names(val, words):
    """Issue 36: "2 layers ends at 2.48 nats ... bigram 2.50: between the two", while both
    depths ended below the bigram line."""
    r = run("2 layers", final_val=val)
    base = {"unigram": 3.32202, "bigram": 2.50456}
    claim = sw.baseline_claim(sw.Run(**{**r.__dict__, "baselines": base}))
    assert words in claim.text
    if val < 2.50456:
        assert "between the two" not in claim.text and "above the bigram" not in claim.text


def test_the_stored_depth_sweep_places_each_run_truly():
    for r in sw.load_sweep("depth").runs:
        text, v = sw.baseline_claim(r).text, r.final_val
        uni, bi = r.baselines["unigram"], r.baselines["bigram"]
        assert ("between the two" in text) == (bi + M < v < uni - M)
        assert ("below both" in text) == (v < bi - M)
        assert ("below the unigram's" in text or "below both" in text) == (v < uni - M)


def _grads(bottom: float, top: float) -> dict[str, float]:
    return {"embed": 1.0, "blocks.0": bottom, "blocks.1": 0.5, "blocks.2": top, "unembed": 1.0}


def test_depth_gradient_claim_needs_the_factor_either_way():
    f = DEPTH_RATIO
    vanish = sw.depth_gradient_claim(run(grads=_grads(0.01, 0.01 * f * 1.01)))
    assert vanish.made and "vanishes" in vanish.text
    assert vanish.numbers["ratio"] == pytest.approx(f * 1.01)
    grow = sw.depth_gradient_claim(run(grads=_grads(0.01 * f * 1.01, 0.01)))
    assert grow.made and "grows" in grow.text
    for bottom, top in ((0.01, 0.01 * f * 0.99), (0.01 * f * 0.99, 0.01)):
        flat = sw.depth_gradient_claim(run(grads=_grads(bottom, top)))
        assert not flat.made and "neither vanishes nor grows" in flat.text
    assert not sw.depth_gradient_claim(run(grads={"embed": 1.0, "blocks.0": 1.0})).made


# ---- LayerNorm across learning rates ----------------------------------------------------------


def test_outcome_reads_nan_stops_blow_ups_training_and_stalls():
    nan = run(stopped="loss became NaN at step 12; kept the weights of step 11")
    assert sw.outcome(nan) == "diverged"
    assert sw.outcome(run(initial=4.3, final_train=4.3)) == "diverged"  # no better than untrained
    base = {"unigram": 3.32}
    trained = run(initial=4.3, final_train=3.0, final_val=3.32 - M - 0.01)
    assert sw.outcome(sw.Run(**{**trained.__dict__, "baselines": base})) == "trained"
    stalled = run(initial=4.3, final_train=3.3, final_val=3.32 - M + 0.01)
    assert sw.outcome(sw.Run(**{**stalled.__dict__, "baselines": base})) == "stalled"
    assert sw.outcome(stalled) == "trained"  # no baseline: below the untrained loss suffices
    stopped = run(stopped="stopped on request after step 5", final_train=2.0, final_val=2.0)
    assert not stopped.nonfinite and sw.outcome(stopped) == "trained"


def test_large_losses_are_said_in_words():
    assert [sw.big(x) for x in (2.456, 126.3, 8.46e6, 1.7256e10)] == [
        "2.46",
        "126",
        "8.5 million",
        "17.3 billion",
    ]


def test_large_factors_are_said_in_words():
    assert [times(x) for x in (14.2, 2300, 4.08e6, 4.08e9)] == [
        "14",
        "2,300",
        "4.1 million",
        "4.1 billion",
    ]


def lr_sweep(none_at_high: sw.Run) -> sw.Sweep:
    return sweep(
        run("ln lo", lr=1e-3),
        run("none lo", lr=1e-3, norm_kind="none"),
        run("ln hi", lr=0.1, final_val=2.9),
        none_at_high,
        key="layernorm-lr",
    )


def test_lr_claim_names_the_rate_where_only_the_unnormalised_run_diverges():
    blew_up = run("none hi", lr=0.1, norm_kind="none", final_train=7.3e6, final_val=8e6)
    claim = sw.lr_claim(lr_sweep(blew_up))
    assert claim.made and claim.numbers["lr"] == 0.1
    assert "7.3 million" in claim.text and "2.90" in claim.text
    assert "without normalization: 0.1" in claim.text
    nan = run("none hi", lr=0.1, norm_kind="none", stopped="loss became NaN at step 40", steps=40)
    assert "stopped on a NaN at step 40" in sw.lr_claim(lr_sweep(nan)).text


def test_lr_claim_is_neutral_when_both_train_or_both_diverge():
    trained = run("none hi", lr=0.1, norm_kind="none", final_val=2.8)
    claim = sw.lr_claim(lr_sweep(trained))
    assert not claim.made and "At no rate tried" in claim.text
    both = sweep(
        run("ln", lr=0.1, final_train=5.0),
        run("none", lr=0.1, norm_kind="none", final_train=5.0),
        key="layernorm-lr",
    )
    claim = sw.lr_claim(both)
    assert not claim.made and "Diverged with LayerNorm: 0.1" in claim.text


def test_lr_trained_claim_says_which_kind_ended_lower_and_the_largest_spike():
    def pair(x, ln_val, none_val, none_peak=4.35):
        no = run(f"n {x}", lr=x, norm_kind="none", final_val=none_val)
        no = sw.Run(**{**no.__dict__, "peak_train": none_peak})
        return run(f"l {x}", lr=x, final_val=ln_val), no

    s = sweep(*pair(1e-3, 2.5, 2.5 + M + 0.01), *pair(0.03, 2.7, 2.5, 126.0), key="layernorm-lr")
    claim = sw.lr_trained_claim(s)
    assert claim.made and "LayerNorm ended lower at 0.001" in claim.text
    assert "no normalization ended lower at 0.03" in claim.text
    assert "was 126 nats, 29 times the untrained" in claim.text
    tie = sweep(*pair(1e-3, 2.5, 2.5 + M - 0.01), key="layernorm-lr")
    claim = sw.lr_trained_claim(tie)
    assert not claim.made and "within 0.05 nats" in claim.text
    spike_only = sweep(*pair(1e-3, 2.5, 2.5, 2 * 4.35 + 0.1), key="layernorm-lr")
    assert sw.lr_trained_claim(spike_only).made
    calm = sweep(*pair(1e-3, 2.5, 2.5), key="layernorm-lr")
    assert "was" not in sw.lr_trained_claim(calm).text  # peak at the untrained loss: no spike


# ---- dropout -----------------------------------------------------------------------------------


def dropout_sweep(gap_without: float, gap_with: float) -> sw.Sweep:
    return sweep(
        run("d0", dropout=0.0, eval_curves=([2.0, 1.5], [2.2, 1.5 + gap_without])),
        run("d2", dropout=0.2, eval_curves=([2.1, 1.8], [2.2, 1.8 + gap_with])),
        key="dropout",
    )


def test_gap_claim_needs_a_larger_gap_without_dropout_beyond_the_margin():
    made = sw.gap_claim(dropout_sweep(0.3 + M + 0.01, 0.3))
    assert made.made and made.numbers["gap_without"] == pytest.approx(0.36)
    assert "a gap of 0.36" in made.text and "a gap of 0.30" in made.text
    assert not sw.gap_claim(dropout_sweep(0.3 + M - 0.01, 0.3)).made
    assert not sw.gap_claim(dropout_sweep(0.1, 0.3)).made
    assert not sw.gap_claim(sweep(run(dropout=0.0), run(dropout=0.2), key="dropout")).made


def test_overfit_claim_needs_the_held_out_loss_to_rise_while_training_falls():
    over = run("d0", eval_curves=([2.0, 1.6, 1.2], [2.1, 1.9, 1.9 + M + 0.01]))
    claim = sw.overfit_claim(over)
    assert claim.made and "lowest at step 200 (1.90)" in claim.text and "overfits" in claim.text
    flat = run("d0", eval_curves=([2.0, 1.6, 1.2], [2.1, 1.9, 1.9 + M - 0.01]))
    assert not sw.overfit_claim(flat).made
    falling = sw.overfit_claim(run("d2", eval_curves=([2.0, 1.9, 1.8], [2.2, 2.1, 2.0])))
    assert not falling.made and "lowest at the last step, 300 (2.00)" in falling.text
    both_rise = run("d0", eval_curves=([2.0, 1.6, 1.7], [2.1, 1.9, 2.2]))
    assert not sw.overfit_claim(both_rise).made  # the training text's loss did not fall


# ---- optimisers --------------------------------------------------------------------------------


def opt_sweep(adam_warm, adam_cold, sgd_warm, sgd_cold, cold_stop=None) -> sw.Sweep:
    return sweep(
        run("a w", final_val=adam_warm),
        run("a c", warmup=0, final_val=adam_cold),
        run("s w", optimizer="sgd", lr=0.1, final_val=sgd_warm),
        run("s c", optimizer="sgd", lr=0.1, warmup=0, final_val=sgd_cold, stopped=cold_stop),
        key="optimizers",
    )


def test_warmup_claim_each_side_of_the_margin():
    helped = sw.warmup_claim(opt_sweep(2.4, 2.4 + M + 0.01, 2.8, 2.8), "adamw")
    assert helped.made and "helped, by 0.06" in helped.text and "AdamW" in helped.text
    hurt = sw.warmup_claim(opt_sweep(2.4, 2.4 - M - 0.01, 2.8, 2.8), "adamw")
    assert hurt.made and "cost 0.06" in hurt.text
    none = sw.warmup_claim(opt_sweep(2.4, 2.4 + M - 0.01, 2.8, 2.8), "adamw")
    assert not none.made and "no difference" in none.text
    assert "no early blow-up" in none.text
    s = opt_sweep(2.4, 2.4, 2.8, 2.8)
    cold = next(r for r in s.runs if r.name == "a c")
    spiked = sw.Run(**{**cold.__dict__, "peak_train": 2 * cold.initial_loss + 0.01})
    claim = sw.warmup_claim(sw.Sweep(**{**s.__dict__, "runs": (s.runs[0], spiked)}), "adamw")
    assert claim.made and "2 times the untrained" in claim.text
    nan = sw.warmup_claim(opt_sweep(2.4, 2.4, 2.8, 2.8, "loss became NaN at step 9"), "sgd")
    assert nan.made and "stopped on a NaN" in nan.text and "SGD with momentum" in nan.text


def test_optimizer_claim_each_side_of_the_margin():
    assert "AdamW is 0.06" in sw.optimizer_claim(opt_sweep(2.4, 2.4, 2.46 + 0.001, 2.5)).text
    assert "SGD is 0.06" in sw.optimizer_claim(opt_sweep(2.46 + 0.001, 2.4, 2.4, 2.5)).text
    tie = sw.optimizer_claim(opt_sweep(2.4, 2.4, 2.4 + M - 0.01, 2.5))
    assert not tie.made and "within" in tie.text


# ---- the files ----------------------------------------------------------------------------------


def test_a_missing_or_damaged_file_is_a_plain_value_error(tmp_path):
    with pytest.raises(ValueError, match="not there"):
        sw.load_sweep("depth", tmp_path)
    (tmp_path / "depth.json").write_text("{not json")
    with pytest.raises(ValueError, match="could not be read"):
        sw.load_sweep("depth", tmp_path)
    (tmp_path / "depth.json").write_text(json.dumps({"runs": [{"name": "x"}]}))
    with pytest.raises(ValueError, match="could not be read"):
        sw.load_sweep("depth", tmp_path)


@pytest.mark.parametrize("key", list(sw.SWEEPS))
def test_every_committed_sweep_loads_and_its_numbers_agree_with_themselves(key):
    s = sw.load_sweep(key)
    assert s.runs and s.script.endswith(f"--only {key}")
    assert len({r.name for r in s.runs}) == len(s.runs)  # a name says which run a row is
    for r in s.runs:
        assert r.command.startswith("python -m viz_model.training")
        assert r.curve.step.size and np.all(np.diff(r.curve.step) > 0)
        assert r.peak_train >= r.final_train or not math.isfinite(r.final_train)
        assert r.val.step[-1] <= r.steps
        assert len(r.grad_layers) == r.grad_median.size == r.model["n_layer"] + 2


def test_the_committed_depth_sweep_has_every_pair_of_depth_and_residual():
    s = sw.load_sweep("depth")
    pairs = {(sw.n_layer(r), sw.residual(r)) for r in s.runs}
    assert pairs == {(2, True), (2, False), (8, True), (8, False)}


def test_the_committed_lr_sweep_has_both_kinds_at_every_rate():
    s = sw.load_sweep("layernorm-lr")
    rates = {sw.lr(r) for r in s.runs}
    for x in rates:
        assert {sw.norm_kind(r) for r in s.runs if sw.lr(r) == x} == {"layernorm", "none"}
    assert all(sw.warmup(r) == 0 for r in s.runs)


def test_the_committed_dropout_sweep_measured_both_splits_at_the_same_steps():
    s = sw.load_sweep("dropout")
    assert {sw.dropout(r) for r in s.runs} == {0.0, 0.2}
    for r in s.runs:
        assert np.array_equal(r.eval_train.step, r.eval_val.step)
        assert r.eval_val.loss[-1] == pytest.approx(r.final_val, abs=0.02)  # float16 snapshot
