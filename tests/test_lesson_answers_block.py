"""Lesson 3, the block (assets/lessons/3_block.toml): every stop's answer, measured on the model
the stop names, against plain torch on the recorded activations (norms of the residual stream,
the lens and the attribution redone from the weights, LayerNorm from its formula, W_out W_U); and
each kind's holds=False path on a model where the lesson's observation does not hold."""

from __future__ import annotations

from functools import partial

import torch

from tests.lesson_util import answer_on, bundle
from tests.lesson_util import at_stop as at_stop_of
from tests.lesson_util import lesson as lesson_of
from tests.lesson_util import subject as subject_of
from viz_model.analysis.tokens import token_text
from viz_model.bundles.checkpoint import Bundle
from viz_model.lessons.kinds import subject_for
from viz_model.lessons.registry import ANSWERS
from viz_model.lessons.truth import Truth

LESSON = "3_block"


lesson = partial(lesson_of, LESSON)
subject = partial(subject_of, LESSON)
at_stop = partial(at_stop_of, LESSON)


def other(name: str, kind: str, **args) -> Truth:
    return answer_on(name, lesson().stops[0].prompt, kind, **args)


def record(b: Bundle, ids, names: list[str]) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        _, cache_ = b.model.run_with_cache(torch.as_tensor(list(ids)), names=names)
    return {n: cache_[n] for n in names}


def stations(b: Bundle, ids) -> torch.Tensor:
    """(L + 1, T, D): the stream before each block and after the last."""
    L = b.config.n_layer
    names = [f"blocks.{i}.hook_resid_pre" for i in range(L)] + [f"blocks.{L - 1}.hook_resid_post"]
    got = record(b, ids, names)
    return torch.stack([got[n] for n in names])


def layer_norm(x: torch.Tensor, ln) -> torch.Tensor:
    """The LayerNorm formula written out: (x - mean) / sqrt(var + eps) * gamma + beta."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


def text(b: Bundle, ids, position: int) -> str:
    return token_text(b.tokenizer, list(ids)[position])


def test_the_lesson_reads_with_the_real_pages_and_models_and_has_6_to_12_stops():
    stops = lesson().stops
    assert 6 <= len(stops) <= 12
    assert [s.answer for s in stops] == [
        "stream_grows",
        "lens_first_layer",
        "top_push",
        "normalized_std",
        "largest_sigma_token",
        "bigger_write",
        "top_neuron",
        "promoted_token",
        "top_neuron",
        "promoted_token",
    ]


def test_stop_1_the_stream_gets_longer_at_every_block():
    stop, s, truth = at_stop(1, "stream_grows")
    lengths = stations(bundle(stop.model), s.ids).norm(dim=-1).mean(-1)  # (L + 1,)
    assert bool((lengths[1:] > lengths[:-1]).all())
    assert truth.value == "yes" and truth.holds


def test_stream_grows_does_not_hold_where_a_block_shortens_it_or_on_post_ln():
    b = bundle("shakespeare-tiny")
    lengths = stations(b, subject_for(b, lesson().stops[0].prompt).ids).norm(dim=-1).mean(-1)
    assert not bool((lengths[1:] > lengths[:-1]).all())
    tiny = other("shakespeare-tiny", "stream_grows")
    assert tiny.value == "no" and not tiny.holds
    assert not other("shakespeare-postln", "stream_grows").holds


def _lens_tops(b: Bundle, ids, position: int) -> list[int]:
    """Each station's top token at `position`, through the final LayerNorm and W_U by hand."""
    x = stations(b, ids)[:, position]  # (L + 1, D)
    with torch.no_grad():
        logits = layer_norm(x, b.model.ln_final) @ b.model.W_U
    return [int(i) for i in logits.argmax(-1)]


def test_stop_2_the_lens_first_shows_the_prediction_after_block_2():
    stop, s, truth = at_stop(2, "lens_first_layer")
    b = bundle(stop.model)
    assert stop.view["pos"] == len(s.ids) - 1 and text(b, s.ids, -1) == "n"
    tops = _lens_tops(b, s.ids, -1)
    with torch.no_grad():
        final = int(b.model(torch.tensor(list(s.ids)))[-1].argmax())
    assert tops[-1] == final  # the lens at the last station is the model
    first = tops.index(final)
    assert truth.value == ["embed", "after block 0", "after block 1", "after block 2"][first]
    assert truth.value == "after block 2" and truth.holds


def test_lens_first_layer_does_not_hold_when_only_the_last_layer_gets_there():
    truth = other("shakespeare-postln", "lens_first_layer", position=-1)
    assert truth.value == "after block 1" and truth.numbers["first"] == 2 and not truth.holds


def test_stop_3_an_mlp_pushes_the_predicted_token_most():
    stop, s, truth = at_stop(3, "top_push")
    b = bundle(stop.model)
    L = b.config.n_layer
    names = ["hook_embed", "hook_pos_embed", "ln_final.hook_scale"]
    names += [f"blocks.{i}.hook_{part}_out" for i in range(L) for part in ("attn", "mlp")]
    got = record(b, s.ids, names)
    with torch.no_grad():
        final = int(b.model(torch.tensor(list(s.ids)))[-1].argmax())
        direction = b.model.ln_final.weight * b.model.W_U[:, final] / got["ln_final.hook_scale"][-1]
        shares = {"embed": got["hook_embed"][-1], "pos": got["hook_pos_embed"][-1]}
        for i in range(L):
            shares[f"attn {i}"] = got[f"blocks.{i}.hook_attn_out"][-1]
            shares[f"mlp {i}"] = got[f"blocks.{i}.hook_mlp_out"][-1]
        pushed = {k: float(((v - v.mean()) * direction).sum()) for k, v in shares.items()}
    assert truth.value == max(pushed, key=pushed.get) == "mlp 1"
    assert abs(truth.numbers["mlp 1"] - pushed["mlp 1"]) < 1e-3
    assert truth.holds


def test_top_push_does_not_hold_on_a_post_ln_model():
    assert not other("shakespeare-postln", "top_push").holds


def test_stop_4_the_normalized_vector_has_standard_deviation_1():
    stop, s, truth = at_stop(4, "normalized_std")
    b = bundle(stop.model)
    assert stop.view == {"ln": stop.args["ln"], "ln_pos": len(s.ids) - 1}
    x = record(b, s.ids, ["blocks.0.hook_resid_pre"])["blocks.0.hook_resid_pre"][-1]  # (D,)
    eps = b.model.blocks[0].ln1.eps
    normalized = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + eps)
    assert abs(truth.value - float(normalized.std(unbiased=False))) < 1e-4
    assert truth.check(1) and not truth.check(0.5)
    assert truth.holds


def test_normalized_std_does_not_hold_for_a_layernorm_the_model_lacks():
    # attention-only: block 0 has no LayerNorm before an MLP
    truth = ANSWERS["normalized_std"](
        subject_for(bundle("induction-2l"), "abcabc"), {"ln": "blocks.0.ln2"}
    )
    assert not truth.holds


def test_stop_5_the_first_token_enters_the_first_layernorm_with_the_largest_sigma():
    stop, s, truth = at_stop(5, "largest_sigma_token")
    b = bundle(stop.model)
    x = record(b, s.ids, ["blocks.0.hook_resid_pre"])["blocks.0.hook_resid_pre"]  # (T, D)
    sigma = torch.sqrt(x.var(-1, unbiased=False) + b.model.blocks[0].ln1.eps)
    assert truth.value == text(b, s.ids, int(sigma.argmax())) == "T"
    assert int(sigma.argmax()) == 0 and truth.holds


def test_largest_sigma_token_does_not_hold_for_a_layernorm_the_model_lacks():
    assert not other("shakespeare-char", "largest_sigma_token", ln="blocks.9.ln1").holds


def test_stop_6_the_mlp_writes_the_longer_vector_at_the_comma():
    stop, s, truth = at_stop(6, "bigger_write")
    b = bundle(stop.model)
    t = stop.view["blk_pos"]
    assert text(b, s.ids, t) == "," and "," not in s.prompt[:t]  # the first comma
    got = record(b, s.ids, ["blocks.0.hook_attn_out", "blocks.0.hook_mlp_out"])
    attn, mlp = (float(got[n][t].norm()) for n in got)
    assert truth.value == ("the MLP (t5)" if mlp > attn else "attention (t2)") == "the MLP (t5)"
    assert truth.holds


def test_bigger_write_does_not_hold_on_an_attention_only_model():
    truth = ANSWERS["bigger_write"](subject_for(bundle("induction-2l"), "ab,c"), {"token": ","})
    assert not truth.holds


def _top_neuron(b: Bundle, ids, layer: int, token: str) -> int:
    t = next(i for i in range(len(ids)) if text(b, ids, i) == token)
    post = record(b, ids, [f"blocks.{layer}.mlp.hook_post"])[f"blocks.{layer}.mlp.hook_post"]
    return int(post[t].argmax())


def _promoted(b: Bundle, layer: int, neuron: int) -> str:
    with torch.no_grad():
        value = b.model.blocks[layer].mlp.fc_out.weight[:, neuron]  # (D,)
        return token_text(b.tokenizer, int((value @ b.model.W_U).argmax()))


def test_stops_7_and_8_neuron_5_fires_on_the_comma_and_promotes_a_line_break():
    stop, s, truth = at_stop(7, "top_neuron")
    b = bundle(stop.model)
    assert truth.value == _top_neuron(b, s.ids, 0, ",") == 5 and truth.holds
    stop8, _, truth8 = at_stop(8, "promoted_token")
    assert stop8.view["neuron"] == stop8.args["neuron"] == truth.value  # the neuron stop 7 found
    assert truth8.value == _promoted(b, 0, 5) == "\n"
    assert truth8.check("newline") and truth8.holds


def test_stops_9_and_10_a_bpe_neuron_fires_on_that_and_promotes_a_pronoun():
    stop, s, truth = at_stop(9, "top_neuron")
    b = bundle(stop.model)
    assert truth.value == _top_neuron(b, s.ids, 2, " that") == 422 and truth.holds
    stop10, _, truth10 = at_stop(10, "promoted_token")
    assert stop10.view["neuron"] == stop10.args["neuron"] == truth.value
    assert truth10.value == _promoted(b, 2, 422) == " they"
    assert truth10.check("␣they") and not truth10.check("they") and truth10.holds


def test_neuron_kinds_do_not_hold_where_the_neuron_is_silent_or_absent():
    # shakespeare-bpe's neuron 5 of layer 0 does not fire on this prompt
    silent = other("shakespeare-bpe", "promoted_token", layer=0, neuron=5)
    assert silent.numbers["peak"] < 0.1 and not silent.holds
    assert not ANSWERS["top_neuron"](subject_for(bundle("induction-2l"), "ab,c"), {}).holds
    assert not other("shakespeare-char", "top_neuron", token="Z").holds


def test_every_block_kind_answers_an_empty_prompt_without_claiming_anything():
    empty = subject_for(bundle("shakespeare-char"), "")
    kinds = [k for k, v in ANSWERS.items() if v.measure.__module__.endswith("answers_block")]
    assert len(kinds) == 8
    assert not any(ANSWERS[k](empty, {}).holds for k in kinds)
