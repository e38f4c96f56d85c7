"""Two models on one prompt: what each tokenizer makes of it, how surprised each model is per
character (the unit every tokenizer shares), and what each would write next.

- `read_prompt(tokenizer, n_ctx, prompt)`: the prompt in a model's tokens, cut to its context.
- `prompt_scores(logits, ids, texts, k, id_to_token)`: bits per character on the prompt and the
  top-k next tokens, from the logits (T, V) the model gave it.
- `curves_in(curves, chars_per_token, unit)`: a training curve in nats per token or bits per
  character, so two tokenizers' curves share one axis.
- `validation_cell(found, chars_per_token, shown)`: the validation bits per character of the
  weights on screen, labelled with its step where it was recorded at another.
- `partner(name, infos)`: the model to open beside this one (same text, another tokenizer).
- The token-boundary effect: `cut_inside_token` cuts the prompt inside a token its tokenizer
  keeps whole, `continues_rightly` and `seen_in_training` measure what each model and its
  training text make of the cut, `boundary_claim` says whether the effect shows.

Bits per character = sum over tokens 1..T-1 of -log2 p(token | before) / their characters; the
first token has nothing before it, so neither it nor its characters count.
Not here: charts (charts/compare.py), loading models, streamlit.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from viz_model.analysis.claims import Claim, md_escape
from viz_model.analysis.next_token import LN2, TopTokens, distribution, surprisal, top_tokens
from viz_model.analysis.training import Curves, RecordedLoss, loss_step_label
from viz_model.model.sampling import SamplingSettings
from viz_model.text.data import VAL_FRACTION
from viz_model.text.tokenization import Tokenizer

UNITS = ("bits per character", "nats per token")


@dataclass(frozen=True)
class PromptTokens:
    """ids and texts (T,) of the prompt's last T <= n_ctx tokens; the first n_cut did not fit."""

    ids: list[int]
    texts: list[str]
    n_cut: int

    @property
    def n_chars(self) -> int:
        return sum(len(t) for t in self.texts)


def read_prompt(tokenizer: Tokenizer, n_ctx: int, prompt: str) -> PromptTokens:
    """The prompt as the model reads it: its tokens, the last n_ctx of them (as the frame cuts)."""
    pieces = tokenizer.pieces(prompt)
    kept = pieces[max(0, len(pieces) - n_ctx) :]
    return PromptTokens([p.id for p in kept], [p.text for p in kept], len(pieces) - len(kept))


@dataclass(frozen=True)
class PromptScores:
    """surprisal (T,) in nats (NaN for token 0); bits_per_char over tokens 1..T-1 (NaN when
    T < 2); top: the k most likely next tokens after the whole prompt."""

    surprisal: np.ndarray
    bits_per_char: float
    top: TopTokens


def prompt_scores(logits: np.ndarray, tokens: PromptTokens, k: int, id_to_token) -> PromptScores:
    """Score the prompt with the logits (T, V) its model gave it at every position.

    Example: two tokens "ab" then "c", p("c" | "ab") = 1/2 -> 1 bit over 1 character.
    """
    s = surprisal(logits, tokens.ids)
    chars = sum(len(t) for t in tokens.texts[1:])
    bits = float(np.nansum(s[1:]) / LN2 / chars) if len(tokens.ids) > 1 and chars else math.nan
    top = top_tokens(distribution(logits[-1], SamplingSettings()), k, id_to_token)
    return PromptScores(s, bits, top)


def curves_in(curves: Curves, chars_per_token: float | None, unit: str) -> Curves | None:
    """The curves in `unit`: unchanged for nats per token; / ln 2 / characters per token for bits
    per character (None when the characters per token are not known)."""
    if unit == "nats per token":
        return curves
    if unit != "bits per character":
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    if not chars_per_token:
        return None
    scale = 1.0 / LN2 / chars_per_token
    return dataclasses.replace(
        curves, train_loss=curves.train_loss * scale, val_loss=curves.val_loss * scale
    )


def validation_cell(
    found: RecordedLoss | None, chars_per_token: float | None, shown: int | None
) -> str:
    """The table's "bits/char, validation" for a model shown at training step `shown` (None: its
    final weights): the loss recorded for those weights (training.val_loss_at) in bits per
    character, with the step it was recorded at where it is not theirs; "–" when not known.

    >>> validation_cell(RecordedLoss(2.0 * LN2, 650, True), 1.0, 0)
    '2.000 (final step 650)'
    """
    if found is None or not chars_per_token or not math.isfinite(found.loss):
        return "–"
    bits = f"{found.loss / LN2 / chars_per_token:.3f}"
    label = loss_step_label(found, shown)
    return f"{bits} ({label})" if label else bits


# ---- which model to open beside this one -----------------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
    """What a bundle's config.json says about it, enough to choose a partner: the text it was
    trained on (meta "corpus"), its tokenizer kind, and its shape (n_layer, d_model); its family
    ("gpt", "lstm", ...) and its training command without the family and the output folder, so
    an LSTM finds the GPT trained by the same command."""

    corpus: str | None
    tokenizer: str | None
    shape: tuple[int, int] | None
    family: str = "gpt"
    recipe: str | None = None


def model_info(folder: Path) -> ModelInfo:
    """Read a bundle's config.json for `partner` (nothing known when it cannot be read)."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
        meta, shape = config.get("meta") or {}, config.get("model") or {}
        return ModelInfo(
            meta.get("corpus"),
            meta.get("tokenizer"),
            (shape.get("n_layer"), shape.get("d_model")),
            shape.get("family", "gpt"),
            recipe(meta.get("command")),
        )
    except (OSError, ValueError, AttributeError):
        return ModelInfo(None, None, None)


def recipe(command: object) -> str | None:
    """A training command without its --family and --out (and their values), e.g. for
    "... --family lstm --steps 9 --out a/b": "... --steps 9"; None for no command."""
    if not isinstance(command, str) or not command:
        return None
    words, kept = command.split(), []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("--family", "--out"):
            skip = True
        else:
            kept.append(word)
    return " ".join(kept)


def partner(name: str, infos: Mapping[str, ModelInfo]) -> str:
    """The model to open beside `name`: the one contrast that teaches most, in this order:
    a model of another family trained by the same command (shakespeare-lstm beside
    shakespeare-tiny); same training text and shape, another tokenizer (shakespeare-char beside
    shakespeare-bpe);
    same text, another tokenizer; same text; then the first other model (infos' order).

    >>> infos = {"a": ModelInfo("x", "char", (4, 128)), "b": ModelInfo("y", "char", (4, 128)),
    ...          "c": ModelInfo("x", "char", (2, 64)), "d": ModelInfo("x", "bpe", (4, 128))}
    >>> partner("a", infos), partner("d", infos), partner("b", infos)
    ('d', 'a', 'a')
    """
    me = infos.get(name, ModelInfo(None, None, None))
    others = [n for n in infos if n != name]
    if not others:
        return name

    def rank(other: str) -> int:
        o = infos[other]
        if me.recipe is not None and o.recipe == me.recipe and o.family != me.family:
            return -1 if "gpt" in (me.family, o.family) else 0
        same_text = me.corpus is not None and o.corpus == me.corpus
        other_tokens = o.tokenizer != me.tokenizer
        if same_text and other_tokens and o.shape == me.shape:
            return 0
        if same_text and other_tokens:
            return 1
        return 2 if same_text else 3

    return min(others, key=rank)  # min keeps the first of equals


# ---- the token-boundary effect: a prompt cut inside a token ---------------------------------


@dataclass(frozen=True)
class WordCut:
    """The prompt cut inside a token the tokenizer would keep whole: text (the prompt up to the
    cut), rest (the letters of the word that were cut off), word (the whole word), the
    tokenizer's pieces of the word in the whole prompt; and the control: the prompt cut at the
    start of that token instead, where the tokenizer splits the word too (control_text,
    control_rest), or None when the token starts the word."""

    text: str
    rest: str
    word: str
    whole_pieces: list[str]
    control_text: str | None = None
    control_rest: str | None = None


def cut_inside_token(prompt: str, tokenizer: Tokenizer) -> WordCut | None:
    """Cut the prompt after the first letter of the last token of two or more letters that lies
    inside a word and has letters after it ("window breaks?" with pieces ' b' 're' 'a' 'k' 's'
    -> "window br", rest "eaks"; control "window b", rest "reaks"). None when no token
    qualifies (a character tokenizer)."""
    pieces = tokenizer.pieces(prompt)
    for p in reversed(pieces):
        core = p.text.lstrip(" ")
        first = p.end - len(core)  # where the token's letters start
        if len(core) >= 2 and core.isalpha() and first + 1 < len(prompt):
            cut = first + 1
            start, end = first, cut
            while start > 0 and prompt[start - 1].isalpha():
                start -= 1
            while end < len(prompt) and prompt[end].isalpha():
                end += 1
            whole = [q.text for q in pieces if q.end > start and q.start < end]
            control = (prompt[:first], prompt[first:end]) if first > start else (None, None)
            return WordCut(prompt[:cut], prompt[cut:end], prompt[start:end], whole, *control)
    return None


def continues_rightly(texts: Sequence[str], rest: str) -> np.ndarray:
    """(V,) bool: tokens that continue the cut word as it really goes on: a start of `rest`
    ("e", "ea" for rest "eaks"), or all of it then something that is not a letter ("eaks,").

    >>> continues_rightly(["e", "ea", "eaks,", "o", "", "eaksy"], "eaks").tolist()
    [True, True, True, False, False, False]
    """
    return np.array(
        [
            bool(t)
            and (rest.startswith(t) or (t.startswith(rest) and not t[len(rest) :][:1].isalpha()))
            for t in texts
        ],
        dtype=bool,
    )


def seen_in_training(
    train_tokens: np.ndarray, context: Sequence[int], right: np.ndarray
) -> tuple[int, int]:
    """(times the token sequence `context` occurs in the training tokens with a token after it,
    times that next token is one of `right` (V,) bool): how often training showed this split
    followed by the word's real continuation."""
    tokens = np.asarray(train_tokens)
    m = len(context)
    if m == 0 or tokens.size <= m:
        return 0, 0
    hit = np.ones(tokens.size - m, dtype=bool)
    for j, c in enumerate(context):
        hit &= tokens[j : tokens.size - m + j] == c
    after = tokens[m:][hit]
    return int(after.size), int(right[after].sum())


@dataclass(frozen=True)
class BoundarySide:
    """One model on the cut prompt: its name and tokenizer kind, the probability it gives the
    word's real continuation next (p_right), the same on the control cut (p_control, None
    without one), the pieces the cut prompt ends with and those of the whole word, and, when
    its training text is known, how often the tokens the cut prompt ends with were followed by
    the real continuation in training (seen_right of seen)."""

    name: str
    kind: str
    p_right: float
    cut_pieces: list[str]
    whole_pieces: list[str]
    seen: int | None = None
    seen_right: int | None = None
    p_control: float | None = None


CHAR_FLOOR = 0.1  # below this the character model itself cannot tell how the word goes on


def shown(text: str) -> str:
    """Text as a Markdown sentence shows it: spaces as ␣, line breaks as ↵ (as the token labels
    show them), Markdown's own characters escaped (a prompt is user text)."""
    return md_escape(text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥"))


def boundary_side(
    name: str,
    tokenizer: Tokenizer,
    n_ctx: int,
    cut: WordCut,
    run: Callable[[list[int]], np.ndarray],
    train_tokens: np.ndarray | None = None,
) -> BoundarySide:
    """One model on the cut prompt (run(ids) gives its logits (T, V)): the probability of the
    word's real continuation next, on the cut and on the control; the pieces of the word's end;
    with its training tokens, how often the tokens the cut ends with were followed by the real
    continuation there."""
    texts = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]

    def p_next(text: str, rest: str) -> tuple[PromptTokens, float, np.ndarray]:
        tokens = read_prompt(tokenizer, n_ctx, text)
        right = continues_rightly(texts, rest)
        probs = distribution(run(tokens.ids)[-1], SamplingSettings()).base_probs.numpy()
        return tokens, float(probs[right].sum()), right

    tokens, p_right, right = p_next(cut.text, cut.rest)
    p_control = None
    if cut.control_text is not None and tokenizer.kind != "char":
        p_control = p_next(cut.control_text, cut.control_rest)[1]
    kept = len(cut.word) - len(cut.rest)  # the word's letters before the cut
    n_end, chars = 0, 0
    for t in reversed(tokens.texts):  # the tokens that hold them
        if chars >= kept:
            break
        n_end, chars = n_end + 1, chars + len(t)
    seen = seen_right = None
    if train_tokens is not None and n_end:
        seen, seen_right = seen_in_training(train_tokens, tokens.ids[-n_end:], right)
    whole = [q.text for q in tokenizer.pieces(cut.word)] if tokenizer.kind == "char" else None
    return BoundarySide(
        name=name,
        kind=tokenizer.kind,
        p_right=p_right,
        cut_pieces=tokens.texts[-n_end:] if n_end else [],
        whole_pieces=whole if whole is not None else cut.whole_pieces,
        seen=seen,
        seen_right=seen_right,
        p_control=p_control,
    )


def percent(p: float) -> str:
    """A probability as the claims print it: whole percents, one decimal under 1%."""
    return f"{p:.0%}" if p >= 0.01 else f"{p:.1%}"


def _pieces(pieces: Sequence[str]) -> str:
    return " ".join(f"“{shown(p)}”" for p in pieces)


def boundary_claim(cut: WordCut, sides: Sequence[BoundarySide]) -> Claim:
    """Is the token-boundary effect on screen? The model whose tokenizer the cut splits anew
    gives the word's real continuation at most half of what a reference gives, where the
    reference finds the word predictable (at least CHAR_FLOOR): a character model on the same
    cut, or the same model on the control cut (the start of the token, one letter less known)."""
    char = next((s for s in sides if s.kind == "char"), None)
    split = next(
        (
            s
            for s in sides
            if s.kind != "char" and s.cut_pieces != s.whole_pieces[: len(s.cut_pieces)]
        ),
        None,
    )
    numbers = {f"{s.name}: p_right": s.p_right for s in sides} | {
        "half": 0.5,
        "floor": CHAR_FLOOR,
    }
    start = f"Cut inside “{shown(cut.word)}” (the prompt now ends “…{shown(cut.text[-12:])}”): "
    if split is None:
        each = "; ".join(
            f"{s.name} gives its real continuation {percent(s.p_right)}" for s in sides
        )
        return Claim(
            f"{start}{each}. No token-boundary effect to look for here: neither model's "
            "tokenizer writes this word differently when it is cut.",
            False,
            numbers,
        )
    references = [(char.p_right, f"{char.name} on the same cut")] if char else []
    if split.p_control is not None:
        references.append((split.p_control, f"{split.name} at the start of the token"))
    numbers |= {f"{split.name}: p_control": split.p_control or 0.0}
    made = any(split.p_right <= 0.5 * p and p >= CHAR_FLOOR for p, _ in references)
    text = start
    if char is not None:
        text += (
            f"{char.name} gives the right next letter, “{shown(cut.rest[0])}”, "
            f"{percent(char.p_right)}; "
        )
    text += (
        f"{split.name} gives a token that continues “{shown(cut.word)}” rightly "
        f"{percent(split.p_right)}."
    )
    if split.p_control is not None and cut.control_text is not None:
        text += (
            f" Cut one letter earlier instead (“…{shown(cut.control_text[-12:])}”), where its "
            f"tokenizer splits the word too, it gives the real continuation "
            f"{percent(split.p_control)}."
        )
    text += (
        f" Its tokenizer writes the word as {_pieces(split.whole_pieces)}; the cut prompt ends "
        f"{_pieces(split.cut_pieces)}"
    )
    if split.seen is not None:
        numbers |= {"seen": float(split.seen), "seen_right": float(split.seen_right or 0)}
        text += (
            f", and in its training text those tokens were followed by the rest of the word "
            f"{split.seen_right} times in {split.seen}"
        )
    if made:
        text += (
            ": **the token-boundary effect**. The model learned from its tokenizer's own "
            f"splits, and this cut is not how the tokenizer writes “{shown(cut.word)}”."
        )
    else:
        text += (
            ": no clear token-boundary effect here (it is claimed when the model gives the real "
            "continuation at most half of what a character model, or the same model cut at the "
            f"token's start, gives, and that is at least {CHAR_FLOOR:.0%})."
        )
    return Claim(text, made, numbers)


def training_notes(sides: Sequence[tuple[str, Mapping | None, Mapping | None]]) -> list[str]:
    """What the training curves drawn on one axis do not show: (name, meta, data key) per model,
    the data key being meta["data"] with a pasted text's path replaced by its hash. A fine-tune's
    steps count from the start of fine-tuning; models trained on different texts measure their
    validation loss on different held-out texts. Which text is read from each bundle's own record
    (its data source without the split: {"corpus": "shakespeare"} and {"corpus": "shakespeare",
    "val_fraction": 0.1} are one text); the same text with different tokenizers (meta tokenizer
    and vocab_size) is a different note: a loss per token is not comparable, per character is."""
    notes = []
    for name, meta, _ in sides:
        info = (meta or {}).get("finetune")
        if info:
            base = info.get("base_name") or Path(str(info.get("base", ""))).name or "another model"
            notes.append(
                f"“{name}” was fine-tuned from {base}: its steps count from the start of "
                "fine-tuning, not from the base's first step, and its curve starts at the "
                "base's loss."
            )
    known = [(name, data) for name, _, data in sides if data]
    if len(known) != len(sides) or len(known) < 2:
        return notes
    names = " and ".join(f"“{n}”" for n, _ in known)
    texts = [_text_of(d) for _, d in known]
    if any(t != texts[0] for t in texts[1:]):
        notes.append(
            f"{names} were trained on different texts, so each validation loss is measured on "
            "its own text's held-out part: the curves are not the same test."
        )
        return notes
    shares = {_val_share(d) for _, d in known}
    if len(shares) > 1:
        notes.append(
            f"{names} were trained on the same text but held out different shares of it for "
            f"validation ({', '.join(f'{x:.0%}' for x in sorted(shares))}): the curves are not "
            "quite the same test."
        )
    tokenizers = {_tokenizer_of(meta) for _, meta, _ in sides}
    if len(tokenizers) > 1 and None not in tokenizers:
        notes.append(
            f"{names} were trained on the same text with different tokenizers "
            f"({', '.join(sorted(str(t) for t in tokenizers))}), each holding out the last "
            "part of its own tokens: in nats per token their losses are not comparable (a token "
            "is a different amount of text); in bits per character they are."
        )
    return notes


def _text_of(source: Mapping) -> dict:
    """A bundle's data source without its validation split: which text it read."""
    return {k: v for k, v in source.items() if k != "val_fraction"}


def _val_share(source: Mapping) -> float:
    """The share held out for validation; a bundle that records none used the default."""
    share = source.get("val_fraction")
    return float(share) if isinstance(share, int | float) else VAL_FRACTION


def _tokenizer_of(meta: Mapping | None) -> str | None:
    """ "char", or "BPE of 2,048": the tokenizer a bundle records (None when it records none)."""
    kind, size = (meta or {}).get("tokenizer"), (meta or {}).get("vocab_size")
    if not isinstance(kind, str):
        return None
    if kind == "char" or not isinstance(size, int):
        return kind
    return f"{kind.upper() if kind == 'bpe' else kind} of {size:,}"
