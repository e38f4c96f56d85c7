"""Scaling: validation loss against model size and training compute, on log-log axes.

- `count_params(cfg)`: (total, non-embedding) parameters of a GPTConfig, exactly, without building
  the model; `rule_of_thumb(L, d)` = 12 L d^2, the lecture's estimate of the non-embedding part.
- `PUBLISHED`: GPT-2's and GPT-3's shapes and parameter counts as their papers give them.
- `ScalingPoint`, `sweep_points(results)`, `bundle_point(...)`: one trained model each: non-embedding
  parameters N, tokens seen D, compute C = 6 N D (forward and backward, Kaplan et al. 2020), and
  its validation loss.
- `load_sweep(path)`, `bundle_points(found, bundled_dir)`: the points the Scaling page plots: a
  sweep's results file, and every bundle trained on the same text with the same tokenizer.
- `fit_power_law(x, y)`: loss = a x^-b by least squares on the logs.

Not here: training the sweep (scripts/scaling_sweep.py), charts (charts/scaling.py), streamlit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from viz_model.checkpoint import CheckpointError, read_config
from viz_model.config import GPTConfig
from viz_model.data import ASSETS_DIR

SWEEP_FILE = ASSETS_DIR / "scaling" / "shakespeare-char.json"  # scripts/scaling_sweep.py

FLOPS_PER_PARAM_TOKEN = 6  # 2 for the forward pass, 4 for the backward: C = 6 N D


def count_params(cfg: GPTConfig) -> tuple[int, int]:
    """(total, non-embedding) parameters; non-embedding = the blocks and the final LayerNorm.

    Per block: attention 4 d^2 (+ 4 d biases), MLP 2 d d_mlp (+ d_mlp + d), one LayerNorm per
    sublayer (d gains, + d biases); with d_mlp = 4 d that is 12 d^2 + 13 d."""
    d, m, b = cfg.d_model, cfg.d_mlp, int(cfg.bias)
    ln = d + b * d
    attn = 4 * d * d + b * 4 * d
    mlp = 0 if cfg.attn_only else 2 * d * m + b * (m + d)
    block = attn + mlp + (1 if cfg.attn_only else 2) * ln
    non_embedding = cfg.n_layer * block + (ln if cfg.norm == "pre" else 0)
    embed = cfg.vocab_size * d * (1 if cfg.tie_embeddings else 2)
    embed += cfg.n_ctx * d if cfg.pos == "learned" else 0
    return non_embedding + embed, non_embedding


def rule_of_thumb(n_layer: int, d_model: int) -> int:
    """12 L d^2: attention's 4 d^2 and the MLP's 8 d^2 per block, biases and embeddings left out."""
    return 12 * n_layer * d_model**2


@dataclass(frozen=True)
class Published:
    """A published model: its paper's name, shape and parameter count; tokens it trained on (0:
    not published)."""

    name: str
    n_layer: int
    d_model: int
    params: int
    tokens: float = 0.0


# Radford et al. 2019, table 2; Brown et al. 2020, table 2.1 (every GPT-3 size saw 300 B tokens).
PUBLISHED = (
    Published("GPT-2 117M", 12, 768, 117_000_000),
    Published("GPT-2 345M", 24, 1024, 345_000_000),
    Published("GPT-2 762M", 36, 1280, 762_000_000),
    Published("GPT-2 1542M", 48, 1600, 1_542_000_000),
    Published("GPT-3 Small", 12, 768, 125_000_000, 300e9),
    Published("GPT-3 Medium", 24, 1024, 350_000_000, 300e9),
    Published("GPT-3 Large", 24, 1536, 760_000_000, 300e9),
    Published("GPT-3 XL", 24, 2048, 1_300_000_000, 300e9),
    Published("GPT-3 2.7B", 32, 2560, 2_700_000_000, 300e9),
    Published("GPT-3 6.7B", 32, 4096, 6_700_000_000, 300e9),
    Published("GPT-3 13B", 40, 5140, 13_000_000_000, 300e9),
    Published("GPT-3 175B", 96, 12288, 175_000_000_000, 300e9),
)


@dataclass(frozen=True)
class ScalingPoint:
    """One trained model: N non-embedding parameters, D tokens seen, its validation loss."""

    name: str
    source: str  # "sweep", "bundled" or "class run"
    n_params: int
    tokens: float
    val_loss: float

    @property
    def compute(self) -> float:
        """Training FLOPs, C = 6 N D."""
        return FLOPS_PER_PARAM_TOKEN * self.n_params * self.tokens


def sweep_points(results: dict) -> list[ScalingPoint]:
    """The points of a sweep results file (scripts/scaling_sweep.py writes it)."""
    points = []
    for run in results["runs"]:
        _, n = count_params(GPTConfig.from_dict(run["model"]))
        points.append(ScalingPoint(run["name"], "sweep", n, run["tokens_seen"], run["val_loss"]))
    return points


def bundle_point(name: str, source: str, cfg: GPTConfig, meta: dict) -> ScalingPoint | None:
    """A bundle's point, or None when it cannot be placed: no validation loss or tokens, or no
    causal mask (its validation loss reads the answer)."""
    loss, tokens = meta.get("val_loss"), meta.get("tokens_seen")
    if not cfg.causal or not isinstance(loss, int | float) or not isinstance(tokens, int | float):
        return None
    return ScalingPoint(name, source, count_params(cfg)[1], float(tokens), float(loss))


def load_sweep(path: Path = SWEEP_FILE) -> dict:
    """The sweep's results ({"corpus", "tokenizer", "runs": [...]}); ValueError saying what is
    wrong with a missing or damaged file."""
    try:
        results = json.loads(Path(path).read_text(encoding="utf-8"))
        runs = results["runs"]
        for run in runs:
            GPTConfig.from_dict(run["model"])
            float(run["tokens_seen"]), float(run["val_loss"]), str(run["name"])
    except OSError as exc:
        raise ValueError(f"cannot read the sweep results {Path(path).name}: {exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the sweep results {Path(path).name} are damaged: {exc!r}") from exc
    return results


def bundle_points(
    found: Mapping[str, Path], bundled_dir: Path, corpus: str, tokenizer: str
) -> list[ScalingPoint]:
    """A point for every bundle trained on `corpus` with a `tokenizer` tokenizer (from config.json
    alone), "bundled" when it sits in bundled_dir, else a "class run"; unreadable bundles skipped."""
    points = []
    for name, path in found.items():
        try:
            cfg, raw = read_config(path)
        except (CheckpointError, OSError):
            continue
        meta = raw.get("meta") if isinstance(raw.get("meta"), dict) else {}
        if meta.get("corpus") != corpus or meta.get("tokenizer") != tokenizer:
            continue
        source = "bundled" if Path(path).parent == Path(bundled_dir) else "class run"
        if (point := bundle_point(name, source, cfg, meta)) is not None:
            points.append(point)
    return points


@dataclass(frozen=True)
class PowerLaw:
    """y = a x^-b."""

    a: float
    b: float

    def __call__(self, x: np.ndarray | float) -> np.ndarray:
        return self.a * np.asarray(x, dtype=float) ** -self.b


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> PowerLaw:
    """Least squares of log y = log a - b log x (at least two distinct positive x)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if lx.size < 2 or np.ptp(lx) == 0:
        raise ValueError("a power law needs at least two different sizes")
    slope, intercept = np.polyfit(lx, ly, 1)
    return PowerLaw(float(np.exp(intercept)), float(-slope))
