"""The Attention page's hand arithmetic: one row of the chosen head's pattern worked out from q, k
and v with this model's real numbers, step by step, and checked against what the model recorded
at its hooks. Computed only while its expander is open."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from ui import parts, present
from ui.attention.head import View
from ui.attention.runs import query_bars, run_attention
from ui.frame import PageContext
from viz_model.analysis.attention import recorded_differences, run_query_arithmetic
from viz_model.analysis.claims import md_escape
from viz_model.model.positions import alibi_slopes

ARITHMETIC_SECTION = "arithmetic"  # the hand-arithmetic section's key in the URL's open=
ARITHMETIC_KEY = parts.numbers_key(ARITHMETIC_SECTION)  # its session-state key


def by_hand(ctx: PageContext, v: View) -> None:
    """The expander "Work out one row by hand", its five steps and the check against the hooks."""
    cfg, labels = ctx.config, ctx.labels
    ids, label_key = tuple(ctx.ids), tuple(labels)
    layer, head, query = v.layer, v.head, v.query
    run = run_attention(ctx.bundle_id, ids)
    arith = run_query_arithmetic(run, layer, head, query)
    diffs = recorded_differences(arith, run, layer, head)
    E = arith.d_head
    qlabel = labels[query]
    qtext = md_escape(qlabel)  # the prompt's own text, drawn as Markdown: *, _, $ stay literal

    with parts.followed_expander(  # open or shut as the teacher left it (the URL's open=)
        f"**Work out one row by hand: query {qtext} in {v.name}**, from q and k to the head's "
        "write into the residual, with this model's real numbers",
        ARITHMETIC_SECTION,
    ) as is_open:
        if not is_open:  # computed only while open (opening it reruns the page)
            return
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
        st.markdown(f"**1. The query vector q** of {qtext}{turned} ({E} numbers, d_head = {E})")
        table(vector_table(arith.q, [qlabel], "q"))

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
        keys = vector_table(arith.k[seen], key_labels, "k")
        keys.insert(0, "q·k", arith.dots[seen])
        table(keys)

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
                "score + mask": with_minus_infinity(arith.scaled, seen),
                "softmax weight": arith.pattern,
            },
            index=labels,
        )
        table(steps)
        present.plot(
            query_bars(ctx.bundle_id, ids, label_key, layer, head, query), key="attn_query_weights"
        )

        st.markdown(
            "**4. The weighted sum of the values**: z = Σⱼ weightⱼ · vⱼ. Each row below is one key's "
            "value vector times its weight; the last row, their sum, is z."
        )
        weighted = vector_table(
            arith.weighted_v[seen],
            [
                f"{w:.3f} × v of {lab}"
                for w, lab in zip(arith.pattern[seen], key_labels, strict=True)
            ],
            "z",
        )
        table(weighted)
        st.markdown("Adding up those rows gives **z**, this head's output for the query:")
        table(vector_table(arith.z, ["z"], "z"))

        st.markdown(
            f"**5. The head's write into the residual stream**: result = z · W_O, where W_O is this "
            f"head's {E} × {cfg.d_model} slice of the output matrix. These {cfg.d_model} numbers are "
            f"added to the residual stream at {qtext} (the output bias is added once for all heads)."
        )
        table(vector_table(arith.result, ["z · W_O"], "result"))

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


def vector_table(rows: np.ndarray, index: list[str], prefix: str) -> pd.DataFrame:
    rows = np.atleast_2d(rows)
    return pd.DataFrame(rows, index=index, columns=[f"{prefix}[{i}]" for i in range(rows.shape[1])])


def table(df: pd.DataFrame, **kwargs) -> None:
    """A table with 4 decimals (a column format, far cheaper than a pandas Styler)."""
    number = st.column_config.NumberColumn(format="%.4f")
    st.dataframe(df, column_config={c: number for c in df.select_dtypes("number")}, **kwargs)


def with_minus_infinity(values: np.ndarray, keep: np.ndarray, masked: str = "−∞") -> list[str]:
    """Numbers as text, `masked` where masked (a table shows NaN as 'None', which reads wrong)."""
    pairs = zip(values.ravel(), keep.ravel(), strict=True)
    return [f"{x:.4f}" if k else masked for x, k in pairs]
