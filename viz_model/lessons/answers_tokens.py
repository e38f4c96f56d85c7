"""Answer kinds for the text-to-tokens lesson: what the tokenizer and the embedding of the model on
screen do (assets/lessons/1_tokens.toml).

Each kind measures with the functions the Tokenization and Embeddings pages use
(analysis/tokens.py, analysis/embeddings.py), so the reveal and the page never disagree.
Not here: the merge stepper's corpus BPEs of other vocabulary sizes (the page trains them; a
lesson asks about the model's own tokenizer, which for shakespeare-bpe is the page's 512 one).
"""

from __future__ import annotations

import torch

from viz_model.analysis import embeddings as emb
from viz_model.analysis import tokens as tk
from viz_model.analysis.claims import md_escape
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, visible_token
from viz_model.text.data import load_text
from viz_model.text.tokenization import Tokenizer

NO_ANSWER = ""  # the token answer when there is none to give (holds is then False)


def _shown(text: str) -> str:
    """A token or string as a reveal prints it: quoted, spaces as ␣, escaped for Markdown."""
    return md_escape(visible_token(text))


def _chips(tokenizer: Tokenizer, text: str) -> str:
    """'␣the' | 'he' ...: the pieces of `text` as the page's chips show them."""
    return " ".join(_shown(t) for _, t in tk.display_tokens(tokenizer, text))


@answer_kind("number")
def token_count(subject: Subject, text: str = "") -> Truth:
    """How many tokens the tokenizer makes of `text` (the prompt on screen when empty)."""
    tokenizer = subject.bundle.tokenizer
    ids = tokenizer.encode(text) if text else list(subject.ids)
    what = f"“{md_escape(text)}”" if text else "the prompt"
    n_chars = len(text) if text else len(subject.prompt)
    why = (
        f"This model's {tokenizer.kind} tokenizer cuts {what} ({n_chars} characters) into "
        f"**{len(ids)} tokens**"
        + (f", {n_chars / len(ids):.2f} characters a token." if ids else ".")
    )
    return Truth("number", len(ids), why, numbers={"tokens": len(ids), "chars": n_chars})


@answer_kind("token")
def first_merge(subject: Subject) -> Truth:
    """The token the BPE's first merge makes (rank 1: the most frequent pair in its training text)."""
    tokenizer = subject.bundle.tokenizer
    merges = tokenizer.merges()
    if not merges:
        why = (
            f"This model's tokenizer is **{tokenizer.kind}-level**: it learned no merges, so "
            "there is no first merge. Switch to a BPE model (shakespeare-bpe) to see one."
        )
        return Truth("token", NO_ANSWER, why, holds=False, numbers={"merges": 0})
    a, b = (tk.symbol_text(s) for s in merges[0])
    merged = tk.symbol_text("".join(merges[0]))
    why = (
        f"The first of this BPE's {len(merges)} merges glues {_shown(a)} and {_shown(b)} into "
        f"**{_shown(merged)}**: the pair of neighbouring tokens found most often in its training "
        "text"
        + (
            " (a space, then the first letter of a word: most words follow a space)"
            if a == " " and b.isalpha()
            else ""
        )
        + ". The page's step 1 shows how often it occurred."
    )
    return Truth("token", merged, why, numbers={"merges": len(merges)})


@answer_kind("number")
def leading_space(subject: Subject, word: str = "the") -> Truth:
    """How many tokens `word` makes without a leading space (with one, a BPE often has it whole)."""
    tokenizer = subject.bundle.tokenizer
    bare, spaced = tokenizer.encode(word), tokenizer.encode(" " + word)
    one_token = len(spaced) == 1 and spaced != bare
    said = (
        f"With a space, {_shown(' ' + word)} is **one token** (id {spaced[0]}); without it, "
        f"{_shown(word)} is {len(bare)} token{'s' * (len(bare) != 1)}: {_chips(tokenizer, word)}. "
        "In running text a word mostly follows a space, so BPE tends to learn the spaced form "
        "whole; the two spellings have different ids and different embeddings."
        if one_token
        else f"Here {_shown(' ' + word)} is {len(spaced)} tokens ({_chips(tokenizer, ' ' + word)}) "
        f"and {_shown(word)} is {len(bare)} ({_chips(tokenizer, word)}): this "
        f"{tokenizer.kind} tokenizer does not glue the space onto the word."
    )
    numbers = {"bare": len(bare), "spaced": len(spaced)}
    return Truth("number", len(bare), said, holds=one_token, numbers=numbers)


def _unknown_chars(tokenizer: Tokenizer, text: str) -> list[str]:
    """The distinct characters of `text` this tokenizer reads as <unk>, in order."""
    unk = tokenizer.unk_id
    if unk is None:
        return []
    return [c for c in dict.fromkeys(text) if unk in tokenizer.encode(c)]


@answer_kind("number")
def unknown_count(subject: Subject, text: str = "0123456789") -> Truth:
    """How many distinct characters of `text` the tokenizer has no token for (each becomes <unk>)."""
    tokenizer = subject.bundle.tokenizer
    unknown = _unknown_chars(tokenizer, text)
    listed = ", ".join(_shown(c) for c in unknown)
    if tokenizer.unk_id is None:
        why = (
            f"This {tokenizer.kind} tokenizer has **no unknown token**: it falls back to bytes, "
            f"so every character of “{md_escape(text)}” is encoded ({_chips(tokenizer, text)})."
        )
    elif unknown:
        why = (
            f"**{len(unknown)}** of the characters of “{md_escape(text)}” are not in this "
            f"{tokenizer.kind} tokenizer's vocabulary: {listed}. It never saw them in its training "
            "text, so each becomes the one token `<unk>`, and the model cannot tell them apart."
        )
    else:
        why = (
            f"This {tokenizer.kind} tokenizer has a token for every character of "
            f"“{md_escape(text)}”: **0** unknown."
        )
    return Truth("number", len(unknown), why, numbers={"unknown": len(unknown)})


def _training_digits(subject: Subject) -> int | None:
    """How many digits the model's training text holds; None when its bundle does not say."""
    source = subject.bundle.meta.get("data")
    try:
        return tk.digit_count(load_text(source)) if source else None
    except (OSError, ValueError, KeyError):
        return None


@answer_kind("number")
def digit_tokens(subject: Subject, text: str = "1234567") -> Truth:
    """How many tokens a number makes, and whether the tokenizer groups digits."""
    tokenizer = subject.bundle.tokenizer
    ids = tokenizer.encode(text)
    groups = tk.digit_groups(tokenizer, [text])
    missing = [d for d in tk.missing_digits(tokenizer) if d in text]
    if groups:
        how = (
            f"it groups digits ({', '.join(_shown(g) for g in groups)}), groups chosen by how "
            "often they occurred in its training text, not by place value"
        )
    elif tokenizer.kind == "char":
        how = "a character tokenizer gives every digit its own token"
    else:
        merges = tokenizer.merges()
        joining = [m for m in merges if sum(c.isdigit() for c in tk.symbol_text("".join(m))) > 1]
        how = (
            f"every digit is its own token: none of its {len(merges)} merges joins two digits"
            if not joining
            else f"every digit is its own token here: its {len(joining)} merges that join "
            "digits do not apply to this number"
        )
        digits = _training_digits(subject)
        if digits is not None:
            how += f" (its training text holds {digits:,} digits)"
    why = f"“{md_escape(text)}” is **{len(ids)} tokens** ({_chips(tokenizer, text)}): {how}."
    if missing:
        why += f" It has no token for {', '.join(_shown(d) for d in missing)}: those are `<unk>`."
    numbers = {"tokens": len(ids), "groups": len(groups), "missing": len(missing)}
    return Truth("number", len(ids), why, numbers=numbers)


@answer_kind("token")
def nearest_token(subject: Subject, token: str = " my") -> Truth:
    """The token whose embedding is nearest `token`'s by cosine similarity (as the Embeddings
    page's table lists them), claimed as learned only beyond the shuffled-table chance."""
    tokenizer = subject.bundle.tokenizer
    ids = tokenizer.encode(token)
    if len(ids) != 1 or ids[0] == tokenizer.unk_id:
        why = (
            f"{_shown(token)} is not one token of this model's {tokenizer.kind} tokenizer "
            f"({_chips(tokenizer, token)}), so it has no embedding row of its own."
        )
        return Truth("token", NO_ANSWER, why, holds=False, numbers={"tokens": len(ids)})
    weights = subject.bundle.model.W_E.detach()  # (V, D)
    near = emb.nearest_neighbours(weights, ids[0], 3)
    best = tk.token_text(tokenizer, int(near.ids[0]))
    # the claim puts the label in a code span, where Markdown escapes would show: as the page does
    label = token.replace(" ", "␣").replace("\n", "↵").replace("`", "ˋ")
    claim = emb.neighbours_claim(weights, ids[0], label)
    others = ", ".join(
        f"{_shown(tk.token_text(tokenizer, int(i)))} ({s:.2f})"
        for i, s in zip(near.ids[1:], near.similarity[1:], strict=True)
    )
    why = (
        f"The nearest is **{_shown(best)}**, cosine similarity {near.similarity[0]:.2f}; then "
        f"{others}. {claim.text}"
    )
    numbers = {"similarity": float(near.similarity[0]), **claim.numbers}
    return Truth("token", best, why, holds=claim.made, numbers=numbers)


SWAP_OPTIONS = ("no: only float rounding", "yes: it changes")


@torch.no_grad()
def _swap(subject: Subject, i: int, j: int) -> tuple[emb.SwapResult, emb.SwapResult]:
    """The last token's layer-0 attention output for the prompt and for it with tokens i and j
    swapped: positions zeroed, then positions on."""
    model, ids = subject.bundle.model, list(subject.ids)
    off = emb.swap_experiment(model, ids, i, j, positions=False)
    on = emb.swap_experiment(model, ids, i, j, positions=True)
    return off, on


@answer_kind("choice")
def swap_changes_output(subject: Subject, i: int = 0, j: int = -2) -> Truth:
    """With the position vectors zeroed, does swapping two earlier tokens change the last token's
    layer-0 attention output? (The Embeddings page's exercise; j < 0 counts from the end.)"""
    T = len(subject.ids)
    i, j = i % T if T else 0, j % T if T else 0
    if T < 3 or not (i < T - 1 and j < T - 1):
        why = "The prompt needs at least 3 tokens, two to swap before the last one."
        return Truth("choice", SWAP_OPTIONS[0], why, SWAP_OPTIONS, holds=False)
    off, on = _swap(subject, i, j)
    cfg = subject.bundle.config
    same = subject.ids[i] == subject.ids[j] or i == j
    claim = emb.swap_claim(off, on if cfg.adds_positions else None, None, cfg.causal, same, cfg.pos)
    changed = off.max_diff > emb.rounding_limit(off)
    labels = [tk.token_text(subject.bundle.tokenizer, subject.ids[k]) for k in (i, j)]
    why = f"Swapping {_shown(labels[0])} (position {i}) and {_shown(labels[1])} (position {j}). "
    why += claim.text
    if not changed:
        why += (
            " Attention adds up the earlier tokens' values weighted by softmax scores, and a "
            "sum does not depend on the order of its terms: without positions, layer 0 "
            "cannot tell the two orders apart."
        )
    value = SWAP_OPTIONS[1] if changed else SWAP_OPTIONS[0]
    return Truth("choice", value, why, SWAP_OPTIONS, holds=claim.made, numbers=claim.numbers)
