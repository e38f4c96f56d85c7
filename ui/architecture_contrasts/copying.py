"""The Architecture contrasts page's "one layer or two" contrast: the loss on random letters
written twice, where only an induction head (which needs a layer before it) can copy.

Not here: the probe and its measures (viz_model/analysis/dynamics.py, contrasts.py), the chart
builders (ui/charts/contrasts.py).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import cache, parts, present
from ui.architecture_contrasts import runs
from ui.architecture_contrasts.pair import Pair, fmt
from ui.charts import contrasts as charts
from ui.frame import PageContext
from viz_model.analysis import dynamics as dyn


def draw(ctx: PageContext, pair: Pair) -> None:
    """The idea, the table of copy measures, the loss along the sequence and its numbers (the
    prompt plays no part: `ctx` is taken as every contrast's is)."""
    st.markdown(
        "On random letters written twice, the second copy can be predicted only by copying: at "
        "letter *A*, find the earlier *A* and say what came after it. An **induction head** does "
        "that, and it needs a **previous-token head** in an earlier layer to have written "
        "\u201cthe letter before me was *A*\u201d into each position. With **one layer** there is no "
        "earlier layer: the model can learn which letters are in the window, not which comes next."
    )
    profiles = [runs.copying(bid) for _, bid, _ in pair.sides]
    rows = {}
    for (name, _, b), p in zip(pair.sides, profiles, strict=True):
        m = p.measures
        rows[name] = {
            "layers": str(b.config.n_layer),
            "loss, first copy": fmt(m.loss_first),
            "loss, second copy": fmt(m.loss_second),
            "copy accuracy (second copy)": f"{m.copy_accuracy:.0%}",
            "whole copy right": f"{m.exact_copy:.0%}",
            "strongest induction score": f"{m.scores['induction'].max():.2f}",
        }
    st.dataframe(pd.DataFrame(rows), width="stretch")
    k = profiles[0].k
    st.caption(
        f"Means over {dyn.N_PROBES} sequences of {k} random letters written twice, in nats per "
        "letter; a blind guess among 26 letters costs ln 26 ≈ 3.26. Copy accuracy: the share of "
        "the second copy's letters that are the model's top guess."
    )
    names = pair.contrast.models
    fig = cache.figure(
        charts.copy_lines,
        [(n, p.loss) for n, p in zip(names, profiles, strict=True)],
        k,
        "Loss at each position of a sequence written twice",
    )
    present.plot(fig, key="ctr_copy")
    with parts.followed_expander("The numbers: the loss at each position", "copy_loss"):
        table = {"position": range(2 * k - 1)}
        table |= {n: p.loss for n, p in zip(names, profiles, strict=True)}
        st.dataframe(pd.DataFrame(table).round(3), hide_index=True)
