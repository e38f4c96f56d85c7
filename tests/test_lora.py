"""LoRA and fine-tuning in the engine: the math of model/lora.py on a tiny seeded GPT, a fine-tune
run from a tiny base through the one loop (forgetting recorded, a normal bundle with merged
weights, A and B kept, a resume that continues them), the flags' round trip, and the claims of
analysis/labs/finetune.py recomputed from their numbers."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch
from safetensors.torch import load_file

from viz_model.analysis.labs import finetune as ft
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.load import load_bundle
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT
from viz_model.model.hooks import custom
from viz_model.model.lora import attach_lora, lora_count, update_rank
from viz_model.text.data import task_text
from viz_model.text.tokenization import Tokenizer
from viz_model.training import cli
from viz_model.training.finetune import LORA_FILE, unknown_characters
from viz_model.training.settings import RunSettings, new_run, resumed_run, settings_to_argv

CFG = GPTConfig(vocab_size=23, n_ctx=16, d_model=32, n_layer=2, n_head=4)
X = torch.randint(0, 23, (2, 12), generator=torch.Generator().manual_seed(1))


def seeded_gpt(cfg: GPTConfig = CFG) -> GPT:
    torch.manual_seed(0)
    return GPT(cfg).eval()


def with_random_b(lora) -> None:
    """B is zero at the start; a random B stands for a trained one."""
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for m in lora.modules.values():
            m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=gen) * 0.1)


def test_lora_starts_at_the_base_exactly_and_trains_only_a_and_b():
    model = seeded_gpt()
    base = model(X)
    lora = attach_lora(model, 4, ("qkv", "out", "mlp_in", "mlp_out"))
    assert torch.equal(model(X), base)
    model.train()
    model(X).sum().backward()
    with_grad = {n for n, p in model.named_parameters() if p.grad is not None}
    assert with_grad and all(n.endswith(("lora_A", "lora_B")) for n in with_grad)
    assert {n for n, p in model.named_parameters() if p.requires_grad} == with_grad
    # B = 0, so A gets no gradient at the first step; B does: the update starts moving at once
    assert all(lora.modules[n.rsplit(".", 1)[0]].lora_B.grad.abs().sum() > 0 for n in with_grad)


def test_the_trainable_count_is_r_times_in_plus_out_per_matrix():
    model = seeded_gpt()
    d, layers, r = CFG.d_model, CFG.n_layer, 8
    by_hand = layers * r * ((d + 3 * d) + (d + d))  # qkv: d -> 3d; out: d -> d
    lora = attach_lora(model, r, ("qkv", "out"))
    assert lora.n_trainable() == by_hand == lora_count(seeded_gpt(), r, ("qkv", "out"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trainable == by_hand


def test_merged_weights_give_the_lora_forward_and_the_update_has_rank_at_most_r():
    model = seeded_gpt()
    lora = attach_lora(model, 3, ("qkv", "mlp_out"), alpha=6.0)
    with_random_b(lora)
    tuned = model(X)
    assert (tuned - seeded_gpt()(X)).abs().max() > 1e-2  # the update does change the logits
    plain = GPT(CFG).eval()
    plain.load_state_dict(model.state_dict())  # the saved (merged) weights, GPT's own names
    assert set(model.state_dict()) == set(seeded_gpt().state_dict())
    assert torch.allclose(plain(X), tuned, atol=1e-5)
    assert all(0 < k <= 3 for k in update_rank(lora).values())


def test_hook_points_see_the_update_while_lora_is_attached():
    model = seeded_gpt()
    lora = attach_lora(model, 2, ("out",))
    with_random_b(lora)
    logits, cache = model.run_with_cache(X, names_filter=lambda n: n.endswith("hook_result"))
    assert torch.allclose(logits, model(X), atol=1e-5)  # the per-head path uses W + s B A
    assert "blocks.0.attn.hook_result" in cache


def test_loading_a_merged_state_rebases_and_keeps_the_function():
    model = seeded_gpt()
    lora = attach_lora(model, 2, ("qkv",))
    with_random_b(lora)
    before = model(X)
    model.load_state_dict(model.state_dict())  # the loop's restore after a NaN
    assert torch.allclose(model(X), before, atol=1e-5)
    assert all(m.lora_B.abs().sum() == 0 for m in lora.modules.values())


def test_bad_lora_choices_are_refused_plainly():
    with pytest.raises(ValueError, match="rank r must be a whole number from 1"):
        attach_lora(seeded_gpt(), 0, ("qkv",))
    with pytest.raises(ValueError, match="unknown LoRA matrices: wq"):
        attach_lora(seeded_gpt(), 2, ("wq",))
    attn_only = GPTConfig(vocab_size=23, n_ctx=16, d_model=32, n_layer=1, n_head=4, attn_only=True)
    with pytest.raises(ValueError, match="none of the matrices mlp_in"):
        attach_lora(seeded_gpt(attn_only), 2, ("mlp_in",))
    with pytest.raises(ValueError, match="give the bundle to start from"):
        RunSettings(task="repeat", lora_rank=4)


# ---- a fine-tune run from a tiny base --------------------------------------------------------


def tiny_base(path):
    """An untrained tiny GPT whose char tokenizer knows the repeat and bracket tasks, saved as a
    bundle that says it was trained on `repeat` (its old text)."""
    old = {"task": "repeat", "task_examples": 300, "task_len": 32, "task_seed": 0}
    text = task_text("repeat", 300, 0, 32) + task_text("brackets", 300, 0, 32)
    tok = Tokenizer.train(text, "char")
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_ctx=32, d_model=32, n_layer=1, n_head=4))
    meta = {"data": {**old, "val_fraction": 0.1}, "step": 0}
    return save_bundle(path, model, tok, {"batch_size": 4}, [], meta)


TRAIN = {"max_steps": 6, "eval_every": 3, "eval_batches": 2, "sample_tokens": 8, "threads": 1}


def fine_tune(base, out, rank=2, **over):
    settings = RunSettings(
        task="brackets",
        task_examples=300,
        base=str(base),
        lora_rank=rank,
        lora_targets=("qkv", "mlp_out"),
        train={**TRAIN, **over},
    )
    run = new_run(settings, out, "test")
    records = list(run.steps())
    return settings, run, records


def test_a_lora_fine_tune_records_forgetting_saves_a_plain_bundle_and_resumes(tmp_path):
    base = tiny_base(tmp_path / "base")
    settings, run, records = fine_tune(base, tmp_path / "ft")
    info = run.meta["finetune"]
    assert info["mode"] == "lora" and info["trainable"] == lora_count(
        load_bundle(base).model, 2, ("qkv", "mlp_out")
    )
    assert info["total"] == load_bundle(base).model.n_params()
    evals = [r for r in records if r.val_loss is not None]
    assert [r.step for r in evals] == [3, 6] and all(r.old_val_loss > 0 for r in evals)
    before = info["before"]
    assert before["old_val_loss"] > 0 and before["val_sd"] >= 0 and before["sample"]
    tuned = load_bundle(tmp_path / "ft")  # an ordinary bundle: merged weights, GPT names
    assert tuned.history[-1]["old_val_loss"] == evals[-1].old_val_loss
    tensors = load_file(tmp_path / "ft" / LORA_FILE)
    base_sd, tuned_sd = load_bundle(base).model.state_dict(), tuned.model.state_dict()
    delta = tuned_sd["blocks.0.attn.qkv.weight"] - base_sd["blocks.0.attn.qkv.weight"]
    lora_delta = tensors["blocks.0.attn.qkv.lora_B"] @ tensors["blocks.0.attn.qkv.lora_A"]
    assert delta.abs().max() > 0 and torch.allclose(delta, lora_delta, atol=1e-6)  # alpha = r
    assert torch.equal(tuned_sd["blocks.0.attn.out.weight"], base_sd["blocks.0.attn.out.weight"])
    assert sum(v > 1e-6 for v in ft.singular_values(delta)) <= 2

    resumed = resumed_run(tmp_path / "ft", tmp_path / "ft", {"max_steps": 9}, None, "more")
    assert resumed.start_step == 6 and resumed.old_data is not None
    assert (
        sum(p.numel() for p in resumed.model.parameters() if p.requires_grad) == info["trainable"]
    )
    logits = resumed.model(torch.zeros(1, 5, dtype=torch.long))
    assert torch.allclose(logits, tuned.model(torch.zeros(1, 5, dtype=torch.long)), atol=1e-5)


def test_a_full_fine_tune_trains_every_weight(tmp_path):
    base = tiny_base(tmp_path / "base")
    _, run, records = fine_tune(base, tmp_path / "full", rank=0)
    assert run.meta["finetune"]["mode"] == "full" and run.on_save is None
    assert run.meta["finetune"]["trainable"] == run.meta["finetune"]["total"]
    assert not (tmp_path / "full" / LORA_FILE).exists()
    assert records[-1].old_val_loss is not None


def test_text_the_base_cannot_encode_is_refused_with_the_count(tmp_path):
    base = tiny_base(tmp_path / "base")
    settings = RunSettings(task="count", task_examples=300, base=str(base), train=TRAIN)
    with pytest.raises(ValueError, match=r"of the new text's .* characters .* are not in base"):
        new_run(settings, tmp_path / "x", "test")
    tok = load_bundle(base).tokenizer
    unknown, total, examples = unknown_characters("ab()9", tok)
    assert (unknown, total, examples) == (1, 5, ["9"])


def test_the_flags_say_the_fine_tune_and_read_back_the_same_settings():
    settings = RunSettings(
        corpus="shakespeare",
        base="assets/models/shakespeare-tiny",
        lora_rank=8,
        lora_targets=("qkv", "mlp_in"),
        lora_alpha=16.0,
        train={"max_steps": 50},
    )
    argv = settings_to_argv(settings, "runs/x")
    assert argv[:8] == [
        "--corpus",
        "shakespeare",
        "--finetune",
        settings.base,
        "--lora-rank",
        "8",
        "--lora-targets",
        "qkv,mlp_in",
    ]
    args = cli.build_parser().parse_args(argv)
    assert cli.settings_from_args(args) == settings
    with pytest.raises(SystemExit, match="keeps its base's tokenizer"):
        cli.settings_from_args(cli.build_parser().parse_args([*argv, "--preset", "tiny"]))


# ---- what may be said ------------------------------------------------------------------------


def test_the_low_rank_claim_is_decided_by_its_share_against_chance():
    concentrated = [3.0, 1.0] + [0.1] * 30
    spread = [1.0] * 32
    for values, made in ((concentrated, True), (spread, False)):
        claim = ft.low_rank_claim("blocks.0.attn.qkv", values, 2)
        share = sum(v * v for v in values[:2]) / sum(v * v for v in values)
        assert claim.numbers["share"] == pytest.approx(share)
        assert claim.made == (share > ft.SHARE_MOST) == made
        assert f"{share:.0%}" in claim.text and "top 2" in claim.text
    # A random 64 x 64 change: its top 31 directions hold most of its energy by chance alone,
    # so a rank that large names nothing, while its top 8 hold well under half.
    gen = torch.Generator().manual_seed(1)
    noise = ft.singular_values(torch.randn(64, 64, generator=gen))
    assert ft.top_share(noise, 31) > ft.SHARE_MOST
    assert not ft.low_rank_claim("blocks.0.attn.out", noise, 31).made
    assert abs(ft.chance_share(64, 8) - ft.top_share(noise, 8)) < 0.05
    assert ft.chance_share(64, 8) < ft.chance_share(64, 16) < ft.chance_share(64, 31)


def test_the_loss_change_claim_needs_more_than_the_noise():
    limit = 2 * math.sqrt(2) * 0.05 / math.sqrt(20)
    rose = ft.loss_change_claim("old text", 1.86, 1.86 + 2 * limit, 0.05, 20)
    flat = ft.loss_change_claim("old text", 1.86, 1.86 + limit / 2, 0.05, 20)
    assert rose.made and "rose from 1.86 to" in rose.text
    assert rose.numbers["noise"] == pytest.approx(limit)
    assert not flat.made and "within the noise" in flat.text
    assert ft.loss_change_claim("new text", 6.5, 3.4, 0.05, 20).text.startswith(
        "The loss on the new text fell from 6.50 to 3.40"
    )


def test_a_loss_risen_past_a_blind_guess_is_said_to_be_so():
    past = ft.loss_change_claim("old text", 1.86, 6.65, 0.05, 20, blind=4.34)
    below = ft.loss_change_claim("old text", 1.86, 3.10, 0.05, 20, blind=4.34)
    fell = ft.loss_change_claim("new text", 9.23, 5.00, 0.05, 20, blind=4.34)
    assert past.made and "worse than a blind guess over the vocabulary (4.34)" in past.text
    assert below.made and "blind guess" not in below.text
    assert fell.made and "blind guess" not in fell.text  # a loss that fell is no forgetting


def test_a_nan_stop_in_a_lora_run_keeps_the_update_it_trained(tmp_path):
    """When a weight turns NaN the loop puts back the last good weights: for LoRA that is W, A and
    B, so the saved lora.safetensors is the update the bundle's merged weights hold (not B = 0)."""
    base = tiny_base(tmp_path / "base")
    settings = RunSettings(
        task="brackets", task_examples=300, base=str(base), lora_rank=2, lora_targets=("qkv",)
    )
    train = {**TRAIN, "max_steps": 12, "sample_tokens": 0}  # good weights kept at evaluations
    run = new_run(dataclasses.replace(settings, train=train), tmp_path / "ft", "test")
    qkv = run.model.blocks[0].attn.qkv
    calls = {"n": 0}

    def break_b(x, hook):  # the 15th forward pass (during step 7) turns a LoRA B into NaN
        calls["n"] += 1
        if calls["n"] == 15:
            qkv.lora_B.data.fill_(float("nan"))

    with run.model.intervene(custom("unembed.hook_out", break_b)):
        records = list(run.steps())
    stopped = records[-1].stopped
    kept = re.search(r"^the gradient became NaN .* kept the weights of step (\d+)", stopped)
    assert kept and int(kept[1]) >= 3, stopped
    tensors = load_file(tmp_path / "ft" / LORA_FILE)
    update = tensors["blocks.0.attn.qkv.lora_B"] @ tensors["blocks.0.attn.qkv.lora_A"]
    assert update.isfinite().all() and update.abs().max() > 0  # the steps before it, kept
    name = "blocks.0.attn.qkv.weight"
    tuned = load_bundle(tmp_path / "ft").model.state_dict()[name]
    assert torch.allclose(tuned - load_bundle(base).model.state_dict()[name], update, atol=1e-6)
