"""Sequence models side by side: how far back each one uses the past, what its gates do, and what
reading one more token costs as the context grows (the "Sequence models" page).

- `sensitivity(model, windows)`: for each distance k, how much the log-probability of the next
  token at a window's last position moves with the token embedding k steps back: the norm of the
  gradient d log p(x_T | x_<T) / d e_(T-1-k), averaged over validation windows. A causal CNN's is
  exactly zero past its receptive field; an RNN's decays with k; a GPT's need not.
- `reach(profile)`: the farthest distance whose sensitivity is still 1% of the nearest one's;
  `reach_claim` sets each model's beside the same model's shape with random weights
  (analysis/untrained.py), a model that learned nothing.
- `score_at(...)`: what a run's records say of its weights at one training step (the sidebar's
  snapshot): the last validation loss evaluated by then and the training tokens read;
  `on_screen_claim` says it of the model on screen.
- `changed_parts(cfg, base)`: what a GPT variant changes of the GPT standing for it, in words.
- `gate_summary(trace)`: an LSTM's or GRU's gates along a prompt, in numbers for the sentences.
- `step_cost(model, T)`: the time of one generation step after T tokens (a recurrent state, the
  CNN's window or the GPT's KV cache), and the numbers it carries; `memory_floats(cfg, T)` counts
  them without running anything.

Shapes: N windows, T tokens, D d_model. Every sentence is a Claim of the numbers it states.

Not here: the models (model/recurrent.py, model/gpt.py), the hand-written cells that expose the
gates (model/recurrent_cells.py), the bits per character (analysis/ngrams.py).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim, as_printed
from viz_model.analysis.reach import reach_profile
from viz_model.analysis.training import final_step, tokens_at, val_loss_at
from viz_model.model.config import ACT_LABELS, GPTConfig
from viz_model.model.families import family_of
from viz_model.model.recurrent_config import FAMILY_LABELS

REACH_FRACTION = 0.01  # "still used" while the sensitivity is at least 1% of the nearest token's
BPC_MARGIN = 0.02  # bits per character: closer than this, two models are "about equal"


# ---- how far back: gradient sensitivity ---------------------------------------------------------


def sensitivity(model: torch.nn.Module, windows: torch.Tensor) -> np.ndarray:
    """(T,) the mean over windows (N, T + 1) of ||d log p(x_T | x_<T) / d e_(T-1-k)||, k = 0..T-1
    (analysis/reach.py, on a copy of the model): index k is the token k steps before the last."""
    return reach_profile(model, windows)


def reach(profile: np.ndarray, fraction: float = REACH_FRACTION) -> int:
    """The farthest distance k whose sensitivity is at least `fraction` of the nearest token's
    (k = 0); 0 when even k = 1 is below it."""
    nearest = float(profile[0])
    if not nearest > 0:
        return 0
    above = np.nonzero(profile >= fraction * nearest)[0]
    return int(above.max())


@dataclass(frozen=True)
class ReachRow:
    """One model's sensitivity profile beside the same measurement on random weights of its shape
    (analysis/untrained.py, on the same windows), and its receptive field (a CNN) or None."""

    name: str
    profile: np.ndarray
    untrained: np.ndarray
    field: int | None = None


REACH_RATIO = 2  # a reach is "farther" than another (or than random weights') at twice it or more


def _farther(a: int, b: int) -> bool:
    return a >= REACH_RATIO * max(b, 1)


def _own(reach: int, chance: int) -> bool:
    """A reach is the model's own at twice its random weights' reach or more."""
    return _farther(reach, chance)


def _listed(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _not_learned(name: str, reach: int, chance: int, subject: str = "") -> str:
    """Why a reach is not the model's own: its random weights reach over half as far."""
    who = subject or name
    return (
        f"with random weights of its shape {who} reaches {chance}, and {reach} is not twice "
        "that, so that distance is not something it learned"
    )


def _tie_sentence(tied: Sequence[str], top: int, chance: dict[str, int]) -> str:
    """Models that reach equally far, and which of them reach twice their random weights'."""
    own = [n for n in tied if _own(top, chance[n])]
    blind = [n for n in tied if not _own(top, chance[n])]
    text = f" {_listed(tied)} reach equally far ({top})"
    if own:
        one = len(own) == 1
        text += (
            f"; {'only ' if blind else ''}{_listed(own)} {'reaches' if one else 'reach'} at "
            f"least twice as far as {'its' if one else 'their'} random weights ("
            + (str(chance[own[0]]) if one else ", ".join(f"{n}: {chance[n]}" for n in own))
            + f"), so that distance is {'its' if one else 'their'} own"
        )
    if blind:
        text += "; " + "; ".join(_not_learned(n, top, chance[n]) for n in blind)
    return text + "."


def reach_claim(rows: Sequence[ReachRow], window: int) -> Claim:
    """Which model uses the farthest past, each reach beside its random-weights twin's (a model
    that learned nothing reaches some distance too). Made when the farthest reach is at least
    twice the nearest's and at least twice its own random weights' (the farthest being one model);
    models tied for the farthest are each held to their random weights' reach, and the sentence
    says which pass; a reach of window - 1 is the end of what this test can see, said as such."""
    reaches = {r.name: reach(r.profile) for r in rows}
    chance = {r.name: reach(r.untrained) for r in rows}
    numbers = {f"reach {name}": float(k) for name, k in reaches.items()}
    numbers |= {f"random-weights reach {name}": float(k) for name, k in chance.items()}
    numbers["fraction"] = REACH_FRACTION
    numbers["window"] = float(window)
    limit = window - 1
    parts = [f"{k} for {name} (random weights: {chance[name]})" for name, k in reaches.items()]
    # a model with receptive field rf reads k = 0 .. rf - 1; the chart shows k = 0 .. window - 1
    inside = [
        f"{r.name} reads only the last {r.field} tokens (its receptive field): from k = "
        f"{r.field} on, its gradient is exactly zero and its line stops"
        for r in rows
        if r.field and r.field < window
    ]
    covers = [f"{r.name}'s ({r.field})" for r in rows if r.field and r.field >= window]
    lead = (
        f"On windows of the validation text, up to k = {limit}: the farthest k at which a token "
        f"still pulls the prediction at 1% or more of the nearest token's pull (the line may dip "
        f"below 1% on the way) is {', '.join(parts)}. Each number in brackets is the same "
        "measurement on the same windows by a model of the same shape with random weights, one "
        "that learned nothing: a reach is the model's own only at twice that or more."
    )
    at_limit = [name for name, k in reaches.items() if k >= limit]
    if at_limit:
        lead += (
            f" {_listed(at_limit)} {'reach' if len(at_limit) > 1 else 'reaches'} k = {limit}, "
            "the end of the window: the limit of this test, so how much farther is not measured."
        )
    if inside:
        lead += " " + "; ".join(inside) + "."
    if covers:
        lead += f" The receptive field {', '.join(covers)} reaches past every k shown."
    if len(reaches) < 2:
        return Claim(lead, False, numbers)
    top = max(reaches.values())
    far = min(name for name, k in reaches.items() if k == top)
    near = min(reaches, key=reaches.get)
    if not _farther(reaches[far], reaches[near]):
        return Claim(f"{lead} No model here reaches twice as far back as another.", False, numbers)
    tied = [name for name, k in reaches.items() if k == top]
    if len(tied) > 1:
        return Claim(lead + _tie_sentence(tied, top, chance), False, numbers)
    if not _own(reaches[far], chance[far]):
        return Claim(
            f"{lead} {far} reaches farthest ({top}), but "
            + _not_learned(far, top, chance[far], subject="it")
            + ".",
            False,
            numbers,
        )
    at_least = "at least " if top >= limit else ""
    return Claim(
        f"{lead} **{far} reaches farthest back ({at_least}{top} tokens, against {chance[far]} "
        f"with random weights); {near} the least ({reaches[near]}).**",
        True,
        numbers,
    )


# ---- which models stand for their family -------------------------------------------------------

# The GPT's parts the architecture contrasts change one at a time (model/config.BLOCK_VARIANTS):
# a GPT with all of them at their defaults is "the GPT" of a comparison between families.
PLAIN_GPT_FIELDS = (
    "pos",
    "norm",
    "norm_kind",
    "residual",
    "mlp",
    "act",
    "attn_only",
    "causal",
    "tie_embeddings",
)


def is_plain_gpt(cfg) -> bool:
    """A GPT-2-style block: every contrasted part at GPTConfig's default, a key-value head per head."""
    if not isinstance(cfg, GPTConfig):
        return False
    defaults = {f.name: f.default for f in dataclasses.fields(GPTConfig)}
    return cfg.n_kv_heads == cfg.n_head and all(
        getattr(cfg, name) == defaults[name] for name in PLAIN_GPT_FIELDS
    )


def one_per_family(candidates: Sequence[tuple[str, str, object]], on_screen: str) -> dict[str, str]:
    """From (name, family, config) rows, one name per family: the model on screen for its own
    family, else (for GPTs) a plain GPT before a variant, else the first name in order."""

    def rank(row: tuple[str, str, object]) -> tuple[bool, bool, str]:
        name, family, cfg = row
        return (name != on_screen, family == "gpt" and not is_plain_gpt(cfg), name)

    chosen: dict[str, str] = {}
    for name, family, _ in sorted(candidates, key=rank):
        chosen.setdefault(family, name)
    return chosen


# ---- bits per character on the same text and budget --------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One model (or n-gram) in the comparison: bits per validation character."""

    name: str
    kind: str  # "GPT", "LSTM", ..., or "n-gram"
    bpc: float
    params: int | None = None


BPC_DIGITS = 3  # bits per character as the page prints them (the table, the sentences)


def printed_gap(a: float, b: float) -> float:
    """b - a in bits per character, of the two as printed (BPC_DIGITS decimals each): the gap a
    reader finds by subtracting the page's numbers.

    >>> printed_gap(2.2614, 2.6766), round(2.6766 - 2.2614, 3)
    (0.416, 0.415)
    """
    return as_printed(as_printed(b, BPC_DIGITS) - as_printed(a, BPC_DIGITS), BPC_DIGITS)


def bpc_claim(entries: Sequence[Entry]) -> Claim:
    """The best network by bits per character (networks within BPC_MARGIN of it tie: one seed
    moves each by about that much), the worst, and the networks against the best n-gram. Every
    difference and comparison is of the numbers as printed (BPC_DIGITS decimals), so a reader who
    subtracts them finds the sentence's."""
    shown = [
        dataclasses.replace(e, bpc=as_printed(e.bpc, BPC_DIGITS))
        for e in entries
        if math.isfinite(e.bpc)
    ]
    nets = [e for e in shown if e.kind != "n-gram"]
    grams = [e for e in shown if e.kind == "n-gram"]
    numbers = {f"bpc {e.name}": e.bpc for e in [*nets, *grams]}
    numbers["margin"] = BPC_MARGIN
    if len(nets) < 2:
        return Claim("Fewer than two networks trained on this text are here to compare.", False)

    def gap(a: Entry, b: Entry) -> float:  # b's bits above a's, as printed
        return printed_gap(a.bpc, b.bpc)

    ranked = sorted(nets, key=lambda e: e.bpc)
    best, worst = ranked[0], ranked[-1]
    order = " < ".join(f"{e.name} {e.bpc:.3f}" for e in ranked)
    tied = [e for e in ranked if gap(best, e) < BPC_MARGIN]
    if gap(best, worst) < BPC_MARGIN:
        text = (
            f"All {len(nets)} networks are within {BPC_MARGIN} bits per character of each "
            f"other ({best.bpc:.3f} to {worst.bpc:.3f}): on this budget the family made no "
            "difference worth stating."
        )
        made = False
    elif len(tied) > 1:
        names = " and ".join(f"{e.name} ({e.kind}, {e.bpc:.3f})" for e in tied)
        text = (
            f"**The best networks here tie: {names}, within {BPC_MARGIN} bits per character, "
            f"which one seed can move; {worst.name} ({worst.kind}) is {gap(best, worst):.3f} "
            f"behind.** In order: {order}."
        )
        made = True
    else:
        text = (
            f"**{best.name} ({best.kind}) is the best network on this text: {best.bpc:.3f} bits "
            f"per character, {gap(best, worst):.3f} fewer than {worst.name} ({worst.kind}).** "
            f"In order: {order}."
        )
        made = True
    if grams:
        gram = min(grams, key=lambda e: e.bpc)
        beaten = [e.name for e in nets if gap(e, gram) > BPC_MARGIN]
        if beaten:
            text += f" {len(beaten)} of {len(nets)} networks beat the best counting model, {gram.name} ({gram.bpc:.3f})."
        elif gap(gram, best) > BPC_MARGIN:
            text += (
                f" Every network scores worse than the best counting model, {gram.name}: "
                f"{gram.bpc:.3f} against the best network's {best.bpc:.3f}."
            )
        else:
            text += (
                f" The best counting model, {gram.name}, scores {gram.bpc:.3f}: within the "
                "margin of the best network."
            )
    return Claim(text, made, numbers)


# ---- the model on screen at the sidebar's training step --------------------------------------


@dataclass(frozen=True)
class StepScore:
    """What a run's records say of its weights at one training step: the last validation loss
    evaluated at or before it (the step it was evaluated at), the training tokens read by each
    (None where the run does not say), and the run's final step."""

    step: int
    final: int | None
    evaluated: int | None  # the step of the last evaluation at or before `step`; None: none yet
    val_loss: float | None  # nats per token, at `evaluated`
    tokens: int | None  # training tokens read by `step`
    tokens_evaluated: int | None  # ... and by `evaluated`
    next_evaluation: int | None  # the first evaluation after `step`, when `evaluated` is None


def score_at(
    history: Sequence[dict], meta: dict, train_config: dict | None, n_ctx: int, step: int
) -> StepScore:
    """The run's records at `step`: the last evaluation by it (training.val_loss_at; before the
    first one there is none, and the final step's is not lent to it), the tokens read by each."""
    history = list(history)
    final = final_step(history, meta)
    found = val_loss_at(history, meta, step)
    if found is not None and found.of_final and final is not None and step < final:
        found = None  # no evaluation by this step: the final one is another model's
    later = [
        r["step"]
        for r in history
        if isinstance(r, dict)
        and isinstance(r.get("step"), int)
        and isinstance(r.get("val_loss"), int | float)
        and r["step"] > step
    ]
    evaluated = None if found is None else found.step
    return StepScore(
        step,
        final,
        evaluated,
        None if found is None else found.loss,
        tokens_at(meta, train_config, n_ctx, step),
        None if evaluated is None else tokens_at(meta, train_config, n_ctx, evaluated),
        None if found is not None or not later else min(later),
    )


def on_screen_claim(
    name: str, kind: str, params: int, score: StepScore, bits: float | None, tuned: bool = False
) -> Claim:
    """The model on screen as the sidebar shows it: its last validation loss by `score.step`, in
    bits per character (`bits`, from score.val_loss), with the step it was evaluated at and the
    training tokens read by then; a snapshot before the final step is named with its step. No
    evaluation yet: said so (step 0 of a run that was not tuned from another model: its random
    weights). The page adds what it does with the model (ranked or not)."""
    snapshot = score.final is not None and score.step < score.final
    who = f"{name} at training step {score.step:,} of {score.final:,}" if snapshot else name
    lead = f"The model on screen, {who} ({kind}, {params:,} parameters), "
    numbers = {"step": float(score.step), "parameters": float(params)}

    def after(tokens: int | None) -> str:
        return "" if tokens is None else f" after {tokens:,} training tokens"

    if score.evaluated is not None and bits is not None:
        numbers |= {"bits per character": bits, "evaluated at": float(score.evaluated)}
        if score.evaluated == score.step:
            return Claim(
                lead + f"scores {bits:.3f} bits per character{after(score.tokens)}", True, numbers
            )
        return Claim(
            lead + f"scored {bits:.3f} bits per character at its last evaluation by then, at "
            f"step {score.evaluated:,}{after(score.tokens_evaluated)}",
            True,
            numbers,
        )
    first = (
        f" (the first evaluation came at step {score.next_evaluation:,})"
        if score.next_evaluation is not None
        else ""
    )
    if score.step == 0 and not tuned:
        text = (
            "is the random weights it started from: it has read no training text, and no "
            f"validation loss is recorded for it{first}"
        )
    else:
        read = "" if score.tokens is None else f"has read {score.tokens:,} training tokens and "
        text = f"{read}has no validation loss recorded by then{first}"
    return Claim(lead + text, False, numbers)


# The parts of a GPT the architecture contrasts change, in words (model/config.BLOCK_VARIANTS).
POSITION_WORDS = {
    "learned": "learned positions",
    "sinusoidal": "sine-wave positions",
    "rope": "RoPE positions",
    "alibi": "ALiBi positions",
    "none": "no positions",
}
NORM_WORDS = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm", "none": "no norm"}
SIZE_FIELDS = ("vocab_size", "n_ctx", "d_model", "n_layer", "n_head", "dropout")


def _mlp_words(cfg: GPTConfig) -> str:
    if cfg.mlp == "gated":
        return "a SwiGLU MLP" if cfg.act == "silu" else f"a gated {ACT_LABELS[cfg.act]} MLP"
    return f"a {ACT_LABELS[cfg.act]} MLP"


def changed_parts(cfg: GPTConfig, base: GPTConfig) -> list[str]:
    """What `cfg` changes of `base`, one phrase per part: positions, where and which norm, the MLP
    (a gated MLP's width comes with it), key-value heads, tied embeddings, biases, attention
    only, the residual, the causal mask, then any size ("d_model 128 against 64").

    >>> changed_parts(GPTConfig(77, pos="rope", norm_kind="rmsnorm", mlp="gated", act="silu",
    ...     bias=False), GPTConfig(77))
    ['RoPE positions', 'RMSNorm', 'a SwiGLU MLP', 'no biases']
    """
    parts = []
    if cfg.pos != base.pos:
        parts.append(POSITION_WORDS.get(cfg.pos, f"{cfg.pos} positions"))
    if cfg.norm != base.norm:  # where the norm sits: "post-LN", a LayerNorm after each sublayer
        parts.append(f"{cfg.norm}-LN" if cfg.norm_kind == "layernorm" else f"{cfg.norm}-norm")
    if cfg.norm_kind != base.norm_kind:
        parts.append(NORM_WORDS.get(cfg.norm_kind, cfg.norm_kind))
    if (cfg.mlp, cfg.act) != (base.mlp, base.act):
        parts.append(_mlp_words(cfg))
    elif cfg.d_mlp != base.d_mlp:
        parts.append(f"d_mlp {cfg.d_mlp} against {base.d_mlp}")
    if cfg.n_kv_heads != base.n_kv_heads:
        n = cfg.n_kv_heads
        parts.append(f"{n} key-value head{'s' if n > 1 else ''} for {cfg.n_head} query heads")
    flags = {
        "tie_embeddings": ("tied embeddings", "untied embeddings"),
        "bias": ("biases", "no biases"),
        "attn_only": ("attention only", "an MLP in each block"),
        "residual": ("a residual stream", "no residual stream"),
        "causal": ("a causal mask", "no causal mask"),
    }
    for field, (on, off) in flags.items():
        if getattr(cfg, field) != getattr(base, field):
            parts.append(on if getattr(cfg, field) else off)
    parts += [
        f"{f} {getattr(cfg, f)} against {getattr(base, f)}"
        for f in SIZE_FIELDS
        if getattr(cfg, f) != getattr(base, f)
    ]
    return parts


# ---- gates along a prompt ------------------------------------------------------------------------


@dataclass(frozen=True)
class GateSummary:
    """Mean of each gate over the prompt and units of one layer, and the share of forget-gate
    values above 0.9 (a cell that keeps what it holds)."""

    means: dict[str, float]
    keep_share: float | None  # LSTM forget > 0.9; GRU update > 0.9 (keeps the old state)


KEEP = 0.9


def gate_summary(gates: dict[str, torch.Tensor]) -> GateSummary:
    """gates: name -> (T, D) activations of one layer (model/recurrent_cells.LayerTrace.gates)."""
    means = {name: float(g.mean()) for name, g in gates.items() if name != "cell"}
    keeper = gates.get("forget", gates.get("update"))
    share = None if keeper is None else float((keeper > KEEP).float().mean())
    return GateSummary(means, share)


def gate_claim(family: str, summary: GateSummary) -> Claim:
    """What the gates did on this prompt, in numbers; neutral for a family without gates."""
    if summary.keep_share is None:
        return Claim(f"An {FAMILY_LABELS.get(family, family)} has no gates to show.", False)
    name = "forget" if family == "lstm" else "update"
    what = (
        "the cell keeps what it holds" if family == "lstm" else "the old state is kept, not mixed"
    )
    means = ", ".join(f"{g} {v:.2f}" for g, v in summary.means.items())
    text = (
        f"Mean gate values on this prompt: {means}. In {summary.keep_share:.0%} of the "
        f"(token, unit) places the {name} gate is above {KEEP}, where {what}."
    )
    numbers = {f"mean {g}": v for g, v in summary.means.items()}
    numbers["keep share"] = summary.keep_share
    return Claim(text, True, numbers)


# ---- what one more token costs ------------------------------------------------------------------


def memory_floats(model: torch.nn.Module, T: int) -> dict[str, int]:
    """Numbers kept to read token T + 1 after T tokens, per sequence, counted from the config:
    "state" (a recurrent state or the CNN's window: constant in T) or "kv cache" (a GPT: 2 x
    layers x T x key-value width), and "attention scores" (a GPT's full forward over T tokens:
    layers x heads x T x T, the T x T table)."""
    cfg = model.cfg
    if family_of(model) != "gpt":
        from viz_model.model.recurrent import state_floats

        return {"state": state_floats(cfg), "attention scores": 0}
    kv_width = cfg.n_kv_heads * cfg.d_head  # keys and values per token per layer, each
    return {
        "kv cache": 2 * cfg.n_layer * T * kv_width,
        "attention scores": cfg.n_layer * cfg.n_head * T * T,
    }


@torch.no_grad()
def step_seconds(model: torch.nn.Module, T: int, repeats: int = 5, seed: int = 0) -> float:
    """Best of `repeats` times (s) of one generation step after T random tokens: the recurrent
    families and the CNN continue their state, a GPT its KV cache. T must fit the model
    (a GPT: T < max_len)."""
    g = torch.Generator().manual_seed(seed)
    vocab = model.cfg.vocab_size
    ids = torch.randint(0, vocab, (1, T + 1), generator=g)
    best = math.inf
    for _ in range(repeats):
        if family_of(model) == "gpt":
            from viz_model.model.gpt import KVCache

            state = KVCache(model.cfg.n_layer)
            model(ids[:, :T], kv_cache=state)
            start = time.perf_counter()
            model(ids[:, T:], kv_cache=state)
        else:
            state = model.new_state()
            model(ids[:, :T], state)
            start = time.perf_counter()
            model(ids[:, T:], state)
        best = min(best, time.perf_counter() - start)
    return best


def cost_claim(rows: Sequence[tuple[str, int, dict[str, int]]]) -> Claim:
    """From (name, T, memory_floats) rows at two or more lengths: which models' memory grows
    with the context and by how much, counted."""
    by_name: dict[str, list[tuple[int, int]]] = {}
    for name, T, floats in rows:
        kept = floats.get("kv cache", floats.get("state", 0))
        by_name.setdefault(name, []).append((T, kept))
    growing, flat = [], []
    numbers: dict[str, float] = {}
    for name, points in by_name.items():
        points.sort()
        (t0, m0), (t1, m1) = points[0], points[-1]
        numbers[f"{name} at {t0}"], numbers[f"{name} at {t1}"] = float(m0), float(m1)
        (growing if m1 > m0 else flat).append(f"{name} ({m0:,} to {m1:,})")
    if not growing or not flat:
        return Claim(
            "Every model here keeps " + ("a growing" if growing else "the same") + " memory "
            "as the context grows.",
            False,
            numbers,
        )
    return Claim(
        f"From the shortest to the longest context, the numbers kept to read one more token "
        f"grow for {', '.join(growing)} and stay the same for {', '.join(flat)}.",
        True,
        numbers,
    )
