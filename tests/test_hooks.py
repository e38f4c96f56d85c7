"""Interventions and per-thread recording: nothing is ever left registered on the shared model."""

from __future__ import annotations

import threading

import pytest
import torch

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

    def scale_pattern(x, name):
        seen.append((name, tuple(x.shape)))
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

    def wait_for_the_other(x, name):  # both threads are mid-forward at the same time
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
