"""The Architecture contrasts page's pairs of one shape that differ in one part (LayerNorm's
place, positions, RMSNorm, SwiGLU, RoPE, ALiBi, Llama's block, multi-query attention, tied
embeddings): what the choice is (LESSONS), the setting, the size and the losses side by side, the
loss along the prompt, and where the contrast asks, the residual stream's length (LayerNorm's
place), the loss past the training context (RoPE, ALiBi) or the KV cache's memory (multi-query).

Not here: the measures and claims (viz_model/analysis/contrasts.py, layernorm.py, variants.py),
the chart builders (ui/charts/contrasts.py, ui/charts/layernorm.py).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import cache, present
from ui.architecture_contrasts import runs
from ui.architecture_contrasts.pair import Pair, fmt, last_losses
from ui.charts import contrasts as charts
from ui.charts import layernorm as ln_charts
from ui.frame import PageContext
from viz_model.analysis import layernorm as lnx
from viz_model.analysis import variants as vr
from viz_model.analysis.labs import compare as cmp
from viz_model.analysis.residual import layer_labels

# What each same-shape contrast teaches (the "loss" contrasts of analysis/contrasts.py).
LESSONS = {
    "norm": "Where LayerNorm sits. **Pre-LN** (GPT-2) normalises what each sublayer reads; the "
    "residual stream itself is a running sum from the embedding on, as long as that sum happens "
    "to be, and no LayerNorm bounds it until the final one. **Post-LN** (the 2017 Transformer) "
    "normalises the stream itself after every addition, so after each block its length is set "
    "by that LayerNorm's gain, about ‖γ‖ = √D · rms(γ) (the LayerNorm page shows why), not by "
    "the sum of what came before. That does not make it short: a gain the model learned large "
    "gives a long stream. At two layers both train; deep post-LN models are the ones that need "
    "a learning-rate warm-up.",
    "sinusoidal": "Where position information comes from. **Learned** positions are a trained "
    "vector per position; **sine waves** of fixed frequencies are computed, not trained "
    r"(PE(p, 2i) = sin(p / 10000^(2i/d))), so they add no parameters: nothing in them is "
    "fitted to the training text (the rest of the model can still overfit), and they give a "
    "vector to any position, even one past the longest context seen in training.",
    "nopos": "A model with **no position embedding** at all still has one clue to order: the "
    "causal mask. Position t averages over t+1 tokens, so how spread its attention is tells it "
    "roughly where it is. The loss says how much of word order that recovers.",
    "rmsnorm": "**RMSNorm** (Llama) drops two things from LayerNorm: the centring and the bias. It "
    "divides each vector by its root mean square, sqrt(mean(x²) + ε), and multiplies by a gain "
    "γ: one statistic instead of two. Zhang and Sennrich (2019), who proposed it, found it trains "
    "about as well for less computation. Below, the two trained by the same command.",
    "swiglu": "A **gated MLP** (SwiGLU, in PaLM and Llama) multiplies a SiLU gate, "
    "SiLU(W_gate x), number by number with a second projection W_in x before W_out maps back. "
    "With 8/3 × d_model neurons instead of 4 × it holds about as many weights (three matrices "
    "instead of two, see the parameters). Shazeer (2020) found such gated units lower the loss "
    "at equal size; below, whether this tiny pair agrees.",
    "rope": "**Rotary positions** (RoPE; Su et al. 2021, used by Llama) add nothing to the "
    "embeddings: each query and key is rotated, pair of dimensions by pair, by an angle "
    "proportional to its position, so a score depends on how far apart two tokens are, not on "
    "where they are. Nothing stops the model from reading past its training context; the second "
    "chart shows how well it does there.",
    "alibi": "**ALiBi** (Press et al. 2022) gives the vectors no positions at all: each head "
    "subtracts m × (distance between query and key) from its scores, with a fixed slope m per "
    "head, so far tokens count less. It was designed to be trained on short windows and read on "
    "longer ones; the second chart tests that on windows twice the training context.",
    "llama": "**Llama's block** (Touvron et al. 2023) changes four parts of GPT-2's at once: "
    "RMSNorm for LayerNorm, a SwiGLU MLP for the GELU one, rotary positions for the learned "
    "table, and no biases. Here its MLP is made 196 neurons wide so that the two models hold the "
    "same number of parameters (within 0.1%): any difference in the loss comes from how the "
    "weights are used, not how many there are. One seed each, so a small difference is noise.",
    "mqa": "**Multi-query attention** (Shazeer 2019; grouped-query attention in Llama 2 is the "
    "step between) keeps every query head but lets them all share one key head and one value "
    "head. Generation keeps the keys and values of every token seen so far (the KV cache), so "
    "that memory shrinks by the number of heads, and the attention maps can still differ per "
    "head, since the queries do. Below: the loss it costs, and the memory it saves.",
    "tied": "**Tied embeddings** use one matrix twice: the token embedding W_E reads tokens in, "
    "and its transpose writes the logits out (GPT-2 does this). It saves V x d parameters and "
    "puts tokens that are used alike near each other on both ends.",
}
KV_LENGTHS = [256, 1024, 4096, 16384]  # sequence lengths the KV cache's memory is shown for


def draw(ctx: PageContext, pair: Pair) -> None:
    """What the choice is, the table of the two models, the loss along the prompt, and the
    contrast's own measure after it."""
    st.markdown(LESSONS[pair.key])
    b0 = pair.sides[0][2]
    tokens = cmp.read_prompt(b0.tokenizer, b0.config.n_ctx, ctx.prompt)
    if len(tokens.ids) < 2:
        st.info("The prompt needs at least two characters. Type a longer one in the sidebar.")
        return
    ids = tuple(tokens.ids)  # the Shakespeare pairs share one tokenizer
    losses = [runs.prompt_losses(bid, ids) for _, bid, _ in pair.sides]
    _table(pair, losses)
    if pair.contrast.differs == "norm":
        _norm_lengths(pair, ids)
    fig = cache.figure(
        charts.loss_lines,
        list(zip(pair.contrast.models, losses, strict=True)),
        "position t (predicting token t+1)",
        "Loss at each position of the prompt",
    )
    present.plot(fig, key="ctr_prompt_loss")
    if pair.contrast.measure == "extrapolate":
        _past_the_context(pair)
    elif pair.contrast.measure == "kv":
        _kv_memory(pair)


def _table(pair: Pair, losses: list) -> None:
    """One column a model: the fields that differ, parameters, and the losses."""
    contrast = pair.contrast
    rows = {}
    for (name, _, b), loss in zip(pair.sides, losses, strict=True):
        train, val = last_losses(b)
        rows[name] = {
            **{f: str(getattr(b.config, f)) for f in (contrast.differs, *contrast.with_it)},
            "parameters": f"{b.model.n_params():,}",
            "training loss (last step)": fmt(train),
            "validation loss": fmt(val),
            "loss on the prompt": fmt(float(loss.mean())),
        }
    st.dataframe(pd.DataFrame(rows), width="stretch")
    st.caption("Losses in nats per character; the same command, data and seed for both.")


def _norm_lengths(pair: Pair, ids: tuple[int, ...]) -> None:
    """The two streams' lengths, layer by layer, and what the numbers say (claims, not prose)."""
    measured = [
        (f"{n} ({b.config.norm}-LN)", runs.stream_lengths(bid, ids)) for n, bid, b in pair.sides
    ]
    labels = layer_labels(pair.sides[0][2].config.n_layer)
    fig = cache.figure(
        ln_charts.norm_profiles,
        {n: m.lengths for n, m in measured},
        {n: labels for n, _ in measured},
        title="Mean length of the residual vector, layer by layer",
    )
    present.plot(fig, key="ctr_norms")
    pre = next((n, m) for n, m in measured if m.norm == "pre")
    post = next((n, m) for n, m in measured if m.norm == "post")
    st.markdown(  # each line a claim computed from the lengths in the chart
        f"On your prompt:\n- {lnx.pre_post_claim(pre, post).text}\n"
        f"- **{pre[0]}**: {lnx.growth_claim(pre[1].lengths).text}\n"
        f"- **{post[0]}**: {lnx.post_ln_gain_claim(post[1]).text}"
    )


def _past_the_context(pair: Pair) -> None:
    """The loss along validation windows twice the training context, and a claim a model."""
    n_ctx = pair.sides[0][2].config.n_ctx
    length = 2 * n_ctx
    st.markdown(
        f"**Past the context.** Both read windows of {length} characters of the validation text, "
        f"twice the {n_ctx} they trained on ({vr.WINDOWS} windows, the loss at each position "
        "averaged). A model with a table of positions has no vector for position "
        f"{n_ctx} and beyond, so its line stops there."
    )
    profiles = [(name, runs.val_profile(bid, length)) for name, bid, _ in pair.sides]
    fig = cache.figure(
        charts.loss_lines,
        profiles,
        "position t (predicting token t+1)",
        "Loss at each position of windows twice the training context",
        mark=(n_ctx - 0.5, f"trained up to {n_ctx}"),
        markers=False,
    )
    present.plot(fig, key="ctr_extrapolate")
    for (name, profile), (_, _, b) in zip(profiles, pair.sides, strict=True):
        st.markdown("- " + vr.extrapolation_claim(name, profile, n_ctx, b.config.pos).text)


def _kv_memory(pair: Pair) -> None:
    """The KV cache's bytes per token, measured, and its memory at a few sequence lengths."""
    measured = [(name, runs.kv_per_token(bid), b.config.n_kv_heads) for name, bid, b in pair.sides]
    st.markdown("**The KV cache.** " + vr.kv_claim(measured).text)
    fig = cache.figure(
        charts.kv_memory_lines,
        [(name, per_token) for name, per_token, _ in measured],
        KV_LENGTHS[-1],
        "Memory of the KV cache, one sequence",
    )
    present.plot(fig, key="ctr_kv")
    rows = {
        name: {f"{T:,} tokens": f"{per_token * T / 2**20:,.2f} MiB" for T in KV_LENGTHS}
        for name, per_token, _ in measured
    }
    st.dataframe(pd.DataFrame(rows).T, width="stretch")
    st.caption(
        "Memory of the cache for one sequence of each length: bytes per token, measured from the "
        "model's own cache, times the tokens (these tiny models read at most "
        f"{pair.sides[0][2].config.n_ctx}; the longer lengths show what the same shapes would "
        "need)."
    )
