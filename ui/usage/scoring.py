"""Tasks as next-word prediction: rank candidate continuations of a prompt by total and by
per-token log-probability."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.charts.common import show_whitespace
from ui.frame import PageContext
from viz_model.analysis import scoring
from viz_model.analysis.claims import md_escape
from viz_model.model.decoding import is_causal

DEFAULT_PROMPT = "The opposite of love is"
DEFAULT_CANDIDATES = "hate\ndeath\nwar\na thing of nothing"


@cache.per_prompt
def scores(
    bundle_id: str, prompt: tuple[int, ...], candidates: tuple[tuple[str, tuple[int, ...]], ...]
) -> list[scoring.Score]:
    model = cache.bundle(bundle_id).model
    return scoring.score_candidates(model, list(prompt), [(t, list(i)) for t, i in candidates])


def read_candidates(text: str, space: bool) -> list[str]:
    """One candidate a line, blank lines dropped, a space put before each when asked."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [(" " + c) if space else c for c in lines]


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Many tasks can be asked as *which continuation is likeliest?* A question and its "
        "candidate answers, a sentence and its possible next words: the model scores each "
        "candidate by the chain rule, one forward pass over prompt + candidate. The **total** "
        "log-probability charges every token, so a longer answer pays more; the **per-token** "
        "score (the total over the number of tokens) does not."
    )
    st.latex(
        r"\log p(c \mid x) = \sum_{i=1}^{n} \log p(c_i \mid x, c_{<i})"
        r"\qquad \text{per token: } \tfrac{1}{n}\log p(c \mid x)"
    )
    tok = ctx.tokenizer
    c1, c2 = st.columns([3, 2], gap="large")
    prompt = state.bind(
        c1.text_input, "u_sc_prompt", state.url_str("u_sc_prompt", DEFAULT_PROMPT, 500), "Prompt"
    )
    space = state.toggle(
        "A space before each candidate",
        "u_sc_space",
        True,
        container=c1,
        help="Words follow a space: “is” + “␣hate”, not “ishate”.",
    )
    raw = state.bind(
        c2.text_area,
        "u_sc_cands",
        state.url_str("u_sc_cands", DEFAULT_CANDIDATES, 2000),
        "Candidates, one a line",
        height=130,
    )
    texts = read_candidates(raw, space)
    if not prompt.strip():
        st.info("Type a prompt to score the candidates after.")
        return
    if not texts:
        st.info("Type at least one candidate continuation, one a line.")
        return
    if len(texts) > scoring.MAX_CANDIDATES:
        st.info(f"Scoring the first {scoring.MAX_CANDIDATES} of {len(texts)} candidates.")
        texts = texts[: scoring.MAX_CANDIDATES]
    prompt_ids = tok.encode(prompt)
    encoded = [(t, tuple(tok.encode(t))) for t in texts]
    _warn_unknown(ctx, [prompt, *texts], [prompt_ids, *[i for _, i in encoded]])
    n_ctx = ctx.config.n_ctx
    too_long = [t for t, i in encoded if len(i) >= n_ctx]
    if too_long:
        st.warning(
            f"{len(too_long)} candidate(s) do not fit this model's context of {n_ctx} tokens and "
            "were left out: " + ", ".join(f"“{md_escape(t[:40])}”" for t in too_long)
        )
        encoded = [(t, i) for t, i in encoded if len(i) < n_ctx]
        if not encoded:
            return
    result = scores(ctx.bundle_id, tuple(prompt_ids[-n_ctx:]), tuple(encoded))
    if not is_causal(ctx.model):
        st.caption(
            "This model reads ahead (no causal mask): one pass would let it see each answer, so "
            "every candidate token is scored from its own pass over the text before it."
        )
    b1, b2 = st.columns(2)
    labels = [s.text.strip() or s.text for s in result]  # the toggle says where spaces go
    with b1:
        present.plot(
            cache.figure(
                charts.score_bars, labels, [s.total for s in result], "Total log p", "log p (nats)"
            ),
            key="use_score_total",
        )
    with b2:
        present.plot(
            cache.figure(
                charts.score_bars,
                labels,
                [s.per_token for s in result],
                "Per token",
                "log p / tokens (nats)",
            ),
            key="use_score_per_token",
        )
    claim = scoring.ranking_claim(result)
    (st.warning if claim.made else st.success)(claim.text)
    by_total, by_token = scoring.rankings(result)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "Each candidate's tokens, total and per-token log-probability, and its rank by each:",
                [
                    {
                        "candidate": s.text,
                        "tokens": s.n_tokens,
                        "total log p": s.total,
                        "per token": s.per_token,
                        "rank by total": by_total.index(i) + 1,
                        "rank per token": by_token.index(i) + 1,
                        "each token's log p": ", ".join(f"{v:.2f}" for v in s.token_logps),
                    }
                    for i, s in enumerate(result)
                ],
            )


def _warn_unknown(ctx: PageContext, texts: list[str], encoded: list[list[int]]) -> None:
    """Say which typed characters the tokenizer does not know (they are scored as <unk>)."""
    unk = ctx.tokenizer.unk_id
    if unk is None:
        return
    bad = sorted(
        {
            p.text
            for t, ids in zip(texts, encoded, strict=True)
            if unk in ids
            for p in ctx.tokenizer.pieces(t)
            if p.id == unk
        }
    )
    if bad:
        shown = ", ".join(f"“{md_escape(show_whitespace(c))}”" for c in bad[:12])
        st.warning(f"Characters this model does not know, read as `<unk>`: {shown}.")
