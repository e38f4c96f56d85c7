"""Model and training configuration: small frozen dataclasses, validated on creation.

Each GPTConfig option is something the lectures contrast (pre- vs post-LN, learned vs sinusoidal vs
no positions, tied vs separate unembedding, attention-only blocks, GELU vs ReLU; GELU's tanh
approximation is there for GPT-2's own weights), or a part the lectures justify or modern models
changed: LayerNorm vs RMSNorm vs none, residual connections on or off, a gated (SwiGLU) MLP,
rotary (RoPE) and ALiBi positions, grouped-query attention (n_kv_heads). Every page that shows
one lets the student compare.
Not here: the tokenizer (tokenization.py) and the corpora (data.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# "gelu_tanh" is GPT-2's GELU (Hugging Face's "gelu_new"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
# the approximation GPT-2 was trained with; "gelu" is the exact x Phi(x).
# "silu" (x sigmoid(x), also called Swish) is the gate of Llama's SwiGLU MLP.
ACTS = ("gelu", "relu", "gelu_tanh", "silu")
ACT_LABELS = {"gelu": "GELU", "relu": "RELU", "gelu_tanh": "GELU (tanh)", "silu": "SiLU"}
# "rope" rotates q and k by their positions; "alibi" adds a per-head distance penalty to the
# scores. Neither adds anything to the residual stream, so both run past n_ctx (see max_len).
POSITIONS = ("learned", "sinusoidal", "none", "rope", "alibi")
NORMS = ("pre", "post")  # where the normalization sits
NORM_KINDS = ("layernorm", "rmsnorm", "none")  # what it is
MLPS = ("standard", "gated")  # gated: act(W_gate x) * (W_in x), SwiGLU with act="silu"
# Llama's block against GPT-2's (Touvron et al. 2023): the overrides a GPTConfig takes for it.
LLAMA_BLOCK = dict(norm_kind="rmsnorm", mlp="gated", act="silu", pos="rope", bias=False)
# One of each part the lectures justify or modern models changed, as GPTConfig overrides: what
# the engine's invariants run on (tests/conftest.py) and the speed benchmark times.
BLOCK_VARIANTS: dict[str, dict] = {
    "rmsnorm": {"norm_kind": "rmsnorm"},
    "no_norm": {"norm_kind": "none"},
    "no_residual": {"residual": False},
    "swiglu": {"mlp": "gated", "act": "silu"},
    "rope": {"pos": "rope"},
    "alibi": {"pos": "alibi"},
    "gqa": {"n_kv_heads": 2},
    "llama": {**LLAMA_BLOCK, "n_kv_heads": 2},
}
# A model whose positions come from no table may read this many times its context (evaluated
# past n_ctx, the length-extrapolation lesson); pages still crop prompts to n_ctx.
EXTRAPOLATE = 8

# Caps that keep a class server usable: a model beyond these is refused with a clear message.
MAX_VOCAB = 65_536
MAX_CTX = 2048
MAX_D_MODEL = 2048
MAX_LAYERS = 48
MAX_HEADS = 64


def _check_range(name: str, value: Any, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a GPT. d_mlp defaults to 4 * d_model when left at 0 (8/3 * d_model, rounded
    to a multiple of 8, for a gated MLP: its three matrices then hold as many weights as two)."""

    vocab_size: int
    n_ctx: int = 64
    d_model: int = 128
    n_layer: int = 4
    n_head: int = 4
    d_mlp: int = 0
    act: str = "gelu"
    pos: str = "learned"
    norm: str = "pre"
    tie_embeddings: bool = False
    attn_only: bool = False
    bias: bool = True
    dropout: float = 0.0
    # False only for the "looking ahead is cheating" lesson: every position sees the whole window,
    # the future included, so training can copy the answer and generation has nothing to copy.
    causal: bool = True
    norm_kind: str = "layernorm"
    residual: bool = True  # False: each sublayer's output replaces the stream instead of adding
    mlp: str = "standard"
    n_kv_heads: int = 0  # heads of keys and values; 0 means n_head (1: multi-query attention)

    def __post_init__(self) -> None:
        if self.d_mlp == 0:
            gated = self.mlp == "gated" and isinstance(self.d_model, int)
            d_mlp = 8 * round(self.d_model / 3) if gated else 4 * self.d_model
            object.__setattr__(self, "d_mlp", max(d_mlp, 1))
        if self.n_kv_heads == 0:
            object.__setattr__(self, "n_kv_heads", self.n_head)
        _check_range("vocab_size", self.vocab_size, 2, MAX_VOCAB)
        _check_range("n_ctx", self.n_ctx, 1, MAX_CTX)
        _check_range("d_model", self.d_model, 1, MAX_D_MODEL)
        _check_range("n_layer", self.n_layer, 1, MAX_LAYERS)
        _check_range("n_head", self.n_head, 1, MAX_HEADS)
        _check_range("d_mlp", self.d_mlp, 1, 8 * MAX_D_MODEL)
        if self.d_model % self.n_head != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head}): "
                "each head gets d_model / n_head dimensions"
            )
        _check_range("n_kv_heads", self.n_kv_heads, 1, MAX_HEADS)
        if self.n_head % self.n_kv_heads != 0:
            raise ValueError(
                f"n_head ({self.n_head}) must be a multiple of n_kv_heads ({self.n_kv_heads}): "
                "each group of query heads shares one key and value head"
            )
        _check_choice("act", self.act, ACTS)
        _check_choice("pos", self.pos, POSITIONS)
        _check_choice("norm", self.norm, NORMS)
        _check_choice("norm_kind", self.norm_kind, NORM_KINDS)
        _check_choice("mlp", self.mlp, MLPS)
        if self.pos == "rope" and self.d_head % 2:
            raise ValueError(
                f"rotary positions turn pairs of numbers: d_head ({self.d_head}) must be even"
            )
        for flag in ("tie_embeddings", "attn_only", "bias", "causal", "residual"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be true or false, got {getattr(self, flag)!r}")
        if not isinstance(self.dropout, int | float) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    @property
    def adds_positions(self) -> bool:
        """Whether position vectors are added to the embeddings (learned, sinusoidal), rather
        than given inside attention (RoPE, ALiBi) or not at all."""
        return self.pos in ("learned", "sinusoidal")

    @property
    def max_len(self) -> int:
        """The longest sequence one forward may read: n_ctx with a position table (learned,
        sinusoidal), EXTRAPOLATE times that without one (none, RoPE, ALiBi), up to MAX_CTX."""
        if self.adds_positions:
            return self.n_ctx
        return max(self.n_ctx, min(EXTRAPOLATE * self.n_ctx, MAX_CTX))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GPTConfig:
        """Build from a dict (e.g. a bundle's config.json), refusing unknown fields."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown model config fields: {', '.join(sorted(unknown))}")
        return cls(**data)


STEPS_WHEN_TIMED = 1_000_000  # --minutes without --steps: the time limit ends the run
OPTIMIZERS = ("adamw", "sgd")  # training/optim.py writes out each update


@dataclass(frozen=True)
class TrainConfig:
    """How to train: optimiser, schedule, batches, and how often to log, evaluate and sample."""

    max_steps: int = 2000
    batch_size: int = 12
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    optimizer: str = "adamw"  # one of OPTIMIZERS: AdamW, or SGD with momentum
    momentum: float = 0.9  # SGD's momentum (0: plain gradient descent); AdamW has beta1 instead
    # Steps between records of gradient health (each layer's gradient norm and update size,
    # training/health.py); 0: never. The total gradient norm is recorded at every step.
    health_every: int = 10
    eval_every: int = 100
    eval_batches: int = 20
    sample_every: int = 250
    sample_tokens: int = 120
    n_snapshots: int = 12
    # Extra steps to keep a snapshot at, beyond the log-spaced ones: dense around a phase change
    # (induction-2l's induction head forms between steps ~1300 and ~1500).
    snapshot_at: tuple[int, ...] = ()
    seed: int = 0
    threads: int = 0  # 0: leave torch's default
    time_limit: float = 0.0  # seconds of training in all (0: none); the cosine then runs on time

    def __post_init__(self) -> None:
        _check_range("max_steps", self.max_steps, 1, 10_000_000)
        _check_range("batch_size", self.batch_size, 1, 4096)
        _check_range("warmup_steps", self.warmup_steps, 0, 10_000_000)
        _check_range("health_every", self.health_every, 0, 10_000_000)
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if not isinstance(self.momentum, int | float) or not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        for name in ("lr", "min_lr", "weight_decay", "grad_clip", "time_limit"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if self.lr <= 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        steps = tuple(self.snapshot_at)  # a list when read back from config.json
        for step in steps:
            _check_range("a snapshot step", step, 0, self.max_steps)
        object.__setattr__(self, "snapshot_at", tuple(sorted(set(steps))))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# Named model sizes (vocab_size is filled in from the tokenizer).
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(n_ctx=64, d_model=64, n_layer=2, n_head=4),
    "small": dict(n_ctx=128, d_model=128, n_layer=4, n_head=4),
    "medium": dict(n_ctx=256, d_model=256, n_layer=6, n_head=8),
    "attn-only-2l": dict(n_ctx=64, d_model=64, n_layer=2, n_head=4, attn_only=True),
    # A class's one-minute run: on a 2-core CPU a shallow model takes far more steps in a minute
    # than a deep one and ends lower (benchmarks/bench_training.py measures it against nanoGPT's
    # 4-layer CPU recipe).
    "quick": dict(n_ctx=64, d_model=128, n_layer=2, n_head=4),
}

# Training settings a preset brings with it (the command line's flags still win): the quick
# preset's (a higher peak rate, a short warm-up) did best of about a dozen short-run recipes tried.
PRESET_TRAINING: dict[str, dict[str, Any]] = {
    "quick": dict(batch_size=16, lr=3e-3, min_lr=1e-4, warmup_steps=50),
}

# Training settings an optimiser brings with it, over the preset's (flags still win). SGD moves
# each weight by lr x its gradient, so it needs a far larger rate than AdamW; and its weight decay
# is added to the gradient, where momentum 0.9 multiplies it tenfold: 0.1 at lr 0.3 pulls up to
# 30% off the weights a step. The quick preset on Shakespeare characters, 600 steps, momentum 0.9, no
# decay: lr 0.03, 0.1, 0.3, 1.0 ended at validation loss 2.46, 2.43, 2.43, 2.54 (with decay 0.1
# at lr 0.3: 3.36; AdamW with the preset's own settings: 2.00).
OPTIMIZER_TRAINING: dict[str, dict[str, Any]] = {
    "sgd": dict(lr=0.1, min_lr=0.01, weight_decay=0.0),
}


def preset(name: str, vocab_size: int, **overrides: Any) -> GPTConfig:
    """A GPTConfig from a named preset, e.g. preset("small", vocab_size=65, dropout=0.1)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return GPTConfig(vocab_size=vocab_size, **{**PRESETS[name], **overrides})
