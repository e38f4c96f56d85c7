"""Interventions and per-thread recording: nothing is ever left registered on the shared model."""

from __future__ import annotations

import threading

import pytest
import torch

from tests.conftest import tiny_model
from viz_model.model.gpt import GPT
from viz_model.model.hooks import ablate_heads, active_context, custom, patch

ATOL = 1e-5


def test_zero_ablating_a_head_zeroes_its_write_and_changes_the_logits(model: GPT, ids):
    plain = model(ids)
    with model.intervene(ablate_heads(1, [2])):
        ablated, cache = model.run_with_cache(ids)
    result = cache["blocks.1.attn.hook_result"]  # (T, H, D)
    assert (result[:, 2] == 0).all()
    assert (result[:, 1] != 0).any()
    assert not torch.allclose(ablated, plain, atol=1e-3)
    torch.testing.assert_close(model(ids), plain)  # nothing left behind


def test_mean_ablation_replaces_z_with_its_mean_over_positions(model: GPT, ids):
    _, clean = model.run_with_cache(ids, names=["blocks.0.attn.hook_z"])
    _, cache = model.run_with_cache(
        ids, names=["blocks.0.attn.hook_z"], hooks=ablate_heads(0, [1], how="mean")
    )
    z, z0 = cache["blocks.0.attn.hook_z"], clean["blocks.0.attn.hook_z"]
    torch.testing.assert_close(z[:, 1], z0[:, 1].mean(0).expand_as(z[:, 1]))
    torch.testing.assert_close(z[:, 0], z0[:, 0])


def test_patching_the_last_residual_transplants_the_output(model: GPT, ids):
    other = torch.roll(ids, 3)
    other_logits, other_cache = model.run_with_cache(other)
    resid = other_cache["blocks.1.hook_resid_post"]
    with model.intervene(patch("blocks.1.hook_resid_post", resid)):
        patched = model(ids)
    torch.testing.assert_close(patched, other_logits, atol=ATOL, rtol=0)


def test_patching_some_positions_only_changes_those_and_later(model: GPT, ids):
    other = torch.roll(ids, 3)
    _, other_cache = model.run_with_cache(other)
    plain = model(ids)
    with model.intervene(
        patch("blocks.0.hook_resid_mid", other_cache["blocks.0.hook_resid_mid"], [6])
    ):
        patched = model(ids)
    torch.testing.assert_close(patched[:6], plain[:6], atol=ATOL, rtol=0)
    assert not torch.allclose(patched[6], plain[6], atol=1e-4)


def test_custom_function_sees_the_activation_and_its_name(model: GPT, ids):
    seen = []

    def scale_pattern(x, hook):
        seen.append((hook.name, tuple(x.shape)))
        return None  # unchanged

    plain = model(ids)
    with model.intervene(custom("blocks.0.attn.hook_pattern", scale_pattern)):
        out = model(ids)
    assert seen == [("blocks.0.attn.hook_pattern", (1, 4, len(ids), len(ids)))]
    torch.testing.assert_close(out, plain, atol=ATOL, rtol=0)


def test_interventions_on_unknown_names_are_refused(model: GPT):
    with (
        pytest.raises(KeyError, match="no hook"),
        model.intervene(custom("blocks.9.hook_x", print)),
    ):
        pass
    with pytest.raises(ValueError, match="zero' or 'mean"):
        ablate_heads(0, [0], how="half")


def test_contexts_nest_and_unwind(model: GPT, ids):
    assert active_context() is None
    with model.intervene(ablate_heads(0, [0])):
        outer = active_context()
        _, cache = model.run_with_cache(ids, names=["blocks.0.attn.hook_z"])
        assert (cache["blocks.0.attn.hook_z"][:, 0] == 0).all()  # outer intervention seen
        assert active_context() is outer
    assert active_context() is None


def test_two_threads_recording_at_once_each_get_their_own_activations(model: GPT):
    prompts = {0: torch.tensor([1, 2, 3, 4, 5, 6]), 1: torch.tensor([9, 8, 7, 6, 5, 4, 3, 2])}
    expected = {
        i: model.run_with_cache(p)[1]["blocks.1.hook_resid_post"] for i, p in prompts.items()
    }
    barrier = threading.Barrier(2)
    got, errors = {}, []

    def wait_for_the_other(x, hook):  # both threads are mid-forward at the same time
        barrier.wait(timeout=10)

    def worker(i):
        try:
            _, cache = model.run_with_cache(
                prompts[i], hooks=custom("blocks.0.hook_resid_mid", wait_for_the_other)
            )
            got[i] = cache["blocks.1.hook_resid_post"]
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    for i in prompts:
        assert got[i].shape == expected[i].shape
        torch.testing.assert_close(got[i], expected[i])


def test_an_intervention_in_one_thread_does_not_leak_into_another(model: GPT, ids):
    plain = model(ids)
    inside, outside = threading.Event(), threading.Event()
    seen = {}

    def ablating():
        with model.intervene(ablate_heads(0, [0, 1, 2, 3])):
            inside.set()
            outside.wait(timeout=10)

    t = threading.Thread(target=ablating)
    t.start()
    inside.wait(timeout=10)
    seen["out"] = model(ids)
    outside.set()
    t.join(timeout=10)
    torch.testing.assert_close(seen["out"], plain)


# ---- TransformerLens habits: fn(activation, hook), run_with_hooks, predicates, names_filter ----


def _ablate_head_2_in_z(z, hook):  # as a TransformerLens tutorial writes it: in place, returned
    z[:, :, 2, :] = 0.0
    return z


def _ablate_head_2_in_pattern(pattern, hook):  # (B, H, T, T): head 2 attends to nothing
    pattern[:, 2] = 0.0


def test_a_transformerlens_head_ablation_equals_our_own(model: GPT, ids):
    with model.intervene(ablate_heads(1, [2])):
        ours = model(ids)
    via_z = model.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_z", _ablate_head_2_in_z)])
    via_pattern = model.run_with_hooks(
        ids, fwd_hooks=[("blocks.1.attn.hook_pattern", _ablate_head_2_in_pattern)]
    )
    torch.testing.assert_close(via_z, ours, atol=ATOL, rtol=0)
    torch.testing.assert_close(via_pattern, ours, atol=ATOL, rtol=0)
    assert not torch.allclose(ours, model(ids), atol=1e-3)  # the ablation did something


def test_patching_resid_pre_the_transformerlens_way_equals_patch(model: GPT, ids):
    _, clean = model.run_with_cache(torch.roll(ids, 3), names_filter="blocks.1.hook_resid_pre")

    def patch_position_6(resid, hook):  # (B, T, D)
        resid[:, 6] = clean[hook.name][6]
        return resid

    tl = model.run_with_hooks(ids, fwd_hooks=[("blocks.1.hook_resid_pre", patch_position_6)])
    with model.intervene(patch("blocks.1.hook_resid_pre", clean["blocks.1.hook_resid_pre"], [6])):
        ours = model(ids)
    torch.testing.assert_close(tl, ours, atol=ATOL, rtol=0)


def test_a_predicate_hooks_exactly_the_names_it_accepts(model: GPT, ids):
    seen, wanted = [], []

    def note(x, hook):
        seen.append(hook.name)
        wanted.append(sorted(active_context().fns))  # what the context asks the model for

    model.run_with_hooks(ids, fwd_hooks=[(lambda name: name.endswith("hook_z"), note)])
    z_names = ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]
    assert seen == z_names
    assert wanted == [z_names, z_names]  # nothing else, so attention may stay fused


def test_a_predicate_that_accepts_nothing_changes_nothing(model: GPT, ids):
    out = model.run_with_hooks(ids, fwd_hooks=[(lambda name: "nonsense" in name, print)])
    torch.testing.assert_close(out, model(ids))


def test_names_filter_takes_a_predicate_a_name_or_a_list(model: GPT, ids):
    patterns = [f"blocks.{i}.attn.hook_pattern" for i in range(2)]
    _, by_predicate = model.run_with_cache(ids, names_filter=lambda n: n.endswith("hook_pattern"))
    _, by_list = model.run_with_cache(ids, names=patterns)
    _, by_name = model.run_with_cache(ids, names_filter="blocks.0.attn.hook_pattern")
    assert by_predicate.names == by_list.names == patterns
    assert by_name.names == patterns[:1]
    torch.testing.assert_close(by_predicate[patterns[1]], by_list[patterns[1]])
    with pytest.raises(TypeError, match="not both"):
        model.run_with_cache(ids, names=patterns, names_filter=patterns)
    with pytest.raises(KeyError, match="no hook"):
        model.run_with_cache(ids, names_filter="blocks.0.attn.hook_nonsense")


def test_every_hook_sees_its_own_name_in_forward_order(ids):
    from tests.test_cache_names import golden

    model = tiny_model()
    seen = []

    def note(x, hook):
        assert model.get_submodule(hook.name) is hook
        seen.append(hook.name)

    with torch.no_grad():
        model.run_with_hooks(ids, fwd_hooks=[(lambda name: True, note)])
    assert seen == golden(2)


def test_hook_layer_is_the_block_number(model: GPT):
    assert model.blocks[1].attn.hook_z.layer() == 1
    assert model.blocks[0].ln2.hook_scale.layer() == 0
    with pytest.raises(ValueError, match="not inside a block"):
        model.hook_embed.layer()


def _weights_and_buffers(model: GPT) -> dict[str, torch.Tensor]:
    """Every parameter and buffer, including those state_dict leaves out (the sinusoidal table)."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def test_editing_every_activation_in_place_leaves_the_model_unchanged(variant_model: GPT, ids):
    """TransformerLens tutorials edit activations in place; that must never reach a weight or
    buffer of the shared model (a sinusoidal position table, say), with or without grad."""
    tensors = _weights_and_buffers
    before = {k: v.clone() for k, v in tensors(variant_model).items()}
    plain = variant_model(ids)

    def scale(x, hook):  # not a constant shift, which a LayerNorm would hide
        x.mul_(1.5)

    variant_model.run_with_hooks(ids, fwd_hooks=[(lambda name: True, scale)])
    with torch.no_grad():
        variant_model.run_with_hooks(ids[None], fwd_hooks=[(lambda name: True, scale)])
    for k, v in tensors(variant_model).items():
        assert torch.equal(v, before[k]), k
    torch.testing.assert_close(variant_model(ids), plain)


def test_run_with_hooks_in_one_thread_leaks_into_no_other_and_registers_nothing(model, ids):
    plain = model(ids)
    before = {k: v.clone() for k, v in _weights_and_buffers(model).items()}
    inside, outside = threading.Event(), threading.Event()
    got, errors = {}, []

    def hold_mid_forward(z, hook):  # ablates every head, and waits while the other thread runs
        inside.set()
        assert outside.wait(timeout=10)
        return torch.zeros_like(z)

    def ablating():
        try:
            got["ablated"] = model.run_with_hooks(
                ids, fwd_hooks=[(lambda name: name.endswith("attn.hook_z"), hold_mid_forward)]
            )
        except Exception as exc:  # surfaced below
            errors.append(exc)

    t = threading.Thread(target=ablating)
    t.start()
    assert inside.wait(timeout=10)
    got["other"] = model(ids)  # runs while the first thread is inside its hook
    outside.set()
    t.join(timeout=30)
    assert not errors
    torch.testing.assert_close(got["other"], plain)
    assert not torch.allclose(got["ablated"], plain, atol=1e-3)
    assert active_context() is None
    for module in model.modules():
        assert not (module._forward_hooks or module._forward_pre_hooks), module
    for k, v in _weights_and_buffers(model).items():
        assert torch.equal(v, before[k]), k
    torch.testing.assert_close(model(ids), plain)


def test_the_docstring_example_in_hooks_runs():
    import doctest

    import viz_model.model.hooks as hooks

    result = doctest.testmod(hooks, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0


def test_an_in_place_edit_also_changes_an_earlier_recording_of_the_same_tensor(model, ids):
    """What the hooks.py docstring warns about: resid_post of block 0 is resid_pre of block 1."""

    def double(x, hook):
        x.mul_(2.0)

    def doubled(x, hook):
        return 2.0 * x

    names = ["blocks.0.hook_resid_post", "blocks.1.hook_resid_pre"]
    _, clean = model.run_with_cache(ids, names=names)
    _, in_place = model.run_with_cache(ids, names=names, hooks=[(names[1], double)])
    _, new = model.run_with_cache(ids, names=names, hooks=[(names[1], doubled)])
    torch.testing.assert_close(in_place[names[0]], 2.0 * clean[names[0]])
    torch.testing.assert_close(new[names[0]], clean[names[0]])
    torch.testing.assert_close(in_place[names[1]], new[names[1]])
