"""Attention: which earlier tokens each token looks at, head by head, and the arithmetic behind one row."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from ui import cache, parts, present, state
from ui.charts.attention import (
    attention_lines,
    highlight_head,
    lines_window,
    outline_query,
    pattern_grid,
    pattern_heatmap,
    query_weights,
)
from ui.charts.common import frozen, plotly_text, token_labels
from viz_model.analysis.attention import (
    N_SHUFFLES,
    AttentionRun,
    HeadScores,
    InductionTest,
    attention_run,
    head_scores,
    induction_test,
    recorded_differences,
    repeated_random_tokens,
    run_query_arithmetic,
)
from viz_model.analysis.head_roles import (
    CHANCE_MARGIN,
    MIN_ELIGIBLE,
    ROLE_EXPLANATIONS,
    ROLE_THRESHOLD,
    RoleTest,
    head_roles,
)
from viz_model.model.mask import attention_mask
from viz_model.model.positions import alibi_slopes
from viz_model.model.scale import grid_layers, view_tokens

RANDOM_SEED = 0
ARITHMETIC_KEY = "attn_arithmetic"  # session-state key of the hand-arithmetic expander
SIDE_BY_SIDE_MAX_T = 12  # longer prompts stack the heatmap and the lines chart

ctx = ui.context()
cfg = ctx.config
T = len(ctx.ids)


@cache.per_prompt
def run_attention(bundle_id: str, ids: tuple[int, ...]) -> AttentionRun:
    """Every attention layer's pattern, scores, q, k, v, z and per-head result, as numpy."""
    return attention_run(cache.bundle(bundle_id).model, list(ids))


# Figures are cached per prompt as objects (never mutated, only drawn) because building a plotly
# figure costs far more than drawing it; each is keyed by its function's arguments, exactly what it shows, so moving
# the query selector rebuilds nothing but the cheap outline, and a head change reuses the grid.
# They are frozen (charts.common.frozen): drawing one does not re-encode its arrays every run.


@cache.per_prompt
def head_heatmap(
    bundle_id: str,
    ids: tuple[int, ...],
    labels: tuple[str, ...],
    layer: int,
    head: int,
    scores: bool,
) -> go.Figure:
    run = run_attention(bundle_id, ids)
    values = run.scores[layer, head] if scores else run.pattern[layer, head]
    return frozen(pattern_heatmap(values, list(labels), scores=scores, causal=run.causal))


@cache.per_prompt
def head_outlined(
    bundle_id: str,
    ids: tuple[int, ...],
    labels: tuple[str, ...],
    layer: int,
    head: int,
    scores: bool,
    query: int | None,
) -> go.Figure:
    """head_heatmap with the query's row outlined: cached too, so the students of a class who
    open the same view share one copy instead of each making it (a few ms a run)."""
    return outline_query(head_heatmap(bundle_id, ids, labels, layer, head, scores), query)


@cache.per_prompt
def head_lines(
    bundle_id: str, ids: tuple[int, ...], labels: tuple[str, ...], layer: int, head: int, query: int
) -> go.Figure:
    """The lines of a window of at most LINES_MAX_T tokens ending at the query (lines_window)."""
    run = run_attention(bundle_id, ids)
    first, end = lines_window(len(ids), query)
    pattern = run.pattern[layer, head, first:end, first:end]
    return frozen(
        attention_lines(pattern, list(labels[first:end]), query=query - first, causal=run.causal)
    )


def _window_note(T: int, query: int) -> str:
    """What the lines chart leaves out when the prompt is longer than it can draw readably."""
    first, end = lines_window(T, query)
    if end - first == T:
        return ""
    return (
        f" {T} tokens of lines would be a tangle nobody can read: this shows positions {first} "
        f"to {end - 1} ({end - first} tokens, ending at the chosen query where it can) and the "
        "lines between them. Pick another query to move the window."
    )


@cache.per_prompt
def query_bars(
    bundle_id: str, ids: tuple[int, ...], labels: tuple[str, ...], layer: int, head: int, query: int
) -> go.Figure:
    run = run_attention(bundle_id, ids)
    title = f"Weights of query {plotly_text(labels[query])}"
    weights = run.pattern[layer, head, query]
    return frozen(query_weights(weights, list(labels), query, title=title, causal=run.causal))


@cache.per_prompt
def all_heads(
    bundle_id: str, ids: tuple[int, ...], labels: tuple[str, ...], first: int, count: int
) -> go.Figure:
    """Layers first .. first + count - 1 of the grid (all of them for a small model)."""
    run = run_attention(bundle_id, ids)
    patterns = run.pattern[first : first + count]
    return frozen(pattern_grid(patterns, list(labels), first_layer=first, causal=run.causal))


@cache.per_prompt
def all_heads_chosen(
    bundle_id: str,
    ids: tuple[int, ...],
    labels: tuple[str, ...],
    window: tuple[int, int],
    layer: int,
    head: int,
) -> go.Figure:
    """The grid with one head titled in red: it shares the grid's arrays, so an entry is small."""
    return highlight_head(all_heads(bundle_id, ids, labels, *window), layer, head)


@cache.per_model
def induction_input(bundle_id: str) -> InductionTest:
    """Which tokens the repeated random test draws from, and its copy lengths, for one bundle."""
    b = cache.bundle(bundle_id)
    return induction_test(b.tokenizer, b.meta, view_tokens(b.config))


@cache.per_prompt
def prompt_head_scores(bundle_id: str, ids: tuple[int, ...]) -> HeadScores:
    """Every head's role scores on these ids, with what each would be by chance."""
    b = cache.bundle(bundle_id)
    pattern = run_attention(bundle_id, ids).pattern
    return head_scores(pattern, list(ids), b.config.causal, b.tokenizer.special_ids)


@cache.per_prompt
def roles_of(
    bundle_id: str, ids: tuple[int, ...], random_ids: tuple[int, ...] | None
) -> list[dict]:
    """Every head's roles, scored on the prompt (induction on the repeated random sequence when
    given): once per view, not once per run, as a class's page runs repeat it."""
    random_scores = None if random_ids is None else prompt_head_scores(bundle_id, random_ids)
    return head_roles(prompt_head_scores(bundle_id, ids), random_scores)


# What this model's queries read (GPTConfig.causal): a GPT's causal mask hides later tokens.
reads, compared, scaled = (
    (
        "the tokens before it",
        "its own key and every earlier token's",
        "scaled, the future is **masked** (a token may not look ahead, so those scores become −∞), ",
    )
    if cfg.causal
    else (
        "every token of the text, later ones too (this model has no causal mask)",
        "every token's key, later ones included,",
        "scaled (a GPT would now **mask** the future, setting those scores to −∞; this model "
        "does not), ",
    )
)
st.markdown(
    f"In a GPT, attention is how a token gathers information from other tokens; here, from "
    f"{reads}. Each **head** "
    "turns every token into three vectors: a **query** *q* (what am I looking for?), a **key** "
    "*k* (what do I contain?) and a **value** *v* (what do I pass on if I am looked at). A "
    f"token's query is compared with {compared} by a dot product; the results are {scaled}"
    "and a **softmax** turns each row into weights that are positive and sum to 1: the "
    "**attention pattern**. The head then outputs the weighted sum of the values, *z*, and "
    "writes *z W_O* into the residual stream, the running sum every layer reads and adds to."
)
if not cfg.causal:
    st.warning(
        "**This model has no causal mask** (`causal = False`): every token's query is compared "
        "with every key, later tokens included, and nothing is set to −∞. It was trained that "
        "way to show why GPTs mask: a token that can read the next token can copy the answer "
        "instead of predicting it. Below, no cell is grey: weight on a later token is real."
    )
# Two short lines, not one long one: the main column is ~700 px on a 1024 px projector.
st.latex(
    r"\begin{gathered}\text{pattern} = \operatorname{softmax}\!\left("
    r"\frac{q\,k^\top}{\sqrt{d_\text{head}}}"
    + (r" + \text{mask}" if cfg.causal else "")
    + r"\right)\\"
    r"z = \text{pattern}\; v,\qquad \text{result} = z\,W_O\end{gathered}"
)
st.caption(
    f"d_head = {cfg.d_head}: the length of each head's q, k and v "
    f"(d_model {cfg.d_model} split over {cfg.n_head} heads). "
    f"This model has {cfg.n_layer} layers of {cfg.n_head} heads; the prompt is {T} tokens."
)

ids = tuple(ctx.ids)
run = run_attention(ctx.bundle_id, ids)
labels = ctx.labels
label_key = tuple(labels)

# ---- choices ----------------------------------------------------------------------------------

c1, c2, c3, c4 = st.columns([1, 1, 1.4, 1.2])
layer = state.slider("Layer", "layer", 0, cfg.n_layer - 1, default=0, container=c1)
head = state.slider("Head", "head", 0, cfg.n_head - 1, default=0, container=c2)
query = state.selectbox(
    "Query token (for the arithmetic)",
    "query",
    list(range(T)),
    default=T - 1,
    container=c3,
    format_func=lambda i: labels[i],
    help="The token whose row of the pattern is worked out by hand below.",
)
view = state.radio(
    "Show",
    "view",
    ["pattern", "scores"],
    default="pattern",
    container=c4,
    horizontal=True,
    help="pattern: the weights after softmax. scores: q·k/√d_head before softmax.",
)
if cfg.n_layer == 1:
    c1.caption("Layer 0 (the only layer)")
if cfg.n_head == 1:
    c2.caption("Head 0 (the only head)")

# ---- one head ---------------------------------------------------------------------------------

name = f"L{layer} H{head}"
# A longer prompt gets the whole column for the heatmap (the lines chart goes below it): beside
# the lines, on a 1024 px projector, 15 tokens left ~10 px a cell and 60 tokens ~3 px.
left, right = st.columns([3, 2]) if T <= SIDE_BY_SIDE_MAX_T else (st.container(), st.container())
with left:
    if view == "scores":
        st.subheader(f"{name}: scores before softmax")
        st.caption(
            "Each cell is q·k/√d_head. Red is a high score (the query matches that key), blue a "
            "low one. "
            + (
                "Grey cells are masked: their score becomes −∞, so after softmax they get weight "
                "exactly 0."
                if cfg.causal
                else "No cell is masked: this model has no causal mask."
            )
        )
    else:
        st.subheader(f"{name}: attention pattern")
        st.caption(
            "Row = the token doing the looking (query), column = the token looked at (key). "
            "Each row sums to 1. "
            + (
                "Grey cells are masked (later tokens), not zero attention. "
                if cfg.causal
                else "No cell is masked: cells right of the diagonal are weight on later tokens. "
            )
            + "The red outline is the query token chosen above."
        )
    outlined = head_outlined(ctx.bundle_id, ids, label_key, layer, head, view == "scores", query)
    present.plot(outlined, key="attn_heatmap")
with right:
    st.subheader("Who looks at whom")
    st.caption(
        "A line from each token (left) to each token it attends to (right); thicker and darker "
        "means more weight. The chosen query's lines are red. Weights under 0.02 are not drawn."
        + _window_note(T, query)
    )
    present.plot(head_lines(ctx.bundle_id, ids, label_key, layer, head, query), key="attn_lines")

# ---- the arithmetic of one row ------------------------------------------------------------------

arith = run_query_arithmetic(run, layer, head, query)
diffs = recorded_differences(arith, run, layer, head)
E = arith.d_head
qlabel = labels[query]


def _vector_table(rows: np.ndarray, index: list[str], prefix: str) -> pd.DataFrame:
    rows = np.atleast_2d(rows)
    return pd.DataFrame(rows, index=index, columns=[f"{prefix}[{i}]" for i in range(rows.shape[1])])


def _table(df: pd.DataFrame, **kwargs) -> None:
    """A table with 4 decimals (a column format, far cheaper than a pandas Styler)."""
    number = st.column_config.NumberColumn(format="%.4f")
    st.dataframe(df, column_config={c: number for c in df.select_dtypes("number")}, **kwargs)


def _with_minus_infinity(values: np.ndarray, keep: np.ndarray, masked: str = "−∞") -> list[str]:
    """Numbers as text, `masked` where masked (a table shows NaN as 'None', which reads wrong)."""
    pairs = zip(values.ravel(), keep.ravel(), strict=True)
    return [f"{x:.4f}" if k else masked for x, k in pairs]


arithmetic = st.expander(
    f"**Work out one row by hand: query {qlabel} in {name}**, from q and k to the head's "
    "write into the residual, with this model's real numbers",
    key=ARITHMETIC_KEY,
    on_change="rerun",
)
with arithmetic:
    if arithmetic.open:  # computed only while open (on_change="rerun")
        hidden_from = (
            f"Keys after position {query} are hidden from this query by the mask."
            if cfg.causal
            else "This model has no mask: the query reads every key, later ones too."
        )
        st.markdown(
            f"The real numbers of this model. {hidden_from} Everything below is recomputed from q, "
            "k and v with plain arithmetic, then compared with what the model recorded while it ran."
        )

        turned = " after RoPE turned it by its position" if run.rotated else ""
        st.markdown(f"**1. The query vector q** of {qlabel}{turned} ({E} numbers, d_head = {E})")
        _table(_vector_table(arith.q, [qlabel], "q"))

        seen = arith.visible
        key_labels = [lab for lab, k in zip(labels, seen, strict=True) if k]
        st.markdown(
            "**2. Each key k"
            + (", turned by its own position," if run.rotated else "")
            + " and its dot product with q**: q·k = Σᵢ q[i]·k[i], "
            + (
                f"for the {len(key_labels)} tokens up to the query."
                if cfg.causal
                else f"for all {len(key_labels)} tokens (no mask)."
            )
        )
        keys = _vector_table(arith.k[seen], key_labels, "k")
        keys.insert(0, "q·k", arith.dots[seen])
        _table(keys)

        mask_step = (
            "add the mask (0 for a visible key, −∞ for a later one); "
            if cfg.causal
            else "this model adds no mask (0 for every key); "
        )
        alibi = (
            "add ALiBi's penalty, −m·(distance from the query), with this head's slope "
            f"m = {alibi_slopes(cfg.n_head)[head]:.4g}; "
            if arith.bias is not None
            else ""
        )
        st.markdown(
            f"**3. Scale, mask, softmax.** Divide by √d_head = √{E} = {math.sqrt(E):.4f} so scores do "
            f"not grow with the vector length; {alibi}{mask_step}"
            "softmax: weight = exp(score) / Σ exp(score) over the row."
        )
        columns = {"q·k": arith.dots, "÷ √d_head": arith.dots / math.sqrt(E)}
        if arith.bias is not None:
            columns["+ ALiBi"] = arith.scaled
        steps = pd.DataFrame(
            {
                **columns,
                "mask": ["0" if k else "−∞" for k in seen],
                "score + mask": _with_minus_infinity(arith.scaled, seen),
                "softmax weight": arith.pattern,
            },
            index=labels,
        )
        _table(steps)
        present.plot(
            query_bars(ctx.bundle_id, ids, label_key, layer, head, query), key="attn_query_weights"
        )

        st.markdown(
            "**4. The weighted sum of the values**: z = Σⱼ weightⱼ · vⱼ. Each row below is one key's "
            "value vector times its weight; the last row, their sum, is z."
        )
        weighted = _vector_table(
            arith.weighted_v[seen],
            [
                f"{w:.3f} × v of {lab}"
                for w, lab in zip(arith.pattern[seen], key_labels, strict=True)
            ],
            "z",
        )
        _table(weighted)
        st.markdown("Adding up those rows gives **z**, this head's output for the query:")
        _table(_vector_table(arith.z, ["z"], "z"))

        st.markdown(
            f"**5. The head's write into the residual stream**: result = z · W_O, where W_O is this "
            f"head's {E} × {cfg.d_model} slice of the output matrix. These {cfg.d_model} numbers are "
            f"added to the residual stream at {qlabel} (the output bias is added once for all heads)."
        )
        _table(_vector_table(arith.result, ["z · W_O"], "result"))

        checks = [
            ("the scaled scores", "hook_attn_scores"),
            ("the softmax weights", "hook_pattern"),
            ("z", "hook_z"),
            ("z · W_O", "hook_result"),
        ]
        worst = max(diffs.values())
        lines = "\n".join(
            f"- recomputed {what} equals `{hook}`: max difference {diffs[hook]:.1e}"
            for what, hook in checks
        )
        if worst < 1e-4:
            st.success(f"The hand arithmetic matches what the model recorded:\n{lines}")
        else:
            st.warning(
                f"The hand arithmetic differs from the recording more than expected:\n{lines}"
            )

# ---- every head at once -------------------------------------------------------------------------

st.subheader("All heads at once")
per_view = grid_layers(cfg)
first = 0
if per_view < cfg.n_layer:  # e.g. GPT-2's 144 heads: a few layers at a time stay readable
    starts = list(range(0, cfg.n_layer, per_view))
    first = state.selectbox(
        "Layers in the grid",
        "grid_layers",
        starts,
        default=layer - layer % per_view,
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
    all_heads_chosen(ctx.bundle_id, ids, label_key, (first, len(shown_layers)), layer, head),
    key="attn_grid",
)

# ---- what each head does ------------------------------------------------------------------------

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


def _induction_caption(test: InductionTest, length: int) -> str:
    """Which tokens were drawn, and how the copy length compares with the model's training."""
    text = (
        f"Induction measured on {length} random tokens (seed {RANDOM_SEED}) repeated twice, drawn "
        f"from the {test.drawn_from}; never <unk>, a special token or a line break. The other "
        "roles are measured on your prompt; so is the column *induction on your prompt*, "
        "shown for comparison (it does not name the role)."
    )
    if test.trained_copy is None:
        return text + (
            f" Copies of up to {test.max_length} tokens fit twice in its context of {cfg.n_ctx}."
        )
    lo, hi = test.trained_copy
    text += f" This model was trained on copies of {lo} to {hi} tokens"
    if length > hi:
        return text + ": a longer copy tests whether induction generalises beyond what it saw."
    if length < lo:
        return text + ": a shorter copy tests whether induction generalises below what it saw."
    return text + ", so this length is one it has seen."


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
    st.caption(_induction_caption(test, length))
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
    st.caption(f"Layers {first}–{shown_layers[-1]}, as in the grid above: choose others there.")


def _cell(t: RoleTest | None) -> str:
    """A score and, in brackets, its chance; '–' when not measured; the count when too few."""
    if t is None or not t.measured:
        return "–"
    few = f", {t.eligible} pos." if t.eligible < MIN_ELIGIBLE else ""
    return f"{t.score:.2f} ({t.chance:.2f}{few})"


def _table_row(row: dict) -> dict[str, str]:
    tests = row["tests"]  # named roles, offsets, then the prompt's induction (see role_tests)
    by_role = {t.role: t for t in tests}
    induction = [t for t in tests if t.role == "induction"]
    back = next((t for t in tests if t.role.endswith("back")), None)
    ahead = next((t for t in tests if t.role.endswith("ahead")), None)
    out = {"role": row["role"]}
    for role in ("previous-token", "first-token sink", "self"):
        out[role] = _cell(by_role.get(role))
    out[induction_column] = _cell(induction[0])
    if random_scores is not None:
        out["induction on your prompt"] = _cell(induction[-1])
    out["k back"] = f"{back.role.split()[1]}: {_cell(back)}" if back else "–"
    if not cfg.causal:
        out["k ahead"] = f"{ahead.role.split()[1]}: {_cell(ahead)}" if ahead else "–"
    out["entropy"] = f"{row['entropy (nats)']:.2f}"
    return out


induction_column = "induction (random)" if random_scores is not None else "induction"
shown_roles = pd.DataFrame([_table_row(r) for r in rows], index=[r["head"] for r in rows])
# A static table wraps its column headers, so every column fits on a projector. Its cells wrap
# too, so names are kept whole with a no-break space and hyphen ("L0 H0", "previous-token").
unbroken = {ord(" "): "\u00a0", ord("-"): "\u2011"}
shown_roles.index = pd.Index([h.translate(unbroken) for h in shown_roles.index], name="head")
shown_roles["role"] = [r.translate(unbroken) for r in shown_roles["role"]]
st.table(shown_roles)

chosen = next((r for r in all_rows if r["head"] == name), None)
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
with st.expander("Every head in words"):
    st.markdown("\n".join(f"- {r['claim'].text}" for r in rows))

with parts.numbers_behind_it() as opened:
    if opened:  # built only while open
        which = "scores" if view == "scores" else "pattern"
        values = run.scores[layer, head] if view == "scores" else run.pattern[layer, head]
        sign = "−∞" if view == "scores" else "–"
        hidden = f"; {sign} = masked" if cfg.causal else ""
        st.markdown(f"{name}'s {which} (rows = queries, columns = keys{hidden}):")
        text = np.array(_with_minus_infinity(values, attention_mask(cfg, T), sign)).reshape(T, T)
        st.dataframe(pd.DataFrame(text, index=labels, columns=labels))
        if random_ids is not None:
            st.markdown("The repeated random sequence used for induction:")
            pieces = [ctx.tokenizer.id_to_token(int(i)) for i in random_ids]
            st.code(" ".join(token_labels(pieces)), language=None)
