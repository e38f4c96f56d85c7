"""Beam search: keep the k most likely continuations at every step, against greedy (k = 1)."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.frame import PageContext
from viz_model.analysis import usage
from viz_model.model.decoding import Beam, beam_search

MAX_WIDTH = 8  # each step runs width forward passes over the text: kept small for a class
MAX_STEPS = 24
WIDTH_KEY = "u_width"


@cache.per_prompt(spinner="Searching…")
def search(bundle_id: str, ids: tuple[int, ...], width: int, n_steps: int) -> list[list[Beam]]:
    return beam_search(cache.bundle(bundle_id).model, list(ids), width, n_steps)


def _asked_width() -> int | None:
    """The width a link asked for when it is above the cap (the widget clamps it silently)."""
    raw = st.query_params.get(WIDTH_KEY)
    return state.parse_int(raw, 0, 0, 10**9) if raw is not None else None


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Greedy decoding commits to the best token at each step, but the most likely *sequence* "
        "may start with a less likely token. **Beam search** keeps the $k$ most likely partial "
        "continuations (the beams): at each step every beam is extended by every token, and the "
        "$k$ best of all of them by total log-probability survive. Width 1 is greedy; a width "
        "large enough to keep every prefix finds the most likely continuation exactly."
    )
    st.latex(r"\log p(y_1 \dots y_n \mid x) = \sum_{i=1}^{n} \log p(y_i \mid x, y_{<i})")
    asked = _asked_width()
    c1, c2 = st.columns(2, gap="large")
    width = state.slider("Beam width k", WIDTH_KEY, 1, MAX_WIDTH, 3, container=c1)
    n_steps = state.slider("Tokens to write", "u_steps", 1, MAX_STEPS, 12, container=c2)
    if asked is not None and asked > MAX_WIDTH:
        st.info(
            f"The link asked for a beam width of {asked:,}; this page searches at most "
            f"{MAX_WIDTH} beams (each one costs a forward pass a step), so it uses {MAX_WIDTH}."
        )
    steps = search(ctx.bundle_id, tuple(ctx.ids), width, n_steps)
    greedy = search(ctx.bundle_id, tuple(ctx.ids), 1, n_steps)
    tok = ctx.tokenizer
    present.plot(
        cache.figure(
            charts.beam_tree,
            [[tok.decode(list(b.tokens)) for b in beams] for beams in steps],
            [[b.logprob for b in beams] for beams in steps],
            usage.beam_parents(steps),
            [beams[0].logprob for beams in greedy],
        ),
        key="use_beam_tree",
    )
    st.caption(
        "Grey: every beam kept at each step, joined to the beam it extended (hover for its text). "
        "Blue: the path of the best final beam. Red dashes: greedy."
    )
    best, first = steps[-1][0], greedy[-1][0]
    claim = usage.beam_claim(best, first, width)
    (st.success if claim.made else st.info)(claim.text)
    t1, t2 = st.columns(2)
    t1.caption(f"Best beam, log p = {best.logprob:.2f}")
    t1.code(tok.decode(list(best.tokens)), language=None, wrap_lines=True)
    t2.caption(f"Greedy, log p = {first.logprob:.2f}")
    t2.code(tok.decode(list(first.tokens)), language=None, wrap_lines=True)
    st.markdown(
        "Higher likelihood is not better writing: the likeliest continuations of a language model "
        "are often the blandest and most repetitive (Holtzman et al., 2020, *The Curious Case of "
        "Neural Text Degeneration*), which is why open-ended writing samples instead, and beam "
        "search is kept for tasks with one right answer, such as translation."
    )
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "The beams after each step, best first, with log p(continuation | prompt):",
                [
                    {
                        "step": t + 1,
                        "rank": r + 1,
                        "continuation": tok.decode(list(b.tokens)),
                        "log p": b.logprob,
                    }
                    for t, beams in enumerate(steps)
                    for r, b in enumerate(beams)
                ],
            )
