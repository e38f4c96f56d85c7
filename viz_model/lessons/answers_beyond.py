"""Answer kinds for the before-and-beyond lesson (assets/lessons/6_beyond.toml): counting models
on the model's own corpus (the N-grams page: analysis/ngrams.py), and experiments that change the
model while it runs (the Interventions page: analysis/labs/interventions/): which head's ablation
hurts most, and which head carries the answer when patched.

Each kind measures with the page's own functions and thresholds, on the same text: the corpus
split as training split it, and for ablations the same held-out windows.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

from viz_model.analysis import ngrams as ng
from viz_model.analysis import training as tr
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs import interventions as iv
from viz_model.analysis.tokens import token_text
from viz_model.bundles.checkpoint import Bundle
from viz_model.lessons.answers_attention import needed_heads, untrained_sweep
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, head_names, visible_token
from viz_model.text import ngram
from viz_model.text.data import VAL_FRACTION, DataError, load_text
from viz_model.text.tokenization import Tokenizer

METHODS = ("kneser-ney", "add-k")
SHARE_TOLERANCE = 3.0  # percentage points: a share read off the sparsity chart
# The Interventions page measures the loss on this many tokens of held-out text
# (ui/interventions.py VAL_TOKENS; a test keeps the two equal).
VAL_TOKENS = 512
NONE = "none stands out"
ORDER_OPTIONS = tuple(f"n = {n}" for n in range(1, ngram.MAX_ORDER + 1))
NO_HEAD = "none of them"


# ---- counting (the N-grams page) ----------------------------------------------------------------


def _source(bundle: Bundle) -> tuple[str, float] | None:
    """(the training text's source as a key, its validation fraction), as ui/corpus.py reads them;
    None when the bundle does not say what it was trained on."""
    source = bundle.meta.get("data")
    if not isinstance(source, dict) or not source:
        return None
    fraction = source.get("val_fraction", VAL_FRACTION)
    if not isinstance(fraction, int | float) or not 0 < fraction < 1:
        fraction = VAL_FRACTION
    return json.dumps(source, sort_keys=True, default=str), float(fraction)


@dataclass(frozen=True)
class SameTokenizer:
    """A tokenizer as a cache key: equal when the vocabulary file is (its sha256), so every
    loaded copy of one model's tokenizer shares one count."""

    sha256: str
    tokenizer: Tokenizer = field(compare=False, hash=False)

    @classmethod
    def of(cls, tokenizer: Tokenizer) -> SameTokenizer:
        return cls(tokenizer.sha256, tokenizer)


@lru_cache(maxsize=4)
def _counted(source_key: str, fraction: float, tok: SameTokenizer) -> ng.TokenModels | None:
    """The corpus counted and indexed in the model's tokens, once per text and tokenizer."""
    try:
        text = load_text(json.loads(source_key))
        return ng.token_models(text, tok.tokenizer, fraction)
    except (OSError, KeyError, TypeError, ValueError, DataError):
        return None


def token_models(bundle: Bundle) -> ng.TokenModels | None:
    """What the N-grams page counts for this model, or None when its text is not known."""
    found = _source(bundle)
    return None if found is None else _counted(*found, SameTokenizer.of(bundle.tokenizer))


def _no_text(form: str, options: tuple[str, ...] = ()) -> Truth:
    why = "This model does not say what text it was trained on, so there is nothing to count."
    value = options[0] if options else ("" if form == "token" else 0.0)
    return Truth(form, value, why, options, holds=False)


@answer_kind("choice")
def ngram_best_order(subject: Subject, method: str = "kneser-ney") -> Truth:
    """Which n-gram order gives the lowest held-out loss, smoothed by `method`."""
    models = token_models(subject.bundle)
    if models is None or method not in METHODS:
        return _no_text("choice", ORDER_OPTIONS)
    scores = models.scores
    orders = scores.orders
    options = tuple(f"n = {n}" for n in orders)
    nats = scores.kneser_ney if method == "kneser-ney" else scores.add_k
    bits = [x / ng.LN2 for x in nats]
    best = int(np.argmin(bits))
    listed = ", ".join(f"n = {n}: {b:.3f}" for n, b in zip(orders, bits, strict=True))
    numbers = {f"bits_{n}": b for n, b in zip(orders, bits, strict=True)}
    numbers |= {"best_order": orders[best], "perplexity": math.exp(nats[best])}
    name = "Kneser-Ney" if method == "kneser-ney" else "Add-k"
    why = (
        f"{name} scores best at **n = {orders[best]}**: {bits[best]:.3f} bits per token on the "
        f"held-out text (perplexity {math.exp(nats[best]):.2f}). By order, in bits per token: "
        f"{listed}."
    )
    if method == "add-k":
        claim = ng.add_k_claim(orders, bits)
        why += " " + claim.text
        return Truth("choice", options[best], why, options, holds=claim.made, numbers=numbers)
    longest = best == len(orders) - 1
    why += (
        " Smoothed by falling back on shorter contexts, each longer context still helps."
        if longest
        else f" Past n = {orders[best]} longer contexts make it worse: here the tokens "
        "are so unpredictable from the ones before them that longer counts only add noise."
    )
    return Truth("choice", options[best], why, options, holds=longest, numbers=numbers)


@answer_kind("number")
def unseen_context_share(subject: Subject, n: int = 8) -> Truth:
    """The share (%) of held-out contexts of `n` tokens that never occur in the training text."""
    models = token_models(subject.bundle)
    if models is None or not 1 <= n <= len(models.unseen):
        return _no_text("number")
    share = float(models.unseen[n - 1])
    claim = ng.sparsity_claim(models.unseen)
    numbers = {"share": 100 * share, "n": n, **{k: float(v) for k, v in claim.numbers.items()}}
    why = (
        f"**{share:.1%}** of the contexts of {n} tokens met in the held-out text never occur in "
        f"the training text (answers within ±{SHARE_TOLERANCE:g} points count). {claim.text}"
    )
    return Truth(
        "number",
        100 * share,
        why,
        holds=claim.made,
        tolerance=SHARE_TOLERANCE,
        unit="%",
        numbers=numbers,
    )


def _context_counts(subject: Subject, context: str, k: int):
    """(bundle, the last k tokens of context, their count table, them as shown), or None when
    the model has no training text to count or the context makes no tokens."""
    bundle = subject.bundle
    models = token_models(bundle)
    ids = bundle.tokenizer.encode(context)
    if models is None or not ids:
        return None
    used = ids[-k:]
    shown = md_escape(visible_token("".join(token_text(bundle.tokenizer, t) for t in used)))
    return bundle, used, ng.count_table(models, used), shown


@answer_kind("token")
def ngram_top_follower(subject: Subject, context: str = "my lord", k: int = 5) -> Truth:
    """The token that most often followed the last `k` tokens of `context` in the training text."""
    counted = _context_counts(subject, context, k)
    if counted is None:
        return _no_text("token")
    bundle, used, table, shown = counted
    numbers = {"total": table.total, "k": len(used)}
    if not table.defined:
        why = (
            f"{shown} never occurs in the training text: the count ratio is 0/0, so the "
            f"{len(used) + 1}-gram model has no answer at all."
        )
        return Truth("token", "", why, holds=False, numbers=numbers)
    top = int(table.top(1)[0])
    count = int(table.counts[top])
    numbers |= {"top": top, "count": count}
    label = token_text(bundle.tokenizer, top)
    why = (
        f"{shown} occurs {table.total:,} times in the training text; **{count:,}** of them are "
        f"followed by {md_escape(visible_token(label))}: the count ratio {count}/{table.total} = "
        f"{count / table.total:.2f}."
    )
    return Truth("token", label, why, numbers=numbers)


@answer_kind("number")
def context_occurrences(subject: Subject, context: str = "my lord", k: int = 5) -> Truth:
    """How many times the last `k` tokens of `context` occur, followed by a token, in the
    training text: 0 leaves the count ratio undefined (0/0)."""
    counted = _context_counts(subject, context, k)
    if counted is None:
        return _no_text("number")
    bundle, used, table, shown = counted
    numbers = {"total": table.total, "k": len(used)}
    if table.defined:
        why = (
            f"{shown} occurs **{table.total:,} times** in the training text, so the "
            f"{len(used) + 1}-gram model has a count ratio for every next token."
        )
    else:
        why = (
            f"{shown} occurs **0 times** in the training text: the count ratio is 0/0, so the "
            f"{len(used) + 1}-gram model has nothing to say, although the context is ordinary "
            "English. The GPT still gives a distribution, and Kneser-Ney backs off to shorter "
            "contexts that did occur."
        )
    return Truth("number", table.total, why, unit="times", numbers=numbers)


@answer_kind("choice")
def gpt_beats_counts(subject: Subject) -> Truth:
    """Whether the GPT's validation loss beats the best Kneser-Ney model, per token."""
    bundle = subject.bundle
    models = token_models(bundle)
    options = ("yes", "no")
    if models is None:
        return _no_text("choice", options)
    # the loss recorded for the weights on screen, as the N-grams page reads it (a snapshot's
    # last evaluation by its step, else the final step's, which the sentence then names)
    recorded = tr.val_loss_at(bundle.history, bundle.meta, bundle.step)
    kn_bits = [x / ng.LN2 for x in models.scores.kneser_ney]
    claim = ng.gpt_vs_counts_claim(
        bundle.name,
        None if recorded is None else recorded.loss / ng.LN2,
        models.scores.orders,
        kn_bits,
        bundle.config.causal,
        recorded,
        bundle.step,
    )
    value = "yes" if claim.made else "no"
    return Truth(
        "choice", value, claim.text, options, holds=claim.made, numbers=dict(claim.numbers)
    )


# ---- interventions (the Interventions page) -----------------------------------------------------


def validation_windows(subject: Subject) -> torch.Tensor:
    """The Interventions page's held-out windows (N, T + 1): the end of the training text, else
    the prompt."""
    bundle = subject.bundle
    text = iv.validation_text(bundle.meta)
    ids = bundle.tokenizer.encode(text) if text else list(subject.ids)
    return iv.validation_windows(ids, bundle.config.n_ctx, VAL_TOKENS)


@answer_kind("choice")
def most_damaging_head(subject: Subject) -> Truth:
    """The head whose zero-ablation raises the held-out loss most, beyond noise."""
    cfg = subject.bundle.config
    options = (*head_names(cfg.n_layer, cfg.n_head), NONE)
    windows = validation_windows(subject)
    stats = iv.head_sweep_stats(subject.bundle.model, windows, "zero")
    # as the page: a head beyond noise must also beat a head of the same shape with random weights
    blank = untrained_sweep(subject.bundle, windows, stats)
    claim = iv.head_sweep_claim(stats, untrained=blank)
    beyond = needed_heads(stats, blank)
    numbers = dict(claim.numbers)
    if not beyond.any():
        return Truth("choice", NONE, claim.text, options, holds=False, numbers=numbers)
    layer, head = iv.top_heads(np.where(beyond, stats.increase, -np.inf), 1)[0]
    numbers |= {"layer": layer, "head": head, "increase": float(stats.increase[layer, head])}
    return Truth("choice", f"L{layer} H{head}", claim.text, options, numbers=numbers)


def page_patching(subject: Subject) -> tuple[iv.Patching, int, int, int]:
    """The experiment the Interventions page opens Patching on (its suggestion for this prompt),
    and its result: (patching, end, position, token)."""
    bundle, ids = subject.bundle, list(subject.ids)
    tok = bundle.tokenizer
    candidates = iv.candidate_tokens(tok.encode, tok.decode, ids)
    end, pos, token = iv.suggest_experiment(bundle.model, ids, candidates)
    clean = ids[: end + 1]
    result = iv.patching(bundle.model, clean, iv.corrupt(clean, pos, token))
    return result, end, pos, token


@answer_kind("choice")
def patched_head_restores(subject: Subject) -> Truth:
    """Which head, patched from the clean run, brings back at least half of the clean answer."""
    cfg, tok = subject.bundle.config, subject.bundle.tokenizer
    options = (*head_names(cfg.n_layer, cfg.n_head), NO_HEAD)
    if len(subject.ids) < 2:
        why = "The prompt has one token: there is nothing to change and patch."
        return Truth("choice", NO_HEAD, why, options, holds=False)
    result, end, pos, token = page_patching(subject)

    def label(i: int) -> str:  # as the page's sentences show a token: whitespace visible
        return token_text(tok, i).replace(" ", "␣").replace("\n", "↵")

    flip = iv.patching_claim(result, label)
    heads = np.nan_to_num(result.heads, nan=-np.inf)
    layer, head = (int(x) for x in np.unravel_index(int(np.argmax(heads)), heads.shape))
    best = float(result.heads[layer, head])
    numbers = {**flip.numbers, "end": end, "position": pos, "token": token}
    numbers |= {"layer": layer, "head": head, "restored": best, "half": iv.HALF}
    change = (
        f"The page changes token {pos} to “{md_escape(label(token))}” and predicts the token after "
        f"token {end}. {flip.text}"
    )
    if not flip.made:
        why = f"{change} So no head can be named as the one that carries the answer."
        return Truth("choice", NO_HEAD, why, options, holds=False, numbers=numbers)
    if best >= iv.HALF:
        why = (
            f"{change} Patching **L{layer} H{head}**'s output from the clean run restores "
            f"{best:.0%} of the answer: the information that decides it travels through that head."
        )
        return Truth("choice", f"L{layer} H{head}", why, options, numbers=numbers)
    why = (
        f"{change} No head alone restores half of the answer (the most, L{layer} H{head}, "
        f"restores {best:.0%}), so none can be named."
    )
    return Truth("choice", NO_HEAD, why, options, holds=False, numbers=numbers)
