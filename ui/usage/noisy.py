"""Spelling correction by the noisy channel: the language model as the prior p(y), a simple edit
model as p(x | y), candidates ranked by the sum of their logs."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.charts.common import show_whitespace
from ui.frame import PageContext
from viz_model.analysis import noisy_channel as nc
from viz_model.analysis.claims import md_escape
from viz_model.text.data import CORPORA, DataError, load_corpus

DEFAULT_TEXT = "ROMEO:\nBut soft, what lihgt through yonder window breaks?"
EDIT_PROBS = [0.001, 0.01, 0.05, 0.1, 0.3]
SHOWN = 12  # candidates in the chart (all of them in the table)


@cache.per_model
def vocabulary(bundle_id: str) -> tuple[dict[str, int], str] | None:
    """The words of the model's training corpus and where they came from; None for a model of a
    synthetic task (no words to correct towards)."""
    data = cache.bundle(bundle_id).meta.get("data") or {}
    if data.get("task"):
        return None
    corpus = data.get("corpus")
    name = corpus if corpus in CORPORA else "shakespeare"
    try:
        words = nc.vocabulary(load_corpus(name))
    except DataError:
        return None
    where = f"its training corpus ({name})" if corpus == name else f"the {name} corpus"
    return words, where


@cache.per_prompt(spinner="Scoring every candidate with the model…")
def ranked(
    bundle_id: str, context: str, typed: str, after: str, edit_prob: float
) -> list[nc.Correction]:
    b = cache.bundle(bundle_id)
    words, _ = vocabulary(bundle_id)
    return nc.correct(b.model, b.tokenizer.encode, context, typed, after, words, edit_prob)


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Someone typed $x$ but meant a word $y$. The **noisy channel** model says: the writer "
        "chose $y$ with probability $p(y)$, then the keyboard (the noisy channel) turned it into "
        "$x$ with probability $p(x \\mid y)$. The best guess maximises their product. Here the "
        "prior $p(y)$ is this language model, the probability of the word in its sentence; the "
        "channel is the simplest edit model: each edit (insert, delete or change a letter, or "
        "swap two neighbours) has one probability $e$, so a word $d$ edits away has $p(x \\mid y) = e^d$."
    )
    st.latex(
        r"\hat{y} = \arg\max_{y}\; \underbrace{\log p(x \mid y)}_{d(x,\,y)\,\log e}"
        r" + \underbrace{\log p(y \mid \text{context})}_{\text{the language model}}"
    )
    found = vocabulary(ctx.bundle_id)
    if found is None:
        st.info(
            f"“{ctx.name}” was trained on a synthetic task, not on words: it has no vocabulary of "
            "words to correct towards. Pick a model trained on text, such as shakespeare-char."
        )
        return
    words, where = found
    c1, c2 = st.columns([3, 2], gap="large")
    text = state.bind(
        c1.text_area,
        "u_nc_text",
        state.url_str("u_nc_text", DEFAULT_TEXT, 500),
        "A sentence with a typo",
        height=90,
    )
    spans = list(nc.WORD.finditer(text))
    if not spans:
        st.info("Type a sentence with at least one word in it.")
        return
    options = list(range(len(spans)))
    unknown = [i for i, m in enumerate(spans) if m.group() not in words and i > 0]
    index = state.selectbox(
        "The word to correct",
        "u_nc_word",
        options,
        unknown[0] if unknown else options[-1],
        container=c2,
        format_func=lambda i: f"{i + 1}: {spans[i].group()}",
        help=f"The first word not in the vocabulary of {where} is chosen at first.",
    )
    edit_prob = state.select_slider(
        "Probability e of one edit", "u_nc_e", EDIT_PROBS, 0.01, container=c2
    )
    match = spans[index]
    typed, context = match.group(), text[: match.start()]
    after = text[match.end() : match.end() + 1] or "\n"
    if not context.strip():
        st.info("The first word has nothing before it for the model to read: pick a later word.")
        return
    unk = ctx.tokenizer.unk_id
    if unk is not None and unk in ctx.tokenizer.encode(typed):
        st.warning(
            f"“{md_escape(typed)}” has characters this model does not know; the candidates are "
            "found by spelling alone."
        )
    result = ranked(ctx.bundle_id, context, typed, after, edit_prob)
    claim = nc.correction_claim(typed, result)
    if not result:
        st.info(claim.text)
        return
    st.caption(
        f"Candidates: the words of {where} within {nc.MAX_DISTANCE} edits of “{md_escape(typed)}”"
        + (
            f" ({nc.MAX_CANDIDATES} scored: the closest, then the most frequent)"
            if len(result) >= nc.MAX_CANDIDATES
            else ""
        )
        + f"; each scored as the word and the character after it, “{md_escape(show_whitespace(after))}”."
    )
    top = result[:SHOWN]
    present.plot(
        cache.figure(
            charts.channel_bars,
            [c.word for c in top],
            [c.log_channel for c in top],
            [c.log_prior for c in top],
        ),
        key="use_channel_bars",
    )
    st.success(claim.text)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "Every candidate, best first:",
                [
                    {
                        "rank": r + 1,
                        "word": c.word,
                        "edits": c.distance,
                        "log p(x|y)": c.log_channel,
                        "log p(y)": c.log_prior,
                        "sum": c.score,
                        "in the corpus": words[c.word],
                    }
                    for r, c in enumerate(result)
                ],
            )
