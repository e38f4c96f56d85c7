"""Inside a block: one token's vector through a block step by step (the lecture's t1..t5 and h),
attention as matrices for the whole prompt and each head's QK and OV circuits, a soft look-up and
why sqrt(d_head), contextual embeddings, linear probes by layer, and one gradient step."""

import numpy as np
import streamlit as st

import ui
from ui import cache, state
from ui.charts import block as charts
from ui.charts.common import show_whitespace
from ui.shared_cache import shared
from viz_model.analysis import block as blk
from viz_model.analysis import contextual as cx
from viz_model.analysis import gradient as gx
from viz_model.analysis import lookup as lk
from viz_model.analysis import probes as pr
from viz_model.analysis.claims import (
    md_escape as md,  # the frame's Markdown escaping, for tokens in prose
)
from viz_model.analysis.residual import layer_labels
from viz_model.analysis.tokens import token_text

ctx = ui.context()
cfg, tok = ctx.config, ctx.tokenizer
T = len(ctx.ids)
KEY = (ctx.bundle_id, tuple(ctx.ids))

PARTS = {
    "walk": "One block, step by step",
    "matrices": "Matrices and circuits",
    "lookup": "A soft look-up",
    "context": "Contextual embeddings",
    "probes": "Linear probes",
    "gradient": "One gradient step",
}
WIDTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
st.markdown(
    "Every block of the model does the same few things to each token's vector. Here they are "
    "taken apart with this model's real numbers: one token through one block; attention as "
    "matrices and circuits; attention as a soft dictionary look-up; how a token's vector becomes "
    "contextual layer by layer; what a straight line can read from it (probes); and one step of "
    "training by gradient descent."
)
part = state.radio(
    "Part", "part", list(PARTS), "walk", format_func=PARTS.get, horizontal=True,
    label_visibility="collapsed",
)  # fmt: skip


@shared
def walk_of(bundle_id: str, ids: tuple[int, ...], layer: int) -> blk.BlockWalk:
    return blk.block_walk(cache.bundle(bundle_id).model, list(ids), layer)


@shared
def checks_of(bundle_id: str, ids: tuple[int, ...], layer: int) -> dict[str, float]:
    model = cache.bundle(bundle_id).model
    return blk.recorded_differences(model, list(ids), walk_of(bundle_id, ids, layer))


@st.cache_data(show_spinner=False, max_entries=32)
def circuits_of(bundle_id: str, layer: int, head: int, tokens: tuple[int, ...]) -> blk.Circuits:
    return blk.circuits(cache.bundle(bundle_id).model, layer, head, list(tokens))


def vocab_label(i: int) -> str:
    return show_whitespace(token_text(tok, i))


def block_choice(c1) -> int:
    return state.slider(
        "Block (layer)", "blk_layer", 0, cfg.n_layer - 1, 0, container=c1,
        help="Which block to open: 0 is the first.",
    )  # fmt: skip


# ---- part 1: one block, step by step -------------------------------------------------------------
def one_block() -> None:
    pre, attn_only = cfg.norm == "pre", cfg.attn_only
    if pre:
        st.markdown(
            "A **pre-LN block** (GPT-2 and this model) in the lecture's names. Each step works on "
            "one token's vector $x$ of $D = " + str(cfg.d_model) + "$ numbers; only attention "
            "looks at the other tokens."
        )
        lines = [
            ("t_1 = \\mathrm{LayerNorm}(x)", "x on a standard scale"),
            (
                "t_2 = \\mathrm{MultiHeadAttention}(t_1)",
                "what attention brings from "
                + ("earlier tokens" if cfg.causal else "the other tokens (no causal mask)"),
            ),
            ("h = t_3 = x + t_2", "the block's output (`resid_post`): no MLP in this model")
            if attn_only
            else ("t_3 = x + t_2", "the residual stream half-way (`resid_mid`)"),
        ]
        if not attn_only:
            lines += [
                ("t_4 = \\mathrm{LayerNorm}(t_3)", "$t_3$ on a standard scale, for the MLP"),
                ("t_5 = \\mathrm{MLP}(t_4)", "what the MLP adds"),
                ("h = t_3 + t_5", "the block's output (`resid_post`)"),
            ]
        st.markdown("\n".join(f"- ${f}$: {words}" for f, words in lines))
    else:
        st.markdown(
            "This model is **post-LN** (the 2017 original): the LayerNorm sits on the stream after "
            "each add. The lecture's t1..t5 name a pre-LN block, so the steps here have their own "
            "names: $a = \\mathrm{Attn}(x)$, $t_3 = \\mathrm{LN}(x + a)$, $m = \\mathrm{MLP}(t_3)$, "
            "$h = \\mathrm{LN}(t_3 + m)$."
        )
    c1, c2 = st.columns(2)
    layer = block_choice(c1)
    position = state.slider(
        "Token", "blk_pos", 0, T - 1, T - 1, container=c2,
        help="Which token's vector to follow through the block.",
    )  # fmt: skip
    walk = walk_of(ctx.bundle_id, tuple(ctx.ids), layer)
    symbols = [s.symbol for s in walk.steps]
    vectors = np.stack([s.vectors[position] for s in walk.steps])  # (S, D)
    st.subheader(f"Token {md(ctx.labels[position])} through block {layer}")
    st.plotly_chart(
        cache.figure(
            ("block walk", *KEY, layer, position),
            lambda: charts.walk_steps(symbols, [s.formula for s in walk.steps], vectors),
        )
    )
    norms = np.linalg.norm(vectors, axis=-1)
    x_norm, h_norm = float(norms[0]), float(norms[-1])
    st.markdown(
        f"The token enters with length **{x_norm:.2f}** and leaves with **{h_norm:.2f}**. "
        + (
            "A LayerNorm resets the length to about √D · |γ| whatever came in; "
            + ("attention adds" if cfg.attn_only else "attention and the MLP each add")
            + " a vector to the stream, which never replaces what was there."
            if pre
            else "Each LayerNorm resets the stream's length, so the output's is set by γ."
        )
    )
    checks = checks_of(ctx.bundle_id, tuple(ctx.ids), layer)
    rows = [
        {
            "step": s.symbol,
            "what it is": s.words,
            "length": round(float(norms[i]), 4),
            "hook": s.hook.split(".")[-1] if s.hook else "",
            "|by hand − hook|": f"{checks[s.symbol]:.1e}" if s.symbol in checks else "",
        }
        for i, s in enumerate(walk.steps)
    ]
    st.dataframe(rows, hide_index=True)
    st.caption(
        "Every step is recomputed here by hand from the block's weights (in 64-bit numbers); where "
        "the model records the same vector at a hook (`blocks.L.` + the name shown), the last column is the largest difference."
    )
    with st.expander("The numbers behind it"):
        st.dataframe(
            {"dimension": np.arange(cfg.d_model)}
            | {s: vectors[i].round(4) for i, s in enumerate(symbols)},
            hide_index=True,
        )


# ---- part 2: matrices and circuits ---------------------------------------------------------------
def matrices_and_circuits() -> None:
    st.markdown(
        "Attention for every token at once is three matrix products. Stack the prompt's $T$ "
        "vectors $t_1$ as the rows of a matrix; each head $h$ projects them to $d_\\text{head}$ = "
        f"{cfg.d_head} numbers per token:"
    )
    st.latex(r"Q = t_1 W_Q, \qquad K = t_1 W_K, \qquad V = t_1 W_V")
    st.latex(
        r"Z = \underbrace{\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_\text{head}}}"
        + (r" + \text{mask}" if cfg.causal else "")
        + r"\right)}_{\text{pattern},\ T\times T} V"
    )
    if not cfg.causal:
        st.caption(
            "This model has no causal mask: every token reads the whole prompt, later tokens too."
        )
    c1, c2 = st.columns(2)
    layer = block_choice(c1)
    head = state.slider("Head", "blk_head", 0, cfg.n_head - 1, 0, container=c2)
    walk = walk_of(ctx.bundle_id, tuple(ctx.ids), layer)
    st.subheader(f"Block {layer}, head {head}: Q, K and V for the whole prompt")
    st.plotly_chart(
        cache.figure(
            ("block qkv", *KEY, layer, head),
            lambda: charts.matrices(
                [
                    (f"Q ({T} × {cfg.d_head})", walk.q[head], False, None),
                    (f"K ({T} × {cfg.d_head})", walk.k[head], False, None),
                    (f"V ({T} × {cfg.d_head})", walk.v[head], False, None),
                ],
                ctx.labels,
            ),
        )
    )
    st.markdown(
        "One row per token. The Attention page takes one row of Q apart; here every row goes "
        "through at once: the pattern is $T \\times T$ and multiplies $V$ to give $Z$, one row per "
        "token, each a weighted average of the rows of V."
    )
    st.plotly_chart(
        cache.figure(
            ("block pattern v", *KEY, layer, head),
            lambda: charts.matrices(
                [
                    (f"pattern ({T} × {T})", walk.pattern[head], True, ctx.labels),
                    ("× V", walk.v[head], False, None),
                    ("= Z", walk.z[head], False, None),
                ],
                ctx.labels,
            ),
        )
    )
    circuits_section(layer, head)


def circuits_section(layer: int, head: int) -> None:
    st.subheader(f"The two circuits of block {layer}, head {head}")
    st.markdown(
        "Put the head's weights together and it is two $D \\times D$ matrices. The **QK circuit** "
        "$W_{QK} = W_Q W_K^\\top$ decides *where to read*: the score of a query vector $a$ for a "
        "key vector $b$ is $a\\,W_{QK}\\,b^\\top / \\sqrt{d_\\text{head}}$. The **OV circuit** "
        "$W_{OV} = W_V W_O$ decides *what to write*: a token read with weight 1 adds $b\\,W_{OV}$ "
        f"to the stream. Both pass through the head's {cfg.d_head} dimensions, so their rank is at "
        f"most {cfg.d_head}, out of D = {cfg.d_model}."
    )
    distinct = list(dict.fromkeys(ctx.ids))[:40]
    c = circuits_of(ctx.bundle_id, layer, head, tuple(blk.map_tokens(cfg.vocab_size, distinct)))
    m1, m2, m3 = st.columns(3)
    m1.metric("rank of W_QK", c.qk_rank, help="Non-zero singular values (numerically).")
    m2.metric("rank of W_OV", c.ov_rank, help="Non-zero singular values (numerically).")
    m3.metric("size D × D", f"{cfg.d_model} × {cfg.d_model}")
    st.plotly_chart(
        cache.figure(
            ("block singular", ctx.bundle_id, layer, head),
            lambda: charts.singular_values(
                c.qk_singular, c.ov_singular, cfg.d_head, title="Singular values of the circuits"
            ),
        )
    )
    st.markdown(
        "**Through the vocabulary.** Feed the head each token's own embedding (through the "
        "block's LayerNorm, no position, no earlier layer: the *direct path*) and read the "
        "circuits as token-to-token tables: QK, how much a query token prefers each key token; "
        "OV times the unembedding $W_U$, which output tokens a token pushes up when the head "
        "reads it. Below, the prompt's own tokens; each row's mean is taken away, since a softmax "
        "ignores it."
    )
    names = [vocab_label(i) for i in distinct]
    row_of = {t: i for i, t in enumerate(c.token_ids)}
    sub = np.ix_([row_of[t] for t in distinct], [row_of[t] for t in distinct])
    left, right = st.columns(2)
    left.plotly_chart(
        cache.figure(
            ("block qk map", *KEY, layer, head),
            lambda: charts.token_map(
                c.qk_tokens[sub],
                names,
                names,
                row_name="query token",
                col_name="key token",
                title="QK: where a token looks",
            ),  # fmt: skip
        )
    )
    right.plotly_chart(
        cache.figure(
            ("block ov map", *KEY, layer, head),
            lambda: charts.token_map(
                c.ov_tokens[sub],
                names,
                names,
                row_name="token read",
                col_name="output pushed up",
                title="OV: what a token read writes",
            ),  # fmt: skip
        )
    )
    qk_pairs, ov_pairs = blk.top_pairs(c.qk_tokens), blk.top_pairs(c.ov_tokens)
    left.markdown("**Top pairs in the whole vocabulary, QK** (query → key it prefers)")
    left.dataframe(
        [{"query": vocab_label(c.token_ids[a]), "key": vocab_label(c.token_ids[b]),
          "score − row mean": round(v, 3)}
         for a, b, v in qk_pairs],
        hide_index=True,
    )  # fmt: skip
    right.markdown("**Top pairs, OV** (token read → output it pushes up)")
    right.dataframe(
        [{"read": vocab_label(c.token_ids[a]), "pushes up": vocab_label(c.token_ids[b]),
          "logit − row mean": round(v, 3)}
         for a, b, v in ov_pairs],
        hide_index=True,
    )  # fmt: skip
    if cfg.vocab_size > blk.MAX_VOCAB_MAP:
        st.caption(
            f"The vocabulary has {cfg.vocab_size:,} tokens; the top pairs are searched among the "
            f"first {blk.MAX_VOCAB_MAP:,} and the prompt's own."
        )
    st.caption(
        "A copying head's OV table is bright on its diagonal (reading a token pushes up the same "
        "token); an induction or previous-token head shows its rule in QK only together with the "
        "positions, which the direct path leaves out."
    )


# ---- part 3: one gradient step -------------------------------------------------------------------
@shared
def scan_of(bundle_id: str, ids: tuple[int, ...]) -> gx.LossAlongGradient:
    return gx.loss_along_gradient(cache.bundle(bundle_id).model, list(ids))


@shared
def step_of(bundle_id: str, ids: tuple[int, ...], lr: float, position: int) -> gx.GradientStep:
    return gx.gradient_step(cache.bundle(bundle_id).model, list(ids), lr, position)


def one_gradient_step() -> None:
    st.markdown(
        "Training is this, repeated: measure how wrong the model is on some text (the **loss**), "
        "find for every weight which way would make it less wrong (the **gradient** g, by the "
        "chain rule), and move every weight a little that way. Here: one step of plain gradient "
        "descent on your prompt, on a private copy of the model (the model every student sees is "
        "never changed). For a small step the loss falls by about η‖g‖² (**first order**: the "
        "slope times the distance); a longer step leaves the region where the slope holds."
    )
    st.latex(
        r"L = -\frac{1}{N}\sum_{t} \log p_t(y_t), \qquad w \leftarrow w - \eta\,"
        r"\frac{\partial L}{\partial w}, \qquad L(w - \eta g) \approx L(w) - \eta\,\lVert g\rVert^2"
    )
    if T < 2:
        st.info("A gradient step needs a prompt of at least two tokens: one to predict the next.")
        return
    try:
        scan = scan_of(ctx.bundle_id, tuple(ctx.ids))
    except ValueError as err:  # a model too large to copy for one student
        st.info(f"No gradient step here: {err}.")
        return
    c1, c2 = st.columns(2)
    offsets = list(range(-scan.default, len(scan.etas) - scan.default))
    agrees = gx.first_order_agrees(
        scan.losses[scan.default] - scan.loss, scan.predicted[scan.default]
    )
    opens = (
        f"the largest round η whose first-order fall η‖g‖² is at most {gx.DEFAULT_SHARE:.0%} "
        "of the loss and at which the loss really falls about that much"
        if agrees
        else "its smallest η: on none of them did the loss fall as first order predicts"
    )
    offset = state.select_slider(
        "Learning rate η", "gd_eta", offsets, 0, container=c1,
        format_func=lambda k: f"{scan.etas[scan.default + k]:g}",
        help=f"How far to move each weight along its gradient. The slider's values are chosen "
        f"from this model's gradient on this prompt (‖g‖² = {scan.grad_sq:.4g}); it opens on "
        f"{opens}.",
    )  # fmt: skip
    lr = float(scan.etas[scan.default + offset])
    position = state.slider(
        "Token for the chain rule", "gd_pos", 0, T - 2, T - 2, container=c2,
        help="Whose next token the chain-rule example below follows.",
    )  # fmt: skip
    s = step_of(ctx.bundle_id, tuple(ctx.ids), lr, position)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(
        "loss before", f"{s.loss_before:.4f}", help="Mean −ln p of the N = T − 1 next tokens."
    )
    m2.metric("loss after one step", f"{s.loss_after:.4f}", f"{s.loss_after - s.loss_before:+.4f}",
              delta_color="inverse")  # fmt: skip
    m3.metric(
        "first-order estimate", f"{-lr * s.grad_sq:+.4f}",
        help=f"−η‖g‖² = −{lr:g} × {s.grad_sq:.4g}: the change a straight line along the slope "
        "predicts.",
    )  # fmt: skip
    m4.metric("next tokens made likelier", f"{int((s.p_after > s.p_before).sum())} of {T - 1}")
    st.markdown(gx.step_claim(s.loss_before, s.loss_after, lr, s.grad_sq).text)
    st.plotly_chart(
        cache.figure(
            ("gd scan", *KEY, lr),
            lambda: charts.loss_along_gradient(
                scan.etas, scan.losses, scan.loss, scan.grad_sq, lr,
                title="The loss after one step, for each η on the slider",
            ),
        )
    )  # fmt: skip
    st.caption(
        "Solid: the loss measured after one step of each η. Dashed: the first-order estimate "
        "L − η‖g‖², a straight line in η (curved here only by the log axis). For a short enough "
        "step the two agree; where they part, the loss is curving along the gradient: where it "
        "curves up, a step falls short of the line, and a step far past the lowest point ends "
        f"higher than it started (it overshoots). {gx.overshoot_claim(scan).text}"
    )
    targets = ctx.labels[1:]
    st.plotly_chart(
        cache.figure(
            ("gd probs", *KEY, lr),
            lambda: charts.probability_change(
                targets,
                s.p_before,
                s.p_after,
                title="The probability of each actual next token, before and after the step",
            ),  # fmt: skip
        )
    )
    st.caption(
        "Each column is a position's next token (the label is that token). The step is fitted to "
        "this one prompt: training takes such steps on batch after batch of text, and what helps "
        "one prompt need not help another."
    )
    st.plotly_chart(
        cache.figure(
            ("gd norms", *KEY),
            lambda: charts.gradient_norms(s.groups, title="How large the gradient is, by part"),
        )
    )
    chain_rule_section(s, position, lr)


def chain_rule_section(s: gx.GradientStep, position: int, lr: float) -> None:
    c = s.chain
    f = gx.chain_figures(c, lr)
    N = T - 1
    t_label, j_label = md(ctx.labels[position]), md(vocab_label(c.j))
    st.subheader("The chain rule, for one weight")
    st.markdown(
        f"Take the unembedding weight $W_U[{c.d}, j]$ that links dimension {c.d} of the final "
        f"vector $u_t$ to the logit of token $j$ = “{j_label}”, the token after {t_label} "
        f"(of that column, the weight with the largest gradient). It reaches the loss through "
        "the logit $z_t[j] = u_t \\cdot W_U[:, j]$ at every position $t$:"
    )
    st.latex(
        r"\frac{\partial L}{\partial W_U[d,j]} = \sum_t"
        r"\underbrace{\frac{\partial L}{\partial z_t[j]}}_{(p_t[j] - y_t[j])/N}"
        r"\;\underbrace{\frac{\partial z_t[j]}{\partial W_U[d,j]}}_{u_t[d]}"
    )
    i = position
    st.latex(
        rf"\text{{at }} t = {position}:\quad \frac{{({f.p[i]:f} - {f.y[i]})}}{{{N}}}"
        rf"\times ({f.u[i]:f}) = {f.terms[i]:f}"
    )
    st.latex(
        rf"\text{{sum of the {N} terms}} = {f.total:f}, \qquad"
        rf"\text{{autograd}} = {f.autograd:f}"
    )
    st.latex(
        rf"\begin{{aligned}} W_U[{c.d},j] &\leftarrow {f.weight:f} - {f.lr:f} \times "
        rf"({f.autograd:f}) \\ &= {f.weight:f} - ({f.delta:f}) = {f.new:f} \end{{aligned}}"
    )
    st.caption(
        f"Every number is rounded as shown ({gx.SIG} significant digits for u and p, "
        f"{f.places} decimals for the terms), and each result is worked out from the rounded "
        "numbers printed before it, so a calculator gives the same digits; the sum of the rounded "
        "terms can differ from autograd's exact gradient in the last digit."
    )
    if c.tied:
        st.caption(
            "This model ties its embeddings (W_U is W_E transposed), so the same weight also gets "
            "a gradient through the input: autograd's number is the sum of both paths, the sum "
            "above only the unembedding's."
        )
    with st.expander("The numbers behind it"):
        st.dataframe(
            {
                "position t": ctx.labels[:-1],
                "next token": targets_of(),
                "u_t[d]": [f"{x:f}" for x in f.u],
                "p_t[j]": [f"{x:f}" for x in f.p],
                "y_t[j]": f.y,
                "(p − y) u / N": [f"{x:f}" for x in f.terms],
            },
            hide_index=True,
        )
        st.dataframe(
            [{"part": g, "‖gradient‖": round(gn, 6), "‖weights‖": round(wn, 4), "parameters": n}
             for g, gn, wn, n in s.groups],
            hide_index=True,
        )  # fmt: skip


def targets_of() -> list[str]:
    return [vocab_label(i) for i in ctx.ids[1:]]


# ---- part 4: exact, nearest and soft look-up -----------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=1)
def random_widths() -> tuple[np.ndarray, np.ndarray]:
    return lk.random_spread(WIDTHS)


def soft_lookup() -> None:
    st.markdown(
        "A Python dictionary answers `d[query]` only when the query *equals* one of its keys, and "
        "then returns that key's value. Attention is a dictionary whose keys and queries are "
        "vectors, which are never exactly equal, so it relaxes the look-up: first to the key that "
        "matches *best* (largest $q \\cdot k$), then to a blend of every key's value, weighted "
        "by how well it matches. Here is one query of one head answered all three ways."
    )
    c1, c2, c3 = st.columns(3)
    layer = block_choice(c1)
    head = state.slider("Head", "blk_head", 0, cfg.n_head - 1, 0, container=c2)
    query = state.slider(
        "Query token", "lk_query", 0, T - 1, lk.default_query(ctx.ids), container=c3,
        help="The token doing the looking up; the keys are "
        + ("it and every token before it." if cfg.causal else "every token (no causal mask)."),
    )  # fmt: skip
    walk = walk_of(ctx.bundle_id, tuple(ctx.ids), layer)
    found = lk.lookup(walk.q[head], walk.k[head], walk.v[head], ctx.ids, query, cfg)
    qtok = md(ctx.labels[query])
    titles = {
        "exact": f"exact: the {'earlier' if cfg.causal else 'other'} positions holding the same "
        "token (a dict on tokens)",
        "nearest": "nearest: only the key with the largest q · k (argmax)",
        "soft": f"soft: softmax(q · k / √{cfg.d_head}), what the head does",
        "soft, unscaled": "soft without the √d_head: softmax(q · k)",
    }
    st.plotly_chart(
        cache.figure(
            ("lookup", *KEY, layer, head, query),
            lambda: charts.lookup_weights(
                found.weights, [ctx.labels[i] for i in found.keys], titles
            ),
        )
    )
    best = int(np.argmax(found.weights["nearest"]))
    soft = found.outputs["soft"]
    gap = float(np.linalg.norm(soft - found.outputs["nearest"]))
    if found.matches:
        exact = (
            "at " + ", ".join(md(ctx.labels[i]) for i in found.matches) + ": their values, averaged"
        )
    else:
        exact = (
            f"nowhere: no {'earlier' if cfg.causal else 'other'} position holds this token, so a "
            "dictionary would raise `KeyError`"
        )
    st.markdown(
        f"- **Exact**: token {qtok} is found {exact}. On vectors an exact match never happens.\n"
        f"- **Nearest**: the best-matching key is {md(ctx.labels[best])} "
        f"(q · k = {found.dots[best]:.2f}); the answer is its value vector alone.\n"
        f"- **Soft**: every key gets a weight; the largest is "
        f"{found.weights['soft'].max():.2f}. The blended answer is {gap:.2f} away from the nearest "
        f"key's value (whose length is {np.linalg.norm(found.outputs['nearest']):.2f}): "
        "a soft look-up is close to a hard one when one key wins clearly, and a mix when it does not."
    )
    st.caption(
        "The soft weights are this head's attention row for this token, as on the Attention page; "
        "their blend of the values is the head's z for the token."
    )
    why_sqrt_d(walk, head)


def why_sqrt_d(walk: blk.BlockWalk, head: int) -> None:
    st.subheader("Why divide by √d_head?")
    st.markdown(
        "A dot product adds up $d$ products. If the numbers in $q$ and $k$ are random with spread 1, "
        "the sum has spread $\\sqrt{d}$: the wider the head, the larger the scores, and a softmax "
        "of large scores puts almost all its weight on one key (the nearest look-up), with "
        "gradients near zero for the rest. Dividing by $\\sqrt{d}$ brings the spread back to 1 "
        "whatever the width."
    )
    if T < 2:
        st.info("This needs a prompt of at least two tokens, so that a query has a choice of keys.")
        return
    sp = lk.spread(walk.scores[head], cfg.d_head)
    m1, m2, m3, m4 = st.columns(4)
    spread_help = "Standard deviation over every visible (query, key) pair of this head."
    m1.metric("spread of q · k", f"{sp.std_raw:.2f}", help=spread_help)
    m2.metric(f"… / √{cfg.d_head}", f"{sp.std_scaled:.2f}", help=spread_help)
    weight_help = "The largest attention weight of each row, averaged: 1 means a hard choice."
    m3.metric("largest weight", f"{sp.max_weight_scaled:.2f}", help=weight_help)
    m4.metric("… unscaled", f"{sp.max_weight_raw:.2f}", help=weight_help)
    raw, scaled = random_widths()
    left, right = st.columns(2)
    left.plotly_chart(
        cache.figure(
            ("lookup widths", cfg.d_head),
            lambda: charts.spread_by_width(
                WIDTHS, raw, scaled, cfg.d_head, title="Random vectors: spread of the score"
            ),
        )
    )
    layer = walk.layer
    right.plotly_chart(
        cache.figure(
            ("lookup scores", *KEY, layer, head),
            lambda: charts.score_histograms(
                sp.raw, sp.scaled, title=f"This head's scores (block {layer}, head {head})"
            ),
        )
    )


# ---- part 5: contextual embeddings ---------------------------------------------------------------
@st.cache_resource(show_spinner="Reading corpus snippets through the model…", max_entries=2)
def corpus_resid(bundle_id: str) -> tuple:
    """(windows, residual stream at every station (S, N, W, D)): large, shared read-only."""
    b = cache.bundle(bundle_id)
    windows = cx.windows_for(b.model, b.tokenizer, cx.corpus_text(b.meta))
    return windows, cx.resid_by_station(b.model, windows.ids)


@st.cache_data(show_spinner=False, max_entries=64)
def contexts_of(bundle_id: str, token: int) -> cx.Contexts:
    windows, resid = corpus_resid(bundle_id)
    return cx.token_contexts(resid, windows, token)


def contextual_embeddings() -> None:
    st.markdown(
        "The embedding table gives a token one vector, whatever surrounds it: a **static** "
        "embedding. Each block then adds what attention gathered from "
        + ("the tokens before" if cfg.causal else "the other tokens (this model has no mask)")
        + ", so "
        "higher up the same token has a different vector in every context: a **contextual** "
        "embedding. Here one token, wherever it occurs in snippets of the training text, followed "
        "up the residual stream."
    )
    windows, _ = corpus_resid(ctx.bundle_id)
    options = cx.frequent_tokens(windows)
    token = state.selectbox(
        "Token", "ctx_token", options, options[0], format_func=vocab_label,
        help="The corpus's most frequent tokens.",
    )  # fmt: skip
    c = contexts_of(ctx.bundle_id, token)
    n = c.vectors.shape[1]
    if n < 3:
        st.info(
            f"“{md(vocab_label(token))}” occurs too rarely in the snippets; pick another token."
        )
        return
    stations = layer_labels(cfg.n_layer)
    profile = cx.context_profile(c.vectors)
    points, shares = cx.layer_projections(c.vectors)
    groups = [vocab_label(t) if t >= 0 else "other" for t in cx.previous_groups(c.previous)]
    st.plotly_chart(
        cache.figure(
            ("ctx similarity", ctx.bundle_id, token),
            lambda: charts.context_similarity(
                stations,
                profile.to_layer0,
                profile.to_layer0_min,
                profile.between,
                title=f"“{vocab_label(token)}” in {n} contexts: how alike its vectors are, by layer",
            ),  # fmt: skip
        )
    )
    st.markdown(cx.context_claim(profile.between, profile.to_layer0, n).text)
    st.plotly_chart(
        cache.figure(
            ("ctx pca", ctx.bundle_id, token),
            lambda: charts.context_projections(
                points,
                shares,
                stations,
                groups,
                c.snippets,
                title="Each layer's vectors of the token in 2D (each panel its own PCA)",
            ),  # fmt: skip
        )
    )
    st.caption(
        "Colour: the token just before. Hover a dot for its context. Each panel shows the two "
        "directions along which that layer's vectors differ most; the percentage is the share of "
        "their spread those two directions show."
    )
    with st.expander("The contexts"):
        st.dataframe(
            {
                "context (ending at the token)": [s.replace("\n", "↵") for s in c.snippets],
                "cosine to its layer-0 vector, last layer": cx.cosines_to_layer0(c.vectors)[
                    -1
                ].round(3),
            },
            hide_index=True,
        )


# ---- part 6: linear probes -----------------------------------------------------------------------
PROPERTY_WORDS = {
    "vowel": "the token's first letter is a vowel: the token alone tells it",
    "line start": "the token is a line break or the first of a line: the break alone tells its "
    "part, the first token of a line needs a look at the token before",
    "speaker name": "the token is inside a speaker's name (“Ham.”, “LADY MACBETH.”): it takes context",
    "second copy": "the token is in the copied half of its line: it takes counting or matching",
    "deep bracket": "the token leaves two or more brackets open: it takes counting",
}


@st.cache_data(show_spinner="Training a probe at every layer…", max_entries=8)
def probes_of(bundle_id: str) -> dict[str, pr.ProbeResult]:
    windows, resid = corpus_resid(bundle_id)
    data = cache.bundle(bundle_id).meta.get("data") or {}
    labels = pr.properties(windows.texts, data.get("task") or "shakespeare")
    return {name: pr.probe_by_station(resid, y) for name, y in labels.items()}


def linear_probes() -> None:
    st.markdown(
        "Is a fact about the token *written in* its vector, where a straight line could read it? "
        "A **linear probe** is a logistic regression trained to answer a yes/no question from the "
        "residual vector alone, at one layer; if it answers text it never saw better than always "
        "giving the commoner answer (the **majority baseline**), by more than chance could "
        "explain, the layer holds that fact in a readable form."
    )
    st.latex(r"p(\text{yes} \mid x) = \sigma(w \cdot x + b)")
    results = probes_of(ctx.bundle_id)
    windows, _ = corpus_resid(ctx.bundle_id)
    stations = layer_labels(cfg.n_layer)
    shown = {
        n: (r.test_accuracy, r.train_accuracy, r.baseline, pr.noise_margin(r))
        for n, r in results.items()
    }
    st.plotly_chart(
        cache.figure(
            ("probes", ctx.bundle_id),
            lambda: charts.probe_accuracy(stations, shown, title="Probe accuracy by layer"),
        )
    )
    some = next(iter(results.values()))
    st.markdown(
        "\n".join(f"- **{n}**: {PROPERTY_WORDS.get(n, '')}." for n in results)
        + f"\n\nTrained on {some.n_train:,} tokens of {len(windows.ids)} snippets of the training "
        f"text (two of every three), scored on the {some.n_test:,} tokens of the third. All "
        "panels share one scale. A layer counts as holding a property only when its held-out "
        "accuracy beats the majority baseline by more than the held-out noise (the shaded band: "
        f"{pr.NOISE_SE} binomial standard errors; tokens of one snippet are related, so the "
        "margin is wide)."
    )
    st.markdown("\n".join(f"- {pr.probe_claim(n, stations, r).text}" for n, r in results.items()))
    with st.expander("The numbers behind it"):
        st.dataframe(
            [
                {"property": n, "station": s, "held-out accuracy": round(float(r.test_accuracy[i]), 4),
                 "training accuracy": round(float(r.train_accuracy[i]), 4),
                 "majority baseline": round(r.baseline, 4),
                 "noise margin": round(pr.noise_margin(r), 4),
                 "share of yes": round(r.share_yes, 4)}
                for n, r in results.items()
                for i, s in enumerate(stations)
            ],
            hide_index=True,
        )  # fmt: skip


if part == "walk":
    one_block()
elif part == "matrices":
    matrices_and_circuits()
elif part == "lookup":
    soft_lookup()
elif part == "context":
    contextual_embeddings()
elif part == "probes":
    linear_probes()
else:
    one_gradient_step()
