"""analysis/sequence_models.py on tiny seeded models of every family: the gradient sensitivity
(zero past a CNN's receptive field, untouched shared model), reach, the memory counted against
the real caches and states, and the claims against the numbers they state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis import sequence_models as sm
from viz_model.model.config import BLOCK_VARIANTS, LLAMA_BLOCK, GPTConfig
from viz_model.model.families import build_model
from viz_model.model.gpt import KVCache
from viz_model.model.recurrent_cells import inspect
from viz_model.model.recurrent_config import RecurrentConfig

V, T = 11, 24


def family_model(family: str, **overrides) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = RecurrentConfig(family=family, vocab_size=V, n_ctx=T, d_model=16, n_layer=2, **overrides)
    return build_model(cfg).eval()


def windows(n: int = 6, length: int = T) -> torch.Tensor:
    return torch.randint(0, V, (n, length + 1), generator=torch.Generator().manual_seed(1))


def test_a_cnn_is_blind_exactly_past_its_receptive_field():
    model = family_model("cnn", kernel_size=3)
    field = model.cfg.receptive_field  # 1 + 2 x (1 + 2) = 7
    profile = sm.sensitivity(model, windows())
    assert field == 7
    assert np.all(profile[:field] > 0)
    assert np.all(profile[field:] == 0)
    assert sm.reach(profile) <= field - 1


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru"])
def test_a_recurrent_model_feels_the_first_token_of_the_window(family):
    profile = sm.sensitivity(family_model(family), windows())
    assert profile.shape == (T,)
    assert profile[-1] > 0  # the first token still reaches the last prediction through the state


def test_a_gpt_feels_every_token_of_its_window():
    model = tiny_model(n_ctx=T, vocab_size=V)
    profile = sm.sensitivity(model, windows())
    assert np.all(profile > 0)


def test_sensitivity_leaves_the_shared_model_as_it_was():
    model = family_model("lstm")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    sm.sensitivity(model, windows())
    for name, p in model.named_parameters():
        assert p.grad is None
        assert torch.equal(p, before[name])
    assert not model.embed._forward_hooks


def test_sensitivity_is_the_gradient_of_the_last_log_probability():
    """For one window, by hand: embeddings as a leaf fed through the same layers."""
    model = family_model("gru")
    w = windows(1)
    profile = sm.sensitivity(model, w)
    emb = model.embed(w[:, :-1]).detach().requires_grad_(True)  # (1, T, D)
    x = emb
    for block in model.blocks:
        x, _ = block(x)
    log_p = torch.log_softmax(model.unembed(model.ln_final(x))[0, -1], -1)[w[0, -1]]
    (grad,) = torch.autograd.grad(log_p, emb)
    np.testing.assert_allclose(profile, grad[0].norm(dim=-1).flip(0).numpy(), rtol=1e-5)


def test_reach_reads_the_profile():
    assert sm.reach(np.array([1.0, 0.5, 0.02, 0.009, 0.011])) == 4
    assert sm.reach(np.array([1.0, 0.005, 0.0])) == 0
    assert sm.reach(np.zeros(4)) == 0


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru", "cnn"])
def test_memory_counted_equals_the_state_the_model_carries(family):
    model = family_model(family)
    state = model.new_state()
    model(windows(1)[:, :T], state)
    carried = 0
    for layer in state.layers:
        for tensor in layer if isinstance(layer, tuple) else (layer,):
            carried += tensor.numel()
    assert sm.memory_floats(model, T)["state"] == carried
    assert sm.memory_floats(model, 4 * T)["state"] == carried  # the same at any length


@pytest.mark.parametrize("overrides", [{}, {"n_kv_heads": 1}])
def test_memory_counted_equals_a_gpt_s_kv_cache(overrides):
    model = tiny_model(n_ctx=T, vocab_size=V, **overrides)
    cache = KVCache(model.cfg.n_layer)
    model(windows(1)[:, :T], kv_cache=cache)
    held = sum(k.numel() + v.numel() for k, v in zip(cache.k, cache.v, strict=True))
    counted = sm.memory_floats(model, T)
    assert counted["kv cache"] == held
    assert counted["attention scores"] == model.cfg.n_layer * model.cfg.n_head * T * T


def test_step_seconds_times_a_step_for_every_family():
    for model in [tiny_model(n_ctx=T, vocab_size=V), family_model("lstm"), family_model("cnn")]:
        seconds = sm.step_seconds(model, T - 1, repeats=2)
        assert 0 < seconds < 5


def test_gate_summary_of_an_lstm_is_its_gates_means():
    model = family_model("lstm")
    gates = inspect(model, windows(1)[0, :T]).layers[0].gates
    summary = sm.gate_summary(gates)
    assert set(summary.means) == {"input", "forget", "output"}
    assert summary.means["forget"] == pytest.approx(float(gates["forget"].mean()))
    assert summary.keep_share == pytest.approx(float((gates["forget"] > sm.KEEP).float().mean()))
    claim = sm.gate_claim("lstm", summary)
    assert claim.made and f"forget {summary.means['forget']:.2f}" in claim.text
    assert not sm.gate_claim("rnn", sm.gate_summary({})).made


def test_bpc_claim_orders_ties_and_keeps_its_margin():
    entries = [
        sm.Entry("a", "LSTM", 2.10),
        sm.Entry("b", "RNN", 2.40),
        sm.Entry("c", "GPT", 2.05),
        sm.Entry("5-gram", "n-gram", 2.30),
    ]
    claim = sm.bpc_claim(entries)
    assert claim.made and claim.text.startswith("**c (GPT) is the best network")
    assert "0.350 fewer than b (RNN)" in claim.text
    assert "2 of 3 networks beat the best counting model" in claim.text
    tie = sm.bpc_claim([sm.Entry("a", "RNN", 2.261), sm.Entry("b", "GRU", 2.264), *entries[1:2]])
    assert tie.made and "tie: a (RNN, 2.261) and b (GRU, 2.264)" in tie.text
    worse = sm.bpc_claim([*entries[:3], sm.Entry("6-gram", "n-gram", 1.9)])
    assert "Every network scores worse than the best counting model, 6-gram: 1.900" in worse.text
    close = sm.bpc_claim([sm.Entry("a", "LSTM", 2.10), sm.Entry("b", "RNN", 2.11)])
    assert not close.made and "within 0.02" in close.text


def test_reach_claim_is_made_only_for_a_twofold_difference():
    far, near = np.geomspace(1, 1e-4, 40), np.geomspace(1, 1e-9, 40)
    blind = np.geomspace(1, 1e-12, 40)  # random weights that reach k = 6
    claim = sm.reach_claim([sm.ReachRow("GPT", far, blind), sm.ReachRow("CNN", near, blind, 7)], 40)
    assert claim.made and "GPT reaches farthest back" in claim.text
    assert claim.numbers["reach GPT"] == sm.reach(far)
    assert "CNN reads only the last 7 tokens (its receptive field): from k = 7 on" in claim.text
    wide = sm.reach_claim([sm.ReachRow("GPT", far, blind), sm.ReachRow("CNN", near, blind, 63)], 40)
    assert "receptive field is" not in wide.text and "CNN's (63) reaches past" in wide.text
    same = sm.reach_claim([sm.ReachRow("A", far, blind), sm.ReachRow("B", far, blind)], 40)
    assert not same.made


def test_a_reach_that_random_weights_match_is_not_claimed_and_its_number_is_printed():
    """A model that learned nothing reaches far too: the farthest model is said to reach
    farthest only at twice its random weights' reach, and that number stands beside it."""
    far, near = np.geomspace(1, 1e-4, 40), np.geomspace(1, 1e-9, 40)
    claim = sm.reach_claim([sm.ReachRow("GPT", far, far), sm.ReachRow("CNN", near, near)], 40)
    r = sm.reach(far)
    assert not claim.made and "reaches farthest back" not in claim.text
    assert f"{r} for GPT (random weights: {r})" in claim.text
    assert f"with random weights of its shape it reaches {r}" in claim.text
    assert claim.numbers["random-weights reach GPT"] == r


def test_a_reach_at_the_end_of_the_window_is_called_the_limit_of_the_test():
    flat, near, blind = np.ones(40), np.geomspace(1, 1e-9, 40), np.geomspace(1, 1e-12, 40)
    claim = sm.reach_claim([sm.ReachRow("GPT", flat, blind), sm.ReachRow("RNN", near, blind)], 40)
    assert "GPT reaches k = 39, the end of the window: the limit of this test" in claim.text
    assert claim.made and "GPT reaches farthest back (at least 39 tokens, against 6 " in claim.text
    both = sm.reach_claim([sm.ReachRow("A", flat, blind), sm.ReachRow("B", flat, blind)], 40)
    assert not both.made and "A and B reach k = 39" in both.text


def test_models_tied_for_the_farthest_reach_are_each_held_to_their_random_weights():
    """Issue 36: 'our-model 63 (random weights: 63) ... shakespeare-tiny 63 (random weights: 0)'
    was followed by 'our-model and shakespeare-tiny reach equally far (63)', as if both had
    learned it: a tie names which of the tied reach twice their random weights' and which not."""
    flat, near = np.ones(64), np.geomspace(1, 1e-9, 64)
    blind = np.r_[1.0, np.zeros(63)]  # random weights that reach nothing
    rows = [
        sm.ReachRow("our-model", flat, flat),
        sm.ReachRow("shakespeare-rnn", near, near),
        sm.ReachRow("shakespeare-tiny", flat, blind),
    ]
    claim = sm.reach_claim(rows, 64)
    assert not claim.made
    assert "our-model and shakespeare-tiny reach equally far (63)" in claim.text
    assert "only shakespeare-tiny reaches at least twice as far as its random weights (0)" in (
        claim.text
    )
    assert (
        "with random weights of its shape our-model reaches 63, and 63 is not twice that, so "
        "that distance is not something it learned" in claim.text
    )
    both = sm.reach_claim([rows[0], rows[1], sm.ReachRow("B", flat, flat)], 64)
    assert "our-model and B reach equally far (63)" in both.text
    assert "twice as far as its random weights" not in both.text
    assert both.text.count("is not twice that") == 2
    learned = sm.reach_claim([sm.ReachRow("A", flat, blind), rows[1], rows[2]], 64)
    assert "A and shakespeare-tiny reach at least twice as far as their random weights" in (
        learned.text
    )
    assert "not something it learned" not in learned.text


def test_the_reach_rule_is_said_as_it_is_applied():
    """The lead said 'a reach is the model's own only beyond it' while the rule is twice it."""
    far, near = np.geomspace(1, 1e-4, 40), np.geomspace(1, 1e-9, 40)
    claim = sm.reach_claim([sm.ReachRow("GPT", far, near), sm.ReachRow("CNN", near, near)], 40)
    assert f"only at {'twice' if sm.REACH_RATIO == 2 else sm.REACH_RATIO} that or more" in (
        claim.text
    )


RUN = {"step": 650, "tokens_seen": 665_600}  # a class run: 650 steps of 16 windows of 64
EVALS = [{"step": 0}, *({"step": s, "val_loss": v} for s, v in [(100, 2.568), (300, 2.295)])]
HISTORY = [*EVALS, {"step": 316, "train_loss": 2.2}, {"step": 650, "val_loss": 1.972}]


def test_score_at_a_step_is_the_last_evaluation_by_then_and_its_tokens():
    train = {"batch_size": 16}
    zero = sm.score_at(HISTORY, RUN, train, 64, 0)
    assert (zero.evaluated, zero.val_loss, zero.tokens, zero.next_evaluation) == (
        None,
        None,
        0,
        100,
    )
    mid = sm.score_at(HISTORY, RUN, train, 64, 316)
    assert (mid.evaluated, mid.val_loss) == (300, 2.295)
    assert (mid.tokens, mid.tokens_evaluated) == (316 * 1024, 300 * 1024)
    last = sm.score_at(HISTORY, RUN, train, 64, 650)
    assert (last.evaluated, last.val_loss, last.tokens, last.final) == (650, 1.972, 665_600, 650)
    assert sm.score_at(HISTORY, RUN, None, 64, 316).tokens is None  # no batch size recorded


def test_the_model_on_screen_is_described_at_the_step_the_sidebar_shows():
    """Issue 36: at step 0 the page said 'our-model ... scores 2.845 bits per character after
    665,600 training tokens', the final step's numbers, beside a sidebar at step 0."""
    train = {"batch_size": 16}

    def said(step: int) -> str:
        score = sm.score_at(HISTORY, RUN, train, 64, step)
        bits = None if score.val_loss is None else score.val_loss / np.log(2)
        return sm.on_screen_claim("our-model", "GPT", 424_704, score, bits).text

    zero = said(0)
    assert zero.startswith("The model on screen, our-model at training step 0 of 650 (GPT,")
    assert "random weights it started from" in zero and "no validation loss" in zero
    assert "2.845" not in zero and "665,600" not in zero
    assert f"scores {2.568 / np.log(2):.3f} bits per character after 102,400 training" in said(100)
    mid = said(316)
    assert "at training step 316 of 650" in mid
    assert f"scored {2.295 / np.log(2):.3f} bits per character at its last evaluation by then" in (
        mid
    )
    assert "at step 300 after 307,200 training tokens" in mid
    final = said(650)
    assert "our-model (GPT, 424,704 parameters), scores 2.845 bits per character after 665,600" in (
        final
    )
    tuned = sm.on_screen_claim("t", "GPT", 1, sm.score_at(HISTORY, RUN, train, 64, 0), None, True)
    assert "random weights" not in tuned.text


def test_changed_parts_names_every_part_a_variant_changes():
    """Issue 36: 'GPTs with one part changed' covered shakespeare-llama, which changes four."""
    base = GPTConfig(vocab_size=V)
    llama = GPTConfig(vocab_size=V, **LLAMA_BLOCK)
    assert sm.changed_parts(llama, base) == [
        "RoPE positions",
        "RMSNorm",
        "a SwiGLU MLP",
        "no biases",
    ]
    for name, overrides in BLOCK_VARIANTS.items():
        parts = sm.changed_parts(GPTConfig(vocab_size=V, **overrides), base)
        assert parts, name
    assert sm.changed_parts(base, base) == []
    assert sm.changed_parts(GPTConfig(vocab_size=V, norm="post"), base) == ["post-LN"]
    assert sm.changed_parts(GPTConfig(vocab_size=V, n_kv_heads=1), base) == [
        "1 key-value head for 4 query heads"
    ]


def test_bits_per_character_gaps_are_of_the_printed_numbers():
    """A gap or a tie the sentence states is the one a reader finds from the numbers it prints:
    2.261 and 2.677 are 0.416 apart even where the unrounded values are 0.4152 apart."""
    apart = sm.bpc_claim(apart_entries())
    assert "a (RNN) is the best network on this text: 2.261" in apart.text
    assert "0.416 fewer than b (GPT)" in apart.text
    tie = sm.bpc_claim([*apart_entries(), sm.Entry("c", "GRU", 2.2644)])
    assert "b (GPT) is 0.416 behind" in tie.text


def apart_entries() -> list:
    return [sm.Entry("a", "RNN", 2.2614), sm.Entry("b", "GPT", 2.6766)]


def test_cost_claim_names_what_grows():
    rows = [
        ("GPT", 16, {"kv cache": 100}),
        ("GPT", 64, {"kv cache": 400}),
        ("LSTM", 16, {"state": 64}),
        ("LSTM", 64, {"state": 64}),
    ]
    claim = sm.cost_claim(rows)
    assert claim.made and "grow for GPT (100 to 400)" in claim.text
    assert "stay the same for LSTM (64 to 64)" in claim.text
    assert not sm.cost_claim(rows[2:]).made
