"""Answer kinds for the training lesson (assets/lessons/5_training.toml): how the model on screen
trained, read from its own bundle: the loss of a blind guess, where its validation loss ended
among the counting baselines (analysis/training.py, the Training page's claims), the samples it
wrote (history.json), the snapshots the sidebar's training-step scrubber opens, and whether and
when it learned to copy (analysis/dynamics.py, the Training dynamics page's claims).

A kind about a snapshot takes the step as an argument and loads it from the bundle's folder, so
it answers the same whether the page shows the final model or that snapshot.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache

import numpy as np

from viz_model.analysis import dynamics as dyn
from viz_model.analysis import next_token as nt
from viz_model.analysis import training as tr
from viz_model.analysis.claims import md_escape
from viz_model.analysis.tokens import token_text
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.load import load_bundle
from viz_model.lessons.answers_beyond import SameTokenizer
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, visible_token
from viz_model.model.gpt import GPT
from viz_model.model.sampling import SamplingSettings
from viz_model.text.data import VAL_FRACTION, DataError, TokenData, load_text
from viz_model.training.loop import evaluate

# A random model's first loss is "about a blind guess" within this share of ln V.
BLIND_MARGIN = 0.1
BLIND_TOLERANCE = 0.05  # nats: ln V read off the grey line, to two decimals
LOSS_TOLERANCE = 0.15  # nats: a predicted final validation loss this close counts
WORD_TOLERANCE = 10.0  # percentage points: a predicted share of real words this close counts
NOISE_SE = 2.0  # a rise in the share of real words is claimed beyond this many standard errors
PERPLEXITY_TOLERANCE = 0.2  # a predicted perplexity within 20%
VAL_BATCH, VAL_BATCHES = (
    8,
    8,
)  # a snapshot's validation loss: 64 fixed windows of the validation text
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")

POSITIONS = (
    "below the bigram line",
    "between the unigram and bigram lines",
    "between the blind-guess and unigram lines",
    "no better than a blind guess",
    "not compared (no causal mask, or no baseline)",
)
PHASES = (
    "a sudden drop",
    "a gradual fall",
    "cannot tell: the saved steps are too far apart",
    "no fall: it never learned to copy",
)


# ---- the loss against the counting baselines (the Training page) --------------------------------


@answer_kind("number")
def blind_guess_loss(subject: Subject) -> Truth:
    """The loss of a blind guess over the vocabulary, ln V, and the run's first loss beside it."""
    V = subject.bundle.tokenizer.vocab_size
    blind = math.log(V)
    first = next(
        (
            float(r["train_loss"])
            for r in subject.bundle.history
            if isinstance(r, dict) and isinstance(r.get("train_loss"), int | float)
        ),
        None,
    )
    numbers = {"vocab": V, "blind": blind, "tolerance": BLIND_TOLERANCE}
    why = (
        f"A blind guess gives each of the {V} tokens probability 1/{V}, so every token costs "
        f"−ln(1/{V}) = ln {V} = **{blind:.2f} nats**: the grey “blind guess” line."
    )
    if first is None:
        why += " This model recorded no training loss to compare it with."
        return Truth("number", blind, why, holds=False, tolerance=BLIND_TOLERANCE, numbers=numbers)
    numbers["first_loss"] = first
    near = abs(first - blind) <= BLIND_MARGIN * blind
    why += f" “{md_escape(subject.bundle.name)}”'s first training step scored {first:.2f}: " + (
        "its random weights started out guessing about blindly."
        if near
        else f"more than {BLIND_MARGIN:.0%} away from a blind guess, so its start was no blind "
        "guess."
    )
    return Truth("number", blind, why, holds=near, tolerance=BLIND_TOLERANCE, numbers=numbers)


def _baselines(bundle: Bundle) -> dict[str, float] | None:
    found = tr.bundle_baselines(bundle)
    return found.as_dict() if found else None


@answer_kind("choice")
def loss_among_baselines(subject: Subject) -> Truth:
    """Where the last validation loss sits among the counting baselines (the grey lines)."""
    bundle = subject.bundle
    claim = tr.baseline_claim(bundle.history, _baselines(bundle), bundle.config.causal)
    n = claim.numbers
    if not {"val_loss", "bigram", "unigram", "blind"} <= set(n):
        value = POSITIONS[4]
    elif n["val_loss"] < n["bigram"]:
        value = POSITIONS[0]
    elif n["val_loss"] < n["unigram"]:
        value = POSITIONS[1]
    elif n["val_loss"] < n["blind"]:
        value = POSITIONS[2]
    else:
        value = POSITIONS[3]
    return Truth("choice", value, claim.text, POSITIONS, holds=claim.made, numbers=dict(n))


@answer_kind("number")
def val_loss_at(subject: Subject, step: int = 0) -> Truth:
    """The validation loss of the last evaluation at or before `step`, and whether training on
    from there still lowered it."""
    history = subject.bundle.history
    _, at = tr.losses_at(history, step)
    claim = tr.loss_claim(history)
    numbers = {"step": step, **claim.numbers, "tolerance": LOSS_TOLERANCE}
    if at is None or "last" not in claim.numbers:
        why = f"This model recorded no validation loss by step {step:,}. {claim.text}"
        return Truth("number", 0.0, why, holds=False, unit="nats", numbers=numbers)
    evaluated = max(
        r["step"]
        for r in history
        if isinstance(r, dict) and isinstance(r.get("val_loss"), int | float) and r["step"] <= step
    )
    last, final_step = claim.numbers["last"], int(claim.numbers["last_step"])
    numbers |= {"val_loss": at, "evaluated": evaluated}
    kept_falling = last < at - tr.LOSS_CHANGE
    why = (
        f"At step {evaluated:,} the validation loss was **{at:.3f} nats per token** (answers "
        f"within ±{LOSS_TOLERANCE} count). "
    )
    ran_to = max((r["step"] for r in history if isinstance(r, dict) and "step" in r), default=0)
    if evaluated >= final_step:  # no later evaluation: nothing to say about training on
        numbers["ran_to"] = ran_to
        why += (
            f"This model trained only to step {ran_to:,}, not to step {step:,}: that is its last "
            "evaluation, so there is no later loss to compare it with."
            if step > ran_to
            else "That is its last evaluation, so there is no later loss to compare it with."
        )
        return Truth(
            "number", at, why, holds=False, tolerance=LOSS_TOLERANCE, unit="nats", numbers=numbers
        )
    if kept_falling:
        why += (
            f"Training on to step {final_step:,} lowered it to {last:.3f}: the longer run was "
            f"worth {at - last:.2f} nats per token."
        )
    else:
        why += (
            f"By step {final_step:,} it was {last:.3f}: training on from there did not lower it "
            f"by more than {tr.LOSS_CHANGE} nats."
        )
    return Truth(
        "number",
        at,
        why,
        holds=kept_falling,
        tolerance=LOSS_TOLERANCE,
        unit="nats",
        numbers=numbers,
    )


# ---- the samples it wrote ---------------------------------------------------------------------


@lru_cache(maxsize=4)
def _corpus_words(source_key: str) -> frozenset[str] | None:
    """Every word (letters and apostrophes, lower case) of a training text, once per text."""
    try:
        text = load_text(json.loads(source_key))
    except (OSError, KeyError, TypeError, ValueError, DataError):
        return None
    return frozenset(w.lower() for w in WORD.findall(text))


def _real_share(sample: str, words: frozenset[str]) -> tuple[float, int]:
    """(share of the sample's words found in the training text, how many words it has)."""
    found = WORD.findall(sample)
    if not found:
        return 0.0, 0
    return sum(w.lower() in words for w in found) / len(found), len(found)


def _binomial_se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.0) / n) if n else math.inf


@answer_kind("number")
def sample_real_words(subject: Subject, step: int = 0) -> Truth:
    """The share (%) of the words in the sample written at `step` that occur in the training text."""
    samples = dict(tr.samples(subject.bundle.history))
    source = subject.bundle.meta.get("data")
    words = _corpus_words(json.dumps(source, sort_keys=True)) if isinstance(source, dict) else None
    if step not in samples or words is None:
        missing = "recorded no sample at that step" if step not in samples else "names no text"
        why = f"This model {missing}, so there is nothing to count (step {step:,})."
        return Truth("number", 0.0, why, holds=False, unit="%", numbers={"step": step})
    share, n = _real_share(samples[step], words)
    first_step, last_step = min(samples), max(samples)
    first, n_first = _real_share(samples[first_step], words)
    last, n_last = _real_share(samples[last_step], words)
    noise = NOISE_SE * math.hypot(_binomial_se(first, n_first), _binomial_se(last, n_last))
    rose = last - first > noise
    numbers = {"share": 100 * share, "words": n, "first": 100 * first, "last": 100 * last}
    numbers |= {"first_step": first_step, "last_step": last_step, "noise": 100 * noise}
    why = (
        f"Of the {n} words in the sample written at step {step:,}, **{share:.0%}** occur "
        f"somewhere in its corpus (answers within ±{WORD_TOLERANCE:g} points count). From its "
        f"first sample (step {first_step:,}) to its last (step {last_step:,}) the share goes "
        f"from {first:.0%} to {last:.0%}"
    )
    if rose:
        why += f", a rise beyond the noise of so few words (±{noise:.0%}): it learned to spell."
    else:
        why += f", within the noise of so few words (±{noise:.0%}): no rise can be claimed."
    return Truth(
        "number",
        100 * share,
        why,
        holds=rose,
        tolerance=WORD_TOLERANCE,
        unit="%",
        numbers=numbers,
    )


# ---- looking back through the snapshots (the sidebar's training-step scrubber) -------------------


def _snapshot(bundle: Bundle, step: int) -> GPT | None:
    """The weights saved at `step`, or None when the bundle kept none there."""
    if step not in bundle.snapshot_steps():
        return None
    try:
        return bundle.load_snapshot(step)
    except CheckpointError:
        return None


def _final_model(bundle: Bundle) -> GPT:
    """The final weights from disk: the subject may carry a snapshot's model (the scrubber)."""
    weights = bundle.path / "model.safetensors"
    return _final_model_at(str(bundle.path), weights.stat().st_mtime_ns if weights.exists() else 0)


@lru_cache(maxsize=4)
def _final_model_at(path: str, mtime: int) -> GPT:
    """Loaded once per folder and weights file (the mtime: a retrained model reloads)."""
    return load_bundle(path).model


def _source_key(bundle: Bundle) -> str | None:
    """The bundle's training text as a cache key (its meta["data"]), or None when it says none."""
    source = bundle.meta.get("data")
    return json.dumps(source, sort_keys=True) if isinstance(source, dict) else None


def _unigram_top(bundle: Bundle) -> int | None:
    """The most frequent token of the training text in this tokenizer, or None."""
    key = _source_key(bundle)
    return None if key is None else _most_common(key, SameTokenizer.of(bundle.tokenizer))


@lru_cache(maxsize=4)
def _token_data(source_key: str, tok: SameTokenizer) -> TokenData | None:
    """The training text encoded as training encodes it (its validation share), or None."""
    source = json.loads(source_key)
    try:
        text = load_text(source)
        return TokenData.from_text(text, tok.tokenizer, source.get("val_fraction", VAL_FRACTION))
    except (OSError, KeyError, TypeError, ValueError, DataError):
        return None


@lru_cache(maxsize=4)
def _most_common(source_key: str, tok: SameTokenizer) -> int | None:
    """Counted once per text and tokenizer, over both splits."""
    data = _token_data(source_key, tok)
    if data is None:
        return None
    ids = np.concatenate([data.train.numpy(), data.val.numpy()])
    return int(np.bincount(ids, minlength=tok.tokenizer.vocab_size).argmax())


def _val_loss(bundle: Bundle, model: GPT) -> float | None:
    """The validation loss of `model` (a snapshot of `bundle`) on VAL_BATCHES fixed windows of
    the validation split, as training evaluates; None when the text is not known."""
    key = _source_key(bundle)
    data = None if key is None else _token_data(key, SameTokenizer.of(bundle.tokenizer))
    if data is None:
        return None
    return evaluate(model, data, VAL_BATCH, VAL_BATCHES)


def _loss_verdict(bundle: Bundle, model: GPT, step: int, numbers: dict) -> tuple[str, str]:
    """(where the validation loss at `step` sits among the counting baselines, in words from
    analysis/training.baseline_claim; what that says a model whose favourite is the most common
    token has learned). Both "" when the loss or the baselines cannot be measured; numbers gains
    val_loss, blind, unigram and bigram."""
    loss, base = _val_loss(bundle, model), tr.bundle_baselines(bundle)
    if loss is None or base is None:
        return "", ""
    claim = tr.baseline_claim([{"step": step, "val_loss": loss}], base.as_dict())
    numbers.update(claim.numbers)
    if loss < base.unigram:
        learned = (
            "Counting how often tokens occur cannot get below the unigram line, so it has begun "
            "to learn what follows what, not yet enough to change its guess here."
        )
    else:
        learned = "It has learned how often tokens occur, not yet what follows what."
    return claim.text, learned


@answer_kind("token")
def snapshot_next_token(subject: Subject, step: int = 0) -> Truth:
    """The most likely next token after the prompt, as the model was at training step `step`."""
    bundle, ids = subject.bundle, list(subject.ids)
    model = _snapshot(bundle, step)
    if model is None:
        why = f"This model kept no snapshot at step {step:,}, so it cannot be asked then."
        return Truth("token", "", why, holds=False, numbers={"step": step})
    probs = nt.distribution(nt.prompt_logits(model, ids)[-1], SamplingSettings()).base_probs
    top = int(probs.argmax())
    final = nt.distribution(
        nt.prompt_logits(_final_model(bundle), ids)[-1], SamplingSettings()
    ).base_probs
    final_top = int(final.argmax())
    common = _unigram_top(bundle)
    tok = bundle.tokenizer

    def shown(i: int) -> str:
        return md_escape(visible_token(token_text(tok, i)))

    numbers = {"step": step, "top": top, "p_top": float(probs[top]), "final_top": final_top}
    why = (
        f"At step {step:,} the model's favourite is {shown(top)} (p = {float(probs[top]):.2f}); "
        f"fully trained it is {shown(final_top)} (p = {float(final[final_top]):.2f})."
    )
    if common is None:
        why += " The training text is not known, so it cannot be compared with counting."
        return Truth("token", token_text(tok, top), why, holds=False, numbers=numbers)
    numbers["most_common"] = common
    where, learned = _loss_verdict(bundle, model, step, numbers)
    if top == common:
        why += f" {shown(common)} is simply the most common token of its corpus."
        why += (
            f" {where} {learned}"
            if where
            else (
                " Its loss at this step cannot be measured here, so how much more it has learned "
                "is not said."
            )
        )
    else:
        why += (
            f" The most common token of its corpus is {shown(common)}: at this step the "
            "model already predicts something else than how often tokens occur."
        )
        why += f" {where}" if where else ""
    return Truth("token", token_text(tok, top), why, holds=top == common, numbers=numbers)


@answer_kind("number")
def snapshot_perplexity(subject: Subject, step: int = 0) -> Truth:
    """The prompt's perplexity as the model was at training step `step`."""
    bundle, ids = subject.bundle, list(subject.ids)
    model = _snapshot(bundle, step)
    V = bundle.tokenizer.vocab_size
    if model is None or len(ids) < 2:
        what = f"kept no snapshot at step {step:,}" if model is None else "needs two tokens"
        return Truth("number", 0.0, f"This model {what}.", holds=False, numbers={"step": step})
    ppl = nt.perplexity(nt.surprisal(nt.prompt_logits(model, ids), ids))
    final = nt.perplexity(nt.surprisal(nt.prompt_logits(_final_model(bundle), ids), ids))
    tolerance = PERPLEXITY_TOLERANCE * ppl
    numbers = {"step": step, "perplexity": ppl, "final": final, "vocab": V}
    numbers["tolerance"] = tolerance
    why = (
        f"At step {step:,} the prompt's perplexity is **{ppl:.1f}** (answers within "
        f"{PERPLEXITY_TOLERANCE:.0%}, ±{tolerance:.1f}, count); fully trained, {final:.1f}. A "
        f"blind guess over the {V} tokens scores {V}."
    )
    causal = bundle.config.causal
    if not causal:
        why += " " + nt.lookahead_claim(causal).text
    return Truth(
        "number",
        ppl,
        why,
        holds=causal and ppl > final,
        tolerance=tolerance,
        numbers=numbers,
    )


# ---- the induction phase change (the Training dynamics page) -----------------------------------


def _dynamics(bundle: Bundle) -> dyn.Dynamics | None:
    """The Training dynamics page's measurement (its probe, every saved step), once per bundle
    folder and weights file, as the page measures it once per model."""
    weights = bundle.path / "model.safetensors"
    mtime = weights.stat().st_mtime_ns if weights.exists() else 0
    return _dynamics_at(str(bundle.path), mtime)


@lru_cache(maxsize=2)
def _dynamics_at(path: str, mtime: int) -> dyn.Dynamics | None:
    """Head-role scores are measured on one sequence only: the copying and phase claims read only
    the losses and the accuracies, measured on every sequence as on the page."""
    return dyn.bundle_dynamics(load_bundle(path), n_roles=1)


@answer_kind("choice")
def copy_phase_change(subject: Subject) -> Truth:
    """Whether the loss on the second copy of repeated text falls in a sudden drop."""
    d = _dynamics(subject.bundle)
    if d is None:
        why = "This model kept no snapshots before its final weights: no training to look back on."
        return Truth("choice", PHASES[3], why, PHASES, holds=False)
    copying = dyn.copying_claim(d)
    phase = dyn.phase_change_claim(d, copying)
    if not copying.made:
        value = PHASES[3]
    elif phase.made:
        value = PHASES[0]
    elif phase.numbers.get("largest_spacing", 0.0) > phase.numbers["window"]:
        value = PHASES[2]
    else:
        value = PHASES[1]
    numbers = {**phase.numbers, "copying": float(copying.made)}
    return Truth("choice", value, phase.text, PHASES, holds=phase.made, numbers=numbers)


@answer_kind("number")
def copy_half_learned_step(subject: Subject) -> Truth:
    """The training step by which copying is half learned (0 when it never is)."""
    d = _dynamics(subject.bundle)
    if d is None:
        why = "This model kept no snapshots before its final weights: no training to look back on."
        return Truth("number", 0, why, holds=False)
    copying = dyn.copying_claim(d)
    numbers = dict(copying.numbers)
    if not copying.made:
        return Truth("number", 0, copying.text + " (The answer is 0: no such step.)", holds=False)
    half = int(numbers["half_step"])
    i = int(np.flatnonzero(d.steps == half)[0])
    # the measurement's resolution: the saved steps on either side of it
    spacing = [int(d.steps[j + 1] - d.steps[j]) for j in (i - 1, i) if 0 <= j < len(d.steps) - 1]
    tolerance = float(max(spacing, default=0))
    numbers["tolerance"] = tolerance
    why = (
        f"{copying.text} Answers within {tolerance:,.0f} steps (the spacing of the saved steps "
        "around it) count."
    )
    return Truth("number", half, why, tolerance=tolerance, unit="steps", numbers=numbers)
