"""The block variants of issue 25 (config.py): each computes what its paper says, on a tiny seeded
model. The shared invariants (fused = explicit, KV cache = full forward, pieces sum to the whole)
run on every variant through conftest.VARIANTS; these check what is particular to each."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import tiny_config, tiny_model
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import KVCache
from viz_model.model.positions import alibi_slopes, rotate

IDS = torch.tensor([3, 7, 1, 3, 7, 1, 9, 4, 3, 7, 12, 0])
ATOL = 1e-5


def test_rope_is_a_rotation_of_each_pair_by_position_times_its_frequency():
    # An independent reference: the pair (x_e, x_{e+E/2}) as one complex number, times e^(i p theta_e).
    torch.manual_seed(0)
    B, T, H, E = 1, 6, 2, 8
    x = torch.randn(B, T, H, E)
    start = 3
    theta = 10_000.0 ** (-torch.arange(E // 2) * 2 / E)
    angle = torch.arange(start, start + T)[:, None] * theta  # (T, E/2)
    z = (
        torch.complex(x[..., : E // 2], x[..., E // 2 :])
        * torch.polar(torch.ones_like(angle), angle)[None, :, None, :]
    )
    expected = torch.cat([z.real, z.imag], dim=-1)
    torch.testing.assert_close(rotate(x, start), expected, atol=1e-5, rtol=1e-5)
    # A rotation keeps every vector's length.
    torch.testing.assert_close(rotate(x, start).norm(dim=-1), x.norm(dim=-1))


def test_rope_scores_depend_only_on_the_distance_between_query_and_key():
    torch.manual_seed(1)
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)

    def score(i: int, j: int) -> float:
        return float((rotate(q, i) * rotate(k, j)).sum())

    assert score(5, 2) == pytest.approx(score(13, 10), abs=1e-4)
    assert score(5, 2) == pytest.approx(score(3, 0), abs=1e-4)
    assert score(5, 2) != pytest.approx(score(5, 4), abs=1e-3)  # a different distance


def test_rope_records_q_and_k_before_and_after_the_turn():
    model = tiny_model(pos="rope")
    _, cache = model.run_with_cache(IDS)
    q, rot_q = cache["blocks.0.attn.hook_q"], cache["blocks.0.attn.hook_rot_q"]
    torch.testing.assert_close(rot_q, rotate(q[None], 0)[0])
    torch.testing.assert_close(rot_q[0], q[0])  # position 0 turns by nothing
    assert not torch.allclose(rot_q[1:], q[1:])
    assert "hook_pos_embed" not in model.hook_names()
    assert "blocks.0.attn.hook_rot_q" not in tiny_model().hook_names()


def test_alibi_adds_minus_slope_times_distance_to_each_heads_scores():
    model = tiny_model(pos="alibi")
    _, cache = model.run_with_cache(IDS)
    q, k = cache["blocks.0.attn.hook_q"], cache["blocks.0.attn.hook_k"]  # (T, H, E)
    E, T = q.shape[-1], len(IDS)
    plain = torch.einsum("the,she->hts", q, k) / math.sqrt(E)
    distance = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).float()
    expected = plain - alibi_slopes(4)[:, None, None] * distance
    scores = cache["blocks.0.attn.hook_attn_scores"]  # (H, T, T), -inf above the diagonal
    below = torch.tril(torch.ones(T, T, dtype=torch.bool))
    torch.testing.assert_close(scores[:, below], expected[:, below], atol=ATOL, rtol=0)
    assert torch.isinf(scores[:, ~below]).all()


def test_alibi_slopes_are_the_papers_geometric_sequence():
    assert alibi_slopes(8).tolist() == [2.0 ** (-h) for h in range(1, 9)]
    six = alibi_slopes(6).tolist()  # not a power of two: 4 of the 4-head rule, then 2 more
    assert six[:4] == [2.0 ** (-2 * h) for h in range(1, 5)] and len(set(six)) == 6


@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
def test_positions_without_a_table_read_past_the_context_and_a_table_does_not(pos):
    model = tiny_model(pos=pos)
    n = model.cfg.n_ctx
    long = torch.randint(0, model.cfg.vocab_size, (3 * n,))
    logits = model(long)
    assert logits.shape == (3 * n, model.cfg.vocab_size) and torch.isfinite(logits).all()
    # causal: the first n_ctx positions are what a forward of n_ctx tokens gives
    torch.testing.assert_close(logits[:n], model(long[:n]), atol=ATOL, rtol=0)
    with pytest.raises(ValueError, match=f"context of {model.cfg.max_len}"):
        model(torch.zeros(model.cfg.max_len + 1, dtype=torch.long))
    learned = tiny_model()
    with pytest.raises(ValueError, match=f"context of {n}"):
        learned(long)


@pytest.mark.parametrize("n_kv", [1, 2])
def test_grouped_query_heads_share_keys_and_values_and_the_cache_keeps_only_theirs(n_kv):
    model = tiny_model(n_kv_heads=n_kv)
    H, E = model.cfg.n_head, model.cfg.d_head
    _, cache = model.run_with_cache(IDS)
    k, v = cache["blocks.0.attn.hook_k"], cache["blocks.0.attn.hook_v"]
    assert k.shape == v.shape == (len(IDS), n_kv, E)
    assert cache["blocks.0.attn.hook_q"].shape == (len(IDS), H, E)
    # heads of one group attend with the same keys: recomputing their scores from the shared k
    scores = cache["blocks.0.attn.hook_attn_scores"]
    q = cache["blocks.0.attn.hook_q"]
    for h in range(H):
        g = h // (H // n_kv)
        by_hand = q[:, h] @ k[:, g].T / math.sqrt(E)
        below = torch.tril(torch.ones(len(IDS), len(IDS), dtype=torch.bool))
        torch.testing.assert_close(scores[h][below], by_hand[below], atol=ATOL, rtol=0)
    kv = KVCache(model.cfg.n_layer)
    with torch.no_grad():
        model(IDS[None], kv)
    assert kv.k[0].shape == (1, len(IDS), n_kv, E)  # memory per token: n_kv, not H, heads
    assert model.blocks[0].attn.qkv.out_features == (H + 2 * n_kv) * E


def test_rmsnorm_divides_by_the_root_mean_square_and_takes_no_mean():
    model = tiny_model(norm_kind="rmsnorm")
    _, cache = model.run_with_cache(IDS)
    x = cache["blocks.0.hook_resid_pre"]
    ln = model.blocks[0].ln1
    rms = (x.pow(2).mean(-1, keepdim=True) + ln.eps).sqrt()
    torch.testing.assert_close(cache["blocks.0.ln1.hook_scale"], rms)
    torch.testing.assert_close(cache["blocks.0.ln1.hook_normalized"], x / rms)
    torch.testing.assert_close(ln(x), F.rms_norm(x, (x.shape[-1],), ln.weight, ln.eps))
    assert "blocks.0.ln1.hook_mean" not in model.hook_names()
    assert ln.bias is None and not any(".ln1.bias" in n for n, _ in model.named_parameters())


def test_without_normalization_there_are_no_norm_hooks_or_weights():
    model = tiny_model(norm_kind="none")
    assert model.ln_final is None and model.blocks[0].ln1 is None
    assert not [n for n in model.hook_names() if ".ln" in n or n.startswith("ln_")]
    _, cache = model.run_with_cache(IDS)
    torch.testing.assert_close(  # attention reads the stream itself
        model.blocks[0].attn(cache["blocks.0.hook_resid_pre"][None])[0],
        cache["blocks.0.hook_attn_out"],
        atol=ATOL,
        rtol=0,
    )


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_without_residual_connections_each_sublayer_replaces_the_stream(norm):
    model = tiny_model(residual=False, norm=norm)
    _, cache = model.run_with_cache(IDS)
    ln1, ln2 = model.blocks[1].ln1, model.blocks[1].ln2
    attn_out, mlp_out = cache["blocks.1.hook_attn_out"], cache["blocks.1.hook_mlp_out"]
    mid, post = cache["blocks.1.hook_resid_mid"], cache["blocks.1.hook_resid_post"]
    if norm == "pre":
        torch.testing.assert_close(mid, attn_out)
        torch.testing.assert_close(post, mlp_out)
    else:
        torch.testing.assert_close(mid, ln1(attn_out), atol=ATOL, rtol=0)
        torch.testing.assert_close(post, ln2(mlp_out), atol=ATOL, rtol=0)
    with_skip = tiny_model(norm=norm)
    _, skipped = with_skip.run_with_cache(IDS)
    if norm == "pre":  # the same weights with the skip: mid is the sum
        torch.testing.assert_close(
            skipped["blocks.1.hook_resid_mid"],
            skipped["blocks.1.hook_resid_pre"] + skipped["blocks.1.hook_attn_out"],
        )


def test_gated_mlp_multiplies_the_gate_by_the_linear_part():
    model = tiny_model(mlp="gated", act="silu")
    _, cache = model.run_with_cache(IDS)
    pre, linear = cache["blocks.0.mlp.hook_pre"], cache["blocks.0.mlp.hook_pre_linear"]
    post = cache["blocks.0.mlp.hook_post"]
    torch.testing.assert_close(post, F.silu(pre) * linear)
    torch.testing.assert_close(model.blocks[0].mlp.fc_out(post), cache["blocks.0.hook_mlp_out"])


def test_a_gated_mlp_by_default_holds_about_as_many_weights_as_a_plain_one():
    plain, gated = (
        GPTConfig(vocab_size=65, d_model=128),
        GPTConfig(vocab_size=65, d_model=128, mlp="gated"),
    )
    assert gated.d_mlp % 8 == 0
    assert 3 * gated.d_mlp == pytest.approx(2 * plain.d_mlp, rel=0.02)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"n_kv_heads": 3}, "multiple of n_kv_heads"),
        ({"n_kv_heads": 0, "n_head": 4, "pos": "rope", "d_model": 20}, "must be even"),
        ({"norm_kind": "batch"}, "norm_kind must be one of"),
        ({"mlp": "moe"}, "mlp must be one of"),
        ({"residual": "yes"}, "residual must be true or false"),
    ],
)
def test_new_fields_are_validated_with_their_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**overrides)


def test_a_config_written_before_the_variants_loads_as_a_gpt2_block():
    old = {"vocab_size": 65, "n_ctx": 64, "d_model": 64, "n_layer": 2, "n_head": 4, "d_mlp": 256}
    cfg = GPTConfig.from_dict(old)
    assert (cfg.norm_kind, cfg.residual, cfg.mlp, cfg.n_kv_heads) == (
        "layernorm",
        True,
        "standard",
        4,
    )
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
