"""The Tokenization page's sections, one function each, drawn in order by pages/01_tokenization.py:
the idea and the merge rule (`intro`), the prompt cut by four tokenizers with the BPE's vocabulary
slider (`four_ways`), why a chat template's tokens split (`chat_template`), BPE learned merge by
merge (`merge_by_merge`), the vocabulary curve (`vocabulary_curve`), the known pitfalls on this
model's tokenizer and the BPE (`pitfalls`), and the numbers behind it (`numbers_behind_it`).

The tokenizers are trained on the bundled corpus once per server and shared (the cached calls
below, `@cache.per_model`).

Not here: the measures and claims (viz_model/analysis/tokens.py), the tokenizers themselves
(viz_model/text/tokenization.py), the chips and the curve (ui/charts/tokens.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from ui import cache, parts, present, state
from ui.charts.common import show_whitespace
from ui.charts.tokens import token_chips_html, vocab_curve_chart
from ui.frame import PageContext
from ui.usage.instruct import TUNED_MODEL, tuned_model_bundled
from viz_model.analysis import tokens as tk
from viz_model.text.data import load_corpus
from viz_model.text.instructions import template_tokens_in
from viz_model.text.tokenization import Tokenizer

CORPUS = "shakespeare"
VOCAB_SIZES = [256, 300, 384, 512, 768, 1024, 2048, 4096]
CURVE_SIZES = [256, 384, 512, 768, 1024, 2048, 4096]
CURVE_CHARS = 200_000  # the vocabulary curve trains on this slice, to stay within seconds
WORD_VOCAB = 3000


@dataclass(frozen=True)
class Bpe:
    """The BPE the vocabulary slider picks: its size and the tokenizer trained to it."""

    vocab: int
    tokenizer: Tokenizer


# ---- cached tokenizers and counts (trained once per server, shared by every session) -------------


@cache.per_model(spinner="Training a tokenizer on the corpus…")
def corpus_tokenizer(kind: str, vocab_size: int | None) -> Tokenizer:
    return Tokenizer.train(load_corpus(CORPUS), kind, vocab_size)


@cache.per_model(spinner="Counting the corpus's words…")
def corpus_words() -> dict:
    return tk.word_counts(load_corpus(CORPUS))


@cache.per_model
def corpus_digits() -> int:
    return tk.digit_count(load_corpus(CORPUS))


@cache.per_prompt
def merge_frequency(vocab_size: int, step: int) -> int:
    return tk.merge_frequency(corpus_words(), corpus_tokenizer("bpe", vocab_size).merges(), step)


@cache.per_model(spinner="Training BPEs of several sizes on 200 kB of the corpus…")
def vocab_curve() -> list[tuple[int, int]]:
    return tk.vocab_curve(load_corpus(CORPUS)[:CURVE_CHARS], CURVE_SIZES)


def curve_points() -> tuple[list[int], list[int]]:
    """The vocabulary curve as (vocabulary sizes, tokens needed for the slice)."""
    curve = vocab_curve()
    return [v for v, _ in curve], [n for _, n in curve]


# ---- drawing helpers ----------------------------------------------------------------------------


def chips(tokenizer: Tokenizer, text: str) -> str:
    return token_chips_html(
        tk.display_tokens(tokenizer, text), tokenizer.unk_id, special=tokenizer.special_ids
    )


def counts_line(tokenizer: Tokenizer, text: str) -> str:
    c = tk.token_counts(tokenizer, text)
    unknown = f", {c.unknown} unknown" if c.unknown else ""
    special = f", {c.special} special (one id each)" if c.special else ""
    return (
        f"{c.chars} characters → **{c.tokens} tokens**{unknown}{special} · "
        f"{c.chars_per_token:.2f} characters per token"
    )


# ---- the sections -------------------------------------------------------------------------------


def intro() -> None:
    """Characters, words and BPE in words, the merge rule, and how the chips below show text."""
    st.markdown(
        "A language model never sees text as you do. Before anything else, it is cut into **tokens** "
        "(pieces from a fixed list, the **vocabulary**) and each token is replaced by its number in "
        "that list, its **id**. A **character-level** tokenizer uses one token per letter: a tiny "
        "vocabulary, but long sequences. A **word-level** tokenizer uses one token per word: short "
        "sequences, but every word it never saw becomes the unknown token `<unk>`. **Byte-pair "
        "encoding (BPE)**, what GPT models use, sits between: it starts from the 256 possible bytes "
        "and repeatedly glues together the pair of neighbouring tokens that occurs most often in the "
        "training text, until the vocabulary has the size we asked for."
    )
    st.latex(  # two lines: one line is wider than the column at 1024 px
        r"\begin{aligned}(a, b)^\ast &= \arg\max_{(a,b)} \operatorname{count}(a\,b)\\"
        r"&\Rightarrow\ \text{replace every } a\,b \text{ by the new token } ab\end{aligned}"
    )
    st.caption(
        f"Tokenizers below are trained on the bundled {CORPUS.title()} corpus (about 1 MB). Hover over "
        "a chip to see its id. Spaces show as ␣ and line breaks as ↵, a character that draws nothing "
        "(a control character, a right-to-left override) as its code point in hex, like `<202e>`; "
        "a red outline marks `<unk>`; "
        "a dashed purple outline marks a **special token**: one id that stands for no text of the "
        "corpus but for a role, like a chat template's `<|user|>` (who speaks) and `<|end|>` (where "
        "an answer ends), or GPT-2's `<|endoftext|>`."
    )


def four_ways(ctx: PageContext) -> Bpe:
    """The BPE vocabulary slider, then the prompt on characters, that BPE, words and this model's
    tokenizer, each with its counts beside its chips."""
    st.subheader("Your prompt, cut four ways")
    vocab = state.select_slider(
        "BPE vocabulary size",
        "vocab",
        VOCAB_SIZES,
        default=512,
        help="How many tokens the BPE may have: 256 single bytes plus one new token per merge.",
    )
    char_tok = corpus_tokenizer("char", None)
    bpe = corpus_tokenizer("bpe", vocab)
    word_tok = corpus_tokenizer("word", WORD_VOCAB)
    rows = [
        ("Characters", f"{char_tok.vocab_size} tokens in the vocabulary", char_tok),
        (f"BPE, vocabulary {vocab}", f"{len(bpe.merges())} merges learned", bpe),
        ("Words", f"the {WORD_VOCAB - 1} most frequent words; spaces are dropped", word_tok),
        (
            f"This model's tokenizer ({ctx.name})",
            f"{ctx.tokenizer.kind}, {ctx.tokenizer.vocab_size} tokens",
            ctx.tokenizer,
        ),
    ]
    for title, about, tokenizer in rows:
        left, right = st.columns([1, 3], gap="medium")
        left.markdown(f"**{title}**  \n{about}")
        left.markdown(counts_line(tokenizer, ctx.prompt))
        with right:
            st.html(chips(tokenizer, ctx.prompt))
    return Bpe(vocab, bpe)


def chat_template(ctx: PageContext) -> None:
    """Where the prompt holds a chat template's tokens: why the corpus tokenizers split them, and
    which model reads each as one token."""
    template = template_tokens_in(ctx.prompt)  # a chat template's tokens: said why they split, once
    if not template:
        return
    named = " and ".join(f"`{t}`" for t in template)
    st.markdown(
        f"Your prompt holds {named}: special tokens are *added* to a tokenizer, not learned from "
        "a corpus, so the Characters, BPE and Words tokenizers, trained on plain text, cut them "
        "into pieces."
    )
    if any(ctx.tokenizer.token_to_id(t) is None for t in template):
        st.info(
            f"“{ctx.name}” has no chat template, so it reads these as ordinary characters (or "
            "`<unk>`)."
            + (
                f" Choose “{TUNED_MODEL}” in the sidebar's Model select to see them as one token "
                "each."
                if tuned_model_bundled()
                else ""
            )
        )


def merge_by_merge(ctx: PageContext, bpe: Bpe) -> None:
    """The BPE's merges in rank order on the prompt: the merge step slider (by default only the
    merges that change the prompt), the merged pair and its corpus count, the pieces as chips."""
    st.subheader("BPE as it is learned: one merge at a time")
    st.markdown(
        "The trainer counted every pair of neighbouring tokens in the corpus and merged the most "
        "frequent pair first, then counted again. Walk through its merges in that order (their "
        "**rank**) and watch your prompt's pieces coalesce. Most merges never touch a short text; by "
        "default the slider only stops at the ones that change yours."
    )
    merges = bpe.tokenizer.merges()
    only_changes = state.toggle(
        "Only the merges that change my prompt", "only_changes", default=True
    )
    if only_changes:
        options = [0, *tk.steps_that_change(ctx.prompt, merges)]
        step = state.select_slider("Merge step (rank)", "merge", options, default=0)
    else:
        step = state.slider("Merge step (rank)", "merge", 0, len(merges), default=0)
    shown = tk.merge_step(ctx.prompt, merges, step)
    if step == 0:
        st.markdown(
            f"**Step 0**: no merge yet, one token per byte: **{len(shown.tokens)} tokens**."
        )
    else:
        a, b = (show_whitespace(x) for x in shown.pair)
        freq = merge_frequency(bpe.vocab, step)
        new_id = bpe.tokenizer.token_to_id("".join(merges[step - 1]))
        st.markdown(
            f"**Step {step} of {len(merges)}**: merge `{a}` + `{b}` → "
            f"`{show_whitespace(shown.merged)}` (new token id {new_id}), the most frequent pair "
            f"left in the corpus when it was learned: **{freq:,} times**. Your prompt is now "
            f"**{len(shown.tokens)} tokens**."
        )
    st.html(
        token_chips_html(
            [
                (bpe.tokenizer.token_to_id(s), t)
                for s, t in zip(shown.symbols, shown.tokens, strict=True)
            ]
        )
    )
    st.caption(
        "Characters outside plain ASCII take two to four bytes in UTF-8; a byte that is only part "
        "of a character shows as <hex>."
    )


def vocabulary_curve(bpe: Bpe) -> None:
    """Tokens needed for the same text against vocabulary size, the chosen size marked, and what
    a doubling saves (its claim)."""
    sizes, counts = curve_points()
    present.plot(
        cache.figure(
            vocab_curve_chart,
            sizes,
            counts,
            CURVE_CHARS,
            current=bpe.vocab if bpe.vocab in sizes else None,
        ),
        width="stretch",
        config={"displayModeBar": False},
    )
    st.caption(
        f"Each point is a BPE trained on the first {CURVE_CHARS // 1000} kB of the corpus and used "
        "to encode that same text. " + tk.vocab_curve_claim(sizes, counts).text
    )


def pitfalls(ctx: PageContext, bpe: Bpe) -> None:
    """Each known pitfall (letters, spacing, numbers, leading spaces, unseen scripts) said of the
    two tokenizers shown, then its examples as chips on this model's tokenizer and on the BPE."""
    st.subheader("Known pitfalls, live")
    st.markdown(
        f"The same strings on **this model's tokenizer** ({ctx.tokenizer.kind}) and on the "
        f"**BPE of vocabulary {bpe.vocab}** above. A red outline marks the unknown token `<unk>`: a "
        "character this tokenizer has no token for."
    )
    _, h2, h3 = st.columns([1, 2, 2])
    h2.caption(f"this model's tokenizer ({ctx.name})")
    h3.caption(f"BPE, vocabulary {bpe.vocab}")
    shown_here = [
        (f"This model's tokenizer ({ctx.name})", ctx.tokenizer),
        (f"The BPE of vocabulary {bpe.vocab}", bpe.tokenizer),
    ]
    for name, examples in tk.PITFALLS:
        # what the chips below show, on whichever tokenizers they come from
        why = tk.pitfall_claim(name, examples, shown_here, corpus_digits(), CORPUS.title()).text
        st.markdown(f"**{name}.** {why}")
        for example in examples:
            c1, c2, c3 = st.columns([1, 2, 2])
            shown = show_whitespace(example)  # a space as ␣, as the chips beside it show it
            n_chars, n_bytes = len(example), len(example.encode("utf-8"))
            c1.markdown(f"`{shown}` · {n_chars} character{'s' * (n_chars != 1)}, {n_bytes} bytes")
            with c2:
                st.html(chips(ctx.tokenizer, example))
            with c3:
                st.html(chips(bpe.tokenizer, example))


def numbers_behind_it(ctx: PageContext, bpe: Bpe) -> None:
    """The prompt's pieces on this model's tokenizer, the BPE's first merges and the vocabulary
    curve, as tables (built only while open)."""
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.markdown(f"**Your prompt on this model's tokenizer** ({ctx.name}):")
            st.dataframe(prompt_pieces(ctx), hide_index=True, width="stretch")
            st.markdown(
                f"**The first 30 merges of the BPE of vocabulary {bpe.vocab}**, in rank order:"
            )
            st.dataframe(first_merges(bpe.tokenizer.merges()), hide_index=True, width="stretch")
            st.markdown("**The vocabulary curve**:")
            st.dataframe(curve_table(*curve_points()), hide_index=True)


def prompt_pieces(ctx: PageContext) -> pd.DataFrame:
    """Each token of the prompt on this model's tokenizer: its position, id, text and characters."""
    pieces = ctx.tokenizer.pieces(ctx.prompt)
    return pd.DataFrame(
        {
            "position": range(len(pieces)),
            "id": [p.id for p in pieces],
            "text": [show_whitespace(p.text) for p in pieces],
            "characters": [f"{p.start}–{p.end}" for p in pieces],
        }
    )


def first_merges(merges: list, n: int = 30) -> pd.DataFrame:
    """The first `n` merges in rank order: the pair and the new token."""
    first = merges[:n]
    return pd.DataFrame(
        {
            "rank": range(1, min(n, len(merges)) + 1),
            "left": [show_whitespace(tk.symbol_text(a)) for a, _ in first],
            "right": [show_whitespace(tk.symbol_text(b)) for _, b in first],
            "new token": [show_whitespace(tk.symbol_text(a + b)) for a, b in first],
        }
    )


def curve_table(sizes: list[int], counts: list[int]) -> pd.DataFrame:
    """The vocabulary curve's points with the characters per token each gives."""
    return pd.DataFrame(
        {
            "vocabulary": sizes,
            "tokens": counts,
            "characters per token": [round(CURVE_CHARS / n, 3) for n in counts],
        }
    )
