"""The MLP neurons page's sections, one function each, drawn in order by pages/06_mlp_neurons.py:
what an MLP and its neurons are on this model (`intro`, which stops on an attention-only model),
the most active neurons of a layer on the prompt (`active_neurons`), and one neuron: the corpus
snippets that excite it most and the tokens its output direction promotes or suppresses
(`one_neuron`, a fragment: typing another neuron reruns only it).

Not here: the measures and claims (viz_model/analysis/neurons.py), the chart builders
(ui/charts/neurons.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from ui import cache, classroom, parts, present, state
from ui.charts import neurons as charts
from ui.frame import PageContext
from viz_model.analysis import neurons as nx
from viz_model.model.config import ACT_LABELS
from viz_model.text.data import load_corpus

CORPUS = "shakespeare"
N_WINDOWS = 200
N_EXAMPLES = 8
# The lowest value each nonlinearity can give (SiLU's is at x = -1.28).
ACT_MINIMUM = {"gelu": -0.17, "gelu_tanh": -0.17, "silu": -0.28}


@dataclass(frozen=True)
class Layer:
    """What section 1 settled on: the layer, its neurons on the prompt (T, M), the most active."""

    layer: int
    post: np.ndarray
    top: np.ndarray


# ---- cached measures ------------------------------------------------------------------------------


@cache.per_prompt
def prompt_neurons(bundle_id: str, ids: tuple[int, ...], layer: int) -> np.ndarray:
    # Every layer's neurons come from one forward pass (cached), so changing the layer needs none.
    names = tuple(nx.post_name(i) for i in range(cache.bundle(bundle_id).config.n_layer))
    return cache.activations(bundle_id, ids, names)[nx.post_name(layer)]  # (T, M)


@cache.per_model(spinner=f"Running the model over {N_WINDOWS} snippets of the corpus…", keep=4)
def corpus_search(bundle_id: str) -> nx.CorpusSearch:
    bundle = cache.bundle(bundle_id)
    return nx.corpus_search(
        bundle.model, bundle.tokenizer, load_corpus(CORPUS), N_WINDOWS, keep=N_EXAMPLES
    )


@cache.per_model(keep=4)
def neuron_ranking(bundle_id: str) -> nx.NeuronRanking:
    found = corpus_search(bundle_id)
    return nx.rank_neurons(found.maxima, found.argmax, k=N_EXAMPLES)


@cache.per_prompt
def example_activations(
    bundle_id: str, windows: tuple[int, ...], layer: int, neuron: int
) -> np.ndarray:
    found = corpus_search(bundle_id)
    kept = found.stored_activations(layer, neuron, list(windows))  # kept by the corpus scan
    if kept is not None:
        return kept
    ids = found.windows.ids[list(windows)]
    return nx.neuron_activations(cache.bundle(bundle_id).model, ids, layer, neuron)


@cache.per_prompt
def direction(bundle_id: str, layer: int, neuron: int) -> np.ndarray:
    return nx.output_direction_logits(cache.bundle(bundle_id).model, layer, neuron)


# ---- the idea -------------------------------------------------------------------------------------


def intro(ctx: PageContext) -> None:
    """What an MLP and its neurons are, written with this model's numbers; stops the page on an
    attention-only model, which has none."""
    cfg = ctx.config
    if not nx.has_mlp(ctx.model):
        st.info(
            f"“{ctx.name}” is an **attention-only** model: its blocks have no MLP, so there are no "
            "neurons to look at. Pick a model with MLPs (the model card in the sidebar says "
            "“attention + MLP”) to use this page."
        )
        st.stop()
    if cfg.mlp == "gated":
        gate = "SwiGLU, as in Llama" if cfg.act == "silu" else f"gated {ACT_LABELS[cfg.act]}"
        st.markdown(
            "After attention, each block of a transformer usually has an **MLP** (multi-layer "
            "perceptron): it works on every token on its own. This model's MLP is **gated** "
            f"({gate}): it makes two projections of the token's {cfg.d_model} numbers to "
            f"$d_\\text{{mlp}}$ = {cfg.d_mlp}, passes one (the *gate*) through "
            f"{ACT_LABELS[cfg.act]} and multiplies it number by number with the other, then maps "
            "the products back. Each product is a **neuron**; its **activation** can be strongly "
            "negative as well as positive, since the ungated half carries its sign. This page "
            "ranks and shows neurons by their largest positive activations, so a neuron that "
            "speaks mostly in negatives looks weaker here than it is."
        )
        st.latex(
            r"\text{mlp}(x) = W_{\text{out}}\; \underbrace{\big(\text{act}(W_{\text{gate}}\, x) "
            r"\odot W_{\text{in}}\, x\big)}_{\text{neurons: } d_\text{mlp} \text{ activations}}"
        )
    else:
        st.markdown(
            "After attention, each block of a transformer usually has an **MLP** (multi-layer "
            "perceptron): it works on every token "
            f"on its own, maps the vector from $d_\\text{{model}}$ = {cfg.d_model} to "
            f"$d_\\text{{mlp}}$ = {cfg.d_mlp} numbers, applies a nonlinearity, and maps it back "
            "to $d_\\text{model}$. Each of the $d_\\text{mlp}$ middle numbers is a "
            "**neuron**; its **activation** says how strongly it fires on this token. The "
            f"nonlinearity here is {ACT_LABELS[cfg.act]}, which lets positive values through and "
            + (
                "sets negative ones to zero"
                if cfg.act == "relu"
                else "squashes negative ones to nearly zero (never below "
                f"{ACT_MINIMUM.get(cfg.act, 0):+.2f})".replace("-", "−")
            )
            + ". An activation is graded, not a switch: (nearly) zero when the neuron does not "
            "respond, and the larger, the more strongly it does."
        )
        st.latex(
            r"\text{mlp}(x) = W_{\text{out}}\; "
            r"\underbrace{\text{act}(W_{\text{in}}\, x + b_{\text{in}})}_{\text{neurons: } "
            r"d_\text{mlp} \text{ activations}} + b_{\text{out}}"
        )


# ---- 1. the most active neurons on the prompt -----------------------------------------------------


def active_neurons(ctx: PageContext) -> Layer:
    """Section 1: the layer's most active neurons on each prompt token, as a heatmap."""
    cfg, M = ctx.config, ctx.config.d_mlp
    st.subheader("1. Which neurons fire on your prompt?")
    c1, c2 = st.columns(2)
    layer = state.slider("Layer", "mlp_layer", 0, cfg.n_layer - 1, 0, container=c1)
    if cfg.n_layer == 1:
        c1.markdown("Layer: 0 (the model has one block)")
    n_show = state.select_slider(
        "Neurons shown",
        "n_neurons",
        [10, 20, 30, 50],
        20,
        container=c2,
        help=f"The neurons with the highest activation anywhere in the prompt, of {M} in this layer.",
    )
    post = prompt_neurons(ctx.bundle_id, tuple(ctx.ids), layer)
    top = nx.top_neurons(post, n_show)
    present.plot(
        cache.figure(
            charts.neuron_heatmap,
            post[:, top],
            ctx.labels,
            [int(i) for i in top],
            title=f"Layer {layer}: the {len(top)} most active of {M} neurons (columns), on each token (rows)",
        )
    )
    st.caption(
        "Red: the neuron is active on this token, the deeper the stronger; white: about zero"
        + ("" if cfg.act == "relu" else "; blue: slightly negative (never below −0.17)")
        + ". Columns are ordered by their strongest activation on the prompt, strongest first."
    )
    return Layer(layer, post, top)


# ---- 2. and 3. one neuron -------------------------------------------------------------------------


def one_neuron(ctx: PageContext, chosen: Layer) -> None:
    """Sections 2 and 3 for one neuron of the layer, opening on its clearest (by the corpus scan,
    or the most active on the prompt when the corpus cannot be scanned)."""
    try:
        found, search_error = corpus_search(ctx.bundle_id), ""
    except ValueError as exc:  # a corpus too short for this model's windows
        found, search_error = None, str(exc)
    ranking = neuron_ranking(ctx.bundle_id) if found is not None else None
    default = ranking.best(chosen.layer) if ranking is not None else int(chosen.top[0])
    _one_neuron(ctx, chosen.layer, chosen.post, default, found, search_error, ranking)


# A fragment: typing another neuron reruns only this part of the page.
@classroom.view_fragment
def _one_neuron(
    ctx: PageContext,
    layer: int,
    post: np.ndarray,
    default: int,
    found: nx.CorpusSearch | None,
    search_error: str,
    ranking: nx.NeuronRanking | None,
) -> None:
    tok, M = ctx.tokenizer, ctx.config.d_mlp
    st.subheader("2. One neuron: what makes it fire?")
    neuron = state.number_input(
        f"Neuron (0 to {M - 1})",
        "neuron",
        0,
        M - 1,
        default,
        help="Opens on the layer's clearest neuron (see below); any of its neurons can be typed.",
    )
    if ranking is not None:
        about_ranking(ctx, layer, neuron, found, ranking)
    st.markdown(
        f"To see what neuron **{neuron}** of layer **{layer}** responds to, we run the model over "
        f"{N_WINDOWS} snippets of the {CORPUS.title()} corpus and keep the {N_EXAMPLES} where it "
        "fires hardest. Each token is shaded by the neuron's activation on it, the strongest one is "
        "outlined, and the number on the left is that peak. (↵ is a line break.)"
    )
    if search_error:
        st.warning(f"The corpus search could not run: {search_error}.")
    if found is not None:
        examples = nx.top_examples(found.maxima, found.argmax, layer, neuron, N_EXAMPLES)
        acts = example_activations(ctx.bundle_id, tuple(e.window for e in examples), layer, neuron)
        rows = [
            (found.windows.texts[e.window], acts[k], e.position) for k, e in enumerate(examples)
        ]
        st.html(charts.snippets_html(rows))
        on_prompt = post[:, neuron]
        peak_t = int(np.argmax(on_prompt))
        st.caption(
            f"On your prompt this neuron peaks at {on_prompt[peak_t]:.2f} on token "
            f"{ctx.labels[peak_t]}; its peak over the corpus snippets is {examples[0].value:.2f}."
        )

    st.subheader("3. What does it write? The neuron as a key-value memory")
    st.markdown(
        "An MLP can be read as a memory: row $n$ of $W_\\text{in}$ is a **key** the neuron matches "
        "against the residual stream, and column $n$ of $W_\\text{out}$ is the **value** it adds "
        "to the stream in proportion to its activation. Multiplying that value by the unembedding "
        "$W_U$ (the matrix that turns the final vector into one score per vocabulary token) shows "
        "which next tokens it makes more likely (promotes) and less likely (suppresses), ignoring "
        "everything the later layers and the final LayerNorm do to it."
    )
    st.latex(
        r"\Delta\,\text{logits} = \text{activation}_n \times \big(W_{\text{out}}[:, n]\; W_U\big)"
    )
    effect = direction(ctx.bundle_id, layer, neuron)
    up, down = nx.promoted_tokens(effect, 10)
    name = [parts.token_label(tok, i) for i in range(len(effect))]
    present.plot(
        cache.figure(
            charts.direction_bars,
            [name[i] for i in up],
            effect[up],
            [name[i] for i in down],
            effect[down],
            title=f"Neuron {neuron}, layer {layer}: the 10 tokens it promotes (red) and "
            "suppresses (blue) most",
        )
    )

    # ---- the numbers behind it ------------------------------------------------------------------
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            t1, t2 = st.columns(2)
            t1.markdown("**Promoted** (its value raises these logits)")
            t1.dataframe(
                {"token": [name[i] for i in up], "logit change per unit": effect[up].round(4)},
                hide_index=True,
                key="promoted",
            )
            t2.markdown("**Suppressed** (its value lowers these logits)")
            t2.dataframe(
                {"token": [name[i] for i in down], "logit change per unit": effect[down].round(4)},
                hide_index=True,
                key="suppressed",
            )
            st.markdown(f"Neuron {neuron} of layer {layer} on each token of your prompt:")
            st.dataframe(
                {"token": ctx.labels, "activation": post[:, neuron].round(4)}, hide_index=True
            )
            if found is not None:
                st.markdown("The corpus snippets above, with where the neuron peaked:")
                st.dataframe(
                    [
                        {
                            "snippet": e.window,
                            "peak token": parts.token_label(
                                tok, int(found.windows.ids[e.window, e.position])
                            ),
                            "position": e.position,
                            "activation": round(e.value, 4),
                        }
                        for e in examples
                    ],
                    hide_index=True,
                )


def about_ranking(
    ctx: PageContext,
    layer: int,
    neuron: int,
    found: nx.CorpusSearch,
    ranking: nx.NeuronRanking,
) -> None:
    """How the opening neuron was chosen, how many are dead, and a flag on a dead or positional one."""
    gated = ctx.config.mlp == "gated"
    dead = nx.dead_neurons_claim(ranking.peak[layer], N_WINDOWS, gated)
    st.caption(
        f"The page opens on layer {layer}'s clearest neuron, **{ranking.best(layer)}**: the one "
        f"whose {N_EXAMPLES} best snippets peak highest, discounted when those peaks sit at the "
        "same position of their snippets (a neuron that fires on the first token of every "
        "snippet, whatever that token is, reacts to the position, not the text). " + dead.text
    )
    peak = float(ranking.peak[layer, neuron])
    if ranking.dead[layer, neuron] and not gated:
        st.warning(
            f"Neuron {neuron} is dead: its largest activation on the {N_WINDOWS} snippets is "
            f"{round(peak, 2) + 0.0:.2f}, below {dead.numbers['threshold']:.2g}. The snippets "
            "below show where it is least off."
        )
        return
    examples = nx.top_examples(found.maxima, found.argmax, layer, neuron, N_EXAMPLES)
    where = [e.position for e in examples]
    tokens = [
        parts.token_label(ctx.tokenizer, int(found.windows.ids[e.window, e.position]))
        for e in examples
    ]
    claim = nx.position_claim(where, tokens, found.windows.ids.shape[1], neuron)
    if claim.text:
        st.info(claim.text)
