"""Quantization: the model's weights stored in float16, int8, int4 (one scale per row or per matrix,
with and without outliers kept aside), their bytes, bits per character on validation text, how
often the top token still agrees with float32, one matrix against its grid, and links that open
any page on a quantised copy."""

import pandas as pd
import streamlit as st

import ui
from serving import models
from ui import cache, nav, present, state
from ui.charts import quantization as charts
from ui.precision import KEY as QUANT_KEY
from viz_model.analysis import next_token as nt
from viz_model.analysis import quantization as qa
from viz_model.model.quantize import (
    INT_BITS,
    OUTLIER_FRACTION,
    all_specs,
    matrices,
    parse_spec,
    quantized_copy,
)

ctx = ui.context()
base_id = models.split_precision(ctx.bundle_id)[0]  # the float32 weights (at the sidebar's step)

st.markdown(
    "A trained weight is a float32: **4 bytes**. Quantisation stores each weight matrix as small "
    "integers instead, plus a **scale** that turns them back into numbers: int8 keeps one byte a "
    "weight, int4 half a byte. Each weight is rounded to the nearest step of a grid, so it moves "
    "by at most half a step; the question is what those small errors, added up over every layer, "
    "do to the predictions."
)
st.latex(
    r"s = \frac{\max_j |w_{j}|}{2^{b-1}-1} \qquad q = \operatorname{round}\!\left(\frac{w}{s}"
    r"\right) \qquad \hat w = q\,s \qquad |w - \hat w| \le \frac{s}{2}"
)
st.markdown(
    "With **one scale per row** (per output channel) each row gets a grid sized to its own "
    "largest weight; with **one scale per matrix** a single grid serves every row. A few "
    "**outlier** weights, much larger than the rest, stretch a shared grid so that most weights "
    "fall into its middle steps, many of them onto zero. Keeping the largest "
    f"{100 * OUTLIER_FRACTION:g}% of each matrix aside in float16 (with their positions, as SpQR "
    "and SqueezeLLM do) lets the grid fit the rest. Only the matrices are quantised: LayerNorm "
    "gains and biases stay in float32 (and are counted at 4 bytes). The sidebar's **Precision** "
    "opens every other page on a quantised copy; this page always starts from the weights as "
    "trained (at the sidebar's training step)."
)


@cache.per_model(spinner="Measuring every precision on validation text…")
def measured(bundle_id: str) -> tuple[qa.Measured, str]:
    """Every precision of the model on WINDOWS validation windows, and what text they are."""
    b = cache.bundle(bundle_id)
    val, note = validation(models.split_step(bundle_id)[0])
    return qa.measure(b.model, val, b.tokenizer, qa.specs_for(b.model.n_params())), note


@cache.per_model
def validation(final_id: str) -> tuple:
    """The validation tokens of the model's text (encoded once per model), and what text."""
    b = cache.bundle(final_id)
    return qa.validation_ids(b.meta, b.tokenizer)


try:
    result, text_note = measured(base_id)
except ValueError as exc:  # a validation text shorter than one window
    st.warning(f"This model's validation text is too short to measure on: {exc}.")
    st.stop()
ref = result.reference
short_of = {spec.name: spec.short for spec in all_specs()}

# ---- the table and the chart --------------------------------------------------------------------

st.subheader("Bytes against bits per character")
rows = [
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
fig = cache.figure(
    charts.size_figure,
    tuple(r.name for r in result.rows),
    tuple(r.spec.scheme for r in result.rows),
    tuple(r.nbytes for r in result.rows),
    tuple(r.bits_per_char for r in result.rows),
    f"“{ctx.name}” stored {len(result.rows)} ways",
)
present.plot(fig, key="quant_size")
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=35 * len(rows) + 38)
st.markdown(
    "\n".join(
        "- " + claim.text
        for claim in [
            qa.size_claim(result, "int8"),
            qa.cost_claim(result, "float16"),
            qa.cost_claim(result, "int8"),
            qa.cost_claim(result, "int4"),
            qa.compare_claim(result, "int4-tensor", "int4", "one scale per row"),
            qa.compare_claim(result, "int4", "int4-outliers", "keeping outliers aside"),
            qa.compare_claim(
                result, "int4-tensor", "int4-tensor-outliers", "keeping outliers aside"
            ),
            qa.cost_claim(result, "int2"),
            qa.smallest_claim(result),
        ]
    )
)
if (copying := nt.loss_lookahead_claim(ctx.config.causal)).made:
    st.warning(
        f"{copying.text} The bits per character here say how much each precision changes that "
        "copying, not how well the model predicts text."
    )
st.caption(
    f"Measured on {result.n_windows} windows of {result.length} tokens from {text_note}: "
    f"{result.n_positions:,} predictions a precision. ×: how many times fewer bytes than "
    "float32. Bits/char: the loss in bits over the characters predicted; Δ: its change from "
    "float32. Top-1: the share of positions where the most likely next token is float32's. KL: "
    "how far, on average, each next-token distribution moved from float32's, in bits per token. "
    "A difference in bits per character is said only beyond twice its standard error over the "
    f"windows (the same windows for every precision) and beyond {qa.MIN_DIFF:g}."
)


# ---- one matrix against its grid ----------------------------------------------------------------

st.subheader("One matrix on its grid")
st.markdown(
    "The matrix shown first is the one whose largest weight stands furthest out from the rest. "
    "Each dotted line is a value the grid can store; every weight is rounded to the nearest one."
)
weights = matrices(cache.bundle(base_id).model)


@cache.per_model
def widest_matrix(bundle_id: str) -> str:
    return qa.widest(matrices(cache.bundle(bundle_id).model))


c1, c2, c3 = st.columns([2, 1, 2])
with c1:
    name = state.selectbox("Matrix", "q_matrix", list(weights), widest_matrix(base_id))
with c2:
    bits = state.selectbox("Bits", "q_bits", list(INT_BITS), 4, format_func=lambda b: f"int{b}")
with c3:
    grid = state.selectbox(
        "Grid",
        "q_grid",
        list(qa.GRIDS),
        "tensor",
        format_func={
            "tensor": "one scale for the matrix",
            "tensor-outliers": "one scale, outliers aside",
            "row": "one row's own scale",
        }.get,
    )
w = weights[name]
row = 0
if grid == "row":
    row = state.slider("Row", "q_row", 0, w.shape[0] - 1, 0)


@cache.per_model
def view(bundle_id: str, name: str, bits: int, grid: str, row: int) -> qa.MatrixView:
    return qa.matrix_view(matrices(cache.bundle(bundle_id).model)[name], bits, grid, row)


@cache.per_model
def errors(bundle_id: str, name: str, bits: int) -> dict:
    return qa.row_errors(matrices(cache.bundle(bundle_id).model)[name], bits)


mv = view(base_id, name, bits, grid, row)
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
st.markdown(
    f"Here the grid's step is {step:.2e}; the largest weight drawn is {mv.spread:.1f} times their "
    f"standard deviation. **{100 * mv.zero_share:.0f}%** of "
    + ("the weights it stores" if mv.kept_aside.size else "the weights")
    + f" round to the middle value, zero, at {mv.spec.label}"
    + (f", with {mv.kept_aside.size} kept aside in float16 (red)." if mv.kept_aside.size else ".")
)
fig = cache.figure(
    charts.row_error_figure,
    errors(base_id, name, bits),
    f"Rounding error of each row of {name} at int{bits}",
)
present.plot(fig, key="quant_rows")
st.caption(
    "Root-mean-square difference between each row's weights and their stored values. One scale "
    "for the matrix gives every row the step the matrix's largest weight sets; one scale per "
    "row gives a row with small weights a fine grid."
)

# ---- the error through the layers, on the prompt -----------------------------------------------

st.subheader("How the error adds up through the layers")


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


if not ctx.ids:
    st.info("Type a prompt in the sidebar to see the error through the layers on it.")
else:
    drifts = layer_drift(base_id, tuple(ctx.ids), qa.drift_copies(ctx.model.n_params()))
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

# ---- any page on a quantised copy ----------------------------------------------------------------

st.subheader("Open any page on a quantised copy")
st.markdown(
    "The sidebar's **Precision** swaps the model of every page for a copy whose weights are the "
    "stored values: see which heads still attend where, and where the logit lens changes."
)
chosen = state.selectbox(
    "Precision to open",
    "q_open",
    [s.name for s in all_specs()],
    "int4",
    format_func=lambda n: next(s.label for s in all_specs() if s.name == n),
)
targets = [nav.find("Attention"), nav.find("Residual_stream"), nav.find("Next_token")]
for target in targets:  # one under another: side by side, a label is cut in a 1024 px column
    if st.button(
        f"{target.label} on the {chosen} copy", icon=target.icon, key=f"q_go_{target.url_path}"
    ):
        state.set_value(QUANT_KEY, chosen)
        st.switch_page(target.file, query_params={QUANT_KEY: chosen})
