"""What a training run will cost, known before it starts: its speed on this machine, measured, and
the memory it needs, counted.

    cfg = run_settings.model_shape(settings, text)     # the GPTConfig the run will build
    tokens_per_s = measure_speed(cfg, batch_size=16, threads=Limits.from_env().threads)
    seconds = train_seconds(500, 16, cfg.n_ctx, tokens_per_s)
    need = memory_estimate(cfg, 16)                     # bytes, float32

The speed is not guessed from a table: a few real training steps (forward, cross-entropy,
backward, AdamW) are timed on random token ids with the thread count the job will get. The time
then scales with steps x batch x context. Not here: the caps (jobs.Limits), the loop (train.py).
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from viz_model.config import GPTConfig, TrainConfig
from viz_model.model import GPT
from viz_model.train import AdamW, make_optimizer

FLOAT_BYTES = 4  # float32
# Per parameter: the weight, its gradient, and AdamW's two running moments (exp_avg, exp_avg_sq).
STATE_FLOATS_PER_PARAM = 4

# torch's thread count may be shared by the whole process: measurements take turns, so each one
# restores the setting the one before it found.
_THREADS_LOCK = threading.Lock()


@functools.lru_cache(maxsize=256)
def n_params(model_cfg: GPTConfig) -> int:
    """Parameters of a GPT of this shape, built on the meta device (no memory), once per shape.

    The config is frozen, so the count is remembered: building the model still takes ~5 ms of
    Python, and the Training page asks three times per view (count, memory, the timing's memory).
    """
    with torch.device("meta"):
        return GPT(model_cfg).n_params()


def _train_step(model: GPT, opt: AdamW, x: torch.Tensor, y: torch.Tensor) -> None:
    logits = model(x)  # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # as the loop does (grad_clip)
    opt.step()


def measure_speed(
    model_cfg: GPTConfig,
    batch_size: int,
    threads: int = 1,
    steps: int = 3,
    budget_s: float = 2.0,
) -> float:
    """Training tokens per second of this shape on this CPU: up to `steps` timed AdamW steps on
    random ids (B = batch_size, T = n_ctx) after one untimed warm-up step, on `threads` torch
    threads (what the job gets: jobs.Limits.threads), from the median step time. Once `budget_s`
    seconds of timed steps have passed it stops early (a large model's steps are long enough to
    time one). torch's thread setting and random state are put back as they were."""
    if batch_size < 1 or steps < 1 or threads < 1:
        raise ValueError("batch_size, steps and threads must be at least 1")
    with _THREADS_LOCK, torch.random.fork_rng(devices=[]):
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            torch.manual_seed(0)
            model = GPT(model_cfg).train()
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
        finally:
            torch.set_num_threads(before)
    # the median step: one step slowed by a neighbour's burst of work does not move it
    return batch_size * model_cfg.n_ctx / max(statistics.median(times), 1e-9)


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


def activation_floats_per_token(model_cfg: GPTConfig) -> int:
    """Floats the forward pass keeps for backward, per token (B x T tokens in a batch):

    per attention sublayer, the LayerNorm's input and output (2D), q, k and v (3D), the heads'
    output z before the output projection (D), and the attention pattern (H x T; an upper bound:
    PyTorch's fused attention keeps only a log-sum-exp per row); per MLP sublayer, the
    LayerNorm's input and output (2D) and the neurons before and after the nonlinearity (2M);
    at the end, the final LayerNorm's input and output (2D) and the logits with cross-entropy's
    softmax (2V). Not counted: dropout masks, small per-row statistics, temporaries of backward.
    """
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


def memory_parts(model_cfg: GPTConfig, batch_size: int) -> Memory:
    """Weights, gradients and AdamW's two moments (16 bytes a parameter), and one step's
    activations (activation_floats_per_token x B x T floats)."""
    state = STATE_FLOATS_PER_PARAM * FLOAT_BYTES * n_params(model_cfg)
    tokens = batch_size * model_cfg.n_ctx
    return Memory(state, FLOAT_BYTES * tokens * activation_floats_per_token(model_cfg))


def memory_estimate(model_cfg: GPTConfig, batch_size: int) -> int:
    """Bytes of memory a run needs (see memory_parts and activation_floats_per_token for what is
    counted): e.g. the quick preset on 65 characters at batch 16 needs about 0.03 GB."""
    return memory_parts(model_cfg, batch_size).total


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
