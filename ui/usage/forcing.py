"""Teacher forcing against free running: one forward pass gives the loss at every position;
generation feeds its own output back, one pass a token. Both timed on this server."""

from __future__ import annotations

import math

import streamlit as st

from ui import cache, parts, present
from ui.charts import usage as charts
from ui.frame import PageContext
from viz_model.analysis import usage

MAX_TOKENS = 128  # the race runs T - 1 passes twice: on a long prompt, its last 128 tokens
NONCE = "_use_race_nonce"  # "Measure again" bumps it: a new key, a new measurement


@cache.per_prompt(spinner="Running one pass, then one pass a token…")
def race(bundle_id: str, ids: tuple[int, ...], nonce: int) -> usage.ForcingRace:
    """The race on ids (nonce only makes a fresh measurement a new cache entry)."""
    return usage.forcing_race(cache.bundle(bundle_id).model, list(ids))


def draw(ctx: PageContext) -> None:
    st.markdown(
        "In training the model reads the **true** text and is asked, at every position at once, "
        "how likely the next true token was. This is **teacher forcing**: the teacher (the "
        "training text) supplies every earlier token, so one forward pass over $T$ tokens gives "
        "all $T - 1$ losses, and the loss is their mean. Writing is different: the model only "
        "has its own output to go on, so each new token needs its own forward pass, fed the "
        "tokens it chose (**free running**)."
    )
    st.latex(
        r"\mathcal{L} = \frac{1}{T-1}\sum_{t=2}^{T} -\log p(x_t \mid x_{<t})"
        r"\qquad \hat{x}_{t} = \arg\max_i\, p(i \mid \hat{x}_{<t})"
    )
    ids = ctx.ids[-MAX_TOKENS:]
    if len(ids) < 2:
        st.info("The prompt has one token: type at least two to see teacher forcing.")
        return
    if len(ids) < len(ctx.ids):
        st.caption(f"The race runs on the prompt's last {MAX_TOKENS} tokens.")
    ss = st.session_state
    result = race(ctx.bundle_id, tuple(ids), ss.get(NONCE, 0))
    labels = ctx.labels[-len(ids) :]
    present.plot(
        cache.figure(
            charts.surprisal_bars,
            labels,
            result.one_pass,
            f"Teacher forcing: every token's surprisal from one forward pass ({len(ids)} tokens)",
        ),
        key="use_forcing_bars",
    )
    n = len(ids) - 1
    m1, m2, m3 = st.columns(3)
    for col, label, seconds, passes, help_text in (
        (m1, "Teacher forcing", result.seconds_one_pass, 1, "One pass over the true text."),
        (m2, "Pass by pass", result.seconds_sequential, n, "The same losses, one prefix a pass."),
        (
            m3,
            "Free running",
            result.seconds_free,
            result.passes_free,
            "Greedy, fed its own tokens.",
        ),
    ):
        col.metric(
            label,
            f"{seconds * 1000:.1f} ms",
            f"{passes} pass{'es' * (passes != 1)}",
            delta_color="off",
            delta_arrow="off",
            help=help_text,
        )
    c1, c2 = st.columns([3, 1], vertical_alignment="center")
    carried = (
        "no KV cache. A KV cache makes each generation pass cheaper, but it is still one pass "
        "a token."
        if ctx.bundle.family == "gpt"
        else "each prefix read again from its start, no state carried. Carrying the state (as "
        "Generation does) makes each step cheaper, but it is still one step a token."
    )
    c1.caption(
        f"Wall-clock times measured on this server when this view was computed ({ctx.name}, the "
        f"best of {usage.TIMING_REPEATS} runs each, one forward pass at a time, {carried}"
    )
    c2.button(
        "Measure again",
        key="use_race_again",
        on_click=lambda: ss.__setitem__(NONCE, ss.get(NONCE, 0) + 1),
    )
    claim = usage.forcing_claim(result)
    (st.success if claim.made else st.warning)(claim.text)
    tok = ctx.tokenizer
    st.markdown(
        f"**Free running from the first token** “{parts.md_token(ctx.pieces[-len(ids)])}”: "
        f"greedy, {result.passes_free} passes, each reading what the model wrote before. "
        "Teacher forcing never sees this text; generation never sees the true one."
    )
    t1, t2 = st.columns(2)
    t1.caption("The true text (what teacher forcing reads)")
    t1.code(tok.decode(list(ids)), language=None, wrap_lines=True)
    t2.caption("The model's own text (what generation reads)")
    t2.code(tok.decode(list(ids[:1]) + result.generated), language=None, wrap_lines=True)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "Each token's surprisal (nats) from the one pass and from its own pass:",
                [
                    {
                        "position": i,
                        "token": labels[i],
                        "one pass": None if math.isnan(a) else float(a),
                        "own pass": None if math.isnan(b) else float(b),
                        "difference": None if math.isnan(a) else float(abs(a - b)),
                    }
                    for i, (a, b) in enumerate(zip(result.one_pass, result.sequential, strict=True))
                ],
            )
