"""Scaling: validation loss against parameters and compute on log-log axes (a sweep of small shapes,
the bundled models, the class's runs), a fitted power law, and the 12 L d^2 rule against real
counts, with GPT-2 and GPT-3 placed by their published shapes."""

import pandas as pd
import streamlit as st

import ui
from ui import cache, models, state
from viz_model.analysis import scaling as sc
from viz_model.charts import scaling as charts
from viz_model.config import GPTConfig

ctx = ui.frame("Scaling", ":material/trending_down:", needs_prompt=False)
st.markdown(
    "Train the same recipe at several sizes and the validation loss falls along a straight line "
    "on log-log axes: a **power law** in the number of parameters *N* (Kaplan et al. 2020 count "
    "only the blocks, not the embeddings) and in the training compute *C*. Each token costs about "
    "6 FLOPs per parameter (2 forward, 4 backward), and a block holds about 12 d² parameters "
    "(attention 4 d², the MLP 8 d²)."
)
st.latex(r"L(N) \approx a\,N^{-b} \qquad C \approx 6\,N\,D \qquad N \approx 12\,L\,d^2")
try:
    sweep = sc.load_sweep()
except ValueError as exc:
    st.error(f"{exc}. Rebuild it with `python scripts/scaling_sweep.py`.")
    st.stop()
found = models.discover()
key = tuple(sorted((name, models.bundle_id(path)) for name, path in found.items()))
points = sc.sweep_points(sweep) + sc.bundle_points(
    found, models.search_dirs()[0], sweep["corpus"], sweep["tokenizer"]
)
law = sc.fit_power_law(
    [p.n_params for p in points if p.source == "sweep"],
    [p.val_loss for p in points if p.source == "sweep"],
)
axis = state.radio(
    "Against",
    "scl_x",
    list(charts.AXES),
    "params",
    format_func=lambda a: "parameters" if a == "params" else "compute",
    horizontal=True,
)
fit = (
    law
    if axis == "params"
    else sc.fit_power_law(
        [p.compute for p in points if p.source == "sweep"],
        [p.val_loss for p in points if p.source == "sweep"],
    )
)
fig = cache.figure(
    ("scaling", key, axis),
    lambda: charts.scaling_figure(points, fit, sc.PUBLISHED, axis, "Validation loss, log-log"),
)
st.plotly_chart(fig, key="scaling")
n_runs = len(sweep["runs"])
st.caption(
    f"Sweep: {n_runs} shapes on Shakespeare (characters), each trained by the same command "
    f"for the same steps; the fitted exponent b = {fit.b:.3f}. Bundled models and runs trained "
    "here on the same text and tokenizer are drawn too (not fitted; they saw other numbers of "
    "tokens). Small models trained briefly bend away from a straight line, and the dashed "
    "extrapolation to GPT-2 and GPT-3 sizes is only the fit's guess: their own losses were on "
    "other text with other tokens, so they are placed by size alone."
    + (
        ""
        if axis == "params"
        else " The exponent is the one against N: every sweep run saw the same tokens D, so C "
        "is N times a constant. GPT-2's training tokens were not published."
    )
)

st.subheader("12 L d² against real counts")
rows = [
    {
        "model": p.name,
        "layers": p.n_layer,
        "d_model": p.d_model,
        "parameters": f"{p.params:,}",
        "12 L d²": f"{sc.rule_of_thumb(p.n_layer, p.d_model):,}",
        "rule / parameters": f"{sc.rule_of_thumb(p.n_layer, p.d_model) / p.params:.2f}",
    }
    for p in sc.PUBLISHED
]
for run in sweep["runs"]:
    cfg = GPTConfig.from_dict(run["model"])
    total, _ = sc.count_params(cfg)
    rule = sc.rule_of_thumb(cfg.n_layer, cfg.d_model)
    rows.append(
        {
            "model": f"sweep {run['name']}",
            "layers": cfg.n_layer,
            "d_model": cfg.d_model,
            "parameters": f"{total:,}",
            "12 L d²": f"{rule:,}",
            "rule / parameters": f"{rule / total:.2f}",
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption(
    "Parameters: as published for GPT-2 and GPT-3, counted exactly for the sweep's models. "
    "At GPT-3's sizes the rule is within a few percent: the embeddings (vocabulary × d) and the "
    "biases are a sliver. At this app's sizes the embeddings and biases are a large share, so "
    "the rule undercounts."
)
with st.expander("The numbers: every point"):
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "model": p.name,
                    "source": p.source,
                    "N (non-embedding)": p.n_params,
                    "tokens seen D": int(p.tokens),
                    "compute 6 N D": f"{p.compute:.3g}",
                    "validation loss": round(p.val_loss, 4),
                }
                for p in points
            ]
        ),
        hide_index=True,
    )
