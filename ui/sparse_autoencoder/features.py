"""The Sparse autoencoder page's second half: one feature read (`read_feature`: where it fires
hardest, the tokens it promotes, its activation along the prompt), steering with it (`steer`), its
closest feature in an SAE of the model at another training step (`across_training`), and what the
page is not (`what_this_is_not`).

Not here: the cached measures (runs.py), the SAE on screen and its choices (dictionary.py), the
claims (viz_model/analysis/labs/sae/claims.py), the chart builders (ui/charts/sae.py,
ui/charts/neurons.py).
"""

from __future__ import annotations

from dataclasses import astuple, replace

import numpy as np
import streamlit as st

from serving import models
from ui import cache, present, scrubber, state
from ui.charts import sae as charts
from ui.charts.common import show_whitespace
from ui.charts.neurons import direction_bars, snippets_html
from ui.frame import PageContext
from ui.sparse_autoencoder import runs
from ui.sparse_autoencoder.dictionary import TRAIN_TOKENS, Shown
from viz_model.analysis.labs.sae.claims import feature_match_claim, match_claim, steering_claim
from viz_model.analysis.labs.sae.features import (
    DENSE,
    TYPICAL,
    alive_by_frequency,
    default_feature,
    is_dense,
    promoted_tokens,
    readout_path,
)
from viz_model.analysis.labs.sae.matching import MATCH_WINDOWS
from viz_model.analysis.tokens import token_text


def read_feature(ctx: PageContext, shown: Shown) -> int:
    """The feature chosen (most frequent first), where it fires hardest in the training text, the
    tokens it promotes and suppresses, and its activation along the prompt. Stops the run when no
    feature fired."""
    st.subheader("Read a feature")
    alive = alive_by_frequency(shown.lab.table)
    if not alive:
        st.warning("No feature fired on the browsing windows: train on more tokens.")
        st.stop()
    feature = _choose_feature(shown, alive)
    _snippets(shown, feature)
    _promoted(ctx, shown, feature)
    _along_prompt(ctx, shown, feature)
    return feature


def _choose_feature(shown: Shown, alive: list[int]) -> int:
    """The feature selector; a choice made on another SAE is dropped (its numbering differs)."""
    table = shown.lab.table
    freq, peak = table.freq, table.max_act
    # another SAE (a job's, or other settings) numbers its features afresh: its feature 212 is not
    # this one's, so a choice made on the last SAE is dropped (a link's choice, on first open, stays)
    state.reset_on_change("sae_feat", astuple(shown.spec), "_sae_feat_of")

    def feature_label(f: int) -> str:
        dense = " (dense: usually not one concept)" if is_dense(table, f) else ""
        return f"#{f}: fires on {freq[f]:.2%} of tokens{dense}, largest {peak[f]:.2f}"

    return state.selectbox(
        "Feature (most frequent first)",
        "sae_feat",
        alive,
        default_feature(table),
        format_func=feature_label,
        help=f"A feature firing on more than {DENSE:.0%} of tokens is marked dense. The page "
        f"opens on the most frequent feature firing on at most {TYPICAL:.0%} of them.",
    )


def _snippets(shown: Shown, feature: int) -> None:
    """The windows of the training text where the feature fires hardest, shaded by it."""
    lab = shown.lab
    st.markdown(
        f"**Where feature {feature} fires hardest** in {len(lab.browse.texts)} windows spread "
        "through the training text (the strongest token outlined, every token shaded by the "
        "feature's activation):"
    )
    where, acts = runs.feature_snippets(shown.spec, feature)
    rows = [(lab.browse.texts[w], acts[i], p) for i, (w, p) in enumerate(where)]
    st.html(snippets_html(rows))


def _promoted(ctx: PageContext, shown: Shown, feature: int) -> None:
    """The next tokens the feature's decoder direction raises and lowers most, read straight
    through to the logits."""
    tok = ctx.tokenizer
    raised, lowered = promoted_tokens(ctx.model, shown.lab.sae, feature, k=8)
    bars = cache.figure(
        direction_bars,
        [token_text(tok, i) for i, _ in raised],
        np.array([v for _, v in raised]),
        [token_text(tok, i) for i, _ in lowered],
        np.array([v for _, v in lowered]),
        f"The next tokens feature {feature} promotes and suppresses",
    )
    present.plot(bars, key="sae_promoted")
    st.caption(
        f"The feature's decoder direction read through {readout_path(ctx.model)}: the change in "
        "each token's logit per unit of activation, red raised, blue lowered. It skips the "
        "blocks after this one, which also read the direction."
    )


def _along_prompt(ctx: PageContext, shown: Shown, feature: int) -> None:
    """The feature's activation at each token of the prompt, or words when it never fires."""
    values = runs.along(shown.spec, tuple(ctx.ids))[:, feature]  # (T,)
    top = int(np.argmax(values))
    if values[top] > 0:
        along = cache.figure(charts.along_prompt, values, ctx.labels, feature)
        present.plot(along, key="sae_along")
        st.caption(
            f"Feature {feature} fires on {int((values > 0).sum())} of your prompt's "
            f"{len(values)} tokens; most at token {top}, “{show_whitespace(ctx.pieces[top])}” "
            f"({values[top]:.2f})."
        )
    else:
        st.caption(
            f"Feature {feature} does not fire on any of your prompt's {len(values)} tokens: put "
            "text like its snippets above into the prompt to see it along the text."
        )


def steer(ctx: PageContext, shown: Shown, feature: int) -> None:
    """The prompt continued with and without the feature's direction added, same seed, and the
    claim about the difference."""
    tok = ctx.tokenizer
    st.subheader("Steer with the feature")
    s1, s2 = st.columns(2)
    alpha = state.slider(
        "Strength α",
        "sae_alpha",
        -10.0,
        10.0,
        2.0,
        step=0.5,
        container=s1,
        help="α times the feature's largest activation seen, along its direction, added at "
        "every position while generating.",
    )
    gen_seed = state.number_input("Sampling seed", "sae_gen_seed", 0, 999, 0, container=s2)
    plain, pushed = runs.steered(shown.spec, tuple(ctx.ids), feature, float(alpha), gen_seed)
    g1, g2 = st.columns(2)
    g1.markdown("**Without steering**")
    g1.code(tok.decode(plain), language=None, wrap_lines=True)
    g2.markdown(f"**With feature {feature} × {alpha:g}**")
    g2.code(tok.decode(pushed), language=None, wrap_lines=True)
    st.markdown(steering_claim(plain, pushed, float(alpha)).text)


def across_training(ctx: PageContext, shown: Shown, feature: int) -> None:
    """On request, a second SAE with the same settings on the model at another training step, its
    features matched to these, and the chosen feature's closest one there."""
    st.subheader("Across training")
    options, final = scrubber.step_options(ctx.bundle)
    final_id, here = models.split_step(ctx.bundle_id)
    here = final if here is None else here
    others = [step for step in options if step != here]
    if not others:
        st.caption("This model kept no other training snapshot to compare with.")
    elif state.toggle(
        "Train a second SAE, same settings, on the model at another training step, and match "
        "the features",
        "sae_cmp",
    ):
        middle = others[len(others) // 2]
        other = state.select_slider("Training step to compare with", "sae_snap", others, middle)
        other_id = final_id if other == final else f"{final_id}#{other}"
        _compare(shown, feature, other, other_id, later=other > here)


def _compare(shown: Shown, feature: int, other: int, other_id: str, later: bool) -> None:
    """The matching with the SAE of the model at step `other`, and its controls."""
    spec, lab = shown.spec, shown.lab
    # a job's SAE is matched against one trained here: same F and sparsity, the page's tokens
    other_spec = replace(
        spec, bundle_id=other_id, job="", n_train=min(spec.n_train, TRAIN_TOKENS[-1])
    )
    if shown.job is not None:
        st.caption(
            f"The SAE for step {other:,} is trained here, in the page, with this job's settings "
            f"but on {other_spec.n_train:,} tokens (the most the page trains on)."
        )
    with st.spinner(f"Training an SAE on the model at step {other:,} and matching features…"):
        found = runs.matched(spec, other_spec)
    st.markdown(
        match_claim(
            found.r,
            found.chance,
            found.alive,
            other,
            found.tokens,
            untrained=found.untrained,
            later=later,
        ).text
    )
    j = int(found.best[feature])
    st.markdown(feature_match_claim(feature, found, other).text)
    other_lab = runs.trained(other_spec)
    where_b, acts_b = runs.feature_snippets(other_spec, j)
    if where_b:
        st.markdown(f"Where its closest feature at step {other:,}, feature {j}, fires hardest:")
        rows_b = [(other_lab.browse.texts[w], acts_b[i], p) for i, (w, p) in enumerate(where_b)]
        st.html(snippets_html(rows_b))
    st.caption(
        f"Matched by how the two SAEs' activations correlate over the same "
        f"{MATCH_WINDOWS * lab.browse.ids.shape[1]:,} tokens of the training text (not by their "
        "directions: the residual stream's axes can turn between training steps). Controls: the "
        "same matching with one side's tokens shuffled, and against an SAE trained the same way "
        f"on {runs.control_source(spec)}, the same shape with random weights."
    )


def what_this_is_not() -> None:
    """What an SAE trained in half a minute on a small model cannot show."""
    st.info(
        "What this is not: an SAE trained in half a minute (or a job's few minutes) on a small "
        "model is small and quickly trained, so its features are rough: some are split or mixed, "
        "and the frequent ones are often just “this letter” or “start of a word”. Research SAEs "
        "train on hundreds of millions of tokens. The promoted tokens read the direction "
        "straight into the output, skipping the blocks after this one, and steering adds a "
        "fixed vector at every position, which can damage the text as well as push it."
    )
