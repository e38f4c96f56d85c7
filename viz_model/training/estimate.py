"""What a training run will cost, known before it starts: its speed on this machine, measured, and
the memory it needs, counted.

    cfg = run_settings.model_shape(settings, text)     # the GPTConfig the run will build
    speed = measure_speed(cfg, batch_size=16, threads=Limits.from_env().threads)
    low, high = speed.steps_per_s(settings.train_config())   # a range, evaluations included
    need = memory_estimate(cfg, 16)                     # bytes, float32

The speed is not guessed from a table, and not timed in the caller's process: a child process
(`python -m viz_model.training.estimate`) started the way a job's worker is (OMP_NUM_THREADS and torch's
threads set to the job's count) times a few real training steps of the loop's own kind (forward,
cross-entropy, backward, clipping, the loop's AdamW) on random token ids, one evaluation batch and
one sampling forward pass. The fastest and slowest step give a range; a run then scales it with
steps x batch x context. Not here: the caps (jobs.Limits), the loop (loop.py).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from viz_model.model.config import TrainConfig
from viz_model.model.families import ModelConfig, build_model, config_from_dict, config_to_dict
from viz_model.model.recurrent_config import RecurrentConfig
from viz_model.training.optim import AdamW, make_optimizer, state_floats

FLOAT_BYTES = 4  # float32
# Per parameter: the weight and its gradient, plus what the optimiser keeps (optim.state_floats:
# AdamW's two running moments, SGD's momentum buffer).
WEIGHT_AND_GRAD_FLOATS = 2
MEASURE_TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=256)
def n_params(model_cfg: ModelConfig) -> int:
    """Parameters of a model (of any family) of this shape, built on the meta device (no memory), once per shape.

    The config is frozen, so the count is remembered: building the model still takes ~5 ms of
    Python, and the Training page asks three times per view (count, memory, the timing's memory).
    """
    with torch.device("meta"):
        return build_model(model_cfg).n_params()


def _train_step(model: torch.nn.Module, opt: AdamW, x: torch.Tensor, y: torch.Tensor) -> None:
    logits = model(x)  # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # as the loop does (grad_clip)
    opt.step()


@dataclass(frozen=True)
class Speed:
    """Measured speed of one shape at one batch size, on `threads` threads of a fresh process.

    step_s: each timed training step (seconds); eval_s: one evaluation batch's forward pass at the
    same batch size; sample_s: one forward pass of a single window (what sampling does per token).
    """

    batch_size: int
    n_ctx: int
    threads: int
    step_s: tuple[float, ...]
    eval_s: float
    sample_s: float

    def tokens_per_s(self) -> tuple[float, float]:
        """(slowest, fastest) training tokens per second of the timed steps alone."""
        tokens = self.batch_size * self.n_ctx
        return tokens / max(self.step_s), tokens / min(self.step_s)

    def seconds_per_step(self, train: TrainConfig) -> tuple[float, float]:
        """(fastest, slowest) seconds a step of `train` takes on average: the training step scaled
        to its batch (time per token kept), plus its share of the evaluations (eval_batches
        forward passes every eval_every steps) and of the samples (sample_tokens forward passes
        every sample_every steps)."""
        scale = train.batch_size / self.batch_size
        extra = 0.0
        if train.eval_every > 0:
            extra += train.eval_batches * self.eval_s * scale / train.eval_every
        if train.sample_every > 0 and train.sample_tokens > 0:
            extra += train.sample_tokens * self.sample_s / train.sample_every
        return min(self.step_s) * scale + extra, max(self.step_s) * scale + extra

    def steps_per_s(self, train: TrainConfig) -> tuple[float, float]:
        """(low, high) steps per second of a run of `train`, evaluations and samples included."""
        fast, slow = self.seconds_per_step(train)
        return 1.0 / slow, 1.0 / fast

    def to_dict(self) -> dict:
        return {
            "batch_size": self.batch_size,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
            "step_s": list(self.step_s),
            "eval_s": self.eval_s,
            "sample_s": self.sample_s,
        }


def time_steps(model_cfg: ModelConfig, batch_size: int, steps: int, budget_s: float) -> dict:
    """In this process, on its current threads: up to `steps` timed training steps on random ids
    after one untimed warm-up step (stopping early once `budget_s` seconds of them have passed),
    one evaluation forward pass and one single-window forward pass. What the child prints."""
    torch.manual_seed(0)
    model = build_model(model_cfg).train()
    opt = make_optimizer(model, TrainConfig())
    shape = (batch_size, model_cfg.n_ctx)
    x = torch.randint(model_cfg.vocab_size, shape)
    y = torch.randint(model_cfg.vocab_size, shape)
    _train_step(model, opt, x, y)  # warm-up: first-call allocations, AdamW's state
    times: list[float] = []
    while len(times) < steps and sum(times) < budget_s:
        t0 = time.perf_counter()
        _train_step(model, opt, x, y)
        times.append(time.perf_counter() - t0)
    model.eval()
    with torch.no_grad():
        t0 = time.perf_counter()
        F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        eval_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        model(x[:1])
        sample_s = time.perf_counter() - t0
    return {"step_s": times, "eval_s": eval_s, "sample_s": sample_s}


def measure_speed(
    model_cfg: ModelConfig,
    batch_size: int,
    threads: int = 1,
    steps: int = 5,
    budget_s: float = 2.0,
) -> Speed:
    """The Speed of this shape measured in a child process started as a job's worker is (its
    thread count in OMP_NUM_THREADS and torch.set_num_threads), so nothing in the caller's
    process (a Streamlit session's thread, say) changes or competes. ValueError if it fails."""
    if batch_size < 1 or steps < 1 or threads < 1:
        raise ValueError("batch_size, steps and threads must be at least 1")
    request = {
        "cfg": config_to_dict(model_cfg),
        "batch_size": batch_size,
        "threads": threads,
        "steps": steps,
        "budget_s": budget_s,
    }
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "viz_model.training.estimate", json.dumps(request)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=MEASURE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise ValueError(f"the speed could not be measured: {exc}") from None
    if done.returncode != 0 or found.get("threads") != threads:
        raise ValueError(f"the speed could not be measured: {done.stderr[-300:]}")
    return Speed(
        batch_size,
        model_cfg.n_ctx,
        found["threads"],
        tuple(found["step_s"]),
        found["eval_s"],
        found["sample_s"],
    )


def train_seconds(
    steps: int, batch_size: int, n_ctx: int, tokens_per_s: float, minutes: float | None = None
) -> float:
    """How long the run trains: the minutes given, else steps x batch x context / tokens per s
    (training steps only; the evaluations every eval_every steps add a little)."""
    if minutes:
        return minutes * 60.0
    return steps * batch_size * n_ctx / tokens_per_s


def steps_in(seconds: float, batch_size: int, n_ctx: int, tokens_per_s: float) -> int:
    """About how many steps fit in `seconds` at this speed."""
    return int(seconds * tokens_per_s / (batch_size * n_ctx))


@dataclass(frozen=True)
class Memory:
    """Bytes a run needs, in float32: `state` for the parameters, `activations` for one step."""

    state: int
    activations: int

    @property
    def total(self) -> int:
        return self.state + self.activations


# Floats a recurrent or convolutional layer keeps for backward per token, in units of d_model: its
# input and output, and each gate's value (the LSTM's cell state and tanh of it too); the CNN's
# LayerNorm's output, the convolution's output and its GELU.
_LAYER_FLOATS = {"rnn": 3, "lstm": 9, "gru": 7, "cnn": 5}


def activation_floats_per_token(model_cfg: ModelConfig) -> int:
    """Floats the forward pass keeps for backward, per token (B x T tokens in a batch):

    per attention sublayer, the LayerNorm's input and output (2D), q, k and v (3D), the heads'
    output z before the output projection (D), and the attention pattern (H x T; an upper bound:
    PyTorch's fused attention keeps only a log-sum-exp per row); per MLP sublayer, the
    LayerNorm's input and output (2D) and the neurons before and after the nonlinearity (2M);
    at the end, the final LayerNorm's input and output (2D) and the logits with cross-entropy's
    softmax (2V). Not counted: dropout masks, small per-row statistics, temporaries of backward.
    """
    if isinstance(model_cfg, RecurrentConfig):
        d, v = model_cfg.d_model, model_cfg.vocab_size
        return model_cfg.n_layer * _LAYER_FLOATS[model_cfg.family] * d + 2 * d + 2 * v
    d, m, h, t, v = (
        model_cfg.d_model,
        model_cfg.d_mlp,
        model_cfg.n_head,
        model_cfg.n_ctx,
        model_cfg.vocab_size,
    )
    attn = 6 * d + h * t
    mlp = 0 if model_cfg.attn_only else 2 * d + 2 * m
    return model_cfg.n_layer * (attn + mlp) + 2 * d + 2 * v


def memory_parts(
    model_cfg: ModelConfig, batch_size: int, train: TrainConfig | None = None
) -> Memory:
    """Weights, gradients and the optimiser's state (AdamW's two moments by default: 16 bytes a
    parameter; SGD with momentum 12), and one step's activations (activation_floats_per_token x
    B x T floats)."""
    floats = WEIGHT_AND_GRAD_FLOATS + state_floats(train or TrainConfig())
    state = floats * FLOAT_BYTES * n_params(model_cfg)
    tokens = batch_size * model_cfg.n_ctx
    return Memory(state, FLOAT_BYTES * tokens * activation_floats_per_token(model_cfg))


def memory_estimate(
    model_cfg: ModelConfig, batch_size: int, train: TrainConfig | None = None
) -> int:
    """Bytes of memory a run needs (see memory_parts and activation_floats_per_token for what is
    counted): e.g. the quick preset on 65 characters at batch 16 needs about 0.03 GB."""
    return memory_parts(model_cfg, batch_size, train).total


def available_memory() -> int | None:
    """Bytes of memory this machine can still give a new process (Linux's MemAvailable), or None
    where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the file counts kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _child(request_json: str) -> None:
    """`python -m viz_model.training.estimate REQUEST`: time_steps on the request's threads, as JSON."""
    request = json.loads(request_json)
    torch.set_num_threads(int(request["threads"]))  # this child's own process, as the worker
    found = time_steps(
        config_from_dict(request["cfg"]),
        request["batch_size"],
        request["steps"],
        request["budget_s"],
    )
    sys.stdout.write(json.dumps({**found, "threads": torch.get_num_threads()}) + "\n")


if __name__ == "__main__":
    _child(sys.argv[1])
