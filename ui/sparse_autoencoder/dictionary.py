"""The Sparse autoencoder page's first half: the idea and the formulas (`intro`), whether this
model can have an SAE here (`can_train`), which SAE is shown, a finished job's or one trained in
the page with every choice in the URL (`choose`), and how good its dictionary is, measured in
variance explained, active features and the model's own loss (`how_good`).

Not here: the cached training and measures (runs.py), the job panels (ui/sae_job_panel.py), the
claims (viz_model/analysis/labs/sae/claims.py), the chart builders (ui/charts/sae.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from serving import jobs, models
from ui import cache, corpus, present, sae_job_panel, state
from ui.charts import sae as charts
from ui.frame import PageContext
from ui.sparse_autoencoder import runs
from viz_model.analysis import next_token as nt
from viz_model.analysis.labs import sae_files
from viz_model.analysis.labs.sae.claims import dead_claim, resampling_note, splice_claim
from viz_model.analysis.labs.sae.lab import Lab

FEATURES = (256, 512, 1024, 2048)
TOP_K = (4, 8, 16, 32)
L1_COEFFS = (0.001, 0.003, 0.01, 0.03, 0.1)
SPARSITY = {"topk": "top-k", "l1": "L1 penalty"}
TRAIN_TOKENS = (25_000, 50_000, 100_000, 200_000)
MAX_PARAMS = 30_000_000  # larger models take minutes to read 100k tokens on a CPU core
SITE_LABELS = {"resid_post": "residual stream after it", "mlp_out": "its MLP output"}


@dataclass(frozen=True)
class Shown:
    """The SAE on screen: what it depends on, the trained lab, and the finished job it came from
    (None when it was trained in the page)."""

    spec: runs.Spec
    lab: Lab
    job: jobs.RunView | None


def intro() -> None:
    """Superposition, and the SAE that tries to undo it: its two formulas and how it is trained."""
    st.markdown(
        "A layer of width D can hold more than D features if each is used rarely: a token needs "
        "only a few at a time, so many directions can share the space with little interference "
        "(**superposition**). A **sparse autoencoder** (SAE) tries to undo it: it learns a "
        "dictionary of F > D directions and rewrites each activation x as a sum of a few of "
        "them. Each feature's activation f_i says how much of direction i the token carries, and "
        "most are 0. If the dictionary is good, each direction means one thing, which a single "
        "neuron often does not."
    )
    st.latex(r"f = \mathrm{ReLU}\big(W_{enc}\,(x - b_{dec})/s + b_{enc}\big)")
    st.latex(r"\hat x = s\,W_{dec}\, f + b_{dec} = b_{dec} + s \sum_i f_i\, d_i")
    st.caption(
        "W_dec's columns d_i have length 1: the directions. s is a fixed scale that makes the "
        "activations about 1 per dimension. Training minimises the squared error |x − x̂|²/s². "
        "Sparsity comes either from **top-k** (only the k largest pre-activations of each token "
        "are kept, the rest set to 0) or from an **L1 penalty** λ Σ f_i added to the loss. "
        "Features that stop firing are re-initialised toward tokens the SAE reconstructs badly "
        "(resampling, as in Anthropic's “Towards Monosemanticity”)."
    )


def can_train(ctx: PageContext) -> None:
    """Stop the run, saying why, when there is no training text to read or the model is too large
    to read enough of it in the page."""
    if corpus.text_of(ctx.bundle) is None:
        st.info(
            "This model's training text cannot be found (the model does not say what it was "
            "trained on, or an uploaded file is gone), so there is nothing to train an SAE on."
        )
        st.stop()
    if ctx.model.n_params() > MAX_PARAMS:
        st.info(
            f"This model has {ctx.model.n_params():,} parameters: reading enough tokens to train "
            "an SAE would take minutes here. Choose a smaller model."
        )
        st.stop()


def choose(ctx: PageContext) -> Shown:
    """The job panels (which SAE, the password, live jobs, deleting one), then a finished job's
    SAE, or the choices of one trained here, the launcher of a bigger job, and its training."""
    job_view = sae_job_panel.choose(ctx.bundle_id)
    job_auth = sae_job_panel.password()
    sae_job_panel.watch(ctx.bundle_id, job_auth)
    sae_job_panel.deleter(ctx.bundle_id, job_auth)
    if job_view is None:
        spec = _trained_here(ctx, job_auth)
        with st.spinner(
            f"Training an SAE on {spec.n_train:,} tokens of the training text (20–40 s)…"
        ):
            return Shown(spec, runs.trained(spec), None)
    return Shown(*_from_job(ctx, job_view), job_view)


def _trained_here(ctx: PageContext, job_auth: jobs.Auth) -> runs.Spec:
    """The choices of an SAE trained in the page, and the launcher of a job with them."""
    spec = _choices(ctx)
    model_name = models.path_of(ctx.bundle_id).name
    sae_job_panel.launcher(
        ctx.bundle_id, model_name, spec.layer, spec.site, spec.k, spec.l1, spec.seed, job_auth
    )
    return spec


def _from_job(ctx: PageContext, job_view: jobs.RunView) -> tuple[runs.Spec, Lab]:
    """A finished job's SAE, read from its folder; the run stops with words if it is damaged."""
    spec = runs.job_spec(ctx.bundle_id, job_view)
    try:
        return spec, runs.trained(spec)
    except sae_files.SAEFileError as exc:
        st.warning(
            f"The SAE of job {job_view.name} cannot be opened: {exc}. Choose another SAE above, "
            "or train one here."
        )
        st.stop()


def _choices(ctx: PageContext) -> runs.Spec:
    """The widgets for an SAE trained in the page run (every choice in the URL)."""
    cfg = ctx.config
    sites = ["resid_post"] if cfg.attn_only else ["resid_post", "mlp_out"]
    c1, c2, c3 = st.columns(3)
    default_layer = cfg.n_layer // 2 - (cfg.n_layer > 1)
    layer = state.slider("Block", "sae_layer", 0, cfg.n_layer - 1, default_layer, container=c1)
    site = state.radio(
        "Activation", "sae_site", sites, "resid_post", container=c1, format_func=SITE_LABELS.get
    )
    n_features = state.select_slider("Dictionary size F", "sae_f", FEATURES, 512, container=c2)
    k, l1 = _sparsity(c2)
    n_train = state.select_slider(
        "Training tokens",
        "sae_tokens",
        TRAIN_TOKENS,
        100_000,
        container=c3,
        format_func=lambda n: f"{n // 1000}k",
    )
    seed = state.number_input("Seed", "sae_seed", 0, 999, 0, container=c3)
    return runs.Spec(ctx.bundle_id, layer, site, n_features, k, float(l1), n_train, seed)


def _sparsity(column) -> tuple[int, float]:
    """(k, l1): top-k's k and 0, or 0 and the L1 penalty's coefficient, as the radio picks."""
    sparsity = state.radio(
        "Sparsity",
        "sae_sparsity",
        list(SPARSITY),
        "topk",
        container=column,
        format_func=SPARSITY.get,
        horizontal=True,
    )
    if sparsity == "topk":
        return (
            state.select_slider(
                "Active features per token k", "sae_k", TOP_K, 16, container=column
            ),
            0.0,
        )
    help_l1 = "The loss adds λ times the sum of the feature activations."
    l1 = state.select_slider(
        "L1 coefficient λ", "sae_l1", L1_COEFFS, 0.01, container=column, help=help_l1
    )
    return 0, l1


def how_good(ctx: PageContext, shown: Shown) -> None:
    """The dictionary's metrics and losses, what L1 sparsity settled on, the claims about them,
    how it was trained, and its training curve."""
    spec, m, log = shown.spec, shown.lab.metrics, shown.lab.log
    st.subheader("How good is the dictionary?")
    _metrics(m)
    if not spec.k:
        st.markdown(
            f"**L1 sparsity** (λ = {spec.l1:g}): nothing caps how many features a token uses. "
            "The penalty pulls every activation toward 0 by the same amount, large ones too (so "
            "they come out a little small), and training settles how many stay above 0: here a "
            f"held-out token has **{m.l0:.1f}** active features on average, of "
            f"{m.n_features:,}. A larger λ gives fewer active features and a rougher "
            "reconstruction."
        )
    st.markdown(splice_claim(m, l1=not spec.k).text)
    if (copying := nt.loss_lookahead_claim(ctx.config.causal)).made:
        st.warning(
            f"{copying.text} These losses say how much of that copying the SAE keeps, not how "
            "well the model predicts text."
        )
    st.markdown(dead_claim(m, log.dead_window_tokens).text)
    made_by = f"Trained as job {shown.job.name} on" if shown.job is not None else "Trained on"
    st.caption(
        f"{made_by} {log.tokens:,} activations at `{spec.hook}` from random windows of the "
        f"training split ({len(log.mse):,} steps of {log.tokens // max(1, len(log.mse)):,}); "
        f"measured on {m.tokens:,} held-out tokens of the validation split. " + resampling_note(log)
    )
    with st.expander("The training curve"):
        curve = cache.figure(charts.training_curve, log.mse, tuple(s for s, _ in log.resampled))
        present.plot(curve, key="sae_curve")


def _metrics(m) -> None:
    """Variance explained, active and dead features; the loss clean, spliced and ablated."""
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "Variance explained",
        f"{m.fve:.1%}",
        help="1 − Σ|x − x̂|² / Σ|x − mean x|² over held-out tokens: the share of the "
        "activations' spread the reconstruction keeps.",
    )
    m2.metric("Active per token", f"{m.l0:.1f}", help=f"L0: features above 0, of {m.n_features:,}")
    m3.metric("Alive / dead", f"{m.n_alive:,} / {m.n_dead:,}")
    r1, r2, r3 = st.columns(3)
    r1.metric("Loss, clean", f"{m.clean_loss:.3f}", help="nats per token on the held-out windows")
    r2.metric(
        "Loss, SAE spliced in", f"{m.spliced_loss:.3f}", help="x replaced by x̂ at every token"
    )
    r3.metric(
        "Loss, mean-ablated", f"{m.ablated_loss:.3f}", help="x replaced by its mean activation"
    )
