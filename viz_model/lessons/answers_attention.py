"""Answer kinds for the attention lesson (assets/lessons/2_attention.toml): one query row by hand,
the causal mask, what each head is for, and the induction head confirmed by ablating it.

Each kind measures with what the Attention and Interventions pages use: `attention_run` and
`run_query_arithmetic` (analysis/attention.py), the role claims with their chance baselines
(analysis/head_roles.py, induction on the page's repeated random sequence: seed 0, the default
copy length), and ablations with their noise (analysis/labs/interventions/ablation.py). Positions
may be given from the end (-1 is the last token), as the page's query selector opens on the last
one.
Not here: the page's figures and caches.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from viz_model.analysis import attention as at
from viz_model.analysis import head_roles as hr
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs import interventions as iv
from viz_model.analysis.tokens import token_text
from viz_model.analysis.untrained import untrained_twin
from viz_model.bundles.checkpoint import Bundle
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, visible_token
from viz_model.model.mask import attention_mask
from viz_model.model.scale import view_tokens

NONE = "none of them"
YES, NO = "yes", "no"
RANDOM_SEED = 0  # the Attention page's repeated random sequence (ui/attention/runs.py)
N_SEQUENCES = 32  # repeated random sequences the ablation's second-copy loss is averaged over
FUTURE = ("none: exactly 0", "some, but under half", "half or more")


def head_name(layer: int, head: int) -> str:
    """'L1 H2', as the Attention page names a head."""
    return f"L{layer} H{head}"


def _label(subject: Subject, position: int) -> str:
    return md_escape(visible_token(token_text(subject.bundle.tokenizer, subject.ids[position])))


def _index(position: int, T: int) -> int | None:
    """A position counted from the end when negative; None when outside the prompt."""
    i = position + T if position < 0 else position
    return i if 0 <= i < T else None


def _no_head(subject: Subject, layer: int, head: int, form: str, value, options=()) -> Truth | None:
    """A holds=False Truth when the model has no such head (or the prompt is empty), else None."""
    cfg = subject.bundle.config
    if 0 <= layer < cfg.n_layer and 0 <= head < cfg.n_head and subject.ids:
        return None
    why = (
        f"This model has {cfg.n_layer} layer(s) of {cfg.n_head} heads: there is no "
        f"{head_name(layer, head)} to measure."
        if subject.ids
        else "The prompt is empty: there is nothing to attend to."
    )
    return Truth(form, value, why, tuple(options), holds=False)


@torch.no_grad()
def _run(subject: Subject) -> at.AttentionRun:
    return at.attention_run(subject.bundle.model, list(subject.ids))


# ---- one row of one head --------------------------------------------------------------------


@answer_kind("token")
def top_key(subject: Subject, layer: int = 0, head: int = 0, query: int = -1) -> Truth:
    """The token that `query` (default: the last token) gives the most attention in one head."""
    missing = _no_head(subject, layer, head, "token", "")
    if missing:
        return missing
    T = len(subject.ids)
    q = _index(query, T)
    if q is None:
        return Truth("token", "", f"The prompt has no position {query}.", holds=False)
    row = _run(subject).pattern[layer, head, q]  # (T,) weights over the keys
    k = int(np.argmax(row))
    visible = int(attention_mask(subject.bundle.config, T)[q].sum())
    even = 1.0 / visible
    sharp = row[k] - even >= hr.CHANCE_MARGIN
    back = q - k
    where = (
        "itself"
        if back == 0
        else f"{abs(back)} position{'s' * (abs(back) != 1)} "
        + ("before it" if back > 0 else "after it")
    )
    why = (
        f"In {head_name(layer, head)}, the query {_label(subject, q)} (position {q}) gives "
        f"**{row[k]:.2f}** of its attention to {_label(subject, k)} at position {k}, {where}; "
        f"spread evenly over the {visible} tokens it may read, each would get {even:.2f}."
    )
    if not sharp:
        why += (
            f" That is less than {hr.CHANCE_MARGIN} above even attention: this row does not "
            "single out one token."
        )
    token = token_text(subject.bundle.tokenizer, subject.ids[k])
    numbers = {"weight": float(row[k]), "even": even, "position": k, "query": q}
    return Truth("token", token, why, holds=bool(sharp), numbers=numbers)


@answer_kind("number")
def attention_score(
    subject: Subject, layer: int = 0, head: int = 0, query: int = -1, key: int = -2
) -> Truth:
    """The score q·k / √d_head of one query against one key, before softmax (the page's
    'work out one row by hand' steps 2 and 3)."""
    missing = _no_head(subject, layer, head, "number", 0.0)
    if missing:
        return missing
    T = len(subject.ids)
    q, k = _index(query, T), _index(key, T)
    if q is None or k is None:
        return Truth("number", 0.0, f"The prompt has no position {query} or {key}.", holds=False)
    arith = at.run_query_arithmetic(_run(subject), layer, head, q)
    E = arith.d_head
    dot, score, weight = float(arith.dots[k]), float(arith.scaled[k]), float(arith.pattern[k])
    numbers = {"dot": dot, "score": score, "d_head": E, "weight": weight}
    if not arith.visible[k]:
        why = (
            f"The key {_label(subject, k)} (position {k}) comes after the query "
            f"{_label(subject, q)} (position {q}): the causal mask sets its score to −∞, so its "
            f"weight is exactly 0. Before the mask, q·k / √{E} = {score:.2f}."
        )
        return Truth("number", score, why, holds=False, tolerance=0.01, numbers=numbers)
    why = (
        f"In {head_name(layer, head)}, query {_label(subject, q)} (position {q}) against key "
        f"{_label(subject, k)} (position {k}): q·k = {dot:.4f}, and √d_head = √{E} = "
        f"{math.sqrt(E):.4f}, so the score is {dot:.4f} / {math.sqrt(E):.4f} = **{score:.4f}**. "
        f"After softmax over the row that key gets weight {weight:.3f}. (Any answer within 0.01 "
        "counts: two decimals.)"
    )
    return Truth("number", score, why, tolerance=0.01, numbers=numbers)


@answer_kind("choice")
def future_share(subject: Subject, layer: int = 0, head: int = 0, query: int = 2) -> Truth:
    """How much of one query's attention goes to the tokens after it: exactly 0 with a causal
    mask, more than 0 without (holds when the measurement says what the model's mask implies)."""
    missing = _no_head(subject, layer, head, "choice", FUTURE[0], FUTURE)
    if missing:
        return missing
    T = len(subject.ids)
    q = _index(query, T)
    if q is None:
        why = f"The prompt has no position {query}."
        return Truth("choice", FUTURE[0], why, FUTURE, holds=False)
    row = _run(subject).pattern[layer, head, q]  # (T,)
    share = float(row[q + 1 :].sum())
    value = FUTURE[0] if share == 0 else FUTURE[1] if share < 0.5 else FUTURE[2]
    causal = subject.bundle.config.causal
    later = T - 1 - q
    why = (
        f"In {head_name(layer, head)}, the query {_label(subject, q)} (position {q}) puts "
        f"**{share:.3g}** of its attention on the {later} token{'s' * (later != 1)} after it. "
    )
    if causal:
        why += (
            "The causal mask set their scores to −∞ before the softmax, and exp(−∞) = 0: a "
            "token cannot read the future, so it must predict the next token, not copy it."
            if share == 0
            else "This model has a causal mask, yet some weight leaks to later tokens."
        )
    else:
        nxt = float(row[q + 1]) if later else 0.0
        why += (
            "This model was trained **without** a causal mask: it may read the tokens after it, "
            f"and {nxt:.2f} goes to the very next one, the token it is asked to predict: it can "
            "copy the answer instead of predicting it."
        )
    holds = (share == 0) == causal and later > 0
    return Truth("choice", value, why, FUTURE, holds=holds, numbers={"share": share})


# ---- what each head is for ----------------------------------------------------------------------


@torch.no_grad()
def _prompt_scores(subject: Subject) -> at.HeadScores:
    b = subject.bundle
    pattern = _run(subject).pattern
    return at.head_scores(pattern, list(subject.ids), b.config.causal, b.tokenizer.special_ids)


def _head_options(bundle: Bundle, layer: int) -> tuple[str, ...]:
    return tuple(head_name(layer, h) for h in range(bundle.config.n_head)) + (NONE,)


@answer_kind("number")
def head_offset(subject: Subject, layer: int = 0, head: int = 0) -> Truth:
    """How many positions back one head looks (0 = itself, 1 = the previous token), named only
    when the page's role test passes (a fixed-offset role beyond chance)."""
    missing = _no_head(subject, layer, head, "number", 0)
    if missing:
        return missing
    scores = _prompt_scores(subject)
    tests = hr.role_tests(scores, layer, head)
    offsets = {"self": 0, "previous-token": 1}
    positional = [
        (offsets.get(t.role) if t.role in offsets else int(t.role.split()[1]), t)
        for t in tests
        if t.role in offsets or t.role.endswith("back")
    ]
    k, best = max(positional, key=lambda kt: kt[1].score)
    claim = hr.head_role_claim(scores, layer, head)
    why = (
        f"{head_name(layer, head)} puts **{best.score:.2f}** of its attention on the token "
        f"**{k}** position{'s' * (k != 1)} back (even attention would put {best.chance:.2f}, "
        f"over {best.eligible} query positions). The page's verdict: {claim.text}"
    )
    numbers = {"score": best.score, "chance": best.chance, "offset": k}
    return Truth("number", k, why, holds=best.passed, numbers=numbers)


@answer_kind("choice")
def previous_token_head(subject: Subject, layer: int = 0) -> Truth:
    """Which head of `layer` puts the most attention on the token just before, claimed only
    beyond chance on the prompt (else 'none of them')."""
    b = subject.bundle
    options = _head_options(b, layer)
    missing = _no_head(subject, layer, 0, "choice", NONE, options)
    if missing:
        return missing
    scores = _prompt_scores(subject)
    tests = [
        next(t for t in hr.role_tests(scores, layer, h) if t.role == "previous-token")
        for h in range(b.config.n_head)
    ]
    passed = [h for h, t in enumerate(tests) if t.passed]
    listed = "; ".join(
        f"{head_name(layer, h)} {t.score:.2f}" for h, t in enumerate(tests) if t.measured
    )
    chance = tests[0].chance
    if not passed:
        why = (
            f"No head of layer {layer} passes the page's previous-token test (a score of at "
            f"least {hr.ROLE_THRESHOLD} and {hr.CHANCE_MARGIN} above chance {chance:.2f}, over "
            f"{tests[0].eligible} positions). Their scores: {listed}."
        )
        return Truth("choice", NONE, why, options, holds=False, numbers={"passed": 0})
    best = max(passed, key=lambda h: tests[h].score)
    others = [head_name(layer, h) for h in passed if h != best]
    why = (
        f"**{head_name(layer, best)}** puts {tests[best].score:.2f} of its attention on the token "
        f"just before, where even attention would put {chance:.2f} (over {tests[best].eligible} "
        f"query positions). All heads of layer {layer}: {listed}."
        + (f" {', '.join(others)} also pass{'es' * (len(others) == 1)} the test." if others else "")
    )
    numbers = {"passed": len(passed), "score": tests[best].score, "chance": chance}
    return Truth("choice", head_name(layer, best), why, options, numbers=numbers)


def _random_sequences(bundle: Bundle, n: int) -> np.ndarray:
    """(n, 2k) the page's repeated random sequences, seeds 0..n-1 (seed 0 is the page's own)."""
    test = at.induction_test(bundle.tokenizer, bundle.meta, view_tokens(bundle.config))
    rows = [
        at.repeated_random_tokens(test.token_ids, test.default_length, seed=RANDOM_SEED + s)
        for s in range(n)
    ]
    return np.stack(rows)


@torch.no_grad()
def second_copy_rise(bundle: Bundle, layer: int, head: int) -> tuple[float, float, int]:
    """(mean rise, its standard error, copy length k): how much zero-ablating one head raises the
    loss on the second copy of N_SEQUENCES repeated random sequences (the tokens k+1..2k-1, the
    ones only copying can predict), the error from the spread over the sequences."""
    seqs = torch.as_tensor(_random_sequences(bundle, N_SEQUENCES))  # (N, 2k)
    k = seqs.shape[1] // 2
    windows = seqs  # each sequence is one window: inputs [:-1], next tokens [1:]
    hooks = iv.ablation_hooks(bundle.model, iv.Ablation(heads=((layer, head),)))
    before = iv.token_losses(bundle.model, windows)  # (N, 2k-1)
    after = iv.token_losses(bundle.model, windows, hooks)
    rise = (after - before)[:, k : 2 * k - 1].mean(1)  # (N,) per sequence, second copy only
    se = float(rise.std(ddof=1) / math.sqrt(len(rise)))
    return float(rise.mean()), se, k


@answer_kind("choice")
def induction_head(subject: Subject, layer: int = 1, present: bool = True) -> Truth:
    """Which head of `layer` is the induction head: the page's role test on its repeated random
    sequence, confirmed by ablating it (the loss on the second copy rises beyond noise).
    present=False: the lesson expects none (a one-layer model), and holds when none passes."""
    b = subject.bundle
    options = _head_options(b, layer)
    missing = _no_head(subject, layer, 0, "choice", NONE, options)
    if missing:
        return missing
    ids = _random_sequences(b, 1)[0]
    with torch.no_grad():
        pattern = at.attention_run(b.model, ids.tolist()).pattern
    rand = at.head_scores(pattern, ids, b.config.causal, b.tokenizer.special_ids)
    scores = _prompt_scores(subject)
    tests = [
        next(t for t in hr.role_tests(scores, layer, h, rand) if t.role == "induction")
        for h in range(b.config.n_head)
    ]
    k = len(ids) // 2
    listed = "; ".join(
        f"{head_name(layer, h)} {t.score:.2f} (chance {t.chance:.2f})"
        for h, t in enumerate(tests)
        if t.measured
    )
    seq = f"{k} random tokens repeated twice (seed {RANDOM_SEED}, as the page draws them)"
    passed = [h for h, t in enumerate(tests) if t.passed]
    if not passed:
        why = (
            f"No head of layer {layer} passes the page's induction test on {seq}: a score of at "
            f"least {hr.ROLE_THRESHOLD}, {hr.CHANCE_MARGIN} above chance. Induction scores: "
            f"{listed}. "
            + (
                "With a single layer there is no earlier layer to tell a head what came before "
                "each token, which an induction head needs."
                if b.config.n_layer == 1
                else ""
            )
        )
        numbers = {"passed": 0}
        return Truth("choice", NONE, why.strip(), options, holds=not present, numbers=numbers)
    best = max(passed, key=lambda h: tests[h].score)
    rise, se, _ = second_copy_rise(b, layer, best)
    confirmed = rise > iv.NOISE_SE * se
    why = (
        f"**{head_name(layer, best)}**: on {seq} it puts {tests[best].score:.2f} of its attention "
        f"on the token that followed the earlier copy of the current one; chance is "
        f"{tests[best].chance:.2f}. Induction scores: {listed}. "
        f"Ablating it (zeroing its output) raises the loss on the second copies of "
        f"{N_SEQUENCES} such sequences by {rise:+.3f} nats per token"
    )
    why += (
        f", beyond noise ({iv.NOISE_SE:g} standard errors = {iv.NOISE_SE * se:.3f}): the model "
        "relies on it to copy."
        if confirmed
        else f", within noise ({iv.NOISE_SE:g} standard errors = {iv.NOISE_SE * se:.3f}): the "
        "ablation does not confirm that the model relies on it."
    )
    numbers = {"score": tests[best].score, "chance": tests[best].chance, "rise": rise, "se": se}
    value = head_name(layer, best)
    holds = bool(confirmed) if present else False
    return Truth("choice", value, why, options, holds=holds, numbers=numbers)


# ---- ablation, as the Interventions page measures it ----------------------------------------------


def page_windows(bundle: Bundle, ids: tuple[int, ...]) -> torch.Tensor:
    """The Interventions page's validation windows (ui/interventions.py): the end of the model's
    training text, held out, else the prompt."""
    text = iv.validation_text(bundle.meta)
    tokens = bundle.tokenizer.encode(text) if text else list(ids)
    return iv.validation_windows(tokens, bundle.config.n_ctx, 512)


@answer_kind("choice")
def ablation_raises_loss(subject: Subject, layer: int = 1, head: int = 0) -> Truth:
    """Does zero-ablating one head raise the held-out loss beyond noise (the Interventions page's
    claim, on its own text)?"""
    missing = _no_head(subject, layer, head, "choice", NO, (YES, NO))
    if missing:
        return missing
    b = subject.bundle
    hooks = iv.ablation_hooks(b.model, iv.Ablation(heads=((layer, head),)))
    with torch.no_grad():
        eff = iv.effect(b.model, list(subject.ids), page_windows(b, subject.ids), hooks)
    claim = iv.loss_change_claim(eff, f"Ablating head L{layer}H{head}")
    raised = claim.made and eff.loss_change > 0
    return Truth(
        "choice", YES if raised else NO, claim.text, (YES, NO), holds=raised, numbers=claim.numbers
    )


@answer_kind("choice")
def most_needed_head(subject: Subject) -> Truth:
    """Which head's ablation raises the held-out loss most, named only beyond noise (the
    Interventions page's sweep)."""
    b = subject.bundle
    cfg = b.config
    options = tuple(
        head_name(layer, h) for layer in range(cfg.n_layer) for h in range(cfg.n_head)
    ) + (NONE,)
    windows = page_windows(b, subject.ids)
    with torch.no_grad():
        sweep = iv.head_sweep_stats(b.model, windows)
        # as the page: a head is needed only beyond what a head of random weights raises it
        blank = untrained_sweep(b, windows, sweep)
    claim = iv.head_sweep_claim(sweep, k=1, untrained=blank)
    if not claim.made:
        return Truth("choice", NONE, claim.text, options, holds=False, numbers=claim.numbers)
    layer, head = iv.top_heads(np.where(needed_heads(sweep, blank), sweep.increase, -np.inf), 1)[0]
    return Truth("choice", head_name(layer, head), claim.text, options, numbers=claim.numbers)


def untrained_sweep(
    bundle: Bundle, windows: torch.Tensor, sweep: iv.HeadSweep, how: str = "zero"
) -> iv.HeadSweep | None:
    """The Interventions page's sweep on the model's untrained twin (its baseline for a head the
    model relies on); None when the model's own sweep cannot tell any head from noise."""
    if not np.isfinite(sweep.se).any():
        return None
    with torch.no_grad():
        return iv.head_sweep_stats(untrained_twin(bundle).model, windows, how)


def needed_heads(sweep: iv.HeadSweep, blank: iv.HeadSweep | None) -> np.ndarray:
    """(L, H) bool: the heads iv.head_sweep_claim names with `blank` as its untrained sweep:
    beyond noise, and beyond the most a head of random weights raises the loss by the noise."""
    se = np.nan_to_num(sweep.se, nan=np.inf)
    measured = blank is not None and np.isfinite(blank.increase).any()
    most = float(np.nanmax(blank.increase)) if measured else -np.inf
    noisy = np.isfinite(sweep.se) & (sweep.increase > iv.NOISE_SE * se)
    return noisy & (sweep.increase - most > iv.NOISE_SE * se)
