"""The N-grams (Shannon) page's sections, one function each, drawn in order by pages/10_ngrams.py:
the idea and the counts this model's corpus gives (`counts`), Shannon's approximations made live
(`shannon_samples`), the count-ratio estimate after a typed context (`count_ratio`), how sparse
contexts get (`sparsity`), and perplexity by order beside the trained models (`perplexity`).

Not here: the counting models, their scores and claims (viz_model/analysis/ngrams.py), the
corpus they are counted on (ui/corpus.py), the chart builders (ui/charts/ngrams.py).
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from serving.models import split_step
from ui import cache, corpus, parts, present, state
from ui.charts import ngrams as charts
from ui.charts.common import show_whitespace
from ui.frame import PageContext
from viz_model.analysis import ngrams as ng
from viz_model.analysis import training as tr
from viz_model.analysis.tokens import token_text
from viz_model.model.recurrent_config import FAMILY_LABELS

LETTERS, WORDS = 160, 32  # length of each of Shannon's samples
TOP = 10  # next tokens in the estimate chart
MAX_CONTEXT_CHARS = 200


def net_label(ctx: PageContext) -> str:
    """What the page calls the model on screen: "GPT", or "LSTM", ..."""
    return FAMILY_LABELS[ctx.bundle.family]


@cache.per_prompt(spinner="The model writes its sample…")
def gpt_sample(bundle_id: str, seed: int, n_tokens: int) -> str:
    bundle, found = cache.bundle(bundle_id), corpus.token_models(bundle_id)
    start = ng.start_ids(bundle.tokenizer, found.index)
    return ng.gpt_sample(bundle.model, bundle.tokenizer, start, n_tokens, seed)


@cache.per_prompt
def shannon(bundle_id: str, unit: str, order: int, seed: int) -> str:
    symbols = corpus.symbols(cache.bundle(bundle_id), unit)
    return ng.shannon_text(symbols, order, LETTERS if unit == "letters" else WORDS, seed)


def counts(ctx: PageContext) -> ng.TokenModels:
    """The idea and its formula, then the counting models of this model's own training text; the
    run stops with a note when the model does not say what text that was."""
    st.markdown(
        "Before neural networks, a language model was a table of counts. In 1948 Claude Shannon "
        "approximated English by opening a book at random and copying what followed the last few "
        "letters: an **n-gram model** predicts the next token from the $n-1$ tokens before it, "
        "with the **count ratio** of how often that happened in the training text. A neural "
        "network (a GPT, or an RNN before it) answers the same question, $p(x_t \\mid x_{<t})$, "
        "but from all of the context and without a table."
    )
    st.latex(
        r"P(w \mid w_{t-n+1}\dots w_{t-1}) = "
        r"\frac{\text{count}(w_{t-n+1}\dots w_{t-1}\,w)}{\text{count}(w_{t-n+1}\dots w_{t-1})}"
    )
    source = corpus.source_of(ctx.bundle)
    models = corpus.token_models(ctx.bundle_id)
    if models is None:
        st.info(
            f"“{ctx.name}” does not say what text it was trained on, or that text can no longer "
            "be found, so there is nothing to count. Pick a model trained by this app (the "
            "bundled ones are), or one whose config.json names its data."
        )
        st.stop()
    st.caption(
        f"Counted on {corpus.describe(source)}, in “{ctx.name}”’s {ctx.tokenizer.kind} tokens: "
        f"{models.index.n_train:,} training and {models.val_tokens:,} validation tokens, split as "
        "the model's training split them."
    )
    return models


def shannon_samples(ctx: PageContext, models: ng.TokenModels) -> None:
    """1. Letters and words drawn from counts of orders 0 to 3, beside the model's own sample."""
    net = net_label(ctx)
    st.subheader("1. Shannon's approximations, made live")
    st.markdown(
        "Each sample below is drawn from the model's own training text. **Order 0**: every letter "
        "equally likely. **Order 1**: each letter as often as it occurs. **Order 2 and 3**: each "
        "letter as often as it follows the 1 or 2 letters before it. Then the same with **words**. "
        "The more context the counts use, the more the text looks like the corpus; the sample of "
        f"the {net} on screen is beside them. Change the seed to draw again."
    )
    seed = state.number_input(
        "Seed",
        "ng_seed",
        0,
        999_999,
        0,
        container=st.columns(3)[0],
        help="Same seed, same samples.",
    )
    rows = [
        ("Order 0: letters, all equally likely", "letters", 0),
        ("Order 1: letter frequencies", "letters", 1),
        ("Order 2: a letter given the one before", "letters", 2),
        ("Order 3: a letter given the two before", "letters", 3),
        ("Words, order 1: word frequencies", "words", 1),
        ("Words, order 2: a word given the one before", "words", 2),
    ]
    for pair in (rows[0:2], rows[2:4], rows[4:6]):
        for column, (title, unit, order) in zip(st.columns(2, gap="large"), pair, strict=True):
            _sample(column, title, shannon(ctx.bundle_id, unit, order, seed))
    n_gpt = max(8, round(LETTERS / models.chars_per_token))
    _sample(
        st,
        f"The {net} “{ctx.name}” ({n_gpt} tokens, T = 1)",
        gpt_sample(ctx.bundle_id, seed, n_gpt),
    )


def _sample(container, title: str, text: str) -> None:
    container.markdown(f"**{title}**")
    container.code(text, language=None, wrap_lines=True)


def count_ratio(ctx: PageContext, models: ng.TokenModels) -> None:
    """2. What followed a typed context in the training text: counts, Kneser-Ney and the model."""
    tok, net = ctx.tokenizer, net_label(ctx)
    st.subheader("2. What followed your context in the training text?")
    st.markdown(
        "Type a context. The table counts what came right after its last $n-1$ tokens in the "
        "training split; the count ratio is the n-gram estimate. A context that never occurred has "
        f"no estimate at all: $0/0$. The {net}'s distribution is defined for every context, because "
        "similar contexts get similar vectors and so share what was learned about each other "
        "(Bengio et al., 2003, the argument for embeddings). **Kneser-Ney** smoothing is counting's "
        "answer: it always mixes in the estimate of a shorter context, and falls back on it when "
        "the context is rare or unseen."
    )
    c1, c2 = st.columns([3, 2], gap="large")
    typed = state.bind(
        c1.text_input,
        "ng_context",
        state.url_str("ng_context", "my lord", MAX_CONTEXT_CHARS),
        "Context",
        max_chars=MAX_CONTEXT_CHARS,
        help="Any text; it is cut into the model's tokens.",
    )
    k = state.slider(
        "Tokens of context used (n − 1)",
        "ng_k",
        1,
        8,
        5 if tok.kind == "char" else 2,
        container=c2,
        help="The n-gram model looks only at this many tokens before the next one.",
    )
    ids = tok.encode(typed)
    if not ids:
        st.info("Type a context of at least one token.")
        return
    used = ids[-k:]
    table = ng.count_table(models, used)
    shown = "".join(token_text(tok, t) for t in used)
    st.markdown(
        f"The last {len(used)} token{'s' * (len(used) != 1)}: "
        f"`{show_whitespace(shown).replace('`', 'ˋ')}` occurred **{table.total:,}** times "
        "followed by a token in the training split."
    )
    gpt = ng.softmax(cache.logits(ctx.bundle_id, tuple(ids[-ctx.config.n_ctx :]))[-1])
    kn = models.kn_distribution(used, len(used) + 1)
    top_count = table.top(TOP)
    top_gpt = np.argsort(-gpt, kind="stable")[:TOP]
    labels_ids = list(dict.fromkeys([*top_count.tolist(), *top_gpt.tolist()]))[:TOP]
    counts_p = table.probs()
    if not table.defined:
        st.warning(
            f"**Undefined.** This context never occurred in the training text: the count ratio "
            f"is 0/0, so an n-gram model of order {len(used) + 1} has nothing to say. The {net} "
            "still gives a distribution, and Kneser-Ney falls back on shorter contexts.",
            icon=":material/block:",
        )
    present.plot(
        cache.figure(
            charts.estimate_bars,
            [token_text(tok, t) for t in labels_ids],
            [counts_p[t] for t in labels_ids] if table.defined else None,
            [kn[t] for t in labels_ids],
            [gpt[t] for t in labels_ids],
            title=f"P(next token | the last {len(used)} tokens): counts, smoothed counts, the {net}",
            model_label=net,
        ),
        key="ng_estimates",
    )
    reach = getattr(ctx.config, "receptive_field", None)  # the CNN's; None: all it was given
    reads = (
        f"the last {reach} tokens of the context you typed (its receptive field)"
        if reach is not None and reach < ctx.config.n_ctx
        else f"the whole context you typed (up to {ctx.config.n_ctx} tokens)"
    )
    st.caption(
        f"The counts and Kneser-Ney see the last {len(used)} tokens; the {net} reads {reads}. "
        f"The tokens shown: the most frequent after the context and the {net}'s most likely."
    )
    with st.expander("The counts behind the ratio", expanded=table.defined):
        if table.defined:
            st.dataframe(
                [
                    {
                        "next token": parts.token_label(tok, t),
                        "count": int(table.counts[t]),
                        "count ratio": f"{int(table.counts[t])}/{table.total}",
                        "P (counts)": float(counts_p[t]),
                        "P (Kneser-Ney)": float(kn[t]),
                        f"P ({net})": float(gpt[t]),
                    }
                    for t in top_count
                ],
                hide_index=True,
            )
        else:
            st.markdown(
                "count(context) = 0, so P(w | context) = 0/0 for every one of the "
                f"{tok.vocab_size} tokens."
            )


def sparsity(ctx: PageContext, models: ng.TokenModels) -> None:
    """3. The share of validation contexts never seen in training, by context length."""
    st.subheader("3. Why counting runs out: sparse contexts")
    st.markdown(
        "The longer the context, the more of the contexts met in new text were never in the "
        "training text, and a count ratio cannot be computed there at all. This is the **curse of "
        "dimensionality** for counts: with $V$ tokens there are $V^{n-1}$ possible contexts, and a "
        "corpus holds a vanishing share of them. " + ng.sparsity_claim(models.unseen).text
    )
    present.plot(
        cache.figure(charts.sparsity_chart, models.unseen, f"{ctx.tokenizer.kind} tokens"),
        key="ng_sparsity",
    )


def perplexity(ctx: PageContext, models: ng.TokenModels) -> None:
    """4. Add-k and Kneser-Ney bits by order, per token and per character, beside the trained
    models of this text (the one on screen at the sidebar's step), and the claims they make."""
    tok, net = ctx.tokenizer, net_label(ctx)
    st.subheader("4. How good is counting? Perplexity by order, beside the trained models")
    scores = models.scores
    st.markdown(
        "Each n-gram model is scored like a trained model: the average $-\\log_2 p$ of each "
        "validation token, in **bits**. Unseen counts would cost infinitely many bits, so counts "
        "are smoothed. **Add-k** adds $k$ to every count ($k$ picked on the last 10% of the "
        "training split, never on validation): simple, but it spreads mass evenly over all $V$ "
        "tokens, so with longer contexts its sparse counts can make it worse, not better. "
        "**Interpolated Kneser-Ney** subtracts a discount $D$ (from the counts of counts, nothing "
        "tuned) and gives the freed mass to a shorter context, where lower orders count how many "
        "*different* tokens came before a token rather than how often it occurs. Per character, a "
        "character model and a BPE model compare fairly."
    )
    bpt_ng = {
        "add-k": [x / ng.LN2 for x in scores.add_k],
        "Kneser-Ney": [x / ng.LN2 for x in scores.kneser_ney],
    }
    bpc_ng = {name: [x / models.chars_per_token for x in v] for name, v in bpt_ng.items()}
    # the loss recorded for the weights on screen (a snapshot's, else the final step's, said so)
    shown = split_step(ctx.bundle_id)[1]
    recorded = tr.val_loss_at(ctx.bundle.history, ctx.bundle.meta, shown)
    own = None if recorded is None else recorded.loss
    label = "" if recorded is None else tr.loss_step_label(recorded, shown)
    own_line = f"{ctx.name} ({label})" if label else ctx.name  # its lines name the step they are
    causal = ctx.config.causal  # a model without the causal mask saw the token it was scored on
    gpt_token = {own_line: own / ng.LN2} if own is not None and causal else {}
    gpt_char, lookahead, kinds = {}, [], {own_line: net}
    same = corpus.same_corpus_models(ctx.bundle)
    for name, bid in sorted(same.items(), key=lambda item: item[0] != ctx.name):  # this one first
        if not cache.bundle(bid).config.causal:
            lookahead.append(name)
            continue
        if name == ctx.name:  # the weights on screen, as in the sentence below
            if own is not None and math.isfinite(own):
                gpt_char[own_line] = ng.bits_per_char(own, models.chars_per_token)
            continue
        bpc = corpus.gpt_bits_per_char(bid)
        if bpc is not None:
            gpt_char[name] = bpc
            kinds[name] = FAMILY_LABELS[cache.bundle(bid).family]
    versus = ng.gpt_vs_counts_claim(
        ctx.name,
        None if own is None else own / ng.LN2,
        scores.orders,
        bpt_ng["Kneser-Ney"],
        causal,
        recorded,
        shown,
    )
    p1, p2 = st.columns(2, gap="large")
    present.plot(
        cache.figure(
            charts.order_chart,
            scores.orders,
            bpt_ng,
            gpt_token,
            "bits per token",
            f"Per {tok.kind} token (this model)",
            kinds,
        ),
        key="ng_per_token",
        container=p1,
    )
    present.plot(
        cache.figure(
            charts.order_chart,
            scores.orders,
            bpc_ng,
            gpt_char,
            "bits per character",
            "Per character (every model)",
            kinds,
        ),
        key="ng_per_char",
        container=p2,
    )
    kn_claim = ng.kneser_ney_claim(
        scores.orders, bpt_ng["add-k"], bpt_ng["Kneser-Ney"], models.vocab
    )
    st.markdown(
        " ".join([ng.add_k_claim(scores.orders, bpt_ng["add-k"]).text, kn_claim.text, versus.text])
    )
    st.caption(
        f"Scored on {scores.n_eval:,} validation tokens ({models.chars_per_token:.2f} characters "
        "per token). Dashed lines: each model's last recorded validation loss, converted with its "
        "own tokens' characters per token"
        + (
            "."
            if not label
            else f"; “{ctx.name}” is shown at step {shown:,}, "
            + (
                "before any evaluation, so its line is the final step's (in brackets)."
                if recorded.of_final
                else "so its line is the last evaluation by then, at the step in brackets."
            )
        )
        + (
            f" Left off: {', '.join(lookahead)}, without a causal mask (it saw the token it was "
            "scored on)."
            if lookahead
            else ""
        )
    )
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.dataframe(
                [
                    {
                        "n": n,
                        "add-k k": scores.k[i],
                        "add-k (nats/token)": scores.add_k[i],
                        "Kneser-Ney (nats/token)": scores.kneser_ney[i],
                        "Kneser-Ney (bits/token)": bpt_ng["Kneser-Ney"][i],
                        "Kneser-Ney (bits/char)": bpc_ng["Kneser-Ney"][i],
                        "perplexity per token (KN)": math.exp(scores.kneser_ney[i]),
                    }
                    for i, n in enumerate(scores.orders)
                ],
                hide_index=True,
            )
            st.markdown(
                "Trained models in bits per character: "
                + ", ".join(f"{name} ({kinds[name]}) {v:.3f}" for name, v in gpt_char.items())
                + f". Building the counts and the index took {models.seconds['count']:.2f} s "
                f"(encoding the text {models.seconds['encode']:.2f} s) and holds "
                f"{models.nbytes / 1e6:.1f} MB."
            )
