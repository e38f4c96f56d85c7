"""The pre-trained bundles in assets/models: each loads, generates, and says how it was made."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from viz_model.analysis import dynamics as dyn
from viz_model.analysis.contrasts import CONTRASTS, copy_profile, look_ahead
from viz_model.bundles.load import load_bundle
from viz_model.model.sampling import SamplingSettings, generate, generate_steps
from viz_model.text.data import TokenData, example_prompts, load_corpus, load_text
from viz_model.text.instructions import SPECIAL_TOKENS, instruct_text
from viz_model.training.loop import evaluate

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
ASSETS = MODELS.parent
EPS32 = torch.finfo(torch.float32).eps  # 1.2e-7, float32's rounding step at 1
EXPECTED = (
    "induction-1l",
    "induction-2l",
    "shakespeare-bpe",
    "shakespeare-char",
    "shakespeare-nomask",
    "shakespeare-nopos",
    "shakespeare-postln",
    "shakespeare-sinusoidal",
    "shakespeare-tied",
    "shakespeare-tiny",
    "shakespeare-rmsnorm",
    "shakespeare-swiglu",
    "shakespeare-rope",
    "shakespeare-alibi",
    "shakespeare-mqa",
    "shakespeare-llama",
    "fewshot-tiny",
    "shakespeare-rnn",
    "shakespeare-lstm",
    "shakespeare-gru",
    "shakespeare-cnn",
)
FAMILY_BUNDLES = {f"shakespeare-{f}": f for f in ("rnn", "lstm", "gru", "cnn")}
BUNDLES = sorted(p.name for p in MODELS.iterdir() if p.is_dir()) if MODELS.is_dir() else []


def test_the_bundles_are_there():
    assert set(EXPECTED) <= set(BUNDLES)


def test_assets_fit_the_size_budget():
    total = sum(f.stat().st_size for f in ASSETS.rglob("*") if f.is_file())
    # 25 MiB until the architecture contrasts (2026-11-22) added 7,373,800 bytes: induction-1l
    # 760,276; shakespeare- nomask 1,131,079, tiny 1,131,058, postln 1,129,544, sinusoidal
    # 1,065,244, nopos 1,065,242, tied 1,091,357; and the Scaling page's sweep results,
    # assets/scaling/shakespeare-char.json, 4,834 (assets/ then 32,891,289 bytes, 31.4 MiB).
    # 40 MiB since the parts modern models changed (issue 25, 2026-11-27) added 5,418,042 bytes:
    # shakespeare- rmsnorm 1,128,398, swiglu 1,126,496, rope 1,066,172, alibi 1,065,501, mqa
    # 1,031,475 (assets/ then 38,345,477 bytes, 36.6 MiB); and shakespeare-llama 1,198,835.
    # The sweep contrasts' results (assets/contrasts/, 2026-11-27) added 40,509 bytes.
    # 45 MiB since the other families (issue 26, 2026-11-28) added 4,734,331 bytes: shakespeare-
    # rnn 1,231,116, lstm 1,181,385, gru 1,189,406, cnn 1,132,424 (assets/ then 44,323,248
    # bytes, 42.3 MiB).
    # The few-shot task model (issue 26, 2026-11-28) added 1,269,445 bytes: fewshot-tiny
    # (assets/ then 45,592,693 bytes, 43.5 MiB).
    # The instruction-tuned model (issue 27, 2026-11-28) added 3,585,806 bytes: shakespeare-
    # instruct, shakespeare-char's float32 weights with three more rows and a 1,500-step history,
    # no snapshots (its step 0 is shakespeare-char grown by extend_vocab) (assets/ then
    # 48,977,795 bytes, 46.7 MiB).
    # The hyperfitted model (issue 42, 2026-12-06) added 719,903 bytes: shakespeare-tiny-hyperfit,
    # shakespeare-tiny's float32 weights tuned 1,500 steps, no snapshots.
    assert total < 45 * 2**20 + 1_269_445 + 3_585_806 + 719_903, (
        f"assets/ holds {total / 2**20:.1f} MB"
    )


@pytest.mark.parametrize("name", BUNDLES)
def test_bundle_loads_and_generates(name):
    bundle = load_bundle(MODELS / name)
    prompt = bundle.tokenizer.encode("\n")
    ids = generate(bundle.model, prompt, 30, SamplingSettings(temperature=0.8), seed=0)
    assert len(ids) == 30 and all(0 <= i < bundle.config.vocab_size for i in ids)
    assert isinstance(bundle.tokenizer.decode(ids), str)
    assert bundle.history and bundle.history[-1]["step"] == bundle.meta["step"]
    steps = bundle.snapshot_steps()
    if "base" in bundle.meta:  # tuned from another bundle, which is its step 0: no snapshots
        tuners = ("python scripts/instruction_tune.py", "python scripts/hyperfit.py")
        assert bundle.meta["command"].startswith(tuners)
        assert steps == [] and (MODELS / bundle.meta["base"]).is_dir()
        return
    assert bundle.meta["command"].startswith("python -m viz_model.training ")
    assert steps[0] == 0 and steps[-1] == bundle.meta["step"]
    assert bundle.load_snapshot(steps[-1]).cfg == bundle.config


@pytest.mark.parametrize("name", EXPECTED)
def test_bundle_carries_example_prompts_it_knows(name):
    bundle = load_bundle(MODELS / name)
    examples = bundle.meta["example_prompts"]
    source = bundle.meta["data"]
    # what the training command writes today, had it trained this bundle
    assert examples == example_prompts(load_text(source), source.get("task"))
    for text in examples:
        ids = bundle.tokenizer.encode(text)
        assert 0 < len(ids) <= bundle.config.n_ctx
        assert bundle.tokenizer.unk_id not in ids


def test_shakespeare_char_reaches_the_target_validation_loss():
    """The stored loss is the one the corpus's validation split gives today, and it is <= 1.6."""
    bundle = load_bundle(MODELS / "shakespeare-char")
    assert bundle.tokenizer.kind == "char" and bundle.meta["corpus"] == "shakespeare"
    vals = [r["val_loss"] for r in bundle.history if "val_loss" in r]
    assert vals[-1] == bundle.meta["val_loss"]
    data = TokenData.from_text(load_corpus("shakespeare"), bundle.tokenizer)
    train_cfg = bundle.train_config
    remeasured = evaluate(bundle.model, data, train_cfg["batch_size"], train_cfg["eval_batches"])
    assert remeasured == pytest.approx(bundle.meta["val_loss"], abs=1e-3)
    assert remeasured <= 1.6


def test_the_instruction_tuned_bundle_is_its_base_grown_by_the_template_and_its_text_rebuilds():
    tuned = load_bundle(MODELS / "shakespeare-instruct")
    base = load_bundle(MODELS / tuned.meta["base"])
    assert tuned.meta["base"] == "shakespeare-char"
    assert tuned.tokenizer.special_tokens == list(SPECIAL_TOKENS)
    assert tuned.config.vocab_size == base.config.vocab_size + len(SPECIAL_TOKENS)
    assert tuned.tokenizer.encode("To be, or not") == base.tokenizer.encode("To be, or not")
    text = load_text(tuned.meta["data"])
    assert text == instruct_text(
        tuned.meta["data"]["task_examples"], tuned.meta["data"]["task_seed"]
    )
    special = set(tuned.tokenizer.special_ids) - {tuned.tokenizer.unk_id}
    for prompt in tuned.meta["example_prompts"]:
        ids = tuned.tokenizer.encode(prompt)
        assert sum(i in special for i in ids) == 3 and tuned.tokenizer.unk_id not in ids


def test_shakespeare_bpe_uses_a_bpe_vocabulary():
    bundle = load_bundle(MODELS / "shakespeare-bpe")
    assert bundle.tokenizer.kind == "bpe" and 256 < bundle.config.vocab_size <= 4096


@torch.no_grad()
def test_induction_model_copies_the_second_half():
    bundle = load_bundle(MODELS / "induction-2l")
    assert bundle.config.attn_only and bundle.config.n_layer == 2
    rng, h = random.Random(777), 12
    texts = ["\n" + 2 * "".join(rng.choices(string.ascii_lowercase, k=h)) for _ in range(50)]
    ids = torch.tensor([bundle.tokenizer.encode(t) for t in texts])  # "\n", 1..h, h+1..2h
    logits = bundle.model(ids)
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    assert losses[:, h + 1 : 2 * h].mean() < 0.5  # copying from the first half: near zero
    assert losses[:, 1:h].mean() > 2.5  # the random first half stays unpredictable


@pytest.mark.parametrize("key", sorted(CONTRASTS))
def test_each_contrast_pairs_two_bundles_that_differ_in_its_one_field(key):
    contrast = CONTRASTS[key]
    usual, changed = (load_bundle(MODELS / name).config.to_dict() for name in contrast.models)
    assert {f for f in usual if usual[f] != changed[f]} == {contrast.differs, *contrast.with_it}


def test_the_unmasked_model_cheats_in_training_and_fails_when_generating():
    """Its recorded losses are near zero, but with the future gone it does worse than its masked
    twin (same shape, data and seed) on every example prompt."""
    nomask, masked = (load_bundle(MODELS / n) for n in CONTRASTS["mask"].models[::-1])
    assert not nomask.config.causal and masked.config.causal
    assert nomask.meta["val_loss"] < 0.2 < 1.5 < masked.meta["val_loss"]
    for text in nomask.meta["example_prompts"]:
        ids = nomask.tokenizer.encode(text)[: nomask.config.n_ctx]
        cheat, fair = look_ahead(nomask.model, ids), look_ahead(masked.model, ids)
        # the masked twin's two readings are one loss up to float32 rounding: 1 to 3 steps
        # apart by the CPU's kernels, where pytest.approx's default allows about 8
        assert cheat.mean_seen < 0.2
        assert fair.mean_seen == pytest.approx(fair.mean_generated, rel=64 * EPS32)
        assert cheat.mean_generated > fair.mean_generated + 2.0


def test_one_attention_layer_does_not_copy_and_two_do():
    two, one = (load_bundle(MODELS / n) for n in CONTRASTS["layers"].models)
    assert one.config.n_layer == 1 and one.config.attn_only
    probe = dyn.probe(two.tokenizer, two.meta, two.config.n_ctx)
    m2, m1 = (copy_profile(b.model, probe).measures for b in (two, one))
    assert m2.copy_accuracy > 0.8 > 0.4 > m1.copy_accuracy
    assert m1.loss_second > m2.loss_second + 1.0


def test_the_unmasked_model_generates_from_the_whole_window_each_step():
    """Without a mask every earlier position reads each new token, so a KV cache would be stale:
    each step's probability is the one a full forward pass over the sequence so far gives."""
    b = load_bundle(MODELS / CONTRASTS["mask"].models[1])
    prompt = b.tokenizer.encode("ROMEO:\nBut soft")
    steps = list(generate_steps(b.model, prompt, 6, SamplingSettings(), seed=3, use_kv_cache=True))
    seq = prompt + [s.token for s in steps]
    for i, step in enumerate(steps):
        with torch.no_grad():
            logits = b.model(torch.tensor(seq[: len(prompt) + i]))[-1]
        assert step.prob == pytest.approx(torch.softmax(logits, -1)[step.token].item(), abs=1e-4)


def test_the_llama_style_block_holds_as_many_parameters_as_gpt2s():
    # the Architecture contrasts page says "within 0.1%"
    gpt2, llama = (load_bundle(MODELS / n).model.n_params() for n in CONTRASTS["llama"].models)
    assert abs(llama - gpt2) / gpt2 < 0.001


@pytest.mark.parametrize("name", list(FAMILY_BUNDLES))
def test_the_families_train_by_shakespeare_tinys_command_and_beat_it(name):
    """Same data, tokenizer and budget as shakespeare-tiny, about its parameter count; the
    validation loss recorded is the one evaluate() measures on the bundle's own split, and below
    the GPT's (one seed each: this pair's numbers, not a general ranking)."""
    bundle, tiny = load_bundle(MODELS / name), load_bundle(MODELS / "shakespeare-tiny")
    family = FAMILY_BUNDLES[name]
    assert bundle.family == family and tiny.family == "gpt"
    tiny_command = tiny.meta["command"].replace("shakespeare-tiny", name)
    assert bundle.meta["command"] == tiny_command.replace(
        "training --corpus", f"training --family {family} --corpus"
    )
    assert abs(bundle.model.n_params() - tiny.model.n_params()) / tiny.model.n_params() < 0.12
    data = TokenData.from_text(load_text(bundle.meta["data"]), bundle.tokenizer)
    measured = evaluate(bundle.model, data, 16, 20)
    assert measured == pytest.approx(bundle.meta["val_loss"], abs=1e-4)
    assert bundle.meta["val_loss"] < tiny.meta["val_loss"]


def test_the_bundled_lstm_inspected_by_hand_equals_its_fused_cells():
    from viz_model.model.recurrent_cells import inspect

    bundle = load_bundle(MODELS / "shakespeare-lstm")
    ids = torch.tensor(bundle.tokenizer.encode("ROMEO:\nBut soft, what light"))
    found = inspect(bundle.model, ids)
    torch.testing.assert_close(found.logits, bundle.model(ids), atol=1e-4, rtol=1e-4)
    forget = found.layers[0].gates["forget"]
    assert forget.shape == (len(ids), bundle.config.d_model)


def test_the_bundled_cnn_reads_exactly_its_receptive_field():
    from viz_model.analysis.reach import reach_profile

    bundle = load_bundle(MODELS / "shakespeare-cnn")
    field = bundle.config.receptive_field
    assert field == 127
    windows = torch.randint(1, bundle.config.vocab_size, (4, 161))
    profile = reach_profile(bundle.model, windows)
    assert (profile[:field] > 0).all() and (profile[field:] == 0).all()
