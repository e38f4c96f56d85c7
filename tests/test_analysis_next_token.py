"""Surprisal, perplexity, top-token tables, and the generation stepper's deterministic replay."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.conftest import VOCAB, tiny_config, tiny_model
from viz_model.analysis import next_token as nt
from viz_model.analysis.generation import (
    Action,
    KVComparison,
    actions_of,
    attention_rows,
    choose,
    compare_kv_cache,
    newest_token_attention,
    newest_token_view,
    replay,
    step_distribution,
    take_step,
)
from viz_model.analysis.next_token import (
    crop_to_context,
    distribution,
    entropy_bits,
    perplexity,
    prompt_logits,
    surprisal,
    top_tokens,
)
from viz_model.model.sampling import SamplingSettings

EPS32 = torch.finfo(torch.float32).eps  # 1.2e-7, float32's rounding step at 1


def test_surprisal_is_minus_log_prob_of_each_next_token(model, ids):
    ids = ids.tolist()
    logits = prompt_logits(model, ids)
    s = surprisal(logits, ids)
    assert s.shape == (len(ids),) and math.isnan(s[0])
    for t in range(1, len(ids)):
        with torch.no_grad():
            p = torch.softmax(model(torch.tensor(ids[:t]))[-1], -1)[ids[t]]
        assert s[t] == pytest.approx(-math.log(float(p)), rel=1e-4)
    assert (s[1:] > 0).all()


def test_perplexity_is_exp_mean_surprisal_and_uniform_model_gives_vocab_size():
    assert perplexity(np.array([np.nan, 1.0, 3.0])) == pytest.approx(math.exp(2.0))
    assert math.isnan(perplexity(np.array([np.nan])))
    V = 23
    s = surprisal(np.zeros((5, V)), [0, 1, 2, 3, 4])
    assert perplexity(s) == pytest.approx(V)  # a uniform guess among V tokens


def test_one_token_has_no_surprisal():
    s = surprisal(np.zeros((1, 5)), [3])
    assert s.shape == (1,) and math.isnan(s[0])


def test_crop_to_context_keeps_the_last_tokens():
    assert crop_to_context(list(range(10)), 4) == ([6, 7, 8, 9], 6)
    assert crop_to_context([1, 2], 4) == ([1, 2], 0)


def test_top_tokens_are_sorted_by_logit_and_carry_the_distributions(model, ids):
    logits = prompt_logits(model, ids.tolist())[-1]
    dist = distribution(logits, SamplingSettings(temperature=0.7, top_k=3))
    top = top_tokens(dist, 6, lambda i: f"t{i}")
    assert list(top.ids) == list(np.argsort(-logits, kind="stable")[:6])
    assert top.labels == [f"t{i}" for i in top.ids]
    np.testing.assert_allclose(top.base_probs, torch.softmax(torch.tensor(logits), -1)[top.ids])
    assert top.kept.tolist() == [True] * 3 + [False] * 3
    assert top.probs[:3].sum() == pytest.approx(1.0, abs=1e-5) and (top.probs[3:] == 0).all()
    assert len(top.rows()) == 6 and top.rows()[0]["rank"] == 1
    assert len(top_tokens(dist, 1000, str).ids) == logits.size  # k is capped at the vocabulary


def test_entropy_bits_is_nats_over_ln2():
    dist = distribution(np.zeros(8), SamplingSettings())
    assert dist.entropy == pytest.approx(math.log(8), rel=1e-5)
    assert entropy_bits(dist.entropy) == pytest.approx(3.0, rel=1e-5)


# ---- the generation stepper ---------------------------------------------------------------------


def test_step_distribution_matches_the_model_on_the_cropped_window(model):
    seq = list(range(20)) + [1, 2, 3]  # longer than n_ctx = 16
    dist = step_distribution(model, seq, SamplingSettings())
    with torch.no_grad():
        expected = torch.softmax(model(torch.tensor(seq[-16:]))[-1], -1)
    torch.testing.assert_close(dist.probs, expected)


def test_same_seed_and_step_give_the_same_token_and_other_seeds_differ(model):
    seq, settings = [3, 7, 1], SamplingSettings(temperature=1.5)
    picks = {take_step(model, seq, 0, seed, settings).token for seed in range(30)}
    assert len(picks) > 1  # the seed matters
    a = take_step(model, seq, 4, 11, settings)
    b = take_step(model, seq, 4, 11, settings)
    assert a == b and not a.forced and a.token == a.sampled


def test_forced_token_is_recorded_with_its_probability(model):
    settings = SamplingSettings()
    dist = step_distribution(model, [3, 7, 1], settings)
    sampled = choose(dist, 0, 0, settings).token
    other = (sampled + 1) % dist.probs.numel()
    s = choose(dist, 0, 0, settings, forced=other)
    assert s.token == other and s.forced and s.sampled == sampled
    assert s.prob == pytest.approx(float(dist.probs[other]))
    assert choose(dist, 0, 0, settings, forced=sampled).forced  # chosen, even if the sampler agrees
    with pytest.raises(ValueError):
        choose(dist, 0, 0, settings, forced=10_000)


def test_replay_reproduces_a_history_and_undo_then_redo_gives_the_same_token(model):
    hot, greedy = SamplingSettings(temperature=1.3), SamplingSettings(temperature=0)
    actions = [Action(hot), Action(hot, forced=5), Action(greedy), Action(hot), Action(hot)]
    steps = replay(model, [3, 7, 1], actions, seed=42)
    assert [s.forced for s in steps][1] and steps[1].token == 5
    assert replay(model, [3, 7, 1], actions, seed=42) == steps
    assert replay(model, [3, 7, 1], actions_of(steps), seed=42) == steps
    # undo the last step and step again: the same token comes back
    redo = take_step(model, [3, 7, 1] + [s.token for s in steps[:-1]], 4, 42, hot)
    assert redo == steps[-1]
    # greedy is the argmax, whatever the seed
    seq = [3, 7, 1] + [s.token for s in steps[:2]]
    assert steps[2].token == int(step_distribution(model, seq, SamplingSettings()).logits.argmax())


def test_a_replay_draws_from_the_very_probabilities_the_page_showed(model):
    """The page steps with newest_token_view's logits; a replay must see the same numbers, bit
    for bit, or a near tie could flip a sampled token."""
    settings = SamplingSettings(temperature=1.1, top_p=0.9)
    seq = [3, 7, 1, 4, 4, 9]
    shown = distribution(newest_token_view(model, seq)[0], settings)
    replayed = step_distribution(model, seq, settings)
    assert torch.equal(shown.probs, replayed.probs)


def test_newest_token_attention_is_the_last_row_of_each_pattern(model, ids):
    att = newest_token_attention(model, ids.tolist())
    cfg = model.cfg
    assert att.shape == (cfg.n_layer, cfg.n_head, len(ids))
    np.testing.assert_allclose(att.sum(-1), 1.0, rtol=1e-5)
    _, cache = model.run_with_cache(ids, ["blocks.1.attn.hook_pattern"])
    # two computations of the same probabilities (<= 1): equal to a few of float32's rounding
    # steps (about 1e-8 apart here; numpy's default rtol of 1e-7 is less than one step)
    last_row = cache.numpy("blocks.1.attn.hook_pattern")[:, -1, :]
    np.testing.assert_allclose(att[1], last_row, rtol=0, atol=16 * EPS32)
    long = newest_token_attention(model, list(range(20)) + [1, 2])
    assert long.shape[-1] == cfg.n_ctx  # cropped to the context


@pytest.mark.parametrize("settings", [SamplingSettings(), SamplingSettings(temperature=0)])
def test_kv_cache_and_no_cache_generate_the_same_tokens(settings):
    model = tiny_model(seed=3)
    cmp = compare_kv_cache(model, [3, 7, 1], 20, settings, seed=5)  # 23 > n_ctx: crosses the edge
    assert cmp.match and len(cmp.with_cache) == 20 and cmp.first_difference is None
    assert KVComparison([1, 2, 3], [1, 5, 3], 0.1, 0.2).first_difference == 1
    assert cmp.seconds_with > 0 and cmp.seconds_without > 0


def test_newest_token_view_gives_the_step_logits_and_head_rows(model):
    seq = list(range(20)) + [1, 2, 3]
    logits, att, cut = newest_token_view(model, seq)
    assert cut == len(seq) - model.cfg.n_ctx
    dist = step_distribution(model, seq, SamplingSettings())
    np.testing.assert_allclose(logits, dist.logits.numpy(), rtol=1e-5, atol=1e-6)
    mean, labels = attention_rows(att, per_head=False)
    np.testing.assert_allclose(mean[1], att[1].mean(0))
    assert labels == ["layer 0", "layer 1"]
    rows, labels = attention_rows(att, per_head=True)
    assert rows.shape == (8, 16) and labels[5] == "layer 1 head 1"
    np.testing.assert_allclose(rows[5], att[1, 1])
    rows, labels = attention_rows(att, per_head=True, layers=range(1, 2))  # one layer's heads
    assert rows.shape == (4, 16) and labels[1] == "layer 1 head 1"
    np.testing.assert_allclose(rows[1], att[1, 1])


def test_cut_counts_apply_top_k_before_top_p():
    from viz_model.analysis.next_token import cut_counts

    probs = np.array([0.25, 0.2, 0.15, 0.1, 0.05] + [0.05] * 5)
    counts = cut_counts(np.log(probs), SamplingSettings(temperature=1.0, top_k=5, top_p=0.55))
    assert counts.top_k == 5
    assert counts.top_p == 3  # 0.25 + 0.2 < 0.55 <= 0.25 + 0.2 + 0.15
    # After top-k the five hold 0.75, renormalised: 0.33, 0.27, ...; two reach 0.55.
    assert counts.both == 2


# ---- the loss, named: cross-entropy and accuracy -------------------------------------------------


def _prompt_numbers(model, ids):
    logits = nt.prompt_logits(model, ids)
    return logits, nt.loss_numbers(nt.surprisal(logits, ids), nt.top_is_next(logits, ids), VOCAB)


def test_the_mean_surprisal_is_torchs_cross_entropy_on_the_same_logits():
    V, model = VOCAB, tiny_model()
    ids = [int(i) for i in torch.randint(0, V, (12,), generator=torch.Generator().manual_seed(3))]
    logits, numbers = _prompt_numbers(model, ids)
    ce = torch.nn.functional.cross_entropy(torch.tensor(logits[:-1]), torch.tensor(ids[1:]))
    assert numbers.loss == pytest.approx(float(ce), abs=1e-5)
    assert numbers.nll.size == len(ids) - 1
    assert numbers.perplexity == pytest.approx(math.exp(float(ce)), rel=1e-5)
    assert numbers.blind == pytest.approx(math.log(V))


def test_accuracy_is_the_share_of_positions_whose_argmax_is_the_next_token():
    model = tiny_model(seed=1)
    ids = [
        int(i) for i in torch.randint(0, VOCAB, (16,), generator=torch.Generator().manual_seed(4))
    ]
    logits, numbers = _prompt_numbers(model, ids)
    agree = (torch.tensor(logits[:-1]).argmax(-1) == torch.tensor(ids[1:])).float()
    assert 0.0 <= numbers.accuracy <= 1.0
    assert numbers.accuracy == pytest.approx(float(agree.mean()))
    assert list(numbers.hits) == agree.tolist()
    # a text made of the model's own top tokens scores accuracy 1, whatever its loss
    greedy = [ids[0]]
    for _ in range(10):
        greedy.append(int(prompt_logits(model, greedy)[-1].argmax()))
    assert _prompt_numbers(model, greedy)[1].accuracy == 1.0


def test_a_one_token_prompt_has_no_loss():
    numbers = nt.loss_numbers(np.array([np.nan]), np.array([np.nan]), VOCAB)
    assert numbers.nll.size == 0 and math.isnan(numbers.loss) and math.isnan(numbers.accuracy)


def test_random_weights_score_about_ln_v_and_the_claim_says_about_chance():
    """A freshly initialised GPT (std 0.02) gives nearly flat logits: its loss sits near
    ln V (a 3% margin: 0.09 nats on 23 tokens, far above float rounding), and the page's
    sentence calls it about chance."""
    from viz_model.analysis.untrained import fresh_model

    model = fresh_model(tiny_config(), seed=5)
    g = torch.Generator().manual_seed(6)
    ids = [int(i) for i in torch.randint(0, VOCAB, (16,), generator=g)]
    _, numbers = _prompt_numbers(model, ids)
    assert abs(numbers.loss - math.log(VOCAB)) < 0.03 * math.log(VOCAB)
    claim = nt.cross_entropy_claim(numbers.loss, numbers.loss, VOCAB, True)
    assert not claim.made and "about chance" in claim.text and "beats" not in claim.text
