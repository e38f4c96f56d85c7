"""Architecture contrasts: two small bundled models that differ in one design choice, side by side
with the numbers that show what the choice does (no causal mask; one attention layer or two; the
parts modern models changed: RMSNorm, SwiGLU, RoPE and ALiBi past the context, multi-query
attention's KV cache)."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from serving import models
from ui import cache, contrast_sweeps, parts, present, state
from ui.charts import compare as cmp_charts
from ui.charts import contrasts as charts
from ui.charts import layernorm as ln_charts
from ui.charts.common import token_labels
from viz_model.analysis import compare as cmp
from viz_model.analysis import contrasts as ct
from viz_model.analysis import dynamics as dyn
from viz_model.analysis import layernorm as lnx
from viz_model.analysis import sweeps as sw
from viz_model.analysis import training as tr
from viz_model.analysis import variants as vr
from viz_model.analysis.residual import layer_labels
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.model.sampling import SamplingSettings, generate
from viz_model.text.data import TokenData, load_text

CONTINUATION = 120  # tokens each model writes after the prompt
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
SAMPLING = SamplingSettings(temperature=0.8)

ctx = ui.context()
st.markdown(
    "Each lecture claim about a design choice, tested on tiny models trained by the same "
    "command except for that one choice (the commands are at the foot of the page). The sidebar's "
    "model plays no part here; the sidebar's **prompt** does, for the pairs of bundled models."
)
key = state.radio(
    "Contrast",
    "ctr",
    [*ct.CONTRASTS, *sw.SWEEPS],  # a sweep's results, read from a file: ui/contrast_sweeps.py
    "mask",
    format_func=lambda k: ct.CONTRASTS[k].title if k in ct.CONTRASTS else sw.SWEEPS[k].title,
    horizontal=True,
)
if key in sw.SWEEPS:
    contrast_sweeps.show(key)
    st.stop()
contrast = ct.CONTRASTS[key]
found = models.discover()
missing = [name for name in contrast.models if name not in found]
if missing:
    st.info(
        f"This contrast needs the bundled models {' and '.join(contrast.models)}; "
        f"{', '.join(missing)} is not there. Its command is in scripts/train_bundled_models.sh.",
        icon=":material/info:",
    )
    st.stop()
ids_by_name = {name: models.bundle_id(found[name]) for name in contrast.models}
try:
    sides = [(name, bid, cache.bundle(bid)) for name, bid in ids_by_name.items()]
except CheckpointError as exc:
    st.error(f"Could not open a model of this contrast: {exc}.")
    st.stop()


@cache.per_prompt
def look_ahead(bundle_id: str, ids: tuple[int, ...]) -> ct.LookAhead:
    return ct.look_ahead(cache.bundle(bundle_id).model, ids)


@cache.per_prompt
def continuation(bundle_id: str, ids: tuple[int, ...]) -> str:
    b = cache.bundle(bundle_id)
    return b.tokenizer.decode(generate(b.model, list(ids), CONTINUATION, SAMPLING, seed=0))


@cache.per_prompt
def prompt_losses(bundle_id: str, ids: tuple[int, ...]):
    return ct.position_losses(cache.bundle(bundle_id).model, ids)


@cache.per_prompt
def stream_lengths(bundle_id: str, ids: tuple[int, ...]) -> lnx.StreamLengths:
    return lnx.stream_lengths(cache.bundle(bundle_id).model, list(ids))


@cache.per_prompt
def copying(bundle_id: str) -> ct.CopyProfile:
    b = cache.bundle(bundle_id)
    return ct.copy_profile(b.model, dyn.probe(b.tokenizer, b.meta, b.config.n_ctx))


def last_losses(b: Bundle) -> tuple[float | None, float | None]:
    final = tr.final_step(b.history, b.meta)
    return tr.losses_at(b.history, final) if final is not None else (None, None)


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "–" if x is None else format(x, spec)


def mask_contrast() -> None:
    st.markdown(
        "A GPT is trained to predict token *t+1* from tokens *1..t*; the **causal mask** hides "
        "the rest of the window from position *t*. Remove it and the answer is in the input: "
        "the training loss falls towards zero. But when the model **generates**, token *t+1* "
        "does not exist yet, so what it learned (copy the next token) has nothing to copy."
    )
    # two lines: one overflows the ~560 px main column of a 1024 px projector
    st.latex(
        r"\begin{gathered}\text{pattern} = \operatorname{softmax}\Big(\frac{QK^\top}{\sqrt{d}}"
        r" + M\Big)\\ M_{ts} = -\infty \text{ where } s > t"
        r" \text{ (with the mask), else } 0\end{gathered}"
    )
    read = [cmp.read_prompt(b.tokenizer, b.config.n_ctx, ctx.prompt) for _, _, b in sides]
    tokens = read[0]
    if len(tokens.ids) < 2:
        st.info("The prompt needs at least two characters. Type a longer one in the sidebar.")
        return
    ids = tuple(tokens.ids)  # the two models share one tokenizer
    la = [look_ahead(bid, ids) for _, bid, _ in sides]
    hooks = tuple(f"blocks.{i}.attn.hook_pattern" for i in range(sides[1][2].config.n_layer))
    ahead = []
    for _, bid, _ in sides:
        acts = cache.activations(bid, ids, hooks)
        ahead.append(ct.next_token_weight([acts[h] for h in hooks]))
    rows = {}
    for (name, _, b), lk, w in zip(sides, la, ahead, strict=True):
        train, val = last_losses(b)
        rows[name] = {
            "causal mask": "yes" if b.config.causal else "no",
            "training loss (last step)": fmt(train),
            "validation loss (window seen whole)": fmt(val),
            "prompt loss, window seen whole": fmt(lk.mean_seen),
            "prompt loss, as generated": fmt(lk.mean_generated),
            "most attention on the next token": f"{w.max():.0%}",
        }
    st.dataframe(pd.DataFrame(rows), width="stretch")
    st.caption(
        "Losses in nats per character. As generated: position t sees only tokens 1..t, as when "
        "writing; for the masked model that changes nothing, so its two lines are one. Most "
        "attention on the next token: the largest mean weight any head puts on "
        "the key right after its query (the answer)."
    )
    by_mask = {
        b.config.causal: (name, lk, w) for (name, _, b), lk, w in zip(sides, la, ahead, strict=True)
    }
    (m_name, m_la, _), (u_name, u_la, u_w) = by_mask[True], by_mask[False]
    st.markdown(  # claims computed from the table's numbers, each against its baseline
        f"- {ct.look_ahead_claim((m_name, m_la), (u_name, u_la)).text}\n"
        f"- {ct.next_token_claim(u_name, u_w, len(ids)).text}"
    )
    targets = tokens.texts[1:]
    fig = cache.figure(
        charts.look_ahead_lines,
        list(zip(contrast.models, la, strict=True)),
        targets,
        "Loss at each position",
    )
    present.plot(fig, key="ctr_look_ahead")
    st.subheader("What each writes after the prompt")
    for col, (name, bid, _) in zip(st.columns(2), sides, strict=True):
        col.markdown(f"**{name}**")
        col.code(continuation(bid, ids), language=None, wrap_lines=True)
    st.caption(f"{CONTINUATION} characters each, temperature {SAMPLING.temperature}, seed 0.")
    with parts.followed_expander("The numbers: the loss at each position", "position_loss"):
        table = {"predicting": token_labels(tokens.texts)[1:]}
        for name, lk in zip(contrast.models, la, strict=True):
            table[f"{name}, whole window"] = lk.seen
            table[f"{name}, as generated"] = lk.generated
        st.dataframe(pd.DataFrame(table).round(3), hide_index=True)


def layers_contrast() -> None:
    st.markdown(
        "On random letters written twice, the second copy can be predicted only by copying: at "
        "letter *A*, find the earlier *A* and say what came after it. An **induction head** does "
        "that, and it needs a **previous-token head** in an earlier layer to have written "
        "\u201cthe letter before me was *A*\u201d into each position. With **one layer** there is no "
        "earlier layer: the model can learn which letters are in the window, not which comes next."
    )
    profiles = [copying(bid) for _, bid, _ in sides]
    rows = {}
    for (name, _, b), p in zip(sides, profiles, strict=True):
        m = p.measures
        rows[name] = {
            "layers": str(b.config.n_layer),
            "loss, first copy": fmt(m.loss_first),
            "loss, second copy": fmt(m.loss_second),
            "copy accuracy (second copy)": f"{m.copy_accuracy:.0%}",
            "whole copy right": f"{m.exact_copy:.0%}",
            "strongest induction score": f"{m.scores['induction'].max():.2f}",
        }
    st.dataframe(pd.DataFrame(rows), width="stretch")
    k = profiles[0].k
    st.caption(
        f"Means over {dyn.N_PROBES} sequences of {k} random letters written twice, in nats per "
        "letter; a blind guess among 26 letters costs ln 26 ≈ 3.26. Copy accuracy: the share of "
        "the second copy's letters that are the model's top guess."
    )
    fig = cache.figure(
        charts.copy_lines,
        [(n, p.loss) for n, p in zip(contrast.models, profiles, strict=True)],
        k,
        "Loss at each position of a sequence written twice",
    )
    present.plot(fig, key="ctr_copy")
    with parts.followed_expander("The numbers: the loss at each position", "copy_loss"):
        table = {"position": range(2 * k - 1)}
        table |= {n: p.loss for n, p in zip(contrast.models, profiles, strict=True)}
        st.dataframe(pd.DataFrame(table).round(3), hide_index=True)


def norm_lengths(ids: tuple[int, ...]) -> None:
    """The two streams' lengths, layer by layer, and what the numbers say (claims, not prose)."""
    measured = [(f"{n} ({b.config.norm}-LN)", stream_lengths(bid, ids)) for n, bid, b in sides]
    labels = layer_labels(sides[0][2].config.n_layer)
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


@cache.per_model
def val_profile(bundle_id: str, length: int) -> np.ndarray:
    """The loss at each position of validation windows `length` long (analysis/variants.py)."""
    b = cache.bundle(bundle_id)
    val = TokenData.from_text(
        load_text(b.meta["data"]), b.tokenizer, b.meta["data"]["val_fraction"]
    )
    return vr.extrapolation(b.model, val.val, length)


def past_the_context() -> None:
    n_ctx = sides[0][2].config.n_ctx
    length = 2 * n_ctx
    st.markdown(
        f"**Past the context.** Both read windows of {length} characters of the validation text, "
        f"twice the {n_ctx} they trained on ({vr.WINDOWS} windows, the loss at each position "
        "averaged). A model with a table of positions has no vector for position "
        f"{n_ctx} and beyond, so its line stops there."
    )
    profiles = [(name, val_profile(bid, length)) for name, bid, _ in sides]
    fig = cache.figure(
        charts.loss_lines,
        profiles,
        "position t (predicting token t+1)",
        "Loss at each position of windows twice the training context",
        mark=(n_ctx - 0.5, f"trained up to {n_ctx}"),
        markers=False,
    )
    present.plot(fig, key="ctr_extrapolate")
    for (name, profile), (_, _, b) in zip(profiles, sides, strict=True):
        st.markdown("- " + vr.extrapolation_claim(name, profile, n_ctx, b.config.pos).text)


@cache.per_model
def kv_per_token(bundle_id: str) -> float:
    """Bytes the model's KV cache holds per token (a forward with a real cache, once a model)."""
    return vr.kv_bytes_per_token(cache.bundle(bundle_id).model)


def kv_memory() -> None:
    measured = [(name, kv_per_token(bid), b.config.n_kv_heads) for name, bid, b in sides]
    st.markdown("**The KV cache.** " + vr.kv_claim(measured).text)
    lengths = [256, 1024, 4096, 16384]
    fig = cache.figure(
        charts.kv_memory_lines,
        [(name, per_token) for name, per_token, _ in measured],
        lengths[-1],
        "Memory of the KV cache, one sequence",
    )
    present.plot(fig, key="ctr_kv")
    rows = {
        name: {f"{T:,} tokens": f"{per_token * T / 2**20:,.2f} MiB" for T in lengths}
        for name, per_token, _ in measured
    }
    st.dataframe(pd.DataFrame(rows).T, width="stretch")
    st.caption(
        "Memory of the cache for one sequence of each length: bytes per token, measured from the "
        "model's own cache, times the tokens (these tiny models read at most "
        f"{sides[0][2].config.n_ctx}; the longer lengths show what the same shapes would need)."
    )


def loss_contrast() -> None:
    st.markdown(LESSONS[key])
    tokens = cmp.read_prompt(sides[0][2].tokenizer, sides[0][2].config.n_ctx, ctx.prompt)
    if len(tokens.ids) < 2:
        st.info("The prompt needs at least two characters. Type a longer one in the sidebar.")
        return
    ids = tuple(tokens.ids)  # the Shakespeare pairs share one tokenizer
    losses = [prompt_losses(bid, ids) for _, bid, _ in sides]
    rows = {}
    for (name, _, b), loss in zip(sides, losses, strict=True):
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
    if contrast.differs == "norm":
        norm_lengths(ids)
    fig = cache.figure(
        charts.loss_lines,
        list(zip(contrast.models, losses, strict=True)),
        "position t (predicting token t+1)",
        "Loss at each position of the prompt",
    )
    present.plot(fig, key="ctr_prompt_loss")
    if contrast.measure == "extrapolate":
        past_the_context()
    elif contrast.measure == "kv":
        kv_memory()


st.subheader(contrast.title)
if contrast.measure == "look_ahead":
    mask_contrast()
elif contrast.measure == "copy":
    layers_contrast()
else:
    loss_contrast()

st.subheader("How they trained")
named = []
for name, _, b in sides:
    per_step = int((b.train_config or {}).get("batch_size", 1)) * b.config.n_ctx
    named.append((name, tr.curves(b.history, "step", per_step)))
fig = cache.figure(cmp_charts.overlaid_curves, named, "nats per token")
present.plot(fig, key="ctr_curves")
st.caption("Compare models draws any two models this way, in bits per character too.")
with parts.followed_expander("The commands that trained them", "commands"):
    for name, _, b in sides:
        st.markdown(f"**{name}**")
        st.code(b.meta.get("command", "–"), language="bash", wrap_lines=True)
