"""Gradient health read back from a history (analysis/grad_health.py) and its claims on
constructed numbers: each claim is made exactly when its condition holds, says its numbers, and
an old history without the fields means "not recorded"."""

from __future__ import annotations

import math

import numpy as np
import pytest

from viz_model.analysis import grad_health as gh


def history(
    n: int = 100,
    every: int = 10,
    blocks: tuple[float, ...] = (1.0, 1.0),
    norm=lambda step: 0.5,
    update: float = 1e-3,
    lr=lambda step: 1e-3,
) -> list[dict]:
    """Records as the loop writes them: grad_norm every step, per-layer every `every` steps with
    block l's gradient norm blocks[l]."""
    out = []
    for step in range(1, n + 1):
        r = {"step": step, "train_loss": 3.0, "lr": lr(step), "grad_norm": norm(step)}
        if step == 1 or step % every == 0:
            layers = {"embed": 0.1, **{f"blocks.{i}": g for i, g in enumerate(blocks)}}
            r["grad_layers"] = {**layers, "unembed": 0.3}
            r["update_layers"] = {name: update for name in r["grad_layers"]}
        out.append(r)
    return out


def test_an_old_history_records_no_gradient_health_and_every_claim_says_so():
    old = [{"step": s, "train_loss": 3.0, "lr": 1e-3} for s in range(1, 50)]
    assert gh.grad_health(old, 1.0) is None
    assert gh.grad_health([], 1.0) is None
    for claim in (gh.depth_claim, gh.growth_claim, gh.clipping_claim, gh.update_claim):
        said = claim(None)
        assert not said.made and said.text == gh.NOT_RECORDED


def test_the_arrays_follow_the_records_in_model_order():
    h = gh.grad_health(history(n=30, every=10, blocks=(3.0, 2.0, 1.0)), 1.0)
    assert h.layers == ("embed", "blocks.0", "blocks.1", "blocks.2", "unembed")
    assert h.blocks == [1, 2, 3]
    assert h.steps.tolist() == [1, 10, 20, 30]
    assert h.grad[:, 1].tolist() == [3.0] * 4 and h.norm.size == 30
    assert [gh.layer_label(n) for n in h.layers] == [
        "embeddings", "block 0", "block 1", "block 2", "final LN + unembedding",
    ]  # fmt: skip


def test_blocks_are_ordered_by_number_and_odd_names_do_not_break_the_reading():
    records = [
        {
            "step": 1,
            "grad_norm": 1.0,
            "grad_layers": {
                "blocks.10": 1.0,
                "blocks.2": 2.0,
                "unembed": 1.0,
                "blocks.x": 3.0,
                "embed": "bad",
            },
        },  # fmt: skip
        {"step": 2, "grad_norm": "nan?", "grad_layers": "not a dict"},
        {"step": 3, "grad_norm": 2.0, "grad_layers": {"blocks.2": 1.0}, "update_layers": [1, 2]},
    ]
    h = gh.grad_health(records, 0.0)
    assert h.layers == ("embed", "blocks.2", "blocks.10", "blocks.x", "unembed")
    assert math.isnan(h.grad[0, 0])  # a value that is not a number is not recorded
    assert h.norm.tolist() == [1.0, 2.0]
    assert np.isnan(h.update).all()  # update ratios that are not a mapping are not recorded


@pytest.mark.parametrize(
    "blocks, made, words",
    [
        ((0.01, 0.5, 1.0), True, "100 times smaller"),
        ((1.0, 0.5, 0.05), True, "20 times larger"),
        ((0.2, 1.0, 1.0), False, "neither vanishes nor grows"),
        ((1.0,), False, "one block"),
    ],
)
def test_the_depth_claim_compares_the_top_block_with_block_0(blocks, made, words):
    claim = gh.depth_claim(gh.grad_health(history(blocks=blocks), 1.0))
    assert claim.made == made and words in claim.text
    if "ratio" in claim.numbers:
        n = claim.numbers
        assert n["ratio"] == pytest.approx(n["top"] / n["bottom"])
        assert made == (n["ratio"] >= n["threshold"] or n["ratio"] <= 1 / n["threshold"])
        assert f"{n['bottom']:.3g}" in claim.text and f"{n['top']:.3g}" in claim.text


def test_the_depth_claim_reads_the_last_quarter_of_the_records():
    """Vanishing early, healthy late: the claim is about the end of training."""
    records = history(n=100, blocks=(1.0, 1.0))
    for r in records[:50]:
        if "grad_layers" in r:
            r["grad_layers"]["blocks.0"] = 1e-4
    claim = gh.depth_claim(gh.grad_health(records, 1.0))
    assert not claim.made and claim.numbers["first_step"] >= 80


@pytest.mark.parametrize(
    "norm, made, words",
    [
        (lambda s: 0.1 * (1.05**s), True, "exploding"),
        (lambda s: 50.0 / s**2, False, "fell"),
        (lambda s: 0.5 + 0.001 * s, False, "nothing exploded"),
    ],
)
def test_the_growth_claim_compares_the_last_quarter_of_the_steps_with_the_first(norm, made, words):
    h = gh.grad_health(history(norm=norm), 1.0)
    claim = gh.growth_claim(h)
    assert claim.made == made and words in claim.text
    n = claim.numbers
    assert n["first"] == pytest.approx(float(np.median([norm(s) for s in range(1, 26)])), rel=1e-6)
    assert n["last"] == pytest.approx(float(np.median([norm(s) for s in range(76, 101)])), rel=1e-6)
    assert made == (n["last"] / n["first"] >= n["threshold"])


def test_a_gradient_that_became_nan_is_said_to_have_exploded():
    records = history(n=20)
    records.append({"step": 21, "lr": 1e-3, "stopped": "the gradient became NaN or infinite at "
                    "step 21; kept the weights of step 20"})  # fmt: skip
    claim = gh.growth_claim(gh.grad_health(records, 1.0))
    assert claim.made and "step 21" in claim.text and "exploded" in claim.text
    loss_nan = history(n=20) + [{"step": 21, "stopped": "loss became NaN at step 21; ..."}]
    assert not gh.growth_claim(gh.grad_health(loss_nan, 1.0)).made  # not the gradient's


def test_too_few_steps_say_so():
    claim = gh.growth_claim(gh.grad_health(history(n=5), 1.0))
    assert not claim.made and "Too few steps" in claim.text


def test_the_clipping_claim_counts_the_steps_above_the_cap():
    h = gh.grad_health(history(n=100, norm=lambda s: 3.0 if s <= 30 else 0.5), 1.0)
    claim = gh.clipping_claim(h)
    assert claim.made and claim.numbers["clipped"] == 30 and claim.numbers["share"] == 0.3
    assert "30 of 100 steps (30%)" in claim.text and "last clipped step was 30" in claim.text
    never = gh.clipping_claim(gh.grad_health(history(norm=lambda s: 0.5), 1.0))
    assert not never.made and "never acted" in never.text
    off = gh.clipping_claim(gh.grad_health(history(norm=lambda s: 3.0), 0.0))
    assert not off.made and "Clipping was off" in off.text


@pytest.mark.parametrize(
    "update, made, words", [(0.05, True, "large"), (1e-5, True, "small"), (2e-3, False, "within")]
)
def test_the_update_claim_reads_the_step_where_the_learning_rate_peaked(update, made, words):
    def lr(step):  # warm-up to step 20, then down
        return 1e-3 * min(step / 20, 1.0) * (1.0 if step <= 20 else 0.5)

    records = history(n=100, update=update, lr=lr)
    for r in records:
        if r["step"] != 20 and "update_layers" in r:  # only the peak's record says `update`
            r["update_layers"] = {k: 1.0 for k in r["update_layers"]}
    claim = gh.update_claim(gh.grad_health(records, 1.0))
    assert claim.numbers["step"] == 20 and claim.numbers["median"] == pytest.approx(update)
    assert claim.made == made and words in claim.text
    assert "rule of thumb" in claim.text


def test_a_lora_runs_updates_are_the_adapters_and_get_no_verdict():
    """B starts at zero, so an adapter's relative step is large by construction: the numbers are
    said, the weights' rule of thumb is not applied to them."""
    records = history(n=100, update=0.05, lr=lambda step: 1e-3)
    health = gh.grad_health(records, 1.0)
    assert gh.update_claim(health).made and "**large**" in gh.update_claim(health).text
    claim = gh.update_claim(health, adapters=True)
    assert not claim.made and "adapters" in claim.text and "unstable" not in claim.text
    assert claim.numbers["median"] == pytest.approx(0.05)
    assert gh.is_lora({"finetune": {"mode": "lora"}}) and not gh.is_lora(
        {"finetune": {"mode": "full"}}
    )
    assert not gh.is_lora({}) and not gh.is_lora(None)


def _large_steps(loss) -> list[dict]:
    """Steps 100 times the rule of thumb (lr constant), with the training loss loss(step)."""
    records = history(n=400, update=0.1, lr=lambda step: 1e-3)
    for r in records:
        r["train_loss"] = loss(r["step"])
    return records


def test_large_steps_on_a_run_whose_loss_fell_smoothly_are_not_called_unstable():
    # the run: the app's preset, loss 2.568 -> 2.190 with a little batch noise
    noise = np.random.default_rng(0).normal(0.0, 0.03, 401)
    claim = gh.update_claim(
        gh.grad_health(_large_steps(lambda s: 2.568 - 0.378 * s / 400 + noise[s]), 1.0)
    )
    assert claim.made and "**large**" in claim.text  # the numbers are far over the rule of thumb
    assert "unstable" not in claim.text and "did not destabilise this run" in claim.text
    assert claim.numbers["loss_rise"] <= gh.LOSS_RISE


def test_large_steps_are_called_unstable_where_the_runs_loss_went_back_up():
    def loss(step):  # falls to 2.2 by step 200, then climbs back to 2.8
        return 2.6 - 0.4 * step / 200 if step <= 200 else 2.2 + 0.6 * (step - 200) / 200

    claim = gh.update_claim(gh.grad_health(_large_steps(loss), 1.0))
    assert claim.made and "can make training unstable" in claim.text
    assert claim.numbers["loss_rise"] > gh.LOSS_RISE and "went back up" in claim.text
    exploding = _large_steps(lambda s: 2.5)
    for r in exploding:
        r["grad_norm"] = 0.1 if r["step"] <= 100 else 5.0
    claim = gh.update_claim(gh.grad_health(exploding, 1.0))
    assert "can make training unstable" in claim.text and "gradient norm grew" in claim.text
