"""The Quantization page's sections, one function each, drawn in order by pages/21_quantization.py:
the idea, the grid's formula and outliers (`intro`), every precision measured on validation text
(`measured_precisions`, cached; stops when the text is too short), bytes against bits per
character with the claims (`bytes_against_bits`), one matrix on its grid (`one_matrix`), the
error through the layers on the prompt (`through_the_layers`), and links that open another page
on a quantised copy (`open_a_copy`).

Not here: the quantisation (viz_model/model/quantize.py), the measures and claims
(viz_model/analysis/labs/quantization.py), the sidebar's Precision select (ui/precision.py), the
chart builders (ui/charts/quantization.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from serving import models
from ui import cache, nav, present, state
from ui.charts import quantization as charts
from ui.frame import PageContext
from ui.precision import KEY as QUANT_KEY
from viz_model.analysis import next_token as nt
from viz_model.analysis.labs import quantization as qa
from viz_model.model.quantize import (
    INT_BITS,
    OUTLIER_FRACTION,
    all_specs,
    matrices,
    parse_spec,
    quantized_copy,
)

GRID_LABELS = {
    "tensor": "one scale for the matrix",
    "tensor-outliers": "one scale, outliers aside",
    "row": "one row's own scale",
}
LINKED_PAGES = ("Attention", "Residual_stream", "Next_token")  # opened on a quantised copy


@dataclass(frozen=True)
class Measurement:
    """Every precision of the model measured on its validation text."""

    base_id: str  # the float32 weights (at the sidebar's training step)
    result: qa.Measured
    text_note: str  # what validation text the windows are from


# ---- cached measures ------------------------------------------------------------------------------


@cache.per_model
def validation(final_id: str) -> tuple:
    """The validation tokens of the model's text (encoded once per model), and what text."""
    b = cache.bundle(final_id)
    return qa.validation_ids(b.meta, b.tokenizer)


@cache.per_model(spinner="Measuring every precision on validation text…")
def measured(bundle_id: str) -> tuple[qa.Measured, str]:
    """Every precision of the model on WINDOWS validation windows, and what text they are."""
    b = cache.bundle(bundle_id)
    val, note = validation(models.split_step(bundle_id)[0])
    return qa.measure(b.model, val, b.tokenizer, qa.specs_for(b.model.n_params())), note


@cache.per_model
def widest_matrix(bundle_id: str) -> str:
    return qa.widest(matrices(cache.bundle(bundle_id).model))


@cache.per_model
def view(bundle_id: str, name: str, bits: int, grid: str, row: int) -> qa.MatrixView:
    return qa.matrix_view(matrices(cache.bundle(bundle_id).model)[name], bits, grid, row)


@cache.per_model
def errors(bundle_id: str, name: str, bits: int) -> dict:
    return qa.row_errors(matrices(cache.bundle(bundle_id).model)[name], bits)


@cache.per_model(keep=4)
def copies_of(bundle_id: str, names: tuple[str, ...]) -> dict:
    """The quantised copies this section compares, kept apart from the sidebar's bundle cache
    (five copies for every model a teacher opens here would push models out of it)."""
    model = cache.bundle(bundle_id).model
    return {name: quantized_copy(model, parse_spec(name)) for name in names}


@cache.per_prompt
def layer_drift(bundle_id: str, ids: tuple[int, ...], names: tuple[str, ...]) -> dict:
    """Each copy's residual stream against the unquantised one at each station (analysis)."""
    model = cache.bundle(bundle_id).model
    copies = copies_of(bundle_id, names)
    return {name: qa.drift(model, copies[name], list(ids)) for name in names}


# ---- the sections ---------------------------------------------------------------------------------


def intro() -> None:
    """Bytes a weight, the grid's formula, per-row and per-matrix scales, outliers kept aside."""
    st.markdown(
        "A trained weight is a float32: **4 bytes**. Quantisation stores each weight matrix as "
        "small integers instead, plus a **scale** that turns them back into numbers: int8 keeps "
        "one byte a weight, int4 half a byte. Each weight is rounded to the nearest step of a "
        "grid, so it moves by at most half a step; the question is what those small errors, added "
        "up over every layer, do to the predictions."
    )
    st.latex(
        r"s = \frac{\max_j |w_{j}|}{2^{b-1}-1} \qquad q = \operatorname{round}\!\left(\frac{w}{s}"
        r"\right) \qquad \hat w = q\,s \qquad |w - \hat w| \le \frac{s}{2}"
    )
    st.markdown(
        "With **one scale per row** (per output channel) each row gets a grid sized to its own "
        "largest weight; with **one scale per matrix** a single grid serves every row. A few "
        "**outlier** weights, much larger than the rest, stretch a shared grid so that most "
        "weights fall into its middle steps, many of them onto zero. Keeping the largest "
        f"{100 * OUTLIER_FRACTION:g}% of each matrix aside in float16 (with their positions, as "
        "SpQR and SqueezeLLM do) lets the grid fit the rest. Only the matrices are quantised: "
        "LayerNorm gains and biases stay in float32 (and are counted at 4 bytes). The sidebar's "
        "**Precision** opens every other page on a quantised copy; this page always starts from "
        "the weights as trained (at the sidebar's training step)."
    )


def measured_precisions(ctx: PageContext) -> Measurement:
    """Every precision measured on validation text (cached per model); the run stops with a
    warning when the text is shorter than one window."""
    base_id = models.split_precision(ctx.bundle_id)[0]  # the float32 weights (at the step)
    try:
        result, text_note = measured(base_id)
    except ValueError as exc:  # a validation text shorter than one window
        st.warning(f"This model's validation text is too short to measure on: {exc}.")
        st.stop()
    return Measurement(base_id, result, text_note)


def bytes_against_bits(ctx: PageContext, measurement: Measurement) -> None:
    """The chart and table of every precision, the claims about them, and how they were
    measured."""
    st.subheader("Bytes against bits per character")
    result = measurement.result
    fig = cache.figure(
        charts.size_figure,
        tuple(r.name for r in result.rows),
        tuple(r.spec.scheme for r in result.rows),
        tuple(r.nbytes for r in result.rows),
        tuple(r.bits_per_char for r in result.rows),
        f"“{ctx.name}” stored {len(result.rows)} ways",
    )
    present.plot(fig, key="quant_size")
    rows = _table_rows(result)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=35 * len(rows) + 38)
    st.markdown("\n".join("- " + claim.text for claim in _claims(result)))
    if (copying := nt.loss_lookahead_claim(ctx.config.causal)).made:
        st.warning(
            f"{copying.text} The bits per character here say how much each precision changes "
            "that copying, not how well the model predicts text."
        )
    st.caption(
        f"Measured on {result.n_windows} windows of {result.length} tokens from "
        f"{measurement.text_note}: {result.n_positions:,} predictions a precision. ×: how many "
        "times fewer bytes than float32. Bits/char: the loss in bits over the characters "
        "predicted; Δ: its change from float32. Top-1: the share of positions where the most "
        "likely next token is float32's. KL: how far, on average, each next-token distribution "
        "moved from float32's, in bits per token. A difference in bits per character is said "
        "only beyond twice its standard error over the windows (the same windows for every "
        f"precision) and beyond {qa.MIN_DIFF:g}."
    )


def _table_rows(result: qa.Measured) -> list[dict[str, str]]:
    """One row a precision: its bytes, bits per character and agreement with float32."""
    ref = result.reference
    return [
        {
            "precision": r.spec.short,
            "bytes": f"{r.nbytes:,}",
            "×": f"{ref.nbytes / r.nbytes:.1f}",
            "bits/char": f"{r.bits_per_char:.3f}",
            "Δ": f"{r.bits_per_char - ref.bits_per_char:+.4f}",
            "top-1": f"{100 * r.agree:.1f}%",
            "KL": f"{r.kl_bits:.4f}",
        }
        for r in result.rows
    ]


def _claims(result: qa.Measured) -> list:
    """The findings printed under the table, in the order a student reads them."""
    return [
        qa.size_claim(result, "int8"),
        qa.cost_claim(result, "float16"),
        qa.cost_claim(result, "int8"),
        qa.cost_claim(result, "int4"),
        qa.compare_claim(result, "int4-tensor", "int4", "one scale per row"),
        qa.compare_claim(result, "int4", "int4-outliers", "keeping outliers aside"),
        qa.compare_claim(result, "int4-tensor", "int4-tensor-outliers", "keeping outliers aside"),
        qa.cost_claim(result, "int2"),
        qa.smallest_claim(result),
    ]


def one_matrix(measurement: Measurement) -> None:
    """A matrix, its bits and grid picked: its weights against the grid's values, the share that
    rounds to zero, and each row's rounding error."""
    st.subheader("One matrix on its grid")
    st.markdown(
        "The matrix shown first is the one whose largest weight stands furthest out from the "
        "rest. Each dotted line is a value the grid can store; every weight is rounded to the "
        "nearest one."
    )
    base_id = measurement.base_id
    weights = matrices(cache.bundle(base_id).model)
    c1, c2, c3 = st.columns([2, 1, 2])
    with c1:
        name = state.selectbox("Matrix", "q_matrix", list(weights), widest_matrix(base_id))
    with c2:
        bits = state.selectbox("Bits", "q_bits", list(INT_BITS), 4, format_func=lambda b: f"int{b}")
    with c3:
        grid = state.selectbox(
            "Grid", "q_grid", list(qa.GRIDS), "tensor", format_func=GRID_LABELS.get
        )
    row = 0
    if grid == "row":
        row = state.slider("Row", "q_row", 0, weights[name].shape[0] - 1, 0)
    _grid_histogram(view(base_id, name, bits, grid, row), name, bits, grid, row)
    fig = cache.figure(
        charts.row_error_figure,
        errors(base_id, name, bits),
        f"Rounding error of each row of {name} at int{bits}",
    )
    present.plot(fig, key="quant_rows")
    st.caption(
        "Root-mean-square difference between each row's weights and their stored values. One "
        "scale for the matrix gives every row the step the matrix's largest weight sets; one "
        "scale per row gives a row with small weights a fine grid."
    )


def _grid_histogram(mv: qa.MatrixView, name: str, bits: int, grid: str, row: int) -> None:
    """The weights drawn against the grid's values, and the sentence about its step and zeros."""
    what = f"row {row} of {name}" if grid == "row" else name
    fig = cache.figure(
        charts.grid_histogram,
        mv.weights,
        mv.levels,
        mv.kept_aside,
        f"{what}: {mv.weights.size:,} weights, {len(mv.levels)} values at int{bits}",
    )
    present.plot(fig, key="quant_grid")
    step = mv.levels[1] - mv.levels[0]
    aside = mv.kept_aside.size
    st.markdown(
        f"Here the grid's step is {step:.2e}; the largest weight drawn is {mv.spread:.1f} times "
        f"their standard deviation. **{100 * mv.zero_share:.0f}%** of "
        + ("the weights it stores" if aside else "the weights")
        + f" round to the middle value, zero, at {mv.spec.label}"
        + (f", with {aside} kept aside in float16 (red)." if aside else ".")
    )


def through_the_layers(ctx: PageContext, measurement: Measurement) -> None:
    """How far the quantised copies' residual stream is from float32's after each block, on the
    prompt."""
    st.subheader("How the error adds up through the layers")
    if not ctx.ids:
        st.info("Type a prompt in the sidebar to see the error through the layers on it.")
        return
    short_of = {spec.name: spec.short for spec in all_specs()}
    names = qa.drift_copies(ctx.model.n_params())
    drifts = layer_drift(measurement.base_id, tuple(ctx.ids), names)
    labels = ["embeddings"] + [f"after block {i}" for i in range(ctx.config.n_layer)]
    fig = cache.figure(
        charts.drift_figure,
        {short_of[name]: values for name, values in drifts.items()},
        tuple(labels),
        "The quantised copies' residual stream against float32's",
    )
    present.plot(fig, key="quant_drift")
    st.markdown(
        "Each point: the mean over the prompt's tokens of ‖x_copy − x‖ / ‖x‖, how far the copy's "
        "vector is from float32's as a share of its length.\n\n- "
        + "\n- ".join(
            qa.drift_claim(short_of[name], drifts[name]).text for name in ("int8", "int4")
        )
    )


def open_a_copy() -> None:
    """A precision and three buttons that open Attention, Residual stream or Next token on it."""
    st.subheader("Open any page on a quantised copy")
    st.markdown(
        "The sidebar's **Precision** swaps the model of every page for a copy whose weights are "
        "the stored values: see which heads still attend where, and where the logit lens changes."
    )
    chosen = state.selectbox(
        "Precision to open",
        "q_open",
        [s.name for s in all_specs()],
        "int4",
        format_func=lambda n: next(s.label for s in all_specs() if s.name == n),
    )
    # one button under another: side by side, a label is cut in a 1024 px column
    for target in map(nav.find, LINKED_PAGES):
        if st.button(
            f"{target.label} on the {chosen} copy", icon=target.icon, key=f"q_go_{target.url_path}"
        ):
            state.set_value(QUANT_KEY, chosen)
            st.switch_page(target.file, query_params={QUANT_KEY: chosen})
