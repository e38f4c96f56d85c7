"""The Architecture contrasts page's sweep contrasts: runs too slow to bundle as weights, read
from their results files (analysis/labs/sweeps.py): the idea, the curves, the claims the numbers
allow, a table of the numbers and the commands that reproduce them.

    contrast_sweeps.show("depth")     # one of analysis.labs.sweeps.SWEEPS

Not here: the bundled pairs (pages/15_architecture_contrasts.py), the claims themselves
(analysis/labs/sweeps.py), the figures (charts/sweeps.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui import cache, parts, present
from ui.charts import sweeps as charts
from ui.charts.sweeps import Line
from viz_model.analysis.grad_health import layer_label
from viz_model.analysis.labs import sweeps as sw
from viz_model.analysis.labs.scaling import count_params
from viz_model.model.config import GPTConfig

UNIT = "Losses in nats per character."


def _steps(sweep: sw.Sweep) -> str:
    """ "300 steps each": the length the runs were set to (a run may have stopped sooner)."""
    n = max(int(r.train.get("max_steps", r.steps)) for r in sweep.runs)
    return f"{n:,} steps each"


def _recipe(r: sw.Run) -> str:
    """An optimiser's settings in words: "peak lr 0.1, momentum 0.9"."""
    text = f"peak lr {sw.lr(r):g}"
    if sw.optimizer(r) == "sgd" and "momentum" in r.train:
        text += f", momentum {float(r.train['momentum']):g}"
    return text


def _end(r: sw.Run) -> str | None:
    """What an early stop says on the chart: the loop's own words."""
    return f"stopped at step {r.steps:,}: {r.stopped}" if r.stopped else None


def _line(r: sw.Run, colour: str, dash: str = "solid", name: str | None = None) -> Line:
    return Line(name or r.name, r.curve.step, r.curve.loss, colour, dash, _end(r))


def depth(sweep: sw.Sweep) -> None:
    st.markdown(
        "A block reads the residual stream and **adds** what it computes back to it. Without "
        "the residual connection it **replaces** the stream instead, and the gradient reaching "
        "the first block is a product of every later block's derivative; with it, each factor "
        "is the identity plus that derivative, so there is always a path on which the gradient "
        "passes through unchanged (He et al. 2016). Below, "
        f"{' against '.join(str(n) for n in sorted({sw.n_layer(r) for r in sweep.runs}))} "
        f"layers, each with and without residual connections, {_steps(sweep)}, the rest as "
        "shakespeare-tiny."
    )
    st.latex(
        r"x_{l+1} = x_l + f_l(x_l)\ \text{(residual)} \qquad x_{l+1} = f_l(x_l)\ \text{(none)}"
    )
    deepest = max(sw.n_layer(r) for r in sweep.runs)
    lines = [
        _line(
            r,
            charts.USUAL if sw.residual(r) else charts.OTHER,
            "solid" if sw.n_layer(r) == deepest else "dot",
        )
        for r in sweep.runs
    ]
    fig = cache.figure(charts.curves, lines, "Training loss (mean of every 10 steps)")
    present.plot(fig, key="ctr_sweep_depth")
    st.markdown(sw.depth_claim(sweep).text)
    st.markdown("\n".join(f"- {sw.baseline_claim(r).text}" for r in sweep.runs))
    deep = [r for r in sweep.runs if sw.n_layer(r) == deepest and r.grad_layers]
    named = [
        (
            r.name,
            tuple(layer_label(n) for n in r.grad_layers),
            r.grad_median,
            charts.USUAL if sw.residual(r) else charts.OTHER,
        )
        for r in deep
    ]
    if named:
        fig = cache.figure(
            charts.layer_gradients,
            named,
            f"Gradient norm of each layer of the {deepest}-layer models (median over the run)",
        )
        present.plot(fig, key="ctr_sweep_grads")
        st.markdown("\n".join(f"- {sw.depth_gradient_claim(r).text}" for r in deep))
        st.caption(
            "Each layer's gradient norm before clipping, recorded every 10 steps; the median of "
            "those records. Blocks have the same shape, so their norms compare like for like; "
            "the embeddings and the output layer do not."
        )


def layernorm_lr(sweep: sw.Sweep) -> None:
    st.markdown(
        "**LayerNorm** gives every vector a block reads the same scale: subtract its mean, divide "
        "by its standard deviation, then a learned gain and bias. Without it, nothing stops a "
        "large step from making the activations, and with them the next gradients, larger "
        "still. Below, the same 2-layer model with LayerNorm and with no normalization at all, "
        f"each at {len({sw.lr(r) for r in sweep.runs})} peak learning rates without warm-up, "
        f"{_steps(sweep)} (the gradient is still clipped at 1, shakespeare-tiny's recipe)."
    )
    st.latex(r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")
    untrained = float(np.median([r.initial_loss for r in sweep.runs]))
    series = []
    for kind, name, colour in (
        ("layernorm", "LayerNorm", charts.USUAL),
        ("none", "no normalization", charts.OTHER),
    ):
        runs = sorted((r for r in sweep.runs if sw.norm_kind(r) == kind), key=sw.lr)
        series.append(
            charts.RateSeries(
                name,
                np.array([sw.lr(r) for r in runs]),
                np.array([r.final_val if r.final_val is not None else np.inf for r in runs]),
                tuple(sw.outcome(r) == "diverged" for r in runs),
                colour,
            )
        )
    fig = cache.figure(
        charts.by_rate, series, untrained, "Validation loss at the end, by learning rate"
    )
    present.plot(fig, key="ctr_sweep_rates")
    st.markdown(sw.lr_claim(sweep).text)
    st.markdown(sw.lr_trained_claim(sweep).text)
    rates = sorted({sw.lr(r) for r in sweep.runs})
    named = []
    for kind, heading in (("layernorm", "LayerNorm"), ("none", "no normalization")):
        lines = []
        for r in sorted((r for r in sweep.runs if sw.norm_kind(r) == kind), key=sw.lr):
            shade = charts.LR_SCALE[min(rates.index(sw.lr(r)), len(charts.LR_SCALE) - 1)]
            lines.append(_line(r, shade, name=f"lr {sw.lr(r):g}"))
        named.append((heading, lines))
    fig = cache.figure(
        charts.panels,
        named,
        "Training loss at each learning rate (mean of every 10 steps)",
        (untrained, "untrained"),
    )
    present.plot(fig, key="ctr_sweep_lr_curves")


def dropout(sweep: sw.Sweep) -> None:
    st.markdown(
        "**Dropout** zeroes each activation at random with probability *p* while training and "
        "scales the rest by 1/(1−*p*), so the model cannot lean on any one of them; when it is "
        "evaluated, nothing is dropped. On a text small enough to memorise, the loss on the "
        "training text keeps falling while the loss on held-out text stops following it: the "
        f"gap is what was memorised. Below, {sweep.text} (90% to train on, 10% held out), "
        f"dropout {' against '.join(f'{p:g}' for p in sorted({sw.dropout(r) for r in sweep.runs}))}, "
        f"{_steps(sweep)}, the rest as shakespeare-tiny."
    )
    lines = []
    gap_lines = []
    for r in sweep.runs:
        if r.eval_train is None or r.eval_val is None:
            continue
        colour = charts.USUAL if sw.dropout(r) > 0 else charts.OTHER
        lines += [
            Line(f"{r.name}: training text", r.eval_train.step, r.eval_train.loss, colour, "dot"),
            Line(f"{r.name}: held-out text", r.eval_val.step, r.eval_val.loss, colour),
        ]
        gap = r.eval_val.loss - r.eval_train.loss
        gap_lines.append(Line(r.name, r.eval_val.step, gap, colour, markers=True))
    fig = cache.figure(charts.curves, lines, "Loss on the training text and on held-out text")
    present.plot(fig, key="ctr_sweep_dropout")
    st.markdown(sw.gap_claim(sweep).text)
    st.markdown("\n".join(f"- {sw.overfit_claim(r).text}" for r in sweep.runs))
    fig = cache.figure(charts.gaps, gap_lines, "The gap: held-out loss minus training loss")
    present.plot(fig, key="ctr_sweep_gap")
    st.caption(
        "Both splits measured here from the weights kept at every evaluation, without dropout "
        "(the training loss the loop prints is measured with it, which would flatter the "
        "dropout model), on the same windows for both models."
    )


def optimizers(sweep: sw.Sweep) -> None:
    st.markdown(
        "**SGD with momentum** moves each weight by the learning rate times a running sum of its "
        "gradients. **AdamW** divides each weight's running mean gradient by the root of its "
        "running mean square, so every weight moves by about the learning rate whatever its "
        "gradient's scale (and shrinks the weights a little: weight decay). A **warm-up** "
        "raises the learning rate from 0 over the first steps, while Adam's running means are "
        "still estimates of a few gradients. Below, the same model trained "
        f"{len(sweep.runs)} ways, {_steps(sweep)}: "
        + "; ".join(f"{r.name} ({_recipe(r)})" for r in sweep.runs)
        + "."
    )
    st.latex(  # two lines: one overflows the ~560 px main column of a 1024 px projector
        r"\begin{gathered}\text{SGD: } v \leftarrow \mu v + g,\quad w \leftarrow w - \eta v"
        r"\\ \text{AdamW: } w \leftarrow w - \eta\Big(\frac{\hat m}{\sqrt{\hat v} + \epsilon}"
        r" + \lambda w\Big)\end{gathered}"
    )
    lines = [
        _line(
            r,
            charts.USUAL if sw.optimizer(r) == "adamw" else charts.OTHER,
            "solid" if sw.warmup(r) > 0 else "dash",
        )
        for r in sweep.runs
    ]
    fig = cache.figure(charts.curves, lines, "Training loss (mean of every 10 steps)")
    present.plot(fig, key="ctr_sweep_optimizers")
    claims = [sw.optimizer_claim(sweep)] + [
        sw.warmup_claim(sweep, opt) for opt in dict.fromkeys(sw.optimizer(r) for r in sweep.runs)
    ]
    st.markdown("\n".join(f"- {c.text}" for c in claims))


SECTIONS = {
    "depth": depth,
    "layernorm-lr": layernorm_lr,
    "dropout": dropout,
    "optimizers": optimizers,
}


def show(key: str) -> None:
    """The sweep `key`'s section of the page; a missing or damaged file is said, not raised."""
    st.subheader(sw.SWEEPS[key].title)
    try:
        sweep = sw.load_sweep(key)
    except ValueError as exc:
        st.error(f"{exc}. Rebuild it with `python scripts/contrast_sweeps.py --only {key}`.")
        return
    st.caption(
        "Trained ahead by one command, too slow to bundle as weights: its results (curves and "
        "numbers) are read from a file, so the sidebar's prompt plays no part here."
    )
    SECTIONS[key](sweep)
    table(sweep)
    reproduce(sweep)


def _unigram(sweep: sw.Sweep) -> str:
    values = {r.baselines.get("unigram") for r in sweep.runs} - {None}
    return ", ".join(f"{v:.2f}" for v in sorted(values)) or "–"


def _params(r: sw.Run) -> str:
    try:
        return f"{count_params(GPTConfig.from_dict(r.model))[0]:,}"
    except (TypeError, ValueError):
        return "–"


def _loss(x: float | None) -> str:
    return "–" if x is None else sw.big(x) if x >= 100 else f"{x:.3f}"


def rows(sweep: sw.Sweep) -> dict[str, dict[str, str]]:
    """{run: {column: value}}: the numbers behind the section, one row per run."""
    out = {}
    for r in sweep.runs:
        row = {}  # the numbers that carry the lesson first: a wide table scrolls to the rest
        if (gap := sw.final_gap(r)) is not None:
            row["gap"] = f"{gap[2]:.3f}"  # held-out minus training text, the same weights
            row["training text, no dropout"] = _loss(gap[0])
        row |= {
            "validation (end)": _loss(r.final_val),
            "training (last tenth)": _loss(r.final_train),
            "outcome": sw.outcome(r),
            "highest training": _loss(r.peak_train),
            "untrained (step 1)": _loss(r.initial_loss),
            "steps": f"{r.steps:,}",
            "parameters": _params(r),
        }
        row["stopped early"] = r.stopped or "no"
        row["seconds"] = f"{r.seconds:,.0f}"
        out[r.name] = row
    return out


def table(sweep: sw.Sweep) -> None:
    st.markdown("**The numbers**")
    st.dataframe(pd.DataFrame(rows(sweep)).T, width="stretch")
    st.caption(
        f"{UNIT} Untrained: the training loss at step 1. Training (last tenth): the mean over "
        "the last tenth of the steps, measured while training. Outcome: **diverged** when the "
        "run stopped on a NaN or its training loss (last tenth) ended no lower than its "
        f"untrained loss; **trained** when its validation loss ended more than {sw.MARGIN} "
        f"nats below the unigram baseline's ({_unigram(sweep)}: each character predicted by "
        "its frequency alone); **stalled** in between. Seconds: each run's wall time on one "
        "thread of a shared machine."
        + (
            " Training text, no dropout: the training split's loss at the last step, measured "
            "here without dropout; gap: the held-out loss minus it, from the same weights."
            if any(sw.final_gap(r) is not None for r in sweep.runs)
            else ""
        )
    )


def reproduce(sweep: sw.Sweep) -> None:
    with parts.followed_expander("How to reproduce these runs", "reproduce"):
        st.markdown(
            f"One command trains the whole sweep, one run after another, and writes the file "
            f"this section reads (assets/contrasts/{sweep.key}.json); it took "
            f"{sweep.seconds / 60:,.1f} minutes when these were made, on one thread of a shared "
            "2-core machine:"
        )
        st.code(sweep.script, language="bash")
        if any("--text-file" in r.command for r in sweep.runs):
            st.markdown(f"The script writes the text file first: {sweep.text}.")
        st.markdown("Each run alone:")
        for r in sweep.runs:
            st.code(r.command, language="bash", wrap_lines=True)
