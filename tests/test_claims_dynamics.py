"""Training dynamics claims (docs/ARCHITECTURE.md, Claims): every sentence the page prints about a model's
training, run on every claim model that kept snapshots and checked against the numbers it came
from, and on constructed curves whose answer is known either way.

The claims: `copying_claim` ("learned to copy, half learned by step N" or "never learned to
copy"), `phase_change_claim` (the loss itself falls abruptly), `sharper_metric_claim` (whole-copy
accuracy rises over a clearly narrower window than the loss falls), `whole_copy_drop_claim` (why
whole-copy accuracy falls while per-token accuracy barely moves).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.claims_models import (
    CLAIM_MODELS,
    CLASS_TRAINED,
    GPT_CLAIM_MODELS,
    claim_bundle,
)
from viz_model.analysis import dynamics as dyn
from viz_model.analysis.attention import ordinary_tokens
from viz_model.analysis.training import final_step, training_steps


@pytest.fixture(scope="module")
def measured(claim_bundles):
    """name -> (bundle, Dynamics or None when it kept no snapshots), each measured once. Role
    scores on one sequence only: the claims use the losses and accuracies."""
    found = {}

    def get(name: str):
        if name not in found:
            b = claim_bundle(claim_bundles, name)
            final = final_step(b.history, b.meta)
            steps = training_steps(b.snapshot_steps(), final)
            d = None
            if steps:
                k = dyn.probe(b.tokenizer, b.meta, b.config.n_ctx, n=1).shape[1] // 2
                ids = dyn.probe(b.tokenizer, b.meta, b.config.n_ctx, n=dyn.copy_probes(k))
                load = lambda s: b.model if s == final else b.load_snapshot(s)  # noqa: E731
                d = dyn.dynamics(steps, load, ids, dyn.chance_accuracy(b.tokenizer), n_roles=1)
            found[name] = (b, d)
        return found[name]

    return get


def _with_snapshots(measured, name: str):
    b, d = measured(name)
    if d is None:
        pytest.skip(f"{name} kept no snapshots: the page says so and claims nothing")
    return b, d


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_copying_claim_holds_on_every_model_with_snapshots(measured, name):
    b, d = _with_snapshots(measured, name)
    claim = dyn.copying_claim(d)
    n = claim.numbers
    # the chance baseline: a random token of the probe is named 1 time in N ordinary tokens
    assert n["chance"] == pytest.approx(1 / len(ordinary_tokens(b.tokenizer)[0]))
    assert n["gap_end"] == pytest.approx(d.loss_first[-1] - d.loss_second[-1])
    beyond_noise = n["gap_end"] - n["gap_start"] > n["gap_noise"] > 0
    beyond_chance = n["accuracy"] - n["chance"] > n["accuracy_noise"]
    assert claim.made == (beyond_noise and beyond_chance)
    assert f"{d.loss_second[-1]:.2f}" in claim.text and f"{d.loss_first[-1]:.2f}" in claim.text
    if claim.made:
        half = int(n["half_step"])
        i = list(d.steps).index(half)
        # half learned: the first saved step at half the gain's rise, none before it
        assert d.gap[i] >= n["half_gap"] > d.gap[:i].max(initial=-np.inf)
        assert n["half_gap"] == pytest.approx((n["gap_start"] + n["gap_end"]) / 2)
        assert f"half learned by step {half:,}" in claim.text
        assert "never" not in claim.text
    else:
        assert "half learned" not in claim.text
        assert not claim.text.startswith("This model learned")
        assert "no easier" in claim.text if not beyond_noise else "not beyond chance" in claim.text
        if n["gap_end"] - n["gap_start"] < -n["gap_noise"]:
            assert "it is harder" in claim.text
        # random tokens cannot be predicted better than a uniform guess by reading only what
        # came before: when the first copy is, the sentence says the model sees ahead
        sees_ahead = n["loss_first"] < n["guess_loss"] - dyn.SEES_AHEAD
        assert ("this one sees the tokens it predicts" in claim.text) == sees_ahead
        assert sees_ahead == (not b.config.causal)  # shakespeare-nomask, and only it


def test_the_class_trained_model_never_learned_to_copy(measured):
    """The bug: 300 steps of the tiny preset, second-copy loss tracking the first copy's, and the
    page said "Copying is half learned by step N" (an absolute 0.1-nat threshold)."""
    _, d = _with_snapshots(measured, CLASS_TRAINED)
    claim = dyn.copying_claim(d)
    assert not claim.made
    assert claim.text.startswith("This model never learned to copy: the second copy is")
    for other in (dyn.phase_change_claim(d, claim), dyn.sharper_metric_claim(d)):
        assert not other.made


def test_induction_2l_learned_to_copy_half_way_inside_its_phase_change(measured):
    _, d = _with_snapshots(measured, "induction-2l")
    claim = dyn.copying_claim(d)
    assert claim.made and claim.text.startswith("This model learned to copy")
    # the claimed step lies where the curve makes 10% to 90% of its final gain
    rise = (d.gap - d.gap[0]) / (d.gap[-1] - d.gap[0])
    inside = d.steps[(rise > 0.1) & (rise < 0.9)]
    assert inside.min() <= claim.numbers["half_step"] <= inside.max()
    # and the loss itself changes phase there: the page must not call it only a metric's jump
    phase = dyn.phase_change_claim(d, claim)
    assert phase.made and "The loss itself changes phase" in phase.text
    assert phase.numbers["from_step"] <= claim.numbers["half_step"] <= phase.numbers["to_step"]


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_phase_change_claim_holds_on_every_model_with_snapshots(measured, name):
    _, d = _with_snapshots(measured, name)
    copying = dyn.copying_claim(d)
    claim = dyn.phase_change_claim(d, copying)
    n = claim.numbers
    a, b = (list(d.steps).index(int(n[key])) for key in ("from_step", "to_step"))
    fall = d.loss_second[0] - d.loss_second.min()
    assert n["fall"] == pytest.approx(fall)
    assert n["best_fall"] == pytest.approx(max(d.loss_second[a] - d.loss_second[b], 0.0))
    # no pair of saved steps within the window holds a larger fall
    window = n["window"]
    assert window == pytest.approx(dyn.ABRUPT_WINDOW * d.steps[-1])
    for i in range(len(d.steps)):
        for j in range(i + 1, len(d.steps)):
            if d.steps[j] - d.steps[i] <= window:
                assert d.loss_second[i] - d.loss_second[j] <= n["best_fall"] + 1e-9
    assert claim.made == (copying.made and n["best_fall"] >= dyn.ABRUPT_SHARE * fall)
    if claim.made:
        assert d.steps[b] - d.steps[a] <= window
        assert f"between steps {int(n['from_step']):,} and {int(n['to_step']):,}" in claim.text


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_sharper_metric_claim_holds_on_every_model_with_snapshots(measured, name):
    _, d = _with_snapshots(measured, name)
    claim = dyn.sharper_metric_claim(d)
    n = claim.numbers
    for curve, key in ((d.loss_second, "loss"), (d.exact_copy, "whole")):
        _check_window(d.steps, curve, n[f"{key}_t10"], n[f"{key}_t90"])
    rose = n["whole_peak"] - n["whole_start"] > n["whole_noise"]
    assert claim.made == (rose and n["whole_width"] <= dyn.SHARPER * n["loss_width"])
    if rose:
        assert f"({n['whole_width']:,.0f} steps)" in claim.text
        assert f"({n['loss_width']:,.0f} steps)" in claim.text
    else:
        assert "no rise in that metric" in claim.text
        assert ("at most 0 " not in claim.text) and ("none of the" in claim.text) == (
            round(max(n["whole_peak"], n["whole_start"]) * d.n_sequences) == 0
        )


def _check_window(steps: np.ndarray, y: np.ndarray, t10: float, t90: float) -> None:
    """t10 and t90 are where the curve (linear between saved steps) first makes 10% and 90% of
    its largest change from its first value."""
    change = y[np.argmax(np.abs(y - y[0]))] - y[0]
    if change == 0:
        return
    for t, q in ((t10, 0.1), (t90, 0.9)):
        assert (np.interp(t, steps, y) - y[0]) / change == pytest.approx(q, abs=1e-6)
        assert np.all((y[steps < t] - y[0]) / change < q + 1e-9)


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_whole_copy_drop_claim_holds_on_every_model_with_snapshots(measured, name):
    _, d = _with_snapshots(measured, name)
    claim = dyn.whole_copy_drop_claim(d, "“↵” (a line break)")
    n = claim.numbers
    peak, end = d.exact_copy.max(), d.exact_copy[-1]
    assert (n["peak"], n["end"]) == (pytest.approx(peak), pytest.approx(end))
    if peak - end < 1 / d.n_sequences:
        assert claim.text == "" and not claim.made
        return
    assert claim.made == (peak - end > n["noise"])
    k1 = d.copy_length - 1
    assert n["predicted_end"] == pytest.approx(d.copy_accuracy[-1] ** k1)
    assert f"{d.copy_accuracy[-1]:.3f}^{k1} = {d.copy_accuracy[-1] ** k1:.0%}" in claim.text
    assert f"falls from {peak:.0%} to {end:.0%}" in claim.text


def test_induction_2l_explains_its_whole_copy_drop_by_the_per_token_power(measured):
    """Whole-copy accuracy falls after its peak (about 40% to 25%) while per-token accuracy moves
    a few points: the page must explain it, with the numbers that do."""
    b, d = _with_snapshots(measured, "induction-2l")
    claim = dyn.whole_copy_drop_claim(d, "x")
    n = claim.numbers
    assert n["peak"] - n["end"] > 0.05 and n["peak_step"] < d.steps[-1]
    assert abs(n["accuracy_peak"] - n["accuracy_end"]) < 0.1  # per token: a small slip
    assert n["predicted_peak"] - n["predicted_end"] >= (n["peak"] - n["end"]) / 2
    assert "magnifies a small slip" in claim.text
    # and what the misses are: mostly one token, at the copy's end
    assert n["last_position"] < n["first_position"]
    assert b.tokenizer.id_to_token(int(d.miss_token[-1])) == "\n"


# ---- constructed curves: the answer known either way -------------------------------------


def _curves(loss_second, accuracy, exact=None, steps=None, loss_first=3.3, se=0.01, n=256):
    S = len(loss_second)
    steps = np.arange(S) * 100 if steps is None else np.asarray(steps)
    accuracy = np.asarray(accuracy, dtype=float)
    return dyn.Dynamics(
        steps=steps,
        scores={role: np.zeros((S, 1, 1)) for role in dyn.ROLES},
        offset_k=np.full((S, 1, 1), 2),
        loss_first=np.full(S, loss_first),
        loss_second=np.asarray(loss_second, dtype=float),
        copy_accuracy=accuracy,
        exact_copy=np.zeros(S) if exact is None else np.asarray(exact, dtype=float),
        copy_length=16,
        gap_se=np.full(S, se),
        accuracy_se=np.full(S, se),
        position_accuracy=np.tile(accuracy[:, None], (1, 15)),
        miss_token=np.zeros(S, dtype=np.int64),
        miss_share=np.full(S, 0.5),
        n_sequences=n,
        chance=1 / 26,
    )


def test_a_gap_within_the_noise_is_no_copying():
    d = _curves([3.3, 3.28, 3.27], [0.04, 0.04, 0.04])  # gap 0.03 < 3 * sqrt(2) * 0.01
    claim = dyn.copying_claim(d)
    assert not claim.made and "never learned to copy: the second copy is no easier" in claim.text


def test_a_real_gap_at_chance_accuracy_is_no_copying():
    d = _curves([3.3, 3.0, 2.8], [0.04, 0.04, 0.04])
    claim = dyn.copying_claim(d)
    assert not claim.made and "a little easier" in claim.text and "not beyond chance" in claim.text


def test_copying_is_half_learned_at_half_the_rise_from_the_first_step():
    d = _curves([3.3, 3.0, 2.0, 1.0, 0.3], [0.04, 0.1, 0.4, 0.7, 0.95])
    claim = dyn.copying_claim(d)
    # gain 0, 0.3, 1.3, 2.3, 3.0: half of 3.0 (1.5) is first reached at step 300
    assert claim.made and claim.numbers["half_step"] == 300
    assert "half learned by step 300" in claim.text


def test_copying_learned_then_lost_is_not_claimed_at_the_end():
    d = _curves([3.3, 1.0, 3.29], [0.04, 0.7, 0.04])
    claim = dyn.copying_claim(d)
    assert not claim.made and "(it did at step 100)" in claim.text


def test_an_abrupt_fall_is_a_phase_change_and_a_gradual_one_is_not():
    steps = np.arange(21) * 100  # 0..2000: the window is 200 steps
    sudden = np.where(steps < 1000, 3.3, 0.3)
    d = _curves(sudden, np.where(steps < 1000, 0.04, 0.95), steps=steps)
    assert dyn.phase_change_claim(d, dyn.copying_claim(d)).made
    gradual = 3.3 - 3.0 * steps / 2000
    d = _curves(gradual, 0.04 + 0.9 * steps / 2000, steps=steps)
    claim = dyn.phase_change_claim(d, dyn.copying_claim(d))
    assert not claim.made and "falls gradually" in claim.text
    sparse = [0, 100, 2000]  # the fall happens where nothing was saved
    d = _curves([3.3, 3.2, 0.3], [0.04, 0.05, 0.95], steps=sparse)
    claim = dyn.phase_change_claim(d, dyn.copying_claim(d))
    assert not claim.made and "too far apart" in claim.text


def test_a_metric_is_sharper_only_when_its_window_is_at_most_half_the_losses():
    steps = np.arange(11) * 100
    loss = 3.3 - 3.0 * steps / 1000  # 10% to 90% of its fall over 800 steps
    sharp = np.clip((steps - 600) / 300, 0, 1)  # rises over 300 steps: 10%-90% in 240
    d = _curves(loss, 0.04 + 0.9 * steps / 1000, exact=sharp, steps=steps)
    claim = dyn.sharper_metric_claim(d)
    assert claim.made and claim.numbers["whole_width"] == pytest.approx(240)
    assert claim.numbers["loss_width"] == pytest.approx(800)
    d = _curves(loss, 0.04 + 0.9 * steps / 1000, exact=steps / 1000, steps=steps)
    claim = dyn.sharper_metric_claim(d)
    assert not claim.made and "not clearly sharper" in claim.text


def test_a_whole_copy_drop_is_explained_only_beyond_the_noise():
    acc = [0.04, 0.95, 0.92]
    big = _curves([3.3, 0.3, 0.3], acc, exact=[0.0, 0.46, 0.28])
    assert dyn.whole_copy_drop_claim(big, "x").made  # 0.18 > 3 * 0.042
    small = _curves([3.3, 0.3, 0.3], acc, exact=[0.0, 0.46, 0.42])
    claim = dyn.whole_copy_drop_claim(small, "x")
    assert not claim.made and "within the noise" in claim.text
    none = _curves([3.3, 0.3, 0.3], acc, exact=[0.0, 0.3, 0.3])
    assert dyn.whole_copy_drop_claim(none, "x").text == ""


# ---- Compare models: the partner it opens on, and the token-boundary claim -----------------


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_compare_opens_beside_a_partner_and_its_boundary_claim_matches_the_numbers(
    claim_bundles, name
):
    """Every claim model as the sidebar's: the partner shares its text when one does, and the
    sentence about the cut word states each model's measured probability, claiming the effect
    only under its condition."""
    from ui.frame import DEFAULT_PROMPT
    from viz_model.analysis.labs import compare as cmp

    infos = {n: cmp.model_info(folder) for n, folder in claim_bundles.items()}
    other = cmp.partner(name, infos)
    assert other != name
    same_text = [n for n in infos if n != name and infos[n].corpus == infos[name].corpus]
    if infos[name].corpus is not None and same_text:
        assert infos[other].corpus == infos[name].corpus
    pair = [(n, claim_bundle(claim_bundles, n)) for n in (name, other)]
    split_by = next((b.tokenizer for _, b in pair if b.tokenizer.kind != "char"), None)
    cut = cmp.cut_inside_token(DEFAULT_PROMPT, split_by) if split_by is not None else None
    if cut is None:
        return  # the page says there is nothing to cut
    sides = []
    for n, b in pair:

        def run(ids, model=b.model):
            with torch.no_grad():
                return model(torch.tensor(ids)).numpy()

        sides.append(cmp.boundary_side(n, b.tokenizer, b.config.n_ctx, cut, run))
        tokens = cmp.read_prompt(b.tokenizer, b.config.n_ctx, cut.text)
        probs = torch.softmax(torch.tensor(run(tokens.ids)[-1]), -1).numpy()
        texts = [b.tokenizer.id_to_token(i) for i in range(b.tokenizer.vocab_size)]
        right = [i for i, t in enumerate(texts) if t and cut.rest.startswith(t)]
        assert sides[-1].p_right >= probs[right].sum() - 1e-6  # at least the word's own starts
    claim = cmp.boundary_claim(cut, sides)
    for s in sides:
        assert cmp.percent(s.p_right) in claim.text
    char = next((s for s in sides if s.kind == "char"), None)
    split = next(
        (
            s
            for s in sides
            if s.kind != "char" and s.cut_pieces != s.whole_pieces[: len(s.cut_pieces)]
        ),
        None,
    )
    references = [char.p_right] if char is not None else []
    if split is not None and split.p_control is not None:
        references.append(split.p_control)
        assert cmp.percent(split.p_control) in claim.text
    effect = split is not None and any(
        split.p_right <= 0.5 * p and p >= cmp.CHAR_FLOOR for p in references
    )
    assert claim.made == effect
    assert ("**the token-boundary effect**" in claim.text) == effect
