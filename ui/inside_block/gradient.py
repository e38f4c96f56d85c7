"""Inside a block, part 6: one step of plain gradient descent on the prompt (on a private copy
of the model), the loss along the gradient against its first-order estimate, and the chain rule
for one weight of the unembedding, worked out in numbers."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present, state
from ui.charts.block import gradient as charts
from ui.frame import PageContext
from ui.inside_block.common import vocab_label
from viz_model.analysis.claims import md_escape as md
from viz_model.analysis.labs import gradient as gx


@cache.per_prompt
def scan_of(bundle_id: str, ids: tuple[int, ...]) -> gx.LossAlongGradient:
    return gx.loss_along_gradient(cache.bundle(bundle_id).model, list(ids))


@cache.per_prompt
def step_of(bundle_id: str, ids: tuple[int, ...], lr: float, position: int) -> gx.GradientStep:
    return gx.gradient_step(cache.bundle(bundle_id).model, list(ids), lr, position)


def draw(ctx: PageContext) -> None:
    T = len(ctx.ids)
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
    lr = eta_choice(scan, c1)
    position = state.slider(
        "Token for the chain rule",
        "gd_pos",
        0,
        T - 2,
        T - 2,
        container=c2,
        help="Whose next token the chain-rule example below follows.",
    )
    s = step_of(ctx.bundle_id, tuple(ctx.ids), lr, position)
    step_numbers(s, lr, T)
    step_pictures(ctx, scan, s, lr)
    chain_rule(ctx, s, position, lr)


def eta_choice(scan: gx.LossAlongGradient, container) -> float:
    """The learning rate, on a slider of this model's round values around the default."""
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
        "Learning rate η",
        "gd_eta",
        offsets,
        0,
        container=container,
        format_func=lambda k: f"{scan.etas[scan.default + k]:g}",
        help=f"How far to move each weight along its gradient. The slider's values are chosen "
        f"from this model's gradient on this prompt (‖g‖² = {scan.grad_sq:.4g}); it opens on "
        f"{opens}.",
    )
    return float(scan.etas[scan.default + offset])


def step_numbers(s: gx.GradientStep, lr: float, T: int) -> None:
    """The loss before and after, the first-order estimate, and the claim they support."""
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(
        "loss before", f"{s.loss_before:.4f}", help="Mean −ln p of the N = T − 1 next tokens."
    )
    m2.metric(
        "loss after one step",
        f"{s.loss_after:.4f}",
        f"{s.loss_after - s.loss_before:+.4f}",
        delta_color="inverse",
    )
    m3.metric(
        "first-order estimate",
        f"{-lr * s.grad_sq:+.4f}",
        help=f"−η‖g‖² = −{lr:g} × {s.grad_sq:.4g}: the change a straight line along the slope "
        "predicts.",
    )
    m4.metric("next tokens made likelier", f"{int((s.p_after > s.p_before).sum())} of {T - 1}")
    st.markdown(gx.step_claim(s.loss_before, s.loss_after, lr, s.grad_sq).text)


def step_pictures(
    ctx: PageContext, scan: gx.LossAlongGradient, s: gx.GradientStep, lr: float
) -> None:
    """The loss along the gradient, each next token's probability, the gradient by part."""
    present.plot(
        cache.figure(
            charts.loss_along_gradient,
            scan.etas,
            scan.losses,
            scan.loss,
            scan.grad_sq,
            lr,
            title="The loss after one step, for each η on the slider",
        )
    )
    st.caption(
        "Solid: the loss measured after one step of each η. Dashed: the first-order estimate "
        "L − η‖g‖², a straight line in η (curved here only by the log axis). For a short enough "
        "step the two agree; where they part, the loss is curving along the gradient: where it "
        "curves up, a step falls short of the line, and a step far past the lowest point ends "
        f"higher than it started (it overshoots). {gx.overshoot_claim(scan).text}"
    )
    targets = ctx.labels[1:]
    present.plot(
        cache.figure(
            charts.probability_change,
            targets,
            s.p_before,
            s.p_after,
            title="The probability of each actual next token, before and after the step",
        )
    )
    st.caption(
        "Each column is a position's next token (the label is that token). The step is fitted to "
        "this one prompt: training takes such steps on batch after batch of text, and what helps "
        "one prompt need not help another."
    )
    title = "How large the gradient is, by part"
    present.plot(cache.figure(charts.gradient_norms, s.groups, title=title))


def chain_rule(ctx: PageContext, s: gx.GradientStep, position: int, lr: float) -> None:
    c = s.chain
    f = gx.chain_figures(c, lr)
    N = len(ctx.ids) - 1
    t_label, j_label = md(ctx.labels[position]), md(vocab_label(ctx, c.j))
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
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.dataframe(
                {
                    "position t": ctx.labels[:-1],
                    "next token": [vocab_label(ctx, i) for i in ctx.ids[1:]],
                    "u_t[d]": [f"{x:f}" for x in f.u],
                    "p_t[j]": [f"{x:f}" for x in f.p],
                    "y_t[j]": f.y,
                    "(p − y) u / N": [f"{x:f}" for x in f.terms],
                },
                hide_index=True,
            )
            st.dataframe(
                [
                    {
                        "part": g,
                        "‖gradient‖": round(gn, 6),
                        "‖weights‖": round(wn, 4),
                        "parameters": n,
                    }
                    for g, gn, wn, n in s.groups
                ],
                hide_index=True,
            )
