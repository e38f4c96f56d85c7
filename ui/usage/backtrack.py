"""No backtracking: force a token into a greedy continuation and watch what follows it. The
model never goes back: every later token is conditioned on the forced one."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.frame import PageContext
from viz_model.analysis import usage
from viz_model.analysis.tokens import token_text
from viz_model.model.decoding import decode

N_CHOICES = 10  # the forced token is one of the 10 most likely at its position


@cache.per_prompt(spinner="Writing greedily…")
def greedy(bundle_id: str, ids: tuple[int, ...], n_new: int) -> list[int]:
    return decode(cache.bundle(bundle_id).model, list(ids), n_new)


@cache.per_prompt
def choices(bundle_id: str, ids: tuple[int, ...]) -> tuple[list[int], list[float]]:
    """The most likely tokens after ids and their probabilities."""
    return usage.alternatives(cache.bundle(bundle_id).model, list(ids), N_CHOICES)


@cache.per_prompt(spinner="Writing again with the forced token…")
def forced_run(
    bundle_id: str, ids: tuple[int, ...], n_new: int, position: int, token: int
) -> usage.ForcedRun:
    return usage.force_token(cache.bundle(bundle_id).model, list(ids), n_new, position, token)


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Generation only moves forward. Once a token is written it becomes part of the text the "
        "model reads, and nothing in the loop can take it back: if it was a mistake, every later "
        "token is predicted **given** the mistake. Here the model writes greedily; pick a step "
        "and force a token it found less likely, then compare how surprised the model is by its "
        "own next tokens, with and without the forced one."
    )
    st.latex(
        r"x_{t+1} = \arg\max_i\, p(i \mid x_1, \dots, x_t) \quad\text{with } x_t \text{ fixed, even if wrong}"
    )
    tok = ctx.tokenizer
    c1, c2, c3 = st.columns(3, gap="large")
    n_new = state.slider("Tokens to write", "u_bt_n", 10, 80, 40, container=c1)
    position = (
        state.slider(
            "Force at new token",
            "u_bt_pos",
            1,
            n_new,
            1,
            container=c2,
            help="1 = the first token after the prompt.",
        )
        - 1
    )
    base = greedy(ctx.bundle_id, tuple(ctx.ids), n_new)
    ids_here = tuple(ctx.ids + base[:position])
    options, probs = choices(ctx.bundle_id, ids_here)
    p_of = dict(zip(options, probs, strict=True))
    token = state.selectbox(
        "Forced token",
        "u_bt_tok",
        options,
        options[-1],
        container=c3,
        format_func=lambda i: f"“{parts.token_label(tok, i)}”  p = {p_of[i]:.2g}",
        help=f"The {len(options)} most likely tokens at that step; the default is the least "
        "likely of them.",
    )
    run = forced_run(ctx.bundle_id, tuple(ctx.ids), n_new, position, int(token))
    if int(token) == base[position]:
        st.info("That is the token greedy writes anyway: pick another to see an error's effect.")
    present.plot(
        cache.figure(
            charts.forced_lines,
            [token_text(tok, t) for t in run.baseline],
            run.baseline_surprisal,
            [token_text(tok, t) for t in run.forced],
            run.forced_surprisal,
            position,
        ),
        key="use_forced_lines",
    )
    st.caption(
        "Each point: −log p of a new token given everything before it in its own run. The "
        "dotted line is the forced step (its own point is the forced token's surprisal)."
    )
    claim = usage.forced_claim(run)
    (st.warning if claim.made else st.info)(claim.text)
    t1, t2 = st.columns(2)
    t1.caption("Greedy, nothing forced")
    t1.code(tok.decode(run.baseline), language=None, wrap_lines=True)
    t2.caption(
        f"With “{parts.md_token(token_text(tok, token))}” forced at new token {position + 1}"
    )
    t2.code(tok.decode(run.forced), language=None, wrap_lines=True)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "Each new token of both runs and its surprisal (nats):",
                [
                    {
                        "new token": i + 1,
                        "greedy": parts.token_label(tok, a),
                        "its surprisal": float(sa),
                        "with the forced token": parts.token_label(tok, b),
                        "surprisal there": float(sb),
                    }
                    for i, (a, sa, b, sb) in enumerate(
                        zip(
                            run.baseline,
                            run.baseline_surprisal,
                            run.forced,
                            run.forced_surprisal,
                            strict=True,
                        )
                    )
                ],
            )
