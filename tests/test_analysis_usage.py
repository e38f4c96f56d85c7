"""Teacher forcing, no backtracking and repetition (viz_model/analysis/usage.py): the math on a
seeded tiny model and hand-made sequences, and each claim against the numbers it came from."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import tiny_model
from viz_model.analysis import usage
from viz_model.analysis.usage import (
    ForcedRun,
    RepetitionStats,
    forced_claim,
    longest_repeat,
    repeated_share,
    repetition_claim,
)

IDS = [3, 7, 1, 3, 7, 1, 9, 4, 3, 7, 12, 0]


def test_one_teacher_forced_pass_gives_the_losses_of_t_minus_one_sequential_passes():
    model = tiny_model()
    one, seq = usage.surprisal_one_pass(model, IDS), usage.surprisal_sequential(model, IDS)
    assert np.isnan(one[0]) and np.isnan(seq[0])
    np.testing.assert_allclose(one[1:], seq[1:], atol=1e-5)
    assert (one[1:] > 0).all()


def test_a_model_that_sees_the_future_breaks_the_equality_and_the_claim_says_so():
    race = usage.forcing_race(tiny_model(causal=False), IDS)
    assert race.max_difference > usage.SAME_TOL
    claim = usage.forcing_claim(race)
    assert not claim.made and "disagree" in claim.text


def test_the_race_counts_one_pass_a_generated_token_and_its_claim_follows_the_numbers():
    race = usage.forcing_race(tiny_model(), IDS)
    assert race.passes_free == len(IDS) - 1 == len(race.generated)
    claim = usage.forcing_claim(race)
    assert claim.made == (race.max_difference <= usage.SAME_TOL)
    assert f"all {len(IDS) - 1} losses" in claim.text
    assert ("faster" in claim.text) == (claim.numbers["ratio"] > 1)


@pytest.mark.parametrize(
    ("one_s", "seq_s", "words"),
    [
        # 154.9 / 1.0 as printed is 155; the unrounded 0.1549 / 0.00104 would print 149
        (0.00104, 0.1549, "took 1.0 ms against 154.9 ms (155× faster)"),
        (0.00042, 0.0107, "took 0.42 ms against 10.7 ms (25× faster)"),
        (0.0, 0.0107, "was not faster here"),  # nothing printed to divide by
    ],
)
def test_the_speed_up_is_the_ratio_of_the_printed_times(one_s, seq_s, words):
    losses = np.array([np.nan, 1.0, 2.0])
    race = usage.ForcingRace(losses, losses.copy(), [1, 2], one_s, seq_s, 0.01, 2)
    assert words in usage.forcing_claim(race).text


def test_free_running_is_greedy_on_its_own_output():
    model = tiny_model()
    out, passes = usage.free_running(model, IDS[:2], 5)
    for i, token in enumerate(out):
        assert token == int(usage.logits_of(model, IDS[:2] + out[:i])[-1].argmax())
    assert passes == 5


def test_forcing_a_token_keeps_the_greedy_prefix_and_scores_each_run_by_its_own_text():
    model = tiny_model()
    alts, probs = usage.alternatives(model, IDS[:6] + [0, 0, 0], 5)
    assert probs == sorted(probs, reverse=True) and len(set(alts)) == 5
    run = usage.force_token(model, IDS[:6], 8, 3, alts[-1])
    assert run.forced[:3] == run.baseline[:3] and run.forced[3] == alts[-1]
    assert len(run.forced) == len(run.baseline) == 8
    s = usage.surprisal_one_pass(model, IDS[:6] + run.forced)[6:]
    np.testing.assert_allclose(run.forced_surprisal, s, atol=1e-5)


def test_the_continuation_past_the_context_is_scored_with_a_sliding_window():
    model = tiny_model()  # n_ctx 16
    new = usage.decode(model, IDS, 10)
    s = usage.continuation_surprisal(model, IDS, new)
    assert s.shape == (10,) and np.isfinite(s).all()
    window = (IDS + new[:-1])[-16:]  # the 16 tokens before the last new one
    logits = usage.logits_of(model, window)[-1]
    last = -(logits[new[-1]] - np.log(np.exp(logits).sum()))
    assert s[-1] == pytest.approx(last, abs=1e-4)


def _run(base_after, forced_after) -> ForcedRun:
    return ForcedRun(
        0, [0] * 4, np.array([1.0, *base_after]), [1] * 4, np.array([5.0, *forced_after])
    )


@pytest.mark.parametrize(
    ("base", "forced", "made", "word"),
    [
        ([0.5, 0.5, 0.5], [1.0, 0.9, 0.8], True, "raised"),
        ([1.0, 1.0, 1.0], [0.5, 0.4, 0.6], True, "lowered"),
        ([0.5, 0.5, 0.5], [0.55, 0.5, 0.52], False, "about as surprising"),
    ],
)
def test_the_forced_claim_is_conditional_on_the_measured_difference(base, forced, made, word):
    claim = forced_claim(_run(base, forced))
    assert claim.made == made and word in claim.text
    assert claim.numbers["difference"] == pytest.approx(np.mean(forced) - np.mean(base))


def test_repetition_metrics_on_hand_made_sequences():
    assert repeated_share(["a", "b", "c", "a", "b", "c"], 3) == pytest.approx(1 / 4)
    assert repeated_share(["a", "b", "c", "d"], 3) == 0
    assert np.isnan(repeated_share(["a"], 3))
    assert longest_repeat("the cat the cat") == len("the cat")
    assert longest_repeat("abcdef") == 0
    assert longest_repeat("") == 0
    stats = usage.repetition_stats("to be or not to be or not")
    assert stats.repeated_phrases == pytest.approx(2 / 6)
    assert stats.distinct_words == pytest.approx(4 / 8)
    assert stats.longest_repeat == len("to be or not")


def _stats(g, s, p):
    return {k: RepetitionStats(v, 0.5, 3) for k, v in zip(usage.DECODERS, (g, s, p), strict=True)}


def test_the_repetition_claim_says_each_comparison_on_its_own():
    assert repetition_claim(_stats(0.4, 0.0, 0.2)).made
    assert not repetition_claim(_stats(0.0, 0.0, 0.0)).made
    assert "too short" in repetition_claim(_stats(float("nan"), 0.1, 0.1)).text
    # issue 36: greedy 75%, sampling 0%, penalty 75% was read as "did not repeat more"
    text = repetition_claim(_stats(0.75, 0.0, 0.75)).text
    assert "more than sampling (75% against 0%)" in text
    assert "about as much as greedy with the penalty (75% against 75%)" in text
    text = repetition_claim(_stats(0.4, 0.38, 0.1)).text
    assert "about as much as sampling" in text and "more than greedy with the penalty" in text
    assert "less than sampling" in repetition_claim(_stats(0.1, 0.3, 0.1)).text


def test_the_three_decoders_are_seeded_and_greedy_is_the_plain_decode():
    model = tiny_model()
    a = usage.compare_decoders(model, IDS, 10, 1.0, 7, 1.5)
    b = usage.compare_decoders(model, IDS, 10, 1.0, 7, 1.5)
    assert a == b and a["greedy"] == usage.decode(model, IDS, 10)


def test_a_continuation_of_a_model_that_reads_ahead_is_scored_as_generated():
    model = tiny_model(causal=False)
    new = usage.decode(model, IDS[:5], 4)
    s = usage.continuation_surprisal(model, IDS[:5], new)
    for i, token in enumerate(new):
        logits = usage.logits_of(model, IDS[:5] + new[:i])[-1]
        assert s[i] == pytest.approx(-(logits[token] - np.log(np.exp(logits).sum())), abs=1e-4)


def test_a_difference_within_the_noise_of_two_short_continuations_is_not_claimed():
    """Issue 36 (an audit on a class run): 'The forced token raised the surprisal of what
    followed by 0.17 nats a token (0.95 against 0.78)' on one pair of 39-token continuations, 1.2
    standard errors of the difference: no effect may be claimed from it."""
    rng = np.random.default_rng(0)
    base = 0.78 + rng.normal(0, 0.65, 39)
    forced = base.mean() + 0.17 + rng.normal(0, 0.65, 39)
    forced += 0.95 - forced.mean()
    base += 0.78 - base.mean()
    claim = forced_claim(_run(list(base), list(forced)))
    se = np.sqrt((np.var(base, ddof=1) + np.var(forced, ddof=1)) / 39)
    assert claim.numbers["difference"] == pytest.approx(0.17)
    assert claim.numbers["noise"] == pytest.approx(se) and 2 * se > 0.17
    assert not claim.made and "about as surprising" in claim.text
    assert f"{2 * se:.2f} nats" in claim.text and "over 39 tokens" in claim.text
    steady = forced_claim(_run([0.78] * 20 + [0.79] * 19, [0.95] * 20 + [0.96] * 19))
    assert steady.made and "raised the surprisal" in steady.text  # the same gap, no noise


def test_the_beam_sentence_states_the_difference_of_the_numbers_it_prints():
    """Issue 36 (an audit on a class LSTM run): '1.37 nats (-6.46 against -7.82)'; the printed
    numbers give 1.36, so the stated difference is theirs."""
    from viz_model.analysis.usage import beam_claim
    from viz_model.model.decoding import Beam

    best, greedy = Beam((1, 2), -6.4649), Beam((3, 4), -7.8249)  # 1.3600 apart, printed 1.36
    claim = beam_claim(best, greedy, 3)
    assert claim.made and "(log p = -6.46 against -7.82)" in claim.text
    assert "1.36 nats more likely" in claim.text
    odd = beam_claim(Beam((1, 2), -6.4551), Beam((3, 4), -7.8249), 3)  # 1.3698: 1.37 unprinted
    assert "(log p = -6.46 against -7.82)" in odd.text and "1.36 nats more likely" in odd.text
    tie = beam_claim(Beam((1, 2), -6.461), Beam((3, 4), -6.459), 3)
    assert not tie.made and "as likely as greedy's" in tie.text and "-0.00" not in tie.text
