"""A trained sparse-autoencoder lab on disk: the SAE as safetensors, what was measured as JSON.

    save_lab(lab, folder)                 # sae.safetensors, metrics.json, features.json
    lab = load_lab(folder, d_model=128)   # a sae.Lab again; SAEFileError (one sentence) if damaged

sae.safetensors holds W_enc (F, D), W_dec (D, F), b_enc (F,), b_dec (D,) and the scale s (a
0-d tensor), with k and the hook name in its metadata: never a pickle. metrics.json holds the
held-out metrics (sae.SAEMetrics) and the training log (loss and L0 per step, resampling, which
features ended dead); features.json the feature table (per feature: frequency, largest activation,
top activations with their window and position) and the browsing windows' ids and token texts,
so a saved lab is read without the model's training text. Loading checks before it trusts: size,
names, shapes (against the model's width when given), finite numbers, a positive scale, k within
F, and every table's length and index range.

Not here: training (sae/) and the job that writes these files (serving/sae_worker.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from viz_model.analysis.labs.sae.features import FeatureTable
from viz_model.analysis.labs.sae.lab import Lab
from viz_model.analysis.labs.sae.metrics import SAEMetrics
from viz_model.analysis.labs.sae.model import SparseAutoencoder
from viz_model.analysis.labs.sae.training import TrainLog
from viz_model.analysis.neurons import Windows
from viz_model.bundles.files import atomic_write, write_json

SAE_FILE, METRICS_FILE, FEATURES_FILE = "sae.safetensors", "metrics.json", "features.json"
MAX_BYTES = 512 * 1024 * 1024  # a saved lab past this is refused before it is read
TENSORS = ("W_enc", "W_dec", "b_enc", "b_dec", "scale")


class SAEFileError(ValueError):
    """A saved SAE that cannot be used; the message says which file and why, in one sentence."""


# ---- saving -------------------------------------------------------------------------------------


def save_lab(lab: Lab, folder: str | Path) -> None:
    """Write the lab's three files into `folder` (each atomically: temp file, then rename)."""
    folder = Path(folder)
    sae = lab.sae
    tensors = {n: getattr(sae, n).detach().float().contiguous().clone() for n in TENSORS}
    blob = save(tensors, metadata={"k": str(sae.k), "hook": lab.name})
    atomic_write(folder / SAE_FILE, lambda tmp: Path(tmp).write_bytes(blob))
    log = lab.log
    write_json(
        folder / METRICS_FILE,
        {
            "hook": lab.name,
            "metrics": dataclasses.asdict(lab.metrics),
            "log": {
                "mse": log.mse.tolist(),
                "l0": log.l0.tolist(),
                "resampled": [list(pair) for pair in log.resampled],
                "tokens": log.tokens,
                "dead_window_tokens": log.dead_window_tokens,
                "dead": np.flatnonzero(log.dead).tolist(),  # the dead features' ids
                "checks": log.checks,
                "resample_every": log.resample_every,
            },
        },
    )
    t = lab.table
    write_json(
        folder / FEATURES_FILE,
        {
            "freq": t.freq.tolist(),
            "max_act": t.max_act.tolist(),
            "top_values": t.top_values.tolist(),
            "top_window": t.top_window.tolist(),
            "top_position": t.top_position.tolist(),
            "browse_ids": lab.browse.ids.tolist(),
            "browse_texts": lab.browse.texts,
        },
    )


# ---- loading ------------------------------------------------------------------------------------


def load_lab(folder: str | Path, d_model: int | None = None) -> Lab:
    """The lab saved in `folder`, checked; SAEFileError naming the file and the fault otherwise.
    d_model: the width of the model it will be used with (its hook's activations)."""
    folder = Path(folder)
    sae, hook = _read_sae(folder / SAE_FILE, d_model)
    n_features = sae.n_features
    metrics, log = _read_metrics(folder / METRICS_FILE, n_features)
    table, browse = _read_features(folder / FEATURES_FILE, n_features)
    return Lab(hook, sae, log, metrics, table, browse)


def _size_checked(path: Path) -> Path:
    """`path`, once it exists, can be read and is not too large to be a saved SAE."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise SAEFileError(f"{path.name} is missing from {path.parent.name}") from None
    except OSError as exc:
        raise SAEFileError(f"{path.name} cannot be read: {exc.strerror or exc}") from None
    if size > MAX_BYTES:
        raise SAEFileError(f"{path.name} is {size:,} bytes, more than a saved SAE may be")
    return path


def _read_sae(path: Path, d_model: int | None) -> tuple[SparseAutoencoder, str]:
    try:
        with safe_open(_size_checked(path), "pt") as f:
            meta = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise SAEFileError(f"{path.name} is not a readable safetensors file ({exc})") from None
    missing = [n for n in TENSORS if n not in tensors]
    if missing:
        raise SAEFileError(f"{path.name} lacks {', '.join(missing)}")
    w_enc, w_dec = tensors["W_enc"], tensors["W_dec"]
    if w_enc.ndim != 2 or w_dec.shape != w_enc.T.shape:
        raise SAEFileError(
            f"{path.name}: W_enc {tuple(w_enc.shape)} and W_dec {tuple(w_dec.shape)} do not fit"
        )
    n_features, d = w_enc.shape
    expect = {"b_enc": (n_features,), "b_dec": (d,), "scale": ()}
    for name, shape in expect.items():
        if tuple(tensors[name].shape) != shape:
            got = tuple(tensors[name].shape)
            raise SAEFileError(f"{path.name}: {name} has shape {got}, expected {shape}")
    if d_model is not None and d != d_model:
        raise SAEFileError(
            f"{path.name} reads activations of width {d}; this model's are {d_model}"
        )
    for name in TENSORS:
        if not torch.isfinite(tensors[name]).all():
            raise SAEFileError(f"{path.name}: {name} holds NaN or infinite numbers")
    if not float(tensors["scale"]) > 0:
        raise SAEFileError(f"{path.name}: the scale s must be above 0")
    try:
        k = int(meta.get("k", "0"))
    except ValueError:
        raise SAEFileError(f"{path.name}: k in its metadata is not a whole number") from None
    if not 0 <= k <= n_features:
        raise SAEFileError(f"{path.name}: k = {k} is outside 0..{n_features}")
    hook = str(meta.get("hook", ""))
    sae = SparseAutoencoder(d, n_features, k)
    with torch.no_grad():
        for name in TENSORS:
            getattr(sae, name).copy_(tensors[name])
    return sae.eval(), hook


def _json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(_size_checked(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SAEFileError(f"{path.name} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError both
        raise SAEFileError(f"{path.name} is not valid JSON ({exc})") from None
    if not isinstance(found, dict):
        raise SAEFileError(f"{path.name} does not hold a JSON object")
    return found


def _array(path: Path, data: dict, key: str, shape: tuple, dtype=np.float64) -> np.ndarray:
    """data[key] as an array of `shape` (None: any length), finite; SAEFileError otherwise."""
    try:
        a = np.asarray(data[key], dtype=dtype)
    except KeyError:
        raise SAEFileError(f"{path.name} lacks {key!r}") from None
    except (TypeError, ValueError):
        raise SAEFileError(f"{path.name}: {key!r} is not a table of numbers") from None
    fits = a.ndim == len(shape) and all(
        w is None or w == n for w, n in zip(shape, a.shape, strict=False)
    )
    if not fits:
        raise SAEFileError(f"{path.name}: {key!r} has shape {a.shape}, expected {shape}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise SAEFileError(f"{path.name}: {key!r} holds NaN or infinite numbers")
    return a


def _read_metrics(path: Path, n_features: int) -> tuple[SAEMetrics, TrainLog]:
    data = _json(path)
    try:
        raw = data["metrics"]
        metrics = SAEMetrics(**{f.name: raw[f.name] for f in dataclasses.fields(SAEMetrics)})
        log = data["log"]
        numbers = [getattr(metrics, f.name) for f in dataclasses.fields(SAEMetrics)]
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in numbers):
            raise SAEFileError(f"{path.name}: a metric is not a finite number")
        if metrics.n_features != n_features:
            raise SAEFileError(
                f"{path.name} is for {metrics.n_features} features; the SAE has {n_features}"
            )
        mse = _array(path, log, "mse", (None,))
        l0 = _array(path, log, "l0", (None,))
        dead_ids = _array(path, log, "dead", (None,), np.int64)
        if dead_ids.size and not (dead_ids.min() >= 0 and dead_ids.max() < n_features):
            raise SAEFileError(f"{path.name}: a dead feature's id is out of range")
        dead = np.zeros(n_features, bool)
        dead[dead_ids] = True
        train_log = TrainLog(
            mse=mse,
            l0=l0,
            resampled=[(int(s), int(n)) for s, n in log["resampled"]],
            tokens=int(log["tokens"]),
            dead_window_tokens=int(log["dead_window_tokens"]),
            dead=dead,
            checks=int(log["checks"]),
            resample_every=int(log["resample_every"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, SAEFileError):
            raise
        raise SAEFileError(f"{path.name} is incomplete or malformed ({exc!r})") from None
    return metrics, train_log


def _read_features(path: Path, n_features: int) -> tuple[FeatureTable, Windows]:
    data = _json(path)
    freq = _array(path, data, "freq", (n_features,))
    top_values = _array(path, data, "top_values", (n_features, None))
    kept = top_values.shape[1]
    ids = _array(path, data, "browse_ids", (None, None), np.int64)
    n_windows, width = ids.shape
    top_window = _array(path, data, "top_window", (n_features, kept), np.int64)
    top_position = _array(path, data, "top_position", (n_features, kept), np.int64)
    in_range = (top_window >= 0).all() and (top_window < n_windows).all()
    if not (in_range and (top_position >= 0).all() and (top_position < width).all()):
        raise SAEFileError(f"{path.name}: a top activation points outside the browsing windows")
    texts = data.get("browse_texts")
    rows_fit = isinstance(texts, list) and len(texts) == n_windows
    if not (rows_fit and all(isinstance(r, list) and len(r) == width for r in texts)):
        raise SAEFileError(f"{path.name}: the browsing windows' texts do not match their ids")
    if not all(isinstance(piece, str) for row in texts for piece in row):
        raise SAEFileError(f"{path.name}: a browsing window's text is not text")
    table = FeatureTable(
        freq=freq.astype(np.float32),
        max_act=_array(path, data, "max_act", (n_features,)).astype(np.float32),
        top_values=top_values.astype(np.float32),
        top_window=top_window,
        top_position=top_position,
    )
    return table, Windows(ids=ids, texts=texts)
