"""The training loop: loss falls, schedule, stop flag, NaN stop, resume, and the command line."""

from __future__ import annotations

import dataclasses
import math
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import VOCAB, tiny_model
from viz_model.analysis import training as tr
from viz_model.bundles.checkpoint import list_snapshots
from viz_model.bundles.load import load_bundle
from viz_model.model.config import (
    PRESET_TRAINING,
    PRESETS,
    STEPS_WHEN_TIMED,
    GPTConfig,
    TrainConfig,
)
from viz_model.model.gpt import GPT
from viz_model.model.hooks import custom
from viz_model.text import data as data_module
from viz_model.text.data import TokenData, load_corpus
from viz_model.text.tokenization import Tokenizer
from viz_model.training import loop as loop_module
from viz_model.training.cli import build_parser, main
from viz_model.training.loop import (
    RunControls,
    RunStart,
    lr_at,
    perplexity,
    resume_state,
    snapshot_steps,
    train,
)
from viz_model.training.optim import ADAM_EPS, make_optimizer

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus():
    text = load_corpus("shakespeare")[:30_000]
    tok = Tokenizer.train(text, "char")
    return tok, TokenData.from_text(text, tok)


def small_model(vocab_size: int, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab_size=vocab_size, n_ctx=32, d_model=32, n_layer=2, n_head=4))


def quick_cfg(**overrides) -> TrainConfig:
    base = dict(
        max_steps=40,
        batch_size=16,
        lr=3e-3,
        min_lr=3e-4,
        warmup_steps=5,
        eval_every=10,
        eval_batches=2,
        sample_every=20,
        sample_tokens=10,
        n_snapshots=3,
    )
    return TrainConfig(**{**base, **overrides})


def test_loss_falls_in_a_few_dozen_steps(corpus, tmp_path):
    tok, data = corpus
    records = list(train(small_model(tok.vocab_size), data, quick_cfg(), tmp_path / "b", tok))
    assert [r.step for r in records] == list(range(0, 41))  # step 0: the untrained sample
    records = records[1:]
    first = sum(r.train_loss for r in records[:5]) / 5
    last = sum(r.train_loss for r in records[-5:]) / 5
    assert last < first - 0.5, (first, last)
    vals = [r.val_loss for r in records if r.val_loss is not None]
    assert len(vals) == 4 and vals[-1] < vals[0]
    assert all(
        r.val_ppl == pytest.approx(math.exp(r.val_loss), rel=1e-3) for r in records if r.val_loss
    )
    assert [r.step for r in records if r.sample is not None] == [20, 40]
    assert all(isinstance(r.sample, str) and r.sample for r in records if r.sample is not None)
    assert all(r.tokens_per_s > 0 for r in records) and records[-1].elapsed > 0
    assert all(a.elapsed <= b.elapsed for a, b in zip(records, records[1:], strict=False))
    bundle = load_bundle(tmp_path / "b")
    assert [h["step"] for h in bundle.history] == list(range(0, 41))
    assert bundle.meta["step"] == 40 and bundle.meta["val_loss"] == vals[-1]
    assert bundle.snapshot_steps() == snapshot_steps(40, 3) == [0, 3, 12, 40]
    assert bundle.train_config["max_steps"] == 40


def test_a_new_run_that_samples_keeps_a_sample_of_its_untrained_weights_at_step_0(corpus, tmp_path):
    tok, data = corpus
    untrained = small_model(tok.vocab_size)
    before = loop_module.sample_text(untrained, tok, 10)
    records = list(train(small_model(tok.vocab_size), data, quick_cfg(), tmp_path, tok))
    first = records[0]
    assert (first.step, first.train_loss, first.sample) == (0, None, before)  # nothing trained
    assert first.grad_norm is None and first.val_loss is None and records[1].step == 1
    assert first.elapsed <= records[1].elapsed
    history = load_bundle(tmp_path).history
    assert history[0] == first.to_dict()
    assert [s for s, _ in tr.samples(history)] == [0, 20, 40]  # where the page's slider reads


def test_a_run_that_samples_nothing_or_resumes_keeps_no_step_0_record(corpus, tmp_path):
    tok, data = corpus
    quiet = list(train(small_model(tok.vocab_size), data, quick_cfg(sample_tokens=0), None, tok))
    assert [r.step for r in quiet] == list(range(1, 41))
    out = tmp_path / "b"
    for _ in train(small_model(tok.vocab_size), data, quick_cfg(max_steps=10), out, tok):
        pass
    bundle, start, history = resume_state(out)
    more = list(train(bundle.model, data, quick_cfg(), out, tok, start=RunStart(start, history)))
    assert more[0].step == 11


def test_a_validation_loss_too_large_for_its_perplexity_is_recorded_not_a_crash():
    assert perplexity(math.log(6.4)) == pytest.approx(6.4)
    assert perplexity(800.0) is None  # e^800 overflows a float: a run blowing up at lr 0.1


def test_lr_schedule_warms_up_then_follows_a_cosine_to_min_lr():
    cfg = TrainConfig(max_steps=1100, lr=1e-3, min_lr=1e-4, warmup_steps=100)
    assert lr_at(1, cfg) == pytest.approx(1e-5)
    assert lr_at(50, cfg) == pytest.approx(5e-4)
    assert lr_at(100, cfg) == pytest.approx(1e-3)
    assert lr_at(600, cfg) == pytest.approx(5.5e-4)  # half way down the cosine
    assert lr_at(350, cfg) == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi / 4)) * 9e-4)
    assert lr_at(1100, cfg) == pytest.approx(1e-4)
    lrs = [lr_at(s, cfg) for s in range(100, 1101)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))  # never rises after warm-up
    assert lr_at(1, TrainConfig(max_steps=10, warmup_steps=0, lr=2e-3)) < 2e-3 + 1e-12


def test_records_carry_the_scheduled_lr(corpus):
    tok, data = corpus
    cfg = quick_cfg(max_steps=12, eval_every=0, sample_tokens=0)
    records = list(train(small_model(tok.vocab_size), data, cfg, None, tok))
    assert [r.lr for r in records] == pytest.approx([lr_at(s, cfg) for s in range(1, 13)], rel=1e-5)


def test_the_peak_lr_can_change_while_it_runs_and_the_bundle_keeps_it(corpus, tmp_path):
    tok, data = corpus
    cfg = quick_cfg(max_steps=6, warmup_steps=0, lr=2e-3, min_lr=1e-3, sample_tokens=0)
    asked: list[int] = []

    def peak_lr():  # asked before each step; from step 4 on, a lower peak
        asked.append(len(asked) + 1)
        return 5e-4 if len(asked) >= 4 else None

    controls = RunControls(peak_lr=peak_lr)
    records = list(train(small_model(tok.vocab_size), data, cfg, tmp_path, tok, controls=controls))
    assert asked == [1, 2, 3, 4, 5, 6]
    assert [r.lr for r in records[:3]] == [float(f"{lr_at(s, cfg):.6g}") for s in (1, 2, 3)]
    assert [r.lr for r in records[3:]] == [5e-4] * 3  # min_lr followed it down: flat
    assert load_bundle(tmp_path).train_config["lr"] == 5e-4


def test_stop_flag_ends_at_the_next_step_with_a_loadable_bundle(corpus, tmp_path):
    tok, data = corpus
    stop = threading.Event()
    records = []
    for rec in train(
        small_model(tok.vocab_size),
        data,
        quick_cfg(max_steps=500),
        tmp_path,
        tok,
        controls=RunControls(stop=stop),
    ):
        records.append(rec)
        if rec.step == 5:
            stop.set()
    assert records[-1].step == 6
    assert records[-1].stopped == "stopped on request after step 6"
    assert records[-1].val_loss is not None  # a final evaluation
    bundle = load_bundle(tmp_path)
    assert bundle.meta["step"] == 6 and "stopped" in bundle.meta
    assert [h["step"] for h in bundle.history] == list(range(0, 7))
    assert bundle.model(torch.tensor([1, 2, 3])).isfinite().all()


def test_controls_that_change_nothing_leave_the_run_bit_for_bit_the_same(corpus, tmp_path):
    """A job's controls steer between steps and draw no random numbers (dropout here would show
    one): with a stop never set, no new peak and no notes, the records, the weights and the saved
    bundle are those of no controls."""
    tok, data = corpus
    cfg = quick_cfg(max_steps=25, health_every=5)
    saves: list[int] = []
    idle = RunControls(
        stop=threading.Event(), peak_lr=lambda: None, notes=lambda: None, on_save=saves.append
    )
    runs = {}
    for name, controls in (("plain", RunControls()), ("idle", idle)):
        torch.manual_seed(0)
        shape = GPTConfig(vocab_size=tok.vocab_size, n_ctx=32, d_model=32, n_layer=2, n_head=4)
        model = GPT(dataclasses.replace(shape, dropout=0.1))
        records = list(train(model, data, cfg, tmp_path / name, tok, controls=controls))
        runs[name] = (records, model.state_dict())
    timeless = [
        [{k: v for k, v in r.to_dict().items() if k not in ("elapsed", "tokens_per_s")} for r in rs]
        for rs, _ in runs.values()
    ]
    assert timeless[0] == timeless[1] and len(timeless[0]) == 26  # step 0's sample, then 25 steps
    for name, weights in runs["plain"][1].items():
        assert torch.equal(weights, runs["idle"][1][name]), name
    for file in ("model.safetensors", "snapshots/step_000025.safetensors"):
        assert (tmp_path / "plain" / file).read_bytes() == (tmp_path / "idle" / file).read_bytes()
    assert saves == [10, 20, 25]  # on_save after each save of the bundle: evaluations, the end


def test_a_note_and_a_new_peak_become_the_event_of_the_step_they_precede(corpus, tmp_path):
    tok, data = corpus
    cfg = quick_cfg(max_steps=5, warmup_steps=0, lr=2e-3, min_lr=1e-3, sample_tokens=0)
    asked = iter([None, None, 5e-4, 5e-4, 5e-4])
    notes = iter([None, "paused 3 s", "resumed", None, None])
    controls = RunControls(peak_lr=lambda: next(asked), notes=lambda: next(notes))
    records = list(train(small_model(tok.vocab_size), data, cfg, None, tok, controls=controls))
    assert [r.event for r in records] == [
        None,
        "paused 3 s",
        "resumed; peak lr 0.002 → 0.0005",
        None,
        None,
    ]


def test_nan_loss_stops_and_keeps_the_last_good_weights(corpus, tmp_path):
    tok, data = corpus
    model = small_model(tok.vocab_size)
    calls = {"n": 0}

    def poison(x, hook):  # every forward pass from the 20th on gives NaN logits
        calls["n"] += 1
        return torch.full_like(x, float("nan")) if calls["n"] >= 20 else None

    cfg = quick_cfg(eval_every=0, sample_tokens=0)  # no extra forward passes before the end
    with model.intervene(custom("unembed.hook_out", poison)):
        records = list(train(model, data, cfg, tmp_path, tok))
    last = records[-1]
    assert last.step == 20 and last.train_loss is None
    assert (
        last.stopped
        == "loss became NaN at step 20; kept the weights of step 19 (last snapshot: step 12)"
    )
    bundle = load_bundle(tmp_path)  # loads: only finite weights were saved
    assert bundle.meta["step"] == 19 and "NaN" in bundle.meta["stopped"]
    assert bundle.snapshot_steps() == [0, 3, 12]
    assert [h["step"] for h in bundle.history] == list(range(1, 21))
    for name, p in bundle.model.state_dict().items():
        assert torch.equal(p, model.state_dict()[name]), name


def test_weights_that_went_bad_are_replaced_by_the_last_good_ones(corpus, tmp_path):
    tok, data = corpus
    model = small_model(tok.vocab_size)
    calls = {"n": 0}

    def break_a_weight(x, hook):  # during step 17 a weight turns NaN, and so does the gradient
        calls["n"] += 1
        if calls["n"] == 17:
            model.blocks[0].attn.qkv.weight.data.fill_(float("nan"))

    cfg = quick_cfg(eval_every=0, sample_tokens=0)
    with model.intervene(custom("unembed.hook_out", break_a_weight)):
        records = list(train(model, data, cfg, tmp_path, tok))
    assert records[-1].stopped == (
        "the gradient became NaN or infinite at step 17; kept the weights of step 12 (last snapshot: step 12)"
    )
    bundle = load_bundle(tmp_path)
    assert bundle.meta["step"] == 12
    assert [h["step"] for h in bundle.history] == [*range(1, 13), 17]
    snap = bundle.load_snapshot(12)
    for name, p in bundle.model.state_dict().items():
        assert torch.allclose(p, snap.state_dict()[name].float(), atol=1e-2), name
        assert torch.isfinite(p).all()


def test_resume_continues_the_step_count_and_the_curve(corpus, tmp_path):
    tok, data = corpus
    out = tmp_path / "b"
    first = list(train(small_model(tok.vocab_size), data, quick_cfg(max_steps=20), out, tok))
    bundle, start, history = resume_state(out)
    assert start == 20 and len(history) == 21  # steps 0 (the untrained sample) to 20
    cfg = quick_cfg(max_steps=40)
    start = RunStart(start, history, bundle.meta)
    more = list(train(bundle.model, data, cfg, out, tok, start=start))
    assert [r.step for r in more] == list(range(21, 41))
    assert more[0].elapsed >= first[-1].elapsed
    assert more[0].lr == pytest.approx(lr_at(21, cfg), rel=1e-5)
    # the loss carries on from where it was, not from an untrained model's
    assert more[0].train_loss < first[1].train_loss - 0.3
    final = load_bundle(out)
    assert [h["step"] for h in final.history] == list(range(0, 41))  # no second step 0
    assert final.history[:21] == [r.to_dict() for r in first]
    assert final.meta["step"] == 40
    assert final.meta["tokens_seen"] == 40 * 16 * 32


def test_every_cli_option_is_explained():
    parser = build_parser()
    for action in parser._actions:
        assert action.help, f"{action.option_strings} has no help"
    out = subprocess.run(
        [sys.executable, "-m", "viz_model.training", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0
    for flag in ("--corpus", "--task", "--text-file", "--vocab-size", "--resume", "--threads"):
        assert flag in out.stdout


def test_a_tiny_cli_run_writes_a_bundle_with_its_command(tmp_path):
    out = tmp_path / "cli"
    args = ["--task", "repeat", "--task-examples", "300", "--preset", "tiny", "--n-ctx", "32"]
    args += ["--d-model", "32", "--steps", "6", "--eval-every", "3", "--eval-batches", "2"]
    args += ["--sample-tokens", "8", "--threads", "1", "--quiet", "--out", str(out)]
    run = subprocess.run(
        [sys.executable, "-m", "viz_model.training", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "done: step 6" in run.stdout
    bundle = load_bundle(out)
    assert bundle.meta["command"].startswith("python -m viz_model.training --task repeat")
    assert "--steps 6" in bundle.meta["command"]
    assert bundle.meta["corpus"] == "repeat" and bundle.meta["tokenizer"] == "char"
    assert bundle.meta["val_loss"] is not None and bundle.meta["wall_time"] > 0
    examples = bundle.meta["example_prompts"]  # from the task's own text: letters written twice
    assert len(examples) == 3 and all(e[: len(e) // 2] * 2 == e for e in examples)
    assert bundle.config.d_model == 32 and bundle.config.n_ctx == 32
    assert [r["step"] for r in bundle.history] == list(range(0, 7))  # 0: a sample only


def test_cli_resume_and_text_file(tmp_path, capsys):
    text_file = tmp_path / "mine.txt"
    text_file.write_text(load_corpus("shakespeare")[:5000], encoding="utf-8")
    out = tmp_path / "mine"
    args = ["--text-file", str(text_file), "--preset", "tiny", "--n-ctx", "16", "--steps", "4"]
    args += ["--eval-batches", "1", "--sample-tokens", "0", "--quiet", "--out", str(out)]
    assert main(args) == 0
    assert main(["--resume", str(out), "--steps", "7", "--quiet"]) == 0
    bundle = load_bundle(out)
    assert [h["step"] for h in bundle.history] == list(range(1, 8))
    assert "--resume" in bundle.meta["command"]
    with pytest.raises(SystemExit, match="already trained 7 steps"):
        main(["--resume", str(out), "--steps", "7", "--quiet"])


def test_a_preset_brings_its_training_settings_and_flags_win(tmp_path):
    text_file = tmp_path / "mine.txt"
    text_file.write_text(load_corpus("shakespeare")[:5000], encoding="utf-8")
    common = ["--text-file", str(text_file), "--n-ctx", "16", "--d-model", "32", "--steps", "2"]
    common += ["--eval-batches", "1", "--sample-tokens", "0", "--quiet"]
    assert main([*common, "--preset", "quick", "--out", str(tmp_path / "q")]) == 0
    quick = load_bundle(tmp_path / "q")
    assert quick.config.n_layer == PRESETS["quick"]["n_layer"]
    for field, value in PRESET_TRAINING["quick"].items():
        assert quick.train_config[field] == value
    assert quick.train_config["lr"] != TrainConfig().lr  # the preset's own rate, not the default
    own = ["--preset", "quick", "--lr", "5e-4", "--batch-size", "4", "--out", str(tmp_path / "o")]
    assert main([*common, *own]) == 0
    overridden = load_bundle(tmp_path / "o").train_config
    assert overridden["lr"] == 5e-4 and overridden["batch_size"] == 4
    assert overridden["warmup_steps"] == PRESET_TRAINING["quick"]["warmup_steps"]
    assert main([*common, "--preset", "tiny", "--out", str(tmp_path / "t")]) == 0
    assert load_bundle(tmp_path / "t").train_config["lr"] == TrainConfig().lr


class SteadyClock:
    """A perf_counter that moves `tick` seconds at every reading: a run on the clock then takes
    the same steps on any machine, busy or idle (the real clock gives a loaded machine one step)."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now


def test_cli_minutes_without_steps_lets_the_clock_end_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(loop_module, "time", SteadyClock(0.05))
    text_file = tmp_path / "mine.txt"
    text_file.write_text(load_corpus("shakespeare")[:5000], encoding="utf-8")
    args = ["--text-file", str(text_file), "--preset", "tiny", "--n-ctx", "16", "--d-model", "32"]
    args += ["--minutes", "0.05", "--eval-batches", "1", "--sample-tokens", "0", "--quiet"]
    args += ["--warmup", "0"]  # so the last step's learning rate shows the cosine, not a warm-up
    assert main([*args, "--out", str(tmp_path / "timed")]) == 0
    bundle = load_bundle(tmp_path / "timed")
    assert bundle.train_config["max_steps"] == STEPS_WHEN_TIMED
    elapsed = [r["elapsed"] for r in bundle.history]
    # it stopped at the first step that ended past the limit of 3 s (records round to 0.01 s)...
    assert bundle.meta["wall_time"] >= 0.05 * 60 and elapsed[-1] >= 3.0
    assert all(e <= 3.0 for e in elapsed[:-1])
    assert 1 < bundle.meta["step"] < STEPS_WHEN_TIMED  # ...not on steps
    cfg = TrainConfig.from_dict(bundle.train_config)
    # the cosine ran on time: far below where the steps alone would have put it
    assert bundle.history[-1]["lr"] < 0.2 * cfg.lr < lr_at(bundle.meta["step"], cfg)


def test_resume_keeps_the_bundles_split_and_refuses_a_new_data_source(tmp_path):
    text_file = tmp_path / "mine.txt"
    text_file.write_text(load_corpus("shakespeare")[:30_000], encoding="utf-8")
    out = tmp_path / "mine"
    args = ["--text-file", str(text_file), "--val-fraction", "0.3", "--preset", "tiny"]
    args += ["--n-ctx", "16", "--steps", "3", "--eval-batches", "1", "--sample-tokens", "0"]
    assert main([*args, "--quiet", "--out", str(out)]) == 0
    assert load_bundle(out).meta["data"]["val_fraction"] == 0.3
    for flag in (["--val-fraction", "0.1"], ["--tokenizer", "bpe"], ["--preset", "small"]):
        with pytest.raises(SystemExit, match=f"cannot change when resuming.*{flag[0]}"):
            main(["--resume", str(out), "--steps", "5", *flag])
    assert main(["--resume", str(out), "--steps", "5", "--quiet"]) == 0
    assert load_bundle(out).meta["data"]["val_fraction"] == 0.3


@pytest.mark.parametrize(
    "args, message",
    [
        (["--text-file", "no/such/file.txt"], "error: .*No such file"),
        (["--text-file", "{short}"], "error: .*at least 2,000"),
        (["--corpus", "tolstoy"], "error: .*tolstoy"),
        (["--corpus", "shakespeare", "--n-head", "3"], "error: d_model .* divisible by n_head"),
        (["--corpus", "shakespeare", "--val-fraction", "1.5"], "error: .*validation fraction"),
    ],
)
def test_cli_bad_input_ends_with_one_plain_message(tmp_path, args, message):
    short = tmp_path / "short.txt"
    short.write_text("To be, or not to be.", encoding="utf-8")
    args = [a.replace("{short}", str(short)) for a in args]
    with pytest.raises(SystemExit, match=message) as exc:
        main([*args, "--preset", "tiny", "--steps", "1", "--out", str(tmp_path / "x")])
    assert exc.value.__cause__ is None and exc.value.__suppress_context__  # no traceback chain
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_first_ctrl_c_stops_after_the_step_and_saves_a_bundle(tmp_path):
    """Ctrl-C before the first evaluation still leaves a model: the first press is the stop flag."""
    out = tmp_path / "interrupted"
    args = ["--task", "repeat", "--task-examples", "300", "--preset", "tiny", "--n-ctx", "32"]
    args += ["--steps", "1000000", "--eval-every", "0", "--sample-tokens", "0", "--threads", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "viz_model.training", *args, "--quiet", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        # the untrained snapshot is written just before the first step: the loop is running
        while not (out / "snapshots" / "step_000000.safetensors").exists():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert not (out / "model.safetensors").exists()  # no evaluation has saved it yet
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "stopping after this step" in stderr and "stopped on request" in stdout
    bundle = load_bundle(out)
    assert bundle.meta["stopped"].startswith("stopped on request after step")
    assert bundle.meta["step"] == bundle.history[-1]["step"] < 1_000_000
    assert bundle.meta["val_loss"] is not None  # the last step was evaluated


def test_cli_refuses_no_source(tmp_path):
    with pytest.raises(SystemExit):
        main(["--preset", "tiny", "--out", str(tmp_path / "x")])


def test_snapshot_steps_are_log_spaced():
    assert snapshot_steps(4000, 3) == [0, 16, 252, 4000]
    assert snapshot_steps(10, 0) == []
    steps = snapshot_steps(3000, 10)
    ratios = [b / a for a, b in zip(steps[2:], steps[3:], strict=False)]
    assert all(1.8 < r < 2.5 for r in ratios)
    assert list_snapshots(Path("/nonexistent")) == []


def test_a_time_limit_ends_the_run_and_decays_the_lr_on_time(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(loop_module, "time", SteadyClock(0.05))
    tok, data = corpus
    cfg = quick_cfg(
        max_steps=100_000, time_limit=2.0, warmup_steps=0, eval_every=0, sample_tokens=0
    )
    records = list(train(small_model(tok.vocab_size), data, cfg, tmp_path, tok))
    assert 1 < len(records) < 100_000
    # elapsed is rounded to 0.01 s in the records, so the step before the limit may read 2.0
    assert records[-1].elapsed >= 2.0 and records[-2].elapsed <= 2.0
    assert records[-1].val_loss is not None and records[-1].stopped is None
    lrs = [r.lr for r in records]
    # on steps alone the cosine would barely have started; on time it is well down
    assert lrs[-1] < 0.95 * cfg.lr and lr_at(records[-1].step, cfg) > 0.999 * cfg.lr
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))
    assert load_bundle(tmp_path).snapshot_steps()[-1] == records[-1].step  # last weights kept


def test_nan_validation_loss_stops_too(corpus, tmp_path):
    tok, data = corpus
    model = small_model(tok.vocab_size)

    def poison_eval(x, hook):  # NaN logits whenever the model is evaluated, never in training
        return None if model.training else torch.full_like(x, float("nan"))

    cfg = quick_cfg(eval_every=10, sample_tokens=0)
    with model.intervene(custom("unembed.hook_out", poison_eval)):
        records = list(train(model, data, cfg, tmp_path, tok))
    assert records[-1].stopped == (
        "validation loss became NaN at step 10; kept the weights of step 10 (last snapshot: step 3)"
    )
    assert load_bundle(tmp_path).meta["step"] == 10


def test_time_the_consumer_spends_is_not_training_time(corpus):
    tok, data = corpus
    cfg = quick_cfg(max_steps=4, eval_every=0, sample_tokens=0)
    records = []
    start = time.perf_counter()
    for rec in train(small_model(tok.vocab_size), data, cfg, None, tok):
        records.append(rec)
        time.sleep(0.5)  # e.g. a page drawing its charts
    wall = time.perf_counter() - start
    assert len(records) == 4
    # three sleeps happened between records (the last one after the loop had finished)
    assert wall - records[-1].elapsed >= 1.5 - 0.05


def test_a_peak_lowered_then_raised_again_gets_its_min_lr_back(corpus, tmp_path):
    tok, data = corpus
    cfg = quick_cfg(max_steps=6, warmup_steps=0, lr=2e-3, min_lr=1e-3, sample_tokens=0)
    peaks = [None, 5e-4, 5e-4, 4e-3, 4e-3, 4e-3]  # the teacher lowers the rate, then raises it
    asked = iter(peaks)
    controls = RunControls(peak_lr=lambda: next(asked))
    records = list(train(small_model(tok.vocab_size), data, cfg, tmp_path, tok, controls=controls))
    assert [r.lr for r in records[1:3]] == [5e-4, 5e-4]  # min_lr followed it down
    # Raised again, the cosine runs from 4e-3 down to the run's own min_lr 1e-3, not to 5e-4.
    assert all(r.lr >= 1e-3 for r in records[3:])
    assert load_bundle(tmp_path).train_config["min_lr"] == 1e-3


def test_snapshot_at_keeps_the_asked_steps_besides_the_log_spaced_ones(tmp_path):
    text_file = tmp_path / "mine.txt"
    text_file.write_text(load_corpus("shakespeare")[:5000], encoding="utf-8")
    args = ["--text-file", str(text_file), "--preset", "tiny", "--n-ctx", "16", "--steps", "9"]
    args += ["--snapshots", "1", "--snapshot-at", "4,6", "--eval-batches", "1"]
    args += ["--sample-tokens", "0", "--quiet", "--out", str(tmp_path / "dense")]
    assert main(args) == 0
    bundle = load_bundle(tmp_path / "dense")
    assert bundle.snapshot_steps() == [0, 4, 6, 9]  # snapshot_steps(9, 1) is [0, 9]
    assert bundle.train_config["snapshot_at"] == [4, 6]
    assert "--snapshot-at 4,6" in bundle.meta["command"]
    assert TrainConfig.from_dict(bundle.train_config).snapshot_at == (4, 6)
    with pytest.raises(ValueError, match="snapshot step must be between 0 and 9"):
        TrainConfig(max_steps=9, snapshot_at=(4, 10))


def _decay_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """torch.optim's parameter groups as make_optimizer makes them: no decay on 1-D parameters."""
    params = list(model.parameters())
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def _same_steps(ours: GPT, opt, ref: GPT, torch_opt) -> None:
    """Six steps of both on the same batches: every weight equal after them, and every one moved."""
    gen = torch.Generator().manual_seed(0)
    for _ in range(6):
        x = torch.randint(VOCAB, (2, 16), generator=gen)
        for model, o in ((ours, opt), (ref, torch_opt)):
            loss = F.cross_entropy(model(x).flatten(0, 1), x.flatten())
            o.zero_grad(set_to_none=True)
            loss.backward()
            o.step()
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-7)
    start = tiny_model().parameters()
    assert all(not torch.equal(a, b) for a, b in zip(ours.parameters(), start, strict=True))


def test_the_loops_adamw_is_torchs_adamw_step_for_step():
    """optim.AdamW (the update the Training page shows) against torch.optim.AdamW, same groups."""
    ours, ref = tiny_model(dropout=0.0).train(), tiny_model(dropout=0.0).train()
    cfg = TrainConfig(lr=3e-3, weight_decay=0.1, beta1=0.8, beta2=0.95)
    torch_opt = torch.optim.AdamW(
        _decay_groups(ref, cfg.weight_decay),
        lr=cfg.lr,
        betas=(cfg.beta1, cfg.beta2),
        eps=ADAM_EPS,
    )
    _same_steps(ours, make_optimizer(ours, cfg), ref, torch_opt)


@pytest.mark.parametrize("text", ["a\r\nb\n", "héllo 😀 \x00 \u2028x~~", "abc\n\nabc"])
def test_a_char_tokenizers_quick_encoding_is_its_encode(text):
    tok = Tokenizer.train("abc\nhél ", "char")  # some characters of `text` are unknown
    assert data_module._char_ids(text * 3, tok).tolist() == tok.encode(text * 3)


@pytest.mark.parametrize("momentum", [0.9, 0.0])
def test_the_loops_sgd_is_torchs_sgd_step_for_step(momentum):
    """optim.SGD (with momentum, or plain) against torch.optim.SGD, same groups and weight decay."""
    ours, ref = tiny_model(dropout=0.0).train(), tiny_model(dropout=0.0).train()
    cfg = TrainConfig(optimizer="sgd", lr=0.05, momentum=momentum, weight_decay=0.1)
    opt = make_optimizer(ours, cfg)
    torch_opt = torch.optim.SGD(_decay_groups(ref, cfg.weight_decay), lr=cfg.lr, momentum=momentum)
    _same_steps(ours, opt, ref, torch_opt)
    assert bool(opt.state) == (momentum != 0)  # a momentum buffer only when there is momentum


def test_the_optimizer_setting_chooses_the_optimiser_and_is_checked():
    model = tiny_model()
    assert type(make_optimizer(model, TrainConfig())).__name__ == "AdamW"
    sgd = make_optimizer(model, TrainConfig(optimizer="sgd", momentum=0.5))
    assert type(sgd).__name__ == "SGD" and sgd.param_groups[0]["momentum"] == 0.5
    with pytest.raises(ValueError, match="optimizer must be one of adamw, sgd"):
        TrainConfig(optimizer="adam")
    with pytest.raises(ValueError, match="momentum must be in"):
        TrainConfig(optimizer="sgd", momentum=1.0)
    assert TrainConfig.from_dict({"lr": 2e-3}).optimizer == "adamw"  # an old bundle's config


def test_gradient_health_is_recorded_every_k_steps_and_matches_its_definition(corpus):
    """grad_norm every step is clipping's own (the norm before it); per-layer norms every k steps
    add up to it; update ratios are the relative change of each layer's weights."""
    tok, data = corpus
    model = small_model(tok.vocab_size)
    cfg = quick_cfg(max_steps=12, eval_every=0, sample_tokens=0, health_every=5, grad_clip=0.5)
    weights = []
    records = []
    for rec in train(model, data, cfg, None, tok):
        records.append(rec)
        weights.append({k: v.detach().clone() for k, v in model.named_parameters()})
    assert all(r.grad_norm is not None and r.grad_norm > 0 for r in records)
    health = [r.step for r in records if r.grad_layers is not None]
    assert health == [1, 5, 10]
    assert [r.step for r in records if r.update_layers is not None] == health
    layers = list(records[0].grad_layers)
    assert layers == ["embed", "blocks.0", "blocks.1", "unembed"]
    # both sides are recorded to 4 significant digits, each within 5e-4 of its value (a leading
    # 1): rounding alone can part them by 1e-3 (7.8e-4 at step 10 here), so allow twice that
    for r in records:
        if r.grad_layers is not None:  # the layers make up the whole gradient, before clipping
            total = math.sqrt(sum(v**2 for v in r.grad_layers.values()))
            assert total == pytest.approx(r.grad_norm, rel=2e-3)
    # update ratio of block 1 at step 10: from the weights after step 9 to those after step 10
    names = [n for n in weights[0] if n.startswith("blocks.1.")]
    before = torch.cat([weights[8][n].flatten() for n in names])
    after = torch.cat([weights[9][n].flatten() for n in names])
    expected = float((after - before).norm() / before.norm())
    assert records[9].update_layers["blocks.1"] == pytest.approx(expected, rel=1e-3)
    off = list(
        train(
            small_model(tok.vocab_size),
            data,
            quick_cfg(max_steps=3, health_every=0, eval_every=0, sample_tokens=0),
            None,
            tok,
        )
    )
    assert all(r.grad_layers is None and r.grad_norm is not None for r in off)


def test_a_tied_model_counts_its_shared_matrix_once_in_the_embeddings():
    from viz_model.training.health import HealthProbe, group_of

    probe = HealthProbe(tiny_model(tie_embeddings=True))
    shared = probe.groups["embed"][0]
    assert all(p is not shared for p in probe.groups["unembed"])
    assert group_of("blocks.12.mlp.fc_in.weight") == "blocks.12"
    assert list(probe.groups) == ["embed", "blocks.0", "blocks.1", "unembed"]


def test_an_sgd_run_trains_and_its_bundle_says_so(corpus, tmp_path):
    tok, data = corpus
    cfg = quick_cfg(optimizer="sgd", lr=0.3, min_lr=0.03, momentum=0.9, weight_decay=0.0)
    records = list(train(small_model(tok.vocab_size), data, cfg, tmp_path, tok))[1:]
    first = sum(r.train_loss for r in records[:5]) / 5
    last = sum(r.train_loss for r in records[-5:]) / 5
    assert last < first - 0.3, (first, last)
    saved = load_bundle(tmp_path)
    assert saved.train_config["optimizer"] == "sgd" and saved.train_config["momentum"] == 0.9
    assert "grad_norm" in saved.history[1] and "grad_layers" in saved.history[1]
