"""The Training dynamics page's sections, one function each, drawn in order by
pages/12_training_dynamics.py: which weights are on screen (`shown`), the curves of a model with no
heads to follow (`other_family`), the idea and the copying-gain formula (`intro`), the measures at
every saved step (`measured_steps`, cached in `measured`), each head's role against training step
with the copying claim (`roles`), copy accuracy against the loss (`loss_against_accuracy`), and
the gradient's health along training (`gradient_health`).

Not here: the measures and claims (viz_model/analysis/dynamics.py), the loss curves and the
gradient's health shared with Training (ui/training/run_history.py), the chart builders
(ui/charts/dynamics.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from serving import models
from ui import cache, families, parts, present, state
from ui.charts import dynamics as charts
from ui.charts.common import show_whitespace
from ui.frame import PageContext
from ui.training import run_history
from viz_model.analysis import dynamics as dyn
from viz_model.analysis import grad_health as gh
from viz_model.analysis import training as tr
from viz_model.analysis.attention import trained_copy_lengths
from viz_model.analysis.claims import Claim, md_escape
from viz_model.bundles.files import CheckpointError


@dataclass(frozen=True)
class Shown:
    """The run on screen: its final weights' bundle id, and the sidebar's step (None: final)."""

    final_id: str
    step: int | None


@dataclass(frozen=True)
class Roles:
    """What the roles section chose and found, for the loss-against-accuracy section."""

    focus: str  # the head followed, "L1 H2"
    copying: Claim  # whether copying was learned, and by when
    formed: int | None  # the step copying was half learned; None unless claimed


@cache.per_model(spinner="Measuring every saved step of this model…")
def measured(final_id: str) -> dyn.Dynamics | None:
    """Role scores and losses on the probe at every saved step, once per bundle (None: no
    snapshots). Snapshots are read straight from disk so they do not crowd the model cache."""
    return dyn.bundle_dynamics(cache.bundle(final_id))


def shown(ctx: PageContext) -> Shown:
    """The sidebar's model as the final weights and the step it shows: every section measures
    the whole run and marks that step."""
    return Shown(*models.split_step(ctx.bundle_id))


def gradient_health(ctx: PageContext, run: Shown) -> None:
    """The gradient's health along training, from the history (Training draws the same)."""
    st.subheader("Gradient health along training")
    run_history.draw_grad_health(
        ctx.bundle.history,
        run.final_id,
        ctx.bundle.train_config,
        key="dyn",
        marked_step=run.step,
        adapters=gh.is_lora(ctx.bundle.meta),
    )
    if run.step is not None:
        st.caption(f"Dotted: the sidebar's step {run.step:,}.")


def other_family(ctx: PageContext, run: Shown) -> None:
    """An RNN, LSTM, GRU or CNN has no heads to follow: its loss curves and gradient's health,
    then the run stops."""
    if ctx.bundle.family == "gpt":
        return
    st.info(families.no_heads_here(ctx.bundle), icon=":material/info:")
    batch = int((ctx.bundle.train_config or {}).get("batch_size", 1))
    baselines = run_history.baselines_of(run.final_id)
    run_history.draw_curves(
        ctx.bundle.history, run.final_id, baselines, batch * ctx.config.n_ctx, key="dyn"
    )
    gradient_health(ctx, run)
    st.stop()


def intro() -> None:
    """Snapshots, the probe of random tokens written twice, induction heads and the phase change."""
    st.markdown(
        "A model keeps copies of its weights from along its training (**snapshots**). Here every "
        "snapshot reads the same text, **random tokens written twice**, and two things are "
        "measured at each step: what each head does (its role scores, as on the Attention page) "
        "and how well the model predicts the second copy, which it can only do by **copying** "
        "from the first. An **induction head** does that copying: at token *A* it looks at "
        "whatever followed the earlier *A*. It needs a **previous-token head** in an earlier "
        "layer, so watch for that one first. In models that learn it, the induction head often "
        "forms within a few hundred steps and the loss on the second copy drops with it: a "
        "**phase change** (Olsson et al., 2022). Whether this model learned to copy, and how "
        "suddenly, is measured below."
    )
    st.latex(r"\text{copying gain} = L_\text{first copy} - L_\text{second copy}")


def measured_steps(ctx: PageContext, run: Shown) -> dyn.Dynamics:
    """The measures at every saved step; the run stops with a note when a snapshot cannot be
    read or there are none (then after the gradient's health, which needs no snapshot)."""
    try:
        d = measured(run.final_id)
    except CheckpointError as exc:  # a damaged snapshot file: say which, keep the app running
        st.error(f"Could not read the saved steps of “{ctx.name}”: {exc}.")
        st.stop()
    if d is None:
        st.info(
            f"“{ctx.name}” kept no snapshots of its weights before the final ones, so there is "
            "no training to look back on. Pick a model trained with snapshots (every bundled one "
            "is; so is every run trained on the Training page).",
            icon=":material/history:",
        )
        gradient_health(ctx, run)
        st.stop()
    return d


def roles(run: Shown, d: dyn.Dynamics) -> Roles:
    """The head to follow, every head's role scores and the copying losses against training step,
    whether copying was learned, and the followed head's numbers step by step."""
    heads = d.head_names()
    strongest = heads[int(d.scores["induction"][-1].argmax())]
    focus = state.selectbox(
        "Head to follow",
        "dyn_head",
        heads,
        strongest,
        help="Drawn thick and in colour in every row, beside the heads with the highest induction "
        "and previous-token scores at the end of training; every other head is a grey line (hover "
        "to name it). It opens on the head with the highest induction score.",
    )
    copying = dyn.copying_claim(d)
    formed = int(copying.numbers["half_step"]) if copying.made else None  # dashed only if claimed
    fig = cache.figure(charts.roles_over_training, d, focus, formed, run.step)
    present.plot(fig, key="dyn_roles")
    k, n = d.copy_length, len(d.steps)
    st.caption(
        f"In colour: {focus} (thick) and the heads with the highest induction and previous-token "
        "scores at the last step; grey: the other heads (hover to name one). "
        f"Each snapshot ({n} saved steps) reads {d.n_sequences} sequences of {k} random tokens "
        f"written twice; role scores are means over the first {min(dyn.N_PROBES, d.n_sequences)}, "
        f"losses over all. **looks k back**: the best fixed offset k ≥ 2 (hover for k); on this "
        f"text an induction head also looks {k - 1} back."
        + (f" Dotted: the sidebar's step {run.step:,}." if run.step is not None else "")
    )
    st.markdown(copying.text)
    st.caption(
        f"Copying is claimed learned when, at the last saved step, the gain has grown past the "
        f"first saved step's by more than {dyn.NOISE_Z:.0f} standard errors over the "
        f"{d.n_sequences} sequences, and the top guess on the second copy is right more often "
        f"than chance (a model that cannot copy names a random token 1 time in "
        f"{round(1 / d.chance)}: the random sequences are drawn from {round(1 / d.chance)} "
        "ordinary tokens of its vocabulary) by as much."
    )
    _focus_steps(d, focus)
    return Roles(focus, copying, formed)


def _focus_steps(d: dyn.Dynamics, focus: str) -> None:
    """The followed head's role scores and offset, and the copy losses, at every saved step."""
    with parts.followed_expander(
        f"The numbers: {focus} and the losses, step by step", "focus_steps"
    ):
        layer, head = (int(part[1:]) for part in focus.split())
        st.dataframe(
            pd.DataFrame(
                {
                    "step": d.steps,
                    **{role: d.scores[role][:, layer, head] for role in dyn.ROLES},
                    "k": d.offset_k[:, layer, head],
                    "loss, first copy": d.loss_first,
                    "loss, second copy": d.loss_second,
                }
            ).round(3),
            hide_index=True,
        )


def loss_against_accuracy(ctx: PageContext, d: dyn.Dynamics, found: Roles) -> None:
    """The second copy's loss against its accuracy per token and for the whole copy: is the
    sudden rise in the model, or a mirage of a sharp metric?"""
    k = d.copy_length
    st.subheader("Loss against accuracy")
    st.markdown(
        "The same snapshots, scored two ways on the second copy. The **loss** rewards every bit "
        "of probability put on the right token; **accuracy** counts a token only when it is the "
        f"top guess, and a **whole copy** only when all {k - 1} copyable tokens are. If each "
        "token is the top guess with probability *p*, independently, the whole copy is right "
        f"with probability $p^{{{k - 1}}}$, which stays near zero until *p* is close to 1 and "
        "then shoots up, however smoothly *p* rose. So a sharp metric can make smooth progress "
        "look sudden: *emergence can be a mirage of the metric* (Schaeffer et al., 2023). "
        "Whether that is what happens here is a measurement: how many steps each curve takes to "
        "make 10% to 90% of its change."
    )
    curves = tr.curves(ctx.bundle.history)
    tokenizer = ctx.bundle.tokenizer
    miss = tokenizer.id_to_token(int(d.miss_token[-1])) if d.miss_token[-1] >= 0 else ""
    miss_label = f"“{md_escape(show_whitespace(miss))}”" + (
        " (a line break)" if miss == "\n" else ""
    )
    fig = cache.figure(charts.loss_against_accuracy, d, curves, found.formed)
    present.plot(fig, key="dyn_accuracy")
    st.caption(
        "Left axis: losses (the training loss, grey, is on the model's own training text, every "
        "token of it). Right axis: accuracy on the second copy's copyable tokens; dotted, what "
        f"per-token accuracy predicts for the whole copy, (per-token accuracy)^{k - 1}."
    )
    for claim in (
        dyn.phase_change_claim(d, found.copying),
        dyn.sharper_metric_claim(d),
        dyn.whole_copy_drop_claim(d, miss_label),
    ):
        if claim.text:
            st.markdown(claim.text)
    trained = trained_copy_lengths(ctx.bundle.meta)
    if miss == "\n" and trained and d.exact_copy[-1] < d.exact_copy.max():
        st.caption(
            f"This model's training lines were a block of {trained[0]} to {trained[1]} random "
            f"tokens written twice, each line then ending with a line break; the probe's copies "
            f"are {k} tokens long."
        )
    _probe_steps(d)


def _probe_steps(d: dyn.Dynamics) -> None:
    """The second copy's loss and accuracies at every saved step."""
    k = d.copy_length
    with parts.followed_expander("The numbers: accuracy and loss, step by step", "probe_steps"):
        st.dataframe(
            pd.DataFrame(
                {
                    "step": d.steps,
                    "loss, second copy": d.loss_second,
                    "copy accuracy": d.copy_accuracy,
                    "whole copy right": d.exact_copy,
                    f"per-token accuracy^{k - 1}": d.copy_accuracy ** (k - 1),
                }
            ).round(3),
            hide_index=True,
        )
