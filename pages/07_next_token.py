"""Next token: the distribution after the prompt, reshaped live by temperature, top-k and top-p;
its entropy; and how surprised the model is by each token of the prompt (surprisal, perplexity)."""

import math
from functools import partial

import numpy as np
import streamlit as st

import ui
from ui import cache, controls, parts, present, state, training_text
from ui.charts import next_token as charts
from ui.charts.common import plotly_text, show_whitespace
from viz_model.analysis import next_token as nt
from viz_model.analysis.tokens import token_text

ctx = ui.context()
V = ctx.tokenizer.vocab_size

st.markdown(
    "After reading the prompt, the model gives every token of its vocabulary a score, its "
    "**logit** $z_i$. The **softmax** turns the scores into probabilities that add up to 1. Before "
    "that, the scores are divided by the **temperature** $T$: below 1 the distribution sharpens "
    "(the most likely token gets likelier still), above 1 it flattens, and $T = 0$ always takes the most "
    "likely token (*greedy*). **Top-k** keeps only the $k$ most likely tokens, **top-p** (nucleus) "
    "keeps the fewest most likely tokens whose probabilities add up to at least $p$; the cut tokens "
    "get probability 0 and the rest are scaled up again (*renormalised*) to add up to 1. With "
    "both on, **top-k is applied first** and top-p then works on the tokens top-k kept, "
    "renormalised over them, so together they can keep fewer tokens than either alone."
)
st.latex(r"p_i = \frac{\exp(z_i / T)}{\sum_{j=1}^{V} \exp(z_j / T)}")


@cache.per_prompt
def prompt_numbers(bundle_id: str, ids: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The logits after the last prompt token (V,) and each prompt token's surprisal (T,)."""
    logits = nt.prompt_logits(cache.bundle(bundle_id).model, list(ids))
    return logits[-1], nt.surprisal(logits, list(ids))


last_logits, surprisal = prompt_numbers(ctx.bundle_id, tuple(ctx.ids))

# ---- the controls -----------------------------------------------------------------------------
settings = controls.sampling_controls(V, st.columns(3, gap="large"))
# the view settings on a row of their own: a fourth narrow column at 1024 px hid their labels
c4, c5, _ = st.columns(3, gap="large", vertical_alignment="bottom")
n_bars = state.select_slider(
    "Bars shown", "bars", [10, 15, 20, 30, 50], 20, container=c4, help="The most likely tokens."
)
log_y = state.toggle(
    "Log scale",
    "log",
    False,
    container=c5,
    help="Shows the small probabilities too, where temperature and the cuts change the most.",
)

dist = nt.distribution(last_logits, settings)
top = nt.top_tokens(dist, n_bars, partial(token_text, ctx.tokenizer))

# ---- the picture ------------------------------------------------------------------------------
last = show_whitespace(ctx.pieces[-1])
present.plot(  # built once per distinct view and shared: a class's followers draw the same one
    cache.figure(
        charts.distribution_bars,
        top.labels,
        top.base_probs,
        top.scaled_probs,
        top.probs,
        top.kept,
        log_y=log_y,
        title=f"What comes after “{plotly_text(last)}”? The {len(top.ids)} most likely of {V:,} tokens",
    ),
)
n_kept = int(dist.kept.sum())
st.caption(
    f"Light blue bars: probabilities after the temperature; grey bars: tokens top-k/top-p cut "
    f"(they can no longer be picked); dark blue: the renormalised probabilities the sampler "
    f"draws from; red ticks: the model's own probabilities (T = 1, nothing cut). "
    f"{n_kept:,} of {V:,} tokens can still be picked."
)

if settings.temperature > 0 and settings.top_k > 0 and settings.top_p < 1:
    cuts = nt.cut_counts(last_logits, settings)
    st.markdown(
        f"**Top-k first, then top-p.** Top-k keeps the {cuts.top_k} most likely tokens. Top-p "
        f"then renormalises those {cuts.top_k} and keeps the fewest whose probabilities add up "
        f"to at least {settings.top_p:g}: **{cuts.both} token{'s' * (cuts.both != 1)} "
        f"survive{'s' * (cuts.both == 1)}**. Top-p alone, on all {V} tokens, would keep "
        f"{cuts.top_p}."
    )

h_nats = dist.entropy
m1, m2, m3 = st.columns(3)
m1.metric("Entropy (nats)", f"{h_nats:.3f}")
m2.metric("Entropy (bits)", f"{nt.entropy_bits(h_nats):.3f}")
m3.metric(  # a short label (a third of a 1024 px column); the meaning in help=
    "Fair pick among",
    # Past 1,000 the unit is dropped: with GPT-2's 50,257 tokens "43032.3 tokens" was cut short
    f"{fair:,.0f}" if (fair := math.exp(h_nats)) >= 1000 else f"{fair:.1f} tokens",
    help="exp(entropy): the distribution is as uncertain as a fair pick among this many tokens.",
)
st.markdown(
    r"**Entropy** $H = -\sum_i p_i \log p_i$ measures how spread out the distribution the sampler "
    f"uses is: 0 means the next token is certain; {math.log(V):.2f} nats "
    f"({math.log2(V):.2f} bits) would mean all {V:,} tokens are equally likely. "
    "In bits, it is (to within one question) the average number of yes/no questions the best "
    "questioning needs to learn which token comes."
)

# ---- surprisal of the prompt --------------------------------------------------------------------
st.subheader("How surprised is the model by your prompt?")
st.markdown(
    "Run the same question at every position: how likely did the model find the token that "
    "actually came next? Its **surprisal** is $-\\log p$: near 0 when the model expected it, large "
    "when it did not. The first token has none, because nothing came before it. The "
    "**perplexity** of the whole text is $e$ to the mean surprisal."
)
st.latex(r"\text{surprisal}(x_t) = -\log p(x_t \mid x_{<t})")
st.latex(  # its own line: side by side they are wider than the column at 1024 px
    r"\text{perplexity} = \exp\Big(\frac{1}{T-1}\sum_{t=2}^{T} -\log p(x_t \mid x_{<t})\Big)"
)
st.html(charts.surprisal_chips(ctx.pieces, surprisal))
ppl = nt.perplexity(surprisal)
if math.isnan(ppl):
    st.info("The prompt has one token: type at least two to measure surprisal.")
else:
    p1, p2 = st.columns([1, 3])
    p1.metric("Perplexity", f"{ppl:.2f}")
    claim = nt.perplexity_claim(ppl, V, ctx.config.causal)
    p2.markdown(claim.text + " Hover a token to see its numbers.")

parts.page_link(
    "Using_a_model",
    "One forward pass gives all these surprisals at once (teacher forcing); scoring answers",
    use_part="forcing",
)

# ---- the training text behind it (ui/training_text.py) --------------------------------------------
training_text.prompt_probability(ctx, surprisal)
training_text.in_training_text(ctx, last_logits)

# ---- the numbers behind it ----------------------------------------------------------------------
with parts.numbers_behind_it() as opened:
    if opened:  # built only while open
        st.markdown(f"The {len(top.ids)} highest-scoring tokens after the prompt:")
        st.dataframe(top.rows(), hide_index=True)
        st.markdown("Each prompt token's probability and surprisal given the tokens before it:")
        st.dataframe(
            [
                {
                    "position": i,
                    "token": ctx.labels[i],
                    "p": None if np.isnan(s) else float(math.exp(-s)),
                    "surprisal (nats)": None if np.isnan(s) else float(s),
                    "surprisal (bits)": None if np.isnan(s) else float(s / math.log(2)),
                }
                for i, s in enumerate(surprisal)
            ],
            hide_index=True,
        )
