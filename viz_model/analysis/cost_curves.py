"""Why the transformer won, measured on this machine: the time of one training step, the time of a
forward pass and the memory that grows with the context length T, for a GPT and an LSTM of about
the same number of weights, built fresh with random weights (the Sequence models page's `cost`
section, benchmarks/bench_cost_curves.py).

- `cost_models(vocab_size, max_len)`: the two models, the `tiny` preset's shapes (the bundled
  shakespeare-tiny GPT and shakespeare-lstm): a GPT of 2 blocks of 64 with learned positions for
  max_len tokens, an LSTM of 2 layers of 80 (recurrent_config.preset_shape).
- `measure(...)`: for each T, the median seconds of one training step (forward + backward of the
  cross-entropy, B sequences of T tokens) and of one forward pass, after a warm-up; the GPT
  reads all T positions in the same matrix products, the LSTM steps through them one after
  another. Torch keeps the process's own threads.
- `attention_floats` / `state_floats`: what grows with T, counted from the shapes: the GPT's
  attention pattern, layers x B x H x T x T numbers (what a plain implementation keeps for
  backprop and what `run_with_cache` records; fused kernels compute it in tiles instead), and the
  LSTM's hidden and cell states of every step, layers x B x T x 2 d (one step needs only
  B x 2 d; backprop keeps them all). `recorded_pattern_bytes` reads the recorded pattern's
  actual bytes, to hold the count to the tensors.
- `step_claim(curves)`, `memory_claim(curves)`: the sentences the page prints under each figure,
  from those numbers only.
- `same_time_claim(a, b)`: two trained runs at equal wall-clock time, from their histories'
  `elapsed` (`timed_run`): each one's last validation loss by the shorter run's length.

Shapes: B batch, T tokens, H heads, d width. Timings are numbers, never asserted by a test.

Not here: the models (model/gpt.py, model/recurrent.py), the memory one more generated token
needs (analysis/sequence_models.py, memory_floats), the charts (ui/charts/sequence_models.py).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.model.config import preset
from viz_model.model.families import build_model
from viz_model.model.recurrent_config import recurrent_preset
from viz_model.text.data import ASSETS_DIR

LENGTHS = (64, 128, 256, 512, 1024)  # context lengths T measured
FLOAT_BYTES = 4  # float32
NOISE = 0.15  # two step times closer than 15% are "about equal": a shared CPU moves them that much
PARAMS_TOLERANCE = 0.1  # the two models' weights (the GPT's position table aside) within 10%
# One run of benchmarks/bench_cost_curves.py, its JSON as printed (benchmarks/README.md says when
# and on what machine); the page shows it beside the live measurement.
BENCHMARK_FILE = ASSETS_DIR / "cost_curves" / "bench-2core.json"


def cost_models(vocab_size: int, max_len: int, seed: int = 0) -> tuple[torch.nn.Module, ...]:
    """(GPT, LSTM) with random weights: the `tiny` preset's shapes, the GPT with learned
    positions for max_len tokens."""
    torch.manual_seed(seed)
    gpt = build_model(preset("tiny", vocab_size, n_ctx=max_len, pos="learned", dropout=0.0))
    lstm = build_model(recurrent_preset("lstm", "tiny", vocab_size))
    return gpt, lstm


def weights(model: torch.nn.Module) -> int:
    """Weights of a model, a GPT's learned position table left out (it grows with n_ctx, which
    here is only the longest T measured)."""
    total = sum(p.numel() for p in model.parameters())
    table = getattr(model, "pos_embed", None)  # a GPT's nn.Embedding(n_ctx, d) when learned
    return total - (table.weight.numel() if isinstance(table, torch.nn.Embedding) else 0)


def attention_floats(cfg, batch: int, T: int) -> int:
    """The GPT's attention patterns over B sequences of T tokens: layers x B x H x T x T."""
    return cfg.n_layer * batch * cfg.n_head * T * T


def state_floats(cfg, batch: int, T: int) -> int:
    """The LSTM's hidden and cell states of all T steps, as backprop keeps them: layers x B x T x 2d."""
    return cfg.n_layer * batch * T * 2 * cfg.d_model


def recorded_pattern_bytes(gpt: torch.nn.Module, batch: int, T: int, seed: int = 0) -> int:
    """Bytes of every layer's attention pattern as run_with_cache records it for B x T tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, gpt.cfg.vocab_size, (batch, T), generator=g)
    _, cache = gpt.run_with_cache(ids, names=lambda n: n.endswith("hook_pattern"))
    return sum(t.element_size() * t.numel() for t in cache.values())


def median_seconds(fn: Callable[[], object], repeats: int, warmup: int = 2) -> float:
    """Median wall-clock seconds (time.perf_counter) of fn over `repeats` calls, after `warmup`."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    out = model(ids)
    return out[0] if isinstance(out, tuple) else out  # a recurrent model also returns its state


def train_step(model: torch.nn.Module, ids: torch.Tensor) -> Callable[[], None]:
    """One forward and backward pass of the next-token loss on ids (B, T) (no optimiser step)."""
    inputs, targets = ids[:, :-1], ids[:, 1:]

    def step() -> None:
        model.zero_grad(set_to_none=True)
        logits = _logits(model, inputs)
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).backward()

    return step


def forward_pass(model: torch.nn.Module, ids: torch.Tensor) -> Callable[[], None]:
    """One forward pass over ids (B, T), without gradients."""

    def forward() -> None:
        with torch.no_grad():
            _logits(model, ids)

    return forward


@dataclass(frozen=True)
class CostCurves:
    """The measured and counted costs at each T; the models' names are "GPT" and "LSTM"."""

    lengths: tuple[int, ...]
    batch: int
    repeats: int
    threads: int
    weights: dict[str, int]  # the GPT's without its position table (`weights`)
    shapes: dict[str, dict[str, int]]  # "GPT": n_layer, d_model, n_head; "LSTM": n_layer, d_model
    step_s: dict[str, tuple[float, ...]]  # one training step, median seconds
    forward_s: dict[str, tuple[float, ...]]  # one forward pass, median seconds
    attention_bytes: tuple[int, ...]  # the GPT's patterns, counted
    state_bytes: tuple[int, ...]  # the LSTM's states kept for backprop, counted
    recorded_bytes: tuple[int | None, ...]  # the recorded patterns' bytes (None: not recorded)
    seconds: float  # how long the whole measurement took


def measure(
    vocab_size: int,
    lengths: Sequence[int] = LENGTHS,
    batch: int = 2,
    repeats: int = 5,
    record_up_to: int = 256,
    seed: int = 0,
) -> CostCurves:
    """Time both models at each T (B = batch sequences of T tokens, each the median of `repeats`
    after two warm-up calls, and three steps of each model before any) and count what grows with T; the pattern is also recorded, and its
    bytes read, for T up to record_up_to."""
    began = time.perf_counter()
    lengths = tuple(sorted(lengths))
    gpt, lstm = cost_models(vocab_size, lengths[-1], seed)  # T inputs at most
    models = {"GPT": gpt.train(), "LSTM": lstm.train()}
    g = torch.Generator().manual_seed(seed)
    first = torch.randint(0, vocab_size, (batch, lengths[0] + 1), generator=g)
    for model in models.values():  # the first calls of a process pay for allocation and set-up
        warm = train_step(model, first)
        for _ in range(3):
            warm()
    step_s: dict[str, list[float]] = {name: [] for name in models}
    forward_s: dict[str, list[float]] = {name: [] for name in models}
    for T in lengths:
        ids = torch.randint(0, vocab_size, (batch, T + 1), generator=g)  # T inputs, T targets
        for name, model in models.items():
            step_s[name].append(median_seconds(train_step(model, ids), repeats))
            forward_s[name].append(median_seconds(forward_pass(model, ids[:, :T]), repeats))
    recorded = tuple(
        recorded_pattern_bytes(gpt.eval(), batch, n, seed) if n <= record_up_to else None
        for n in lengths
    )
    return CostCurves(
        lengths=lengths,
        batch=batch,
        repeats=repeats,
        threads=torch.get_num_threads(),
        weights={name: weights(m) for name, m in models.items()},
        shapes={
            "GPT": {k: getattr(gpt.cfg, k) for k in ("n_layer", "d_model", "n_head")},
            "LSTM": {k: getattr(lstm.cfg, k) for k in ("n_layer", "d_model")},
        },
        step_s={k: tuple(v) for k, v in step_s.items()},
        forward_s={k: tuple(v) for k, v in forward_s.items()},
        attention_bytes=tuple(attention_floats(gpt.cfg, batch, T) * FLOAT_BYTES for T in lengths),
        state_bytes=tuple(state_floats(lstm.cfg, batch, T) * FLOAT_BYTES for T in lengths),
        recorded_bytes=recorded,
        seconds=time.perf_counter() - began,
    )


def from_benchmark(doc: dict) -> CostCurves:
    """The CostCurves of benchmarks/bench_cost_curves.py's printed JSON (milliseconds back to
    seconds); a ValueError naming what is missing or damaged."""
    try:
        return CostCurves(
            lengths=tuple(int(t) for t in doc["lengths"]),
            batch=int(doc["batch"]),
            repeats=int(doc["repeats"]),
            threads=int(doc["threads"]),
            weights={k: int(v) for k, v in doc["weights"].items()},
            shapes=doc["shapes"],
            step_s={k: tuple(v / 1e3 for v in vs) for k, vs in doc["step_ms"].items()},
            forward_s={k: tuple(v / 1e3 for v in vs) for k, vs in doc["forward_ms"].items()},
            attention_bytes=tuple(int(b) for b in doc["attention_bytes"]),
            state_bytes=tuple(int(b) for b in doc["state_bytes"]),
            recorded_bytes=tuple(doc["recorded_pattern_bytes"]),
            seconds=float(doc["seconds"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"the benchmark's results are damaged: {exc!r}") from exc


def load_benchmark(path=BENCHMARK_FILE) -> CostCurves | None:
    """The committed benchmark run's curves, or None when the file is not there."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return from_benchmark(json.loads(text))


# ---- the sentence ---------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    """Milliseconds as the page prints them: 3 significant figures, e.g. 0.001 -> "1.00"."""
    value = seconds * 1e3
    return f"{value:,.0f}" if value >= 100 else f"{value:#.3g}"


def mb(n_bytes: float) -> str:
    """Megabytes (10^6 bytes) as the page prints them, e.g. 2_097_152 -> "2.1"."""
    value = n_bytes / 1e6
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}"


def faster(gpt_s: float, lstm_s: float, noise: float = NOISE) -> str:
    """ "GPT", "LSTM", or "equal" when the two times are within `noise` of the slower one."""
    if abs(gpt_s - lstm_s) <= noise * max(gpt_s, lstm_s):
        return "equal"
    return "GPT" if gpt_s < lstm_s else "LSTM"


def _lengths(ts: Sequence[int]) -> str:
    names = [f"{t:,}" for t in ts]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def step_claim(c: CostCurves, noise: float = NOISE, where: str = "On this machine") -> Claim:
    """When the GPT's training step beats the LSTM's here, from the measured step times: the
    growth of each from the shortest to the longest T and the lengths at which each was faster
    (within `noise` of each other: about equal); where the GPT is not faster at the longest T,
    the known reason a GPU changes that, said as known, not measured. made: the GPT's step was
    the faster at the longest T."""
    t0, t1 = c.lengths[0], c.lengths[-1]
    gpt, lstm = c.step_s["GPT"], c.step_s["LSTM"]
    grow_gpt, grow_lstm = gpt[-1] / gpt[0], lstm[-1] / lstm[0]
    verdicts = [faster(g, r, noise) for g, r in zip(gpt, lstm, strict=True)]
    numbers = {
        "GPT step at first": gpt[0],
        "GPT step at last": gpt[-1],
        "LSTM step at first": lstm[0],
        "LSTM step at last": lstm[-1],
        "GPT growth": grow_gpt,
        "LSTM growth": grow_lstm,
        "noise": noise,
    }
    text = (
        f"One training step of {c.batch} sequences took {ms(gpt[0])} ms for the GPT and "
        f"{ms(lstm[0])} ms for the LSTM at T = {t0:,}, and {ms(gpt[-1])} and {ms(lstm[-1])} ms at "
        f"T = {t1:,}: ×{grow_gpt:.1f} for the GPT, ×{grow_lstm:.1f} for the LSTM, while T grew "
        f"×{t1 // t0}. "
    )
    by = {v: [t for t, w in zip(c.lengths, verdicts, strict=True) if w == v] for v in verdicts}
    if set(verdicts) == {"GPT"}:
        text += f"{where} the GPT's step was faster at every length measured."
    elif set(verdicts) == {"LSTM"}:
        text += f"{where} the LSTM's step was faster at every length measured."
    elif set(verdicts) == {"equal"}:
        text += f"{where} the two steps were within {noise:.0%} at every length measured."
    else:
        parts = []
        if "GPT" in by:
            parts.append(f"the GPT's step was faster at T = {_lengths(by['GPT'])}")
        if "LSTM" in by:
            label = "the LSTM's" if "GPT" in by else "the LSTM's step was faster"
            parts.append(f"{label} at T = {_lengths(by['LSTM'])}")
        if "equal" in by:
            parts.append(f"the two were within {noise:.0%} at T = {_lengths(by['equal'])}")
        text += f"{where} " + "; ".join(parts) + "."
    if verdicts[-1] != "GPT":
        text += (
            " A CPU has a few cores, so the GPT's parallel matrix products gain little over the "
            "LSTM's serial steps; a GPU's thousands of cores take all T positions at once while "
            "the LSTM still waits for each step, which is why the transformer trains faster "
            "there (known, not measured here)."
        )
    return Claim(text, verdicts[-1] == "GPT", numbers)


def memory_claim(c: CostCurves) -> Claim:
    """How the counted memory grows from the shortest to the longest T: the GPT's attention
    patterns with T squared, the LSTM's kept states with T."""
    att0, att1 = c.attention_bytes[0], c.attention_bytes[-1]
    st0, st1 = c.state_bytes[0], c.state_bytes[-1]
    numbers = {
        "attention at first": att0,
        "attention at last": att1,
        "state at first": st0,
        "state at last": st1,
    }
    text = (
        f"From T = {c.lengths[0]:,} to {c.lengths[-1]:,} the GPT's attention patterns grow from "
        f"{mb(att0)} to {mb(att1)} MB (×{att1 / att0:,.0f}: with T squared), the LSTM's states "
        f"kept for backprop from {mb(st0)} to {mb(st1)} MB (×{st1 / st0:,.0f}: with T)."
    )
    return Claim(text, att1 / att0 > st1 / st0, numbers)


# ---- at equal wall-clock time: the bundled runs' own clocks ---------------------------------------

LOSS_MARGIN = 0.02  # nats: validation losses closer than this are "about equal"


@dataclass(frozen=True)
class TimedRun:
    """A run's validation losses against its training clock: (seconds, step, validation loss)."""

    name: str
    kind: str  # "GPT", "LSTM", ...
    points: tuple[tuple[float, int, float], ...]


def timed_run(name: str, kind: str, history: Sequence[dict]) -> TimedRun:
    """The records of a history.json that have a step, an elapsed time and a validation loss."""
    points = tuple(
        (float(r["elapsed"]), int(r["step"]), float(r["val_loss"]))
        for r in history
        if isinstance(r, dict)
        and isinstance(r.get("elapsed"), int | float)
        and isinstance(r.get("step"), int)
        and isinstance(r.get("val_loss"), int | float)
    )
    return TimedRun(name, kind, points)


def same_time_claim(a: TimedRun, b: TimedRun, margin: float = LOSS_MARGIN) -> Claim:
    """Each run's last validation loss by the same training time: the shorter run's whole
    length (its last evaluation). Lower by more than `margin` nats wins; otherwise about equal."""
    if not a.points or not b.points:
        return Claim(
            "One of the runs recorded no validation loss with its training time, so they cannot "
            "be set side by side at equal time.",
            False,
        )
    budget = min(a.points[-1][0], b.points[-1][0])
    at = {}
    for run in (a, b):
        before = [p for p in run.points if p[0] <= budget]
        at[run.name] = before[-1] if before else None
    if None in at.values():
        return Claim(
            f"By {budget:.0f} s of training one of the runs had not been evaluated yet, so they "
            "cannot be set side by side at equal time.",
            False,
            {"seconds": budget},
        )
    (sa, ka, la), (sb, kb, lb) = at[a.name], at[b.name]
    numbers = {"seconds": budget, f"{a.name} loss": la, f"{b.name} loss": lb, "margin": margin}
    said = (
        f"By {budget:.0f} s of training, on each run's own clock, "
        f"{a.name} ({a.kind}) had reached a validation loss of {la:.3f} (step {ka:,}, "
        f"{sa:.0f} s) and {b.name} ({b.kind}) {lb:.3f} (step {kb:,}, {sb:.0f} s)"
    )
    if abs(round(la, 3) - round(lb, 3)) <= margin:
        return Claim(said + ": about equal.", False, numbers)
    winner = a if la < lb else b
    return Claim(said + f": the {winner.kind} was ahead at equal time.", True, numbers)
