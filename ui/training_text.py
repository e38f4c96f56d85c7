""" "Why did it say that?" answered from the training text, as sections of the Next token and
Generation pages: the probability of a whole text token by token, where the prompt's last tokens
occur in the corpus and what followed them, and which stretches of a generated text the corpus
holds verbatim (memorisation). Each page calls one function per section; the counting and the
index come from ui/corpus.py (built once per corpus and tokenizer)."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from ui import cache, corpus, present, state
from ui.charts import ngrams as charts
from ui.charts.common import show_whitespace
from ui.frame import PageContext
from viz_model.analysis import next_token as nt
from viz_model.analysis import ngrams as ng
from viz_model.analysis.claims import md_escape
from viz_model.analysis.tokens import token_text
from viz_model.model.recurrent_config import FAMILY_LABELS


def _p_text(log_p_nats: float) -> str:
    """P = e^(log p), short enough for a metric at 1024 px: 0.0123, or 10^-37.7 when tiny."""
    log10 = log_p_nats / math.log(10)
    return f"{10**log10:.4f}" if log10 > -3 else f"10^{log10:.1f}"


def _metrics(log_p: np.ndarray, what: str) -> None:
    total = float(np.nansum(log_p))
    m1, m2, m3 = st.columns(3)
    m1.metric("Σ ln p (nats)", f"{total:.2f}")
    m2.metric("Σ log₂ p (bits)", f"{total / math.log(2):.2f}")
    m3.metric(
        f"P({what})",
        _p_text(total),
        help=f"e^({total:.2f}) = {math.exp(total):.3g} (0 below 1e-308)",
    )


# ---- Next token: the whole prompt's probability -------------------------------------------------


def prompt_probability(ctx: PageContext, surprisal: np.ndarray) -> None:
    """The probability of the prompt as a product of each token's probability given the ones
    before it (the first token has none): sum of log p, P(text), each token's share."""
    st.subheader("The probability of the whole prompt")
    st.markdown(
        "The model gives a whole text a probability by the chain rule: the product of each "
        "token's probability given the tokens before it. Products of hundreds of numbers below 1 "
        "are too small to write, so we add their logarithms instead. Every token multiplies the "
        "probability down; a surprising one takes a big bite."
    )
    st.latex(r"\log P(x_2 \dots x_T \mid x_1) = \sum_{t=2}^{T} \log p(x_t \mid x_{<t})")
    log_p = -np.asarray(surprisal, dtype=float)
    if len(log_p) < 2:
        st.info("The prompt has one token: type at least two to give a text a probability.")
        return
    if (note := nt.lookahead_claim(ctx.config.causal)).made:
        st.warning(note.text)
    _metrics(log_p, "prompt")
    present.plot(
        cache.figure(
            charts.contribution_chart,
            ctx.labels,
            log_p,
            "Each token's log₂ p (bars) and the running log₁₀ P (line)",
        ),
        key="tt_prompt_probability",
    )


# ---- Next token: the prompt's last tokens in the training text ----------------------------------


@cache.per_prompt
def _looked_up(
    bundle_id: str, used: tuple[int, ...]
) -> tuple[ng.CountTable, np.ndarray, list[ng.Snippet]]:
    """The training split's counts after `used`, the Kneser-Ney estimate and the snippets: once
    per view, not once per page run."""
    models = corpus.token_models(bundle_id)
    tok = cache.bundle(bundle_id).tokenizer
    table = ng.count_table(models, list(used))
    kn = models.kn_distribution(list(used), len(used) + 1)
    return table, kn, ng.snippets(models, tok, list(used))


def in_training_text(ctx: PageContext, last_logits: np.ndarray) -> None:
    """Where the prompt's last k tokens occur in the training split, what followed them (counts,
    snippets), beside the model's probabilities after the whole prompt."""
    st.subheader("In the training text")
    models = corpus.token_models(ctx.bundle_id)
    if models is None:
        st.info(
            f"“{ctx.name}” does not say what text it was trained on (or it is gone), so its "
            "training text cannot be searched."
        )
        return
    tok = ctx.tokenizer
    k = state.slider(
        "Last tokens of the prompt to look up",
        "tt_k",
        1,
        8,
        min(4 if tok.kind == "char" else 2, len(ctx.ids)),
        help="The corpus is searched for the prompt's last k tokens, as an n-gram model would.",
    )
    used = ctx.ids[-k:]
    net = FAMILY_LABELS[ctx.bundle.family]  # "GPT", or "LSTM", ...
    table, kn, found = _looked_up(ctx.bundle_id, tuple(int(t) for t in used))
    shown = show_whitespace("".join(token_text(tok, t) for t in used)).replace("`", "ˋ")
    occurs = {0: "it never occurs", 1: "it occurs once"}.get(
        table.total, f"it occurs **{table.total:,}** times"
    )
    base = ctx.bundle.meta.get("base")  # tuned from another model: the tuning text is searched
    which = (
        f"This one was tuned from “{md_escape(base)}”: the text searched here is its tuning text "
        "only, not the text its base learned from. "
        if isinstance(base, str)
        else ""
    )
    st.markdown(
        f"A model only learns from its training text. {which}Here is what that text says after "
        f"`{shown}`: {occurs} in the training split followed by "
        "a token. The count ratios are what an n-gram model would predict; the red bars are the "
        f"{net}'s, after the whole prompt."
    )
    gpt = ng.softmax(last_logits)
    if not table.defined:
        st.warning(
            "These tokens never occur in the training text: the count ratio is 0/0, undefined. "
            f"The {net} still has an answer, built from contexts that resemble this one. Try fewer "
            "tokens.",
            icon=":material/block:",
        )
    ids = list(dict.fromkeys([*table.top(8).tolist(), *np.argsort(-gpt)[:8].tolist()]))[:10]
    counts_p = table.probs()
    present.plot(
        cache.figure(
            charts.estimate_bars,
            [token_text(tok, t) for t in ids],
            [float(counts_p[t]) for t in ids] if table.defined else None,
            [float(kn[t]) for t in ids],
            [float(gpt[t]) for t in ids],
            title=f"After the last {len(used)} tokens: the training text's counts and the {net}",
            model_label=net,
        ),
        key="tt_estimates",
    )
    if found:
        st.caption(
            f"{len(found)} of the {table.total:,} places, spread through the training text "
            "(yellow: the prompt's last tokens; green: what came next):"
        )
        st.html(charts.snippets_html(found))


# ---- Generation: the running probability and memorisation -------------------------------------


@cache.per_prompt
def _log_probs(bundle_id: str, seq: tuple[int, ...], n_prompt: int) -> np.ndarray:
    return ng.text_log_probs(cache.bundle(bundle_id).model, list(seq), n_prompt)


@cache.per_prompt
def _spans(bundle_id: str, seq: tuple[int, ...], min_len: int, n_prompt: int) -> list[ng.Span]:
    return ng.memorised_spans(corpus.token_models(bundle_id).index, seq, min_len, n_prompt)


def generation_checks(ctx: PageContext, seq: list[int], n_prompt: int) -> None:
    """For the generated tokens of seq (after n_prompt): the model's own probability of each (T = 1)
    compounding into P(generated text | prompt), and the stretches found verbatim in the corpus."""
    st.subheader("How likely is this text, and is any of it copied?")
    generated = seq[n_prompt:]
    if not generated:
        st.caption("Generate a few tokens to see their probability and the memorisation check.")
        return
    log_p = _log_probs(ctx.bundle_id, tuple(seq), n_prompt)
    st.markdown(
        "The model's own probability (temperature 1, nothing cut) of each generated token given "
        "everything before it. Multiplied together they give the probability of the whole "
        "continuation, which shrinks with every token: even the most likely text is improbable."
    )
    if (note := nt.lookahead_claim(ctx.config.causal)).made:
        st.warning(note.text)
    _metrics(log_p, "generated text | prompt")
    labels = [
        f"{n_prompt + i}:{show_whitespace(token_text(ctx.tokenizer, t))}"
        for i, t in enumerate(generated)
    ]
    present.plot(
        cache.figure(
            charts.contribution_chart,
            labels,
            log_p,
            "The generated text's probability, compounding",
        ),
        key="tt_running_probability",
    )
    memorisation(ctx, seq, n_prompt)


@cache.per_model
def _chance(bundle_id: str) -> int:
    """The longest stretch held-out text shares with the training split (the chance overlap)."""
    return ng.chance_match_length(corpus.token_models(bundle_id).index)


def memorisation(ctx: PageContext, seq: list[int], n_prompt: int) -> None:
    models = corpus.token_models(ctx.bundle_id)
    st.markdown(
        "**Memorisation check.** Stretches of the text that occur word for word in the corpus "
        "(either split) and reach into the generated part. Short ones are everywhere by chance; "
        "a stretch counts as copied only when it is longer than any that held-out text (the "
        "validation split, never trained on) shares with the training split."
    )
    if models is None:
        st.info(f"“{ctx.name}” does not say what text it was trained on, so nothing to compare.")
        return
    min_len = state.number_input(
        "Shortest stretch (tokens)",
        "mem_min",
        2,
        64,
        12 if ctx.tokenizer.kind == "char" else 5,
        container=st.columns(3)[0],
        help="Shorter stretches are everywhere in any text (a common word, a name).",
    )
    spans = _spans(ctx.bundle_id, tuple(seq), int(min_len), n_prompt)
    tok = ctx.tokenizer
    pieces = [token_text(tok, t) for t in seq]
    st.html(charts.span_chips(pieces, ng.covered(spans, len(seq)), n_prompt))
    st.markdown(ng.memorisation_claim(spans, int(min_len), _chance(ctx.bundle_id), n_prompt).text)
    if not spans:
        return
    st.dataframe(
        [
            {
                "tokens": f"{s.start}–{s.end - 1}",
                "length": s.length,
                "found in": s.source,
                "times in training": s.in_train,
                "times in validation": s.in_val,
                "text": show_whitespace(tok.decode(seq[s.start : s.end])),
            }
            for s in spans
        ],
        hide_index=True,
        key="tt_spans",
    )
