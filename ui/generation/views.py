"""The Generation page's views of the newest text, drawn inside the stepper: where the newest
token looks, layer by layer (`newest_attention`), generation with and without the KV cache, or a
recurrent model's carried state (`with_and_without_the_cache`), and the numbers behind it
(`numbers_behind_it`)."""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from ui import families, parts, present, state
from ui.frame import PageContext
from ui.generation import runs
from ui.generation.steps import Sampling
from viz_model.analysis import generation as gen
from viz_model.analysis import next_token as nt
from viz_model.analysis.tokens import token_text
from viz_model.model.sampling import Distribution
from viz_model.model.scale import grid_layers

N_CANDIDATES = 10  # the next step's candidates: the stepper's buttons, the numbers' table


def _recurrent(ctx: PageContext) -> bool:
    """An RNN, LSTM, GRU or CNN: no attention, no KV cache."""
    return ctx.bundle.family != "gpt"


def _layers(ctx: PageContext, per_head: bool, container: Any) -> range:
    """The layers whose heads get a row: all of them, or per head on a big model (GPT-2: 144
    rows) a few layers' heads at a time, chosen in `container`."""
    cfg = ctx.config
    layers, per_view = range(cfg.n_layer), grid_layers(cfg)
    if per_head and per_view < cfg.n_layer:
        first = state.selectbox(
            "Layers",
            "gen_layers",
            list(range(0, cfg.n_layer, per_view)),
            default=0,
            container=container,
            format_func=lambda s: f"layers {s}–{min(s + per_view, cfg.n_layer) - 1}",
            help=f"{cfg.n_layer * cfg.n_head} heads in all; {per_view} layers' heads at a time.",
        )
        layers = range(first, min(first + per_view, cfg.n_layer))
    return layers


def newest_attention(ctx: PageContext, seq: list[int]) -> None:
    """The newest token's attention over the text in each layer, averaged over heads or per head
    (a recurrent model has none, and says so)."""
    if _recurrent(ctx):
        st.caption(families.no_attention_note(ctx.bundle))
        return
    st.subheader("Where the newest token looks, layer by layer")
    st.markdown(
        f"The newest token, “{parts.md_token(token_text(ctx.tokenizer, seq[-1]))}”, is the one "
        "whose vector the model turns into this step's prediction. Each row shows how its "
        "attention is spread over the tokens before it (and itself) in one layer: averaged over "
        "the heads, or one row per head."
    )
    c1, c2 = st.columns(2, vertical_alignment="bottom")
    per_head = state.toggle("One row per head", "per_head", False, container=c1)
    layers = _layers(ctx, per_head, c2)
    present.plot(
        runs.attention_figure(ctx.bundle_id, tuple(seq), per_head, layers), key="newest_attention"
    )


def _cache_idea(ctx: PageContext, seq: list[int]) -> int:
    """The heading and the idea of the KV cache (or the carried state); returns the room, how
    many more tokens fit the context (200 for a recurrent model, which reads any length)."""
    cfg = ctx.config
    if _recurrent(ctx):
        st.subheader("Generation with and without the carried state")
        st.markdown(gen.state_idea(ctx.bundle.family))
        return 200
    room = cfg.n_ctx - len(seq)
    st.subheader("Generation with and without the KV cache")
    st.markdown(gen.kv_cache_idea(cfg.causal))
    parts.contrast_link(
        "mqa", "What the cache costs in memory, and how multi-query attention cuts it"
    )
    st.caption(
        f"The context holds {cfg.n_ctx} tokens and the text has {len(seq)}, so "
        + (f"{room} more fit. " if room > 0 else "it is full. ")
        + "Past the context the cache cannot be reused: when the oldest token drops out, "
        "every remaining token's position and the tokens it saw change, so both ways re-run "
        "the whole window and take about the same time. Part of each step is fixed overhead "
        "that no cache saves; the saving grows with the context and the model."
    )
    return room


def _comparison(ctx: PageContext, result: gen.KVComparison, start: int) -> None:
    """Both timings, the speed-up, the claim that the two texts match, and the text."""
    recurrent = _recurrent(ctx)
    m1, m2, m3 = st.columns(3)
    carried = "the state" if recurrent else "the KV cache"
    m1.metric(f"With {carried}", f"{result.seconds_with * 1000:.0f} ms")
    m2.metric("Without it", f"{result.seconds_without * 1000:.0f} ms")
    m3.metric("Speed-up", f"{result.seconds_without / max(result.seconds_with, 1e-9):.1f}×")
    causal = ctx.config.causal
    claim = gen.state_claim(result) if recurrent else gen.kv_cache_claim(result, causal)
    if claim.made:
        st.success(claim.text, icon=":material/check_circle:")
    elif causal:
        st.error(claim.text, icon=":material/error:")
    else:
        st.info(claim.text)
    st.caption(f"Generated after the first {start} tokens of the text above:")
    st.code(ctx.tokenizer.decode(result.with_cache), language=None, wrap_lines=True)


def with_and_without_the_cache(
    ctx: PageContext, sampling: Sampling, seq: list[int], stepper: dict
) -> None:
    """The same tokens generated twice, reusing the keys and values (or the state) and not, timed;
    the last comparison is kept in the stepper's state until the text changes."""
    room = _cache_idea(ctx, seq)
    k1, k2 = st.columns([1, 3], vertical_alignment="bottom")
    n_kv = k1.number_input(
        "Tokens to generate", 1, 500, min(room, 200) if room >= 10 else 50, key="n_kv"
    )
    if k2.button(f"Generate {n_kv} tokens both ways", key="kv_go"):
        with st.spinner("Generating twice…"):
            result = gen.compare_kv_cache(
                ctx.model, seq, int(n_kv), sampling.settings, sampling.seed
            )
        stepper["kv"] = (result, len(seq))
    if stepper.get("kv"):
        _comparison(ctx, *stepper["kv"])


def numbers_behind_it(
    ctx: PageContext, steps: list[gen.Step], seq: list[int], dist: Distribution
) -> None:
    """Every step so far, the whole text as plain text, and the next step's candidates."""
    tok = ctx.tokenizer
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.markdown("Every step so far:")
            st.dataframe(
                [
                    {
                        "step": i + 1,
                        "token": parts.token_label(tok, s.token),
                        "p when chosen": s.prob,
                        "how": "forced" if s.forced else "sampled",
                        "sampler's pick": parts.token_label(tok, s.sampled),
                        "T": s.settings.temperature,
                        "top-k": s.settings.top_k,
                        "top-p": s.settings.top_p,
                    }
                    for i, s in enumerate(steps)
                ],
                hide_index=True,
                key="history_table",
            )
            st.markdown("The whole text as plain text:")
            st.code(tok.decode(seq), language=None, wrap_lines=True)
            st.markdown(f"The candidates at step {len(steps) + 1}:")
            st.dataframe(
                nt.top_tokens(dist, N_CANDIDATES, partial(token_text, tok)).rows(), hide_index=True
            )
