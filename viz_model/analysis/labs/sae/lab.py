"""The lab: read activations, train an SAE, measure it and tabulate its features, in one call;
everything the page shows and a background job (serving/sae_worker.py) saves
(`sae_files.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from viz_model.analysis.labs.sae.activations import collect, random_windows
from viz_model.analysis.labs.sae.features import FeatureTable, feature_table
from viz_model.analysis.labs.sae.metrics import SAEMetrics, evaluate
from viz_model.analysis.labs.sae.model import SparseAutoencoder
from viz_model.analysis.labs.sae.training import SAEConfig, TrainLog, train_sae
from viz_model.analysis.neurons import Windows, corpus_windows
from viz_model.model.gpt import GPT
from viz_model.text.data import VAL_FRACTION, TokenData
from viz_model.text.tokenization import Tokenizer

TOP_KEPT = 24  # top activations kept per feature: enough for 6 distinct windows, mostly
BROWSE_WINDOWS = 256  # windows of the training text searched for each feature's top snippets
EVAL_TOKENS = 8192  # held-out tokens the metrics are measured on


@dataclass(frozen=True)
class Lab:
    """A trained SAE on hook `name` and what was measured: training log, held-out metrics, the
    feature table over browsing windows of the training text (ids (N, T) and each token's text)."""

    name: str
    sae: SparseAutoencoder
    log: TrainLog
    metrics: SAEMetrics
    table: FeatureTable
    browse: Windows


def lab(
    model: GPT,
    tokenizer: Tokenizer,
    text: str,
    name: str,
    cfg: SAEConfig,
    n_tokens: int,
    progress: Callable[[str, float], None] | None = None,
    val_fraction: float = VAL_FRACTION,
) -> Lab:
    """Train an SAE on about n_tokens activations at `name` from random windows of the training
    split of `text`, measure it on held-out windows of its validation split, and tabulate its
    features over windows spread evenly through `text`. val_fraction: the share of the text the
    model held out in training (its bundle's meta["data"]), so "held out" means the same here.
    progress(stage, share): stage "collect" (reading activations), then "train", then "measure"."""

    def report(stage: str) -> Callable[[float], None] | None:
        return None if progress is None else lambda share: progress(stage, share)

    data = TokenData.from_text(text, tokenizer, val_fraction)
    n_ctx = model.cfg.n_ctx
    windows = random_windows(data.train, n_tokens, n_ctx, cfg.seed)[:, :-1]
    acts = collect(model, windows, name, progress=report("collect"))
    sae, log = train_sae(acts, cfg, report("train"))
    if progress is not None:
        progress("measure", 0.0)
    held_out = random_windows(data.val, EVAL_TOKENS, n_ctx, cfg.seed + 1)
    metrics = evaluate(model, sae, name, held_out, acts.mean(0), log.dead)
    browse = corpus_windows(text, tokenizer, BROWSE_WINDOWS, min(64, n_ctx))
    table = feature_table(model, sae, name, torch.as_tensor(browse.ids), k=TOP_KEPT)
    return Lab(name, sae, log, metrics, table, browse)
