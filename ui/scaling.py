"""The Scaling page's sections, one function each, drawn in order by pages/16_scaling.py: the
power laws and the 6 N D and 12 L d² rules (`intro`), the sweep of small shapes (`sweep`), the
validation loss against parameters or compute with its fit and claim (`loss_against_size`), tokens
per parameter beside Chinchilla's (`tokens_per_parameter`), the published results in their own
numbers (`published_results`), the 12 L d² rule against counted parameters (`rule_of_thumb`), and
every point drawn (`every_point`).

Not here: the sweep, the fits and the claims (viz_model/analysis/labs/scaling.py; the sweep is
trained by scripts/scaling_sweep.py), the chart builder (ui/charts/scaling.py).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from serving import models
from ui import cache, parts, present, state
from ui.charts import scaling as charts
from viz_model.analysis.labs import scaling as sc
from viz_model.model.config import GPTConfig


def intro() -> None:
    """Kaplan's power laws in parameters and compute, and what five tiny models can show."""
    st.markdown(
        "Kaplan et al. (2020) trained the same recipe at many sizes and found the validation loss "
        "falling along a straight line on log-log axes: a **power law** in the number of "
        "parameters *N* (they count only the blocks, not the embeddings) and in the training "
        "compute *C*. Each token costs about 6 FLOPs per parameter (2 forward, 4 backward), and "
        "a block holds about 12 d² parameters (attention 4 d², the MLP 8 d²)."
    )
    st.latex(r"L(N) \approx a\,N^{-b} \qquad C \approx 6\,N\,D \qquad N \approx 12\,L\,d^2")
    st.markdown(
        "Below, five tiny models trained here. They can show the trend over their own range, how "
        "sure a fit through five points is, and how their training compares with the published "
        "recipes; they cannot say where a model a million times larger would land, so no line "
        "is drawn past them."
    )


def sweep() -> dict:
    """The sweep's results (assets); the run stops with how to rebuild them when they cannot be
    read, since every later section reads them."""
    try:
        return sc.load_sweep()
    except ValueError as exc:
        st.error(f"{exc}. Rebuild it with `python scripts/scaling_sweep.py`.")
        st.stop()


def loss_against_size(results: dict) -> list[sc.ScalingPoint]:
    """The validation loss of the sweep, the bundled models and the class's runs against
    parameters or compute (the radio), each fit over its own range only, and its claim; returns
    every point drawn."""
    points = sc.sweep_points(results) + sc.bundle_points(
        models.discover(), models.search_dirs()[0], results["corpus"], results["tokenizer"]
    )
    swept = [p for p in points if p.source == "sweep"]
    by_size = sc.fit_report([p.n_params for p in swept], [p.val_loss for p in swept])
    curve = sc.curve_points(results)
    by_compute = sc.frontier_report(curve)
    axis = state.radio(
        "Against",
        "scl_x",
        list(charts.AXES),
        "params",
        format_func=lambda a: "parameters" if a == "params" else "compute",
        horizontal=True,
    )
    fit = by_size if axis == "params" else by_compute
    fig = cache.figure(
        charts.scaling_figure,
        points,
        fit,
        axis,
        "Validation loss, log-log",
        curve=curve,
        frontier=sc.compute_frontier(curve),
    )
    present.plot(fig, key="scaling")
    claim = sc.size_claim(by_size) if axis == "params" else sc.compute_claim(by_compute)
    st.markdown(claim.text)
    st.caption(_sweep_note(results, axis))
    return points


def _sweep_note(results: dict, axis: str) -> str:
    """What the sweep is and what is fitted; against compute, why compute has its own fit."""
    n_runs = len(results["runs"])
    steps = max(int(step) for run in results["runs"] for step, _ in run.get("curve", [[0, 0]]))
    return (
        f"Sweep: {n_runs} shapes on Shakespeare (characters), each trained by the same command "
        "for the same steps, so every run saw the same tokens. The line is drawn only over the "
        "points it was fitted on. Bundled models and runs trained here on the same text and "
        "tokenizer are drawn too (not fitted: each saw its own number of tokens)."
        + (
            ""
            if axis == "params"
            else " Against compute the final points alone would give the same exponent as "
            "against size (C = 6 N D with one D for all), so compute gets its own fit: on the "
            "lowest loss any run had reached for each compute spent, read off every run's "
            "validation curve. Those are points part-way through a learning-rate schedule planned "
            f"for {steps:,} steps, not runs planned to stop there, and the points of one run are "
            "not independent: the range over leaving one run out is the honest measure of its "
            "uncertainty."
        )
    )


def tokens_per_parameter(results: dict) -> None:
    """Each sweep run's tokens per parameter beside Chinchilla's ~20, and the shape that ratio
    would give for the same compute."""
    st.subheader("Compute-optimal? Tokens per parameter")
    rows = sc.chinchilla_rows(results)
    st.markdown(
        "Hoffmann et al. (2022, the Chinchilla paper) found that for a fixed compute budget the "
        f"loss is lowest with about **{sc.CHINCHILLA_TOKENS_PER_PARAM} training tokens per "
        "parameter** (their published figure, counting all parameters, at 70 M to 16 B "
        "parameters). " + sc.tokens_claim(rows).text
    )
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "run": r.name,
                    "parameters N (all)": f"{r.params:,}",
                    "tokens seen D": f"{r.tokens:,.0f}",
                    "D / N": f"{r.per_param:,.1f}",
                    "compute 6 N D": f"{r.compute:.3g}",
                    f"N at {sc.CHINCHILLA_TOKENS_PER_PARAM} tokens/param, same compute": (
                        f"{r.optimal_params:,.0f}"
                    ),
                    "its D": f"{r.optimal_tokens:,.0f}",
                }
                for r in rows
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    st.caption(
        "Same compute: N D is kept, and D = 20 N gives N = √(C / 120). Whether Chinchilla's ratio "
        "holds for models this small was not tested by its authors, nor here."
    )


def published_results() -> None:
    """The published scaling laws in their own numbers and units, off our axes."""
    st.subheader("Published results, in their own numbers")
    st.markdown(
        "Not on the chart above: each was measured on other text, with another tokenizer, on "
        "models thousands to millions of times larger, so its losses and exponents are not on "
        "our axes."
    )
    st.markdown(
        "\n".join(
            f"- **{law.source}**: {law.finding}. {law.numbers}. Measured on: {law.measured_on}."
            for law in sc.PUBLISHED_LAWS
        )
    )


def rule_of_thumb(results: dict) -> None:
    """12 L d² against the published and the counted parameters of GPT-2, GPT-3 and the sweep."""
    st.subheader("12 L d² against real counts")
    rows = [_published_row(p) for p in sc.PUBLISHED] + [_sweep_row(r) for r in results["runs"]]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(
        "Published: the figure each paper gives (Radford et al. 2019, table 2; Brown et al. 2020, "
        "table 2.1). Counted: every weight of that shape, exactly, with GPT-2's vocabulary of "
        "50,257, its context (1,024; 2,048 for GPT-3), d_mlp = 4 d, biases and tied embeddings. "
        "GPT-2's smallest model is published as 117 M and counts 124,439,808 (124 M); GPT-2's "
        "paper gives no training token count; GPT-3's is 300 B for every size. At the largest "
        "sizes the rule is within a few percent: the embeddings "
        "(vocabulary × d) and the biases are a sliver. At this app's sizes the embeddings and "
        "biases are a large share, so the rule undercounts."
    )


def _published_row(p: sc.Published) -> dict[str, object]:
    """A published model's row: its published and counted parameters and the rule's."""
    total = sc.counted(p)
    rule = sc.rule_of_thumb(p.n_layer, p.d_model)
    return {
        "model": p.name,
        "layers": p.n_layer,
        "d_model": p.d_model,
        "parameters (published)": f"{p.params:,}",
        "parameters (counted)": f"{total:,}",
        "training tokens": f"{p.tokens:,.0f}" if p.tokens else "not published",
        "12 L d²": f"{rule:,}",
        "rule / counted": f"{rule / total:.2f}",
    }


def _sweep_row(run: dict) -> dict[str, object]:
    """A sweep run's row: its counted parameters and the rule's (nothing published)."""
    cfg = GPTConfig.from_dict(run["model"])
    total, _ = sc.count_params(cfg)
    rule = sc.rule_of_thumb(cfg.n_layer, cfg.d_model)
    return {
        "model": f"sweep {run['name']}",
        "layers": cfg.n_layer,
        "d_model": cfg.d_model,
        "parameters (published)": "–",
        "parameters (counted)": f"{total:,}",
        "training tokens": f"{run['tokens_seen']:,.0f}",
        "12 L d²": f"{rule:,}",
        "rule / counted": f"{rule / total:.2f}",
    }


def every_point(points: list[sc.ScalingPoint]) -> None:
    """The numbers behind the chart: every point's parameters, tokens, compute and loss."""
    with parts.followed_expander("The numbers: every point", "points"):
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
