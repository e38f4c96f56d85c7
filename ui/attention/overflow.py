"""The Attention page's "softmax that overflows": the chosen head's real scores for the query token,
scaled up by a factor the student picks (in the URL), through the naive softmax exp(s)/Σexp(s) in
float32 and float16 and through the max-subtracted one, with the sentence saying what broke."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from ui import state
from ui.attention.head import View
from ui.attention.runs import read_keys, scores_row
from ui.frame import PageContext
from viz_model.analysis.claims import md_escape
from viz_model.analysis.softmax import (
    DTYPES,
    FACTORS,
    SoftmaxRow,
    overflow_claim,
    overflow_threshold,
)

FACTOR_KEY = "softmax_x"  # the scale-up's URL key (ui/nav.py lists it in the page's view keys)
TABLE_ROWS = 12  # the keys with the highest scores; a longer row shows only these


def naive_softmax(ctx: PageContext, v: View) -> None:
    """The slider, the row's table (highest scores first) and the claim about it."""
    ids, labels = tuple(ctx.ids), ctx.labels
    limits = ", ".join(
        f"{overflow_threshold(dtype):.2f} in {name}" for name, dtype in DTYPES.items()
    )
    st.subheader("Softmax that overflows")
    st.markdown(
        "Softmax computed as written, exp(s) / Σ exp(s), breaks when a score is large: exp(s) is "
        f"then bigger than the largest number the float can hold (above s = {limits}) and "
        "becomes inf, and inf / inf is NaN. Every library subtracts the row's largest score "
        "first, exp(s − max) / Σ exp(s − max): the weights are the same, the largest exp is "
        f"exactly 1, and nothing overflows. Below, the scores of {v.name} for the query "
        f"**{md_escape(labels[v.query])}**, scaled up, computed by torch in each dtype."
    )
    factor = state.select_slider(
        "Scale the scores by",
        FACTOR_KEY,
        FACTORS,
        default=1,
        format_func=lambda f: f"×{f}",
        help="Large scores are what a model without the √d_head scaling, or a sharp head, gives.",
    )
    row = scores_row(ctx.bundle_id, ids, v.layer, v.head, v.query, factor)
    keys = read_keys(ctx.bundle_id, ids, v.layer, v.head, v.query)
    st.table(row_table(row, [labels[k] for k in keys]))
    n = row.scores.size
    if n > TABLE_ROWS:
        st.caption(
            f"The {TABLE_ROWS} highest of the {n} scores this query reads; the rest are lower."
        )
    st.markdown(overflow_claim(row).text)


def row_table(row: SoftmaxRow, key_labels: list[str]) -> pd.DataFrame:
    """The row as text, highest score first (at most TABLE_ROWS keys): the score, each dtype's
    naive exp and weight, the max-subtracted float16 weight, and float64's."""
    order = np.argsort(-row.scores, kind="stable")[:TABLE_ROWS]
    columns = {f"score ×{row.factor:g}": [f"{row.scores[i]:.2f}" for i in order]}
    for name in DTYPES:
        columns[f"exp, {name}"] = [_number(row.exp[name][i], "{:.3g}") for i in order]
        columns[f"naive, {name}"] = [_number(row.naive[name][i], "{:.4f}") for i in order]
    columns["max-subtracted, float16"] = [
        _number(row.stable["float16"][i], "{:.4f}") for i in order
    ]
    columns["float64"] = [f"{row.exact[i]:.4f}" for i in order]
    return pd.DataFrame(columns, index=[key_labels[i] for i in order])


def _number(x: float, fmt: str) -> str:
    """A number as the table prints it: inf and NaN spelled out (a table shows NaN as None)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "−inf"
    return fmt.format(x)
