"""What the Interventions page's experiments share: the idea above them, the choice of experiment,
what the loss is measured on, token labels, and the picture of one intervention's effect."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from ui import cache, parts, present, state
from ui import interventions as ux
from ui.charts import interventions as charts
from ui.frame import PageContext
from viz_model.analysis.labs import interventions as iv
from viz_model.analysis.tokens import token_text

N_BARS = 12  # next tokens in the before/after bars


def intro() -> None:
    st.markdown(
        "Every other page *watches* the model. Here we **change** one part of it while it runs "
        "and measure what breaks: if the loss jumps when a head is removed, that head was doing "
        "work the rest of the model relies on. Each change is made for this one run only (a hook "
        "replaces an activation on its way through); the model itself is never edited."
    )


def choose(experiments: Iterable[str]) -> str:
    """The experiment, a row of radio buttons (in the URL under "exp")."""
    return state.radio("Experiment", "exp", list(experiments), "Ablation", horizontal=True)


def val_words(ctx: PageContext) -> str:
    """What the loss is measured on, in words: the held-out text's tokens, else the prompt."""
    windows = ux.windows(ctx.bundle_id, tuple(ctx.ids))
    _, found_val = ux.validation_ids(ctx.bundle_id)
    return (
        f"{windows.numel() - windows.shape[0]} tokens of held-out text (the end of the model's "
        "training text, which it never trained on)"
        if found_val
        else "the prompt (this model does not say what it was trained on)"
    )


def label(ctx: PageContext, i: int) -> str:
    return token_text(ctx.tokenizer, int(i))


def shown_label(ctx: PageContext, i: int) -> str:
    """A token as sentences show it: whitespace visible (␣ ↵)."""
    return parts.token_label(ctx.tokenizer, i)


def effect_picture(ctx: PageContext, eff: iv.Effect, title: str, what: str) -> None:
    """Bars before/after, the losses and how much probability moved, the claim about the loss
    (beyond noise or not); the numbers on demand."""
    top = eff.changed_tokens(N_BARS)
    present.plot(
        cache.figure(
            charts.before_after_bars,
            [label(ctx, i) for i in top],
            eff.p_before[top],
            eff.p_after[top],
            title,
        )
    )
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "Loss as trained",
        f"{eff.loss_before:.3f}",
        help=f"Mean nats per token on {val_words(ctx)}.",
    )
    m2.metric(
        "Loss after",
        f"{eff.loss_after:.3f}",
        f"{eff.loss_change:+.3f}",
        delta_color="inverse",
        help="Higher is worse: the model predicts the held-out text less well.",
    )
    m3.metric(
        "Probability moved",
        f"{eff.total_variation():.1%}",
        help="Half the sum of |p_after - p_before| over the vocabulary: how much of the "
        "next-token distribution changed hands.",
    )
    st.markdown(iv.loss_change_claim(eff, what).text)
    with parts.numbers_behind_it(key="effect") as opened:
        if opened:  # built only while open
            st.dataframe(
                [
                    {
                        "token": label(ctx, i),
                        "p before": float(eff.p_before[i]),
                        "p after": float(eff.p_after[i]),
                        "change": float(eff.p_after[i] - eff.p_before[i]),
                    }
                    for i in top
                ],
                hide_index=True,
            )
