"""The Training page's sections, one function each, drawn in order by pages/09_training.py: the
loss, the gradient and the update rules (`intro`), the teacher's password (`password`), the set-up
form (`set_up`), the runs on this server, live (`runs`), how the model on screen trained
(`how_it_trained`: its summary, loss curves, claims, log loss beside accuracy, update rule and, for a fine-tune, what
changed), its gradient's health (`gradient_health`) and the samples it wrote as it learned
(`samples`).

Not here: the form's parts (ui/training/setup/), a run followed as it trains (ui/training/live.py),
the drawing of a run's history shared with the live run and Training dynamics
(ui/training/run_history.py), a fine-tune's views (ui/training/finetune_view.py), the jobs
themselves (serving/jobs.py).
"""

from __future__ import annotations

import math

import streamlit as st

from serving import jobs, models
from ui import parts, state, teacher
from ui.frame import PageContext, val_loss
from ui.training import finetune_view, live, run_history
from ui.training.setup.form import draw_setup
from viz_model.analysis import grad_health as gh
from viz_model.bundles.checkpoint import Bundle

RUNS_ANCHOR = "runs"  # the live panel's heading: Start scrolls to it


def intro() -> None:
    """The loss and its floor, the gradient, and the two updates the jobs train with (AdamW, SGD
    with momentum), each with its formula."""
    st.markdown(
        "A model starts with random weights and writes gibberish. **Training** shows it a window "
        "of real text, asks it to predict every next token, and measures how wrong it was with "
        "the **loss**: the average of $-\\ln p$ of the token that really came next. A blind "
        "guess over $V$ tokens scores $\\ln V$. The lowest loss possible is not 0 but the "
        "entropy of the text itself, since what comes next is rarely certain. The gradient "
        "$\\nabla_\\theta L$ says how to nudge every weight to lower the loss; the optimiser "
        "takes a small step that way, and after enough steps the same weights can write words, "
        "names and verse."
    )
    st.latex(r"L = -\frac{1}{N}\sum_{t=1}^{N} \ln p_\theta(x_{t+1} \mid x_{\le t})")
    st.markdown(
        "The step need not be plain gradient descent ($\\theta \\leftarrow \\theta - \\eta\\,g$). "
        "By default the jobs here train with **AdamW**, as GPT-3 and nanoGPT do (**SGD with "
        "momentum** is the other choice in the settings): the gradient $g_t$ is first scaled "
        "down when its length passes a cap (clipping), each weight moves by a running mean of "
        "its gradient $m_t$ divided by the root of a running mean of its square $v_t$ (so every "
        "weight takes steps of at most about $\\eta$, however large or small its gradient), "
        "both corrected for starting at 0, and the weight matrices shrink a little each step "
        "(weight decay $\\lambda$, not on biases and LayerNorm gains). The learning rate "
        "$\\eta_t$ warms up, then follows a cosine down; each model's own numbers are under "
        "“How it trained” below."
    )
    st.latex(
        r"m_t = \beta_1 m_{t-1} + (1-\beta_1)\,g_t,\qquad v_t = \beta_2 v_{t-1} + (1-\beta_2)\,g_t^2"
    )
    st.latex(
        r"\theta_t = \theta_{t-1} - \eta_t \Big(\frac{m_t/(1-\beta_1^t)}"
        r"{\sqrt{v_t/(1-\beta_2^t)} + \epsilon} + \lambda\,\theta_{t-1}\Big)"
    )
    st.markdown(
        "**SGD with momentum** keeps one running sum of the gradients, $b_t$, and moves every "
        "weight by $\\eta_t$ times it: a weight with a large gradient takes a large step, so SGD "
        "needs a far larger learning rate than AdamW."
    )
    st.latex(r"b_t = \mu\, b_{t-1} + g_t,\qquad \theta_t = \theta_{t-1} - \eta_t\, b_t")


def password() -> jobs.Auth:
    """The teacher's password (a field only when the server has one): starting, stopping and
    changing runs need it, watching does not."""
    return teacher.password_field("t_password")


def set_up(auth: jobs.Auth) -> str | None:
    """The set-up form, open while the server has no run yet; the name of the run it started on
    this rerun, which the live panel then follows (None: none started)."""
    with st.expander("Set up a new run", expanded=not jobs.list_runs()):
        started = draw_setup(auth)
    if started:  # show the new run below, refreshing while it trains
        state.set_value(live.RUN_KEY, started)
    return started


def runs(auth: jobs.Auth, started: str | None) -> None:
    """The runs on this server, the chosen one followed live; a run just started is scrolled to,
    since on a projector the panel is below the screen."""
    st.subheader("Runs on this server", anchor=RUNS_ANCHOR)
    live.draw_runs(auth)
    if started:  # the live panel is under the set-up form: on a projector, below the screen
        parts.scroll_to(RUNS_ANCHOR)
    st.divider()


def how_it_trained(ctx: PageContext) -> None:
    """The model on screen's run: its summary, loss curves against the counting baselines, what
    they show, the update it was trained with and, for a fine-tune, what changed. The run stops
    with a note when the model has no training history."""
    st.subheader(f"How “{ctx.name}” trained")
    bundle = ctx.bundle
    if not bundle.history:
        st.info("This model has no training history (history.json is missing or empty).")
        st.stop()
    _run_summary(bundle)
    batch = (bundle.train_config or {}).get("batch_size", 1)
    final_id = models.split_step(ctx.bundle_id)[0]  # a snapshot has its bundle's history
    baselines = run_history.baselines_of(final_id)
    run_history.draw_curves(
        bundle.history, final_id, baselines, int(batch) * ctx.config.n_ctx, key="hist"
    )
    run_history.draw_claims(bundle.history, baselines, causal=ctx.config.causal)
    finetune = bool(bundle.meta.get("base"))
    run_history.draw_accuracy(final_id, ctx.config.causal, finetune, key="hist")
    run_history.draw_update_rule(bundle.train_config)
    finetune_view.draw(bundle, final_id)  # only for a fine-tune: forgetting, before/after, ΔW


def _run_summary(bundle: Bundle) -> None:
    """Steps, tokens, time and final validation loss of a bundle, as metrics."""
    meta, history = bundle.meta, bundle.history
    last = history[-1] if history else {}
    steps = meta.get("step", last.get("step"))
    loss = val_loss(bundle)
    cols = st.columns(4)
    cols[0].metric("Steps", f"{steps:,}" if isinstance(steps, int) else "–")
    tokens = meta.get("tokens_seen")
    cols[1].metric(
        "Tokens read",
        f"{tokens / 1e6:.1f} M" if isinstance(tokens, int) else "–",
        help=f"{tokens:,} tokens" if isinstance(tokens, int) else None,
    )
    seconds = meta.get("wall_time", last.get("elapsed"))
    cols[2].metric("Training time", f"{seconds / 60:.1f} min" if seconds else "–")
    if bundle.step is not None:  # a snapshot on screen: these figures are the whole run's
        to_final = f", to its final step {steps:,}" if isinstance(steps, int) else ""
        st.caption(
            f"The whole run{to_final}; the other pages show its weights at step {bundle.step:,}."
        )
    cols[3].metric(
        "Final validation loss" if bundle.step is not None else "Validation loss",
        f"{loss:.3f}" if loss is not None else "–",
        help="nats per token on held-out text; perplexity e^loss"
        + (f" = {math.exp(loss):.1f}" if loss is not None else ""),
    )


def gradient_health(ctx: PageContext) -> None:
    """The gradient's health by layer along the run, as recorded while it trained."""
    bundle = ctx.bundle
    final_id = models.split_step(ctx.bundle_id)[0]
    st.subheader("Gradient health")
    run_history.draw_grad_health(
        bundle.history, final_id, bundle.train_config, key="hist", adapters=gh.is_lora(bundle.meta)
    )


def samples(ctx: PageContext) -> None:
    """What the model wrote at each recorded step, from gibberish to words."""
    bundle = ctx.bundle
    st.subheader("What it wrote as it learned")
    run_history.draw_samples(bundle.history, key="hist", finetune=bool(bundle.meta.get("finetune")))
