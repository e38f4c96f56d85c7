"""The Attention page's every-head sections: all heads' patterns in one grid, what each head does
(its role scores against what the same head scores by chance, with induction measured on a
repeated random sequence or the prompt), and the numbers behind the chosen head."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from ui import parts, present, state
from ui.attention.arithmetic import with_minus_infinity
from ui.attention.head import View
from ui.attention.runs import (
    RANDOM_SEED,
    all_heads_chosen,
    induction_input,
    prompt_head_scores,
    roles_of,
    run_attention,
)
from ui.charts.common import token_labels
from ui.frame import PageContext
from viz_model.analysis.attention import (
    N_SHUFFLES,
    HeadScores,
    InductionTest,
    repeated_random_tokens,
)
from viz_model.analysis.head_roles import (
    CHANCE_MARGIN,
    MIN_ELIGIBLE,
    ROLE_EXPLANATIONS,
    ROLE_THRESHOLD,
    RoleTest,
)
from viz_model.model.mask import attention_mask
from viz_model.model.scale import grid_layers

# A static table wraps its column headers, so every column fits on a projector. Its cells wrap
# too, so names are kept whole with a no-break space and hyphen ("L0 H0", "previous-token").
UNBROKEN = {ord(" "): "\u00a0", ord("-"): "\u2011"}


def all_heads(ctx: PageContext, v: View) -> range:
    """Every head's pattern in a grid (a few layers at a time for a big model), the chosen head
    titled in red. Returns the layers shown, which the roles table follows."""
    cfg = ctx.config
    st.subheader("All heads at once")
    per_view = grid_layers(cfg)
    first = 0
    if per_view < cfg.n_layer:  # e.g. GPT-2's 144 heads: a few layers at a time stay readable
        starts = list(range(0, cfg.n_layer, per_view))
        first = state.selectbox(
            "Layers in the grid",
            "grid_layers",
            starts,
            default=v.layer - v.layer % per_view,
            container=st.columns(3)[0],
            format_func=lambda s: f"layers {s}–{min(s + per_view, cfg.n_layer) - 1}",
            help=f"This model has {cfg.n_layer * cfg.n_head} heads; {per_view} layers "
            f"({per_view * cfg.n_head} maps) at a time stay readable.",
        )
    shown_layers = range(first, min(first + per_view, cfg.n_layer))
    st.caption(
        ("Every head's" if per_view >= cfg.n_layer else f"Layers {first}–{shown_layers[-1]}'s")
        + " patterns on this prompt: rows are layers, columns are heads, each small map "
        f"drawn like the big one above (queries down, keys across{', grey = masked' if cfg.causal else ''}). The chosen head is "
        "titled in red. Hover to read a cell."
    )
    present.plot(
        all_heads_chosen(
            ctx.bundle_id,
            tuple(ctx.ids),
            tuple(ctx.labels),
            (first, len(shown_layers)),
            v.layer,
            v.head,
        ),
        key="attn_grid",
    )
    return shown_layers


def what_each_head_does(ctx: PageContext, v: View, shown_layers: range) -> np.ndarray | None:
    """The roles table of the grid's layers, the chosen head's claim, how roles are scored, and
    every head in words. Returns the repeated random sequence induction was measured on, if any."""
    cfg, ids, T = ctx.config, tuple(ctx.ids), len(ctx.ids)
    st.subheader("What each head does")
    scores = prompt_head_scores(ctx.bundle_id, ids)
    use_random = state.toggle(
        "Measure induction on a repeated random sequence",
        "rrt",
        default=True,
        help="Random ordinary tokens, then the same tokens again: the standard test for induction "
        "heads, because the second copy can only be predicted by copying the first. Off: induction "
        "is measured on your prompt instead, where few tokens repeat in a way that tests copying.",
    )
    random_ids: np.ndarray | None = None
    random_scores: HeadScores | None = None
    if use_random:
        test = induction_input(ctx.bundle_id)
        length = state.number_input(
            "Random tokens in each copy",
            "rrt_len",
            2,
            test.max_length,
            default=test.default_length,
            step=1,
            container=st.columns(3)[0],
            help="How far back the copy sits. The default is a copy length the model was trained on.",
        )
        random_ids = repeated_random_tokens(test.token_ids, length, seed=RANDOM_SEED)
        random_scores = prompt_head_scores(ctx.bundle_id, tuple(int(i) for i in random_ids))
        st.caption(_induction_caption(test, length, cfg.n_ctx))
    elif scores.eligible["induction"] < MIN_ELIGIBLE:
        st.info(
            f"Only {scores.eligible['induction']} tokens of this prompt repeat an earlier token "
            "(not counting a token repeated at once or two back, <unk> or special tokens), so "
            "induction (looking at what followed an earlier copy of the current token) cannot be "
            f"told from chance on it: at least {MIN_ELIGIBLE} are needed."
        )
        if st.button("Score induction on a repeated random sequence"):
            state.set_value("rrt", True)
            st.rerun()

    random_key = None if random_ids is None else tuple(int(i) for i in random_ids)
    all_rows = roles_of(ctx.bundle_id, ids, random_key)  # the table and the chosen head's claim
    rows = all_rows
    if len(shown_layers) < cfg.n_layer:  # the grid's layers, so the table stays a screen or two
        rows = [r for r in rows if r["layer"] in shown_layers]
        st.caption(
            f"Layers {shown_layers.start}–{shown_layers[-1]}, as in the grid above: choose others "
            "there."
        )

    measured_random = random_scores is not None
    shown_roles = pd.DataFrame(
        [_table_row(r, measured_random, cfg.causal) for r in rows],
        index=[r["head"] for r in rows],
    )
    shown_roles.index = pd.Index([h.translate(UNBROKEN) for h in shown_roles.index], name="head")
    shown_roles["role"] = [r.translate(UNBROKEN) for r in shown_roles["role"]]
    st.table(shown_roles)

    chosen = next((r for r in all_rows if r["head"] == v.name), None)
    if chosen is not None:
        st.markdown(chosen["claim"].text)

    even_what = (
        "1/(t+1) at position t" if cfg.causal else f"1/{T} everywhere, as this model has no mask"
    )
    explain = "\n".join(
        f"- **{role}**: {text}"
        for role, text in ROLE_EXPLANATIONS.items()
        if not (cfg.causal and role == "looks k ahead")  # a causal model cannot look ahead
    )
    st.markdown(
        "Each cell is a score, the average attention over the tokens after the first to one kind "
        "of position, and in brackets what the **same head would score by chance**. "
        f"A role is named only when its score is at least {ROLE_THRESHOLD}, at least "
        f"{CHANCE_MARGIN} above chance, and measured on at least {MIN_ELIGIBLE} query positions "
        '(fewer are shown as "pos."); else the head is *sharp, other* or *mixed* by its entropy. '
        "**Chance** for previous-token, first-token sink, self and k back is **even attention**: "
        f"every token spreading its weight equally over the tokens it may read ({even_what}). "
        "For induction it is the higher of even attention and a **shuffled-token control**: the "
        "same head's attention scored against the induction targets of the same tokens in "
        f"{N_SHUFFLES} shuffled orders, so a head that looks by position, or at a frequent token, "
        "scores as much there. A token repeated at once or two back is not counted for induction "
        "(its target is the token itself or the one before: a self or previous-token head hits it "
        "anyway), nor are <unk> and special tokens. **k back** is the offset k ≥ 2 a head looks "
        "at most"
        + ("" if cfg.causal else "; **k ahead** the offset k ≥ 1 after the token")
        + f".\n{explain}\n"
        "- **entropy** (in nats): how spread out a row is. 0 means all attention on one token; "
        "a row spread evenly over n tokens has entropy ln n."
        + (
            f" Even attention on this prompt would average {scores.even_entropy:.2f} nats."
            if math.isfinite(scores.even_entropy)
            else ""
        )
    )
    with parts.followed_expander("Every head in words", "heads_in_words"):
        st.markdown("\n".join(f"- {r['claim'].text}" for r in rows))
    return random_ids


def numbers_behind_it(ctx: PageContext, v: View, random_ids: np.ndarray | None) -> None:
    """The chosen head's pattern or scores as a table, and the random sequence, while open."""
    with parts.numbers_behind_it() as opened:
        if not opened:  # built only while open
            return
        cfg, labels, T = ctx.config, ctx.labels, len(ctx.ids)
        run = run_attention(ctx.bundle_id, tuple(ctx.ids))
        which = "scores" if v.view == "scores" else "pattern"
        values = run.scores[v.layer, v.head] if v.view == "scores" else run.pattern[v.layer, v.head]
        sign = "−∞" if v.view == "scores" else "–"
        hidden = f"; {sign} = masked" if cfg.causal else ""
        st.markdown(f"{v.name}'s {which} (rows = queries, columns = keys{hidden}):")
        text = np.array(with_minus_infinity(values, attention_mask(cfg, T), sign)).reshape(T, T)
        st.dataframe(pd.DataFrame(text, index=labels, columns=labels))
        if random_ids is not None:
            st.markdown("The repeated random sequence used for induction:")
            pieces = [ctx.tokenizer.id_to_token(int(i)) for i in random_ids]
            st.code(" ".join(token_labels(pieces)), language=None)


def _induction_caption(test: InductionTest, length: int, n_ctx: int) -> str:
    """Which tokens were drawn, and how the copy length compares with the model's training."""
    text = (
        f"Induction measured on {length} random tokens (seed {RANDOM_SEED}) repeated twice, drawn "
        f"from the {test.drawn_from}; never <unk>, a special token or a line break. The other "
        "roles are measured on your prompt; so is the column *induction on your prompt*, "
        "shown for comparison (it does not name the role)."
    )
    if test.trained_copy is None:
        return text + (
            f" Copies of up to {test.max_length} tokens fit twice in its context of {n_ctx}."
        )
    lo, hi = test.trained_copy
    text += f" This model was trained on copies of {lo} to {hi} tokens"
    if length > hi:
        return text + ": a longer copy tests whether induction generalises beyond what it saw."
    if length < lo:
        return text + ": a shorter copy tests whether induction generalises below what it saw."
    return text + ", so this length is one it has seen."


def _cell(t: RoleTest | None) -> str:
    """A score and, in brackets, its chance; '–' when not measured; the count when too few."""
    if t is None or not t.measured:
        return "–"
    few = f", {t.eligible} pos." if t.eligible < MIN_ELIGIBLE else ""
    return f"{t.score:.2f} ({t.chance:.2f}{few})"


def _table_row(row: dict, measured_random: bool, causal: bool) -> dict[str, str]:
    """One head's row of the roles table: induction on the random sequence when `measured_random`
    (then also on the prompt), and k ahead for a model without the causal mask."""
    tests = row["tests"]  # named roles, offsets, then the prompt's induction (see role_tests)
    by_role = {t.role: t for t in tests}
    induction = [t for t in tests if t.role == "induction"]
    back = next((t for t in tests if t.role.endswith("back")), None)
    ahead = next((t for t in tests if t.role.endswith("ahead")), None)
    out = {"role": row["role"]}
    for role in ("previous-token", "first-token sink", "self"):
        out[role] = _cell(by_role.get(role))
    out["induction (random)" if measured_random else "induction"] = _cell(induction[0])
    if measured_random:
        out["induction on your prompt"] = _cell(induction[-1])
    out["k back"] = f"{back.role.split()[1]}: {_cell(back)}" if back else "–"
    if not causal:
        out["k ahead"] = f"{ahead.role.split()[1]}: {_cell(ahead)}" if ahead else "–"
    out["entropy"] = f"{row['entropy (nats)']:.2f}"
    return out
