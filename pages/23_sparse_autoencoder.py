"""Sparse autoencoder: a dictionary of directions learned from one layer's activations on the
model's own training text, its reconstruction measured in the model's loss, and its features read:
top snippets, promoted tokens, activation along the prompt, steering."""

from dataclasses import astuple, dataclass, replace

import numpy as np
import streamlit as st

import ui
from serving import models
from ui import cache, corpus, present, sae_job_panel, scrubber, state
from ui.charts import sae as charts
from ui.charts.common import show_whitespace
from ui.charts.neurons import direction_bars, snippets_html
from viz_model.analysis import next_token as nt
from viz_model.analysis import sae_files
from viz_model.analysis.sae.activations import hook_name
from viz_model.analysis.sae.claims import (
    dead_claim,
    feature_match_claim,
    match_claim,
    resampling_note,
    splice_claim,
    steering_claim,
)
from viz_model.analysis.sae.features import (
    DENSE,
    TYPICAL,
    activations_along,
    alive_by_frequency,
    default_feature,
    feature_in_windows,
    is_dense,
    promoted_tokens,
    readout_path,
    top_snippets,
)
from viz_model.analysis.sae.features import steered as sae_steered
from viz_model.analysis.sae.lab import Lab
from viz_model.analysis.sae.lab import lab as train_lab
from viz_model.analysis.sae.matching import MATCH_WINDOWS, Matches, match_labs, same_weights
from viz_model.analysis.sae.training import SAEConfig
from viz_model.analysis.tokens import token_text
from viz_model.analysis.untrained import fresh_model
from viz_model.model.sampling import SamplingSettings
from viz_model.text.data import VAL_FRACTION

FEATURES = (256, 512, 1024, 2048)
TOP_K = (4, 8, 16, 32)
L1_COEFFS = (0.001, 0.003, 0.01, 0.03, 0.1)
SPARSITY = {"topk": "top-k", "l1": "L1 penalty"}
TRAIN_TOKENS = (25_000, 50_000, 100_000, 200_000)
MAX_PARAMS = 30_000_000  # larger models take minutes to read 100k tokens on a CPU core
N_SNIPPETS, STEER_TOKENS = 6, 80
SITE_LABELS = {"resid_post": "residual stream after it", "mlp_out": "its MLP output"}

ctx = ui.context()
tok, cfg = ctx.tokenizer, ctx.config

st.markdown(
    "A layer of width D can hold more than D features if each is used rarely: a token needs only "
    "a few at a time, so many directions can share the space with little interference "
    "(**superposition**). A **sparse autoencoder** (SAE) tries to undo it: it learns a "
    "dictionary of F > D directions and rewrites each activation x as a sum of a few of them. "
    "Each feature's activation f_i says how much of direction i the token carries, and most are "
    "0. If the dictionary is good, each direction means one thing, which a single neuron often "
    "does not."
)
st.latex(r"f = \mathrm{ReLU}\big(W_{enc}\,(x - b_{dec})/s + b_{enc}\big)")
st.latex(r"\hat x = s\,W_{dec}\, f + b_{dec} = b_{dec} + s \sum_i f_i\, d_i")
st.caption(
    "W_dec's columns d_i have length 1: the directions. s is a fixed scale that makes the "
    "activations about 1 per dimension. Training minimises the squared error |x − x̂|²/s². "
    "Sparsity comes either from **top-k** (only the k largest pre-activations of each token are "
    "kept, the rest set to 0) or from an **L1 penalty** λ Σ f_i added to the loss. Features "
    "that stop firing are re-initialised toward tokens the SAE reconstructs badly (resampling, "
    "as in Anthropic's “Towards Monosemanticity”)."
)

text = corpus.text_of(ctx.bundle)
if text is None:
    st.info(
        "This model's training text cannot be found (the model does not say what it was "
        "trained on, or an uploaded file is gone), so there is nothing to train an SAE on."
    )
    st.stop()
if ctx.model.n_params() > MAX_PARAMS:
    st.info(
        f"This model has {ctx.model.n_params():,} parameters: reading enough tokens to train an "
        "SAE would take minutes here. Choose a smaller model."
    )
    st.stop()

sites = ["resid_post"] if cfg.attn_only else ["resid_post", "mlp_out"]


@dataclass(frozen=True)
class Spec:
    """Everything a trained SAE depends on: k > 0 for top-k, else the L1 coefficient l1; `job`
    names a finished job's folder and its file's mtime ("" for an SAE trained in the page)."""

    bundle_id: str
    layer: int
    site: str
    n_features: int
    k: int
    l1: float
    n_train: int
    seed: int
    job: str = ""

    @property
    def hook(self) -> str:
        return hook_name(self.layer, self.site)

    @property
    def sparsity(self) -> str:
        return f"top-{self.k}" if self.k else f"L1 λ = {self.l1:g}"


def choose_in_page() -> Spec:
    """The widgets for an SAE trained in the page run (every choice in the URL)."""
    c1, c2, c3 = st.columns(3)
    default_layer = cfg.n_layer // 2 - (cfg.n_layer > 1)
    layer = state.slider("Block", "sae_layer", 0, cfg.n_layer - 1, default_layer, container=c1)
    site = state.radio(
        "Activation", "sae_site", sites, "resid_post", container=c1, format_func=SITE_LABELS.get
    )
    n_features = state.select_slider("Dictionary size F", "sae_f", FEATURES, 512, container=c2)
    sparsity = state.radio(
        "Sparsity",
        "sae_sparsity",
        list(SPARSITY),
        "topk",
        container=c2,
        format_func=SPARSITY.get,
        horizontal=True,
    )
    if sparsity == "topk":
        k, l1 = (
            state.select_slider("Active features per token k", "sae_k", TOP_K, 16, container=c2),
            0.0,
        )
    else:
        help_l1 = "The loss adds λ times the sum of the feature activations."
        l1 = state.select_slider(
            "L1 coefficient λ", "sae_l1", L1_COEFFS, 0.01, container=c2, help=help_l1
        )
        k = 0
    n_train = state.select_slider(
        "Training tokens",
        "sae_tokens",
        TRAIN_TOKENS,
        100_000,
        container=c3,
        format_func=lambda n: f"{n // 1000}k",
    )
    seed = state.number_input("Seed", "sae_seed", 0, 999, 0, container=c3)
    return Spec(ctx.bundle_id, layer, site, n_features, k, float(l1), n_train, seed)


def job_spec(view) -> Spec:
    """The Spec of a finished job: its settings, and its SAE file's mtime (a redo reloads)."""
    job = sae_job_panel.settings_of(view)
    mtime = (view.path / sae_files.SAE_FILE).stat().st_mtime_ns if view.path.is_dir() else 0
    l1 = 0.0 if job.k else job.l1_coeff
    return Spec(
        ctx.bundle_id,
        job.layer,
        job.site,
        job.n_features,
        job.k,
        l1,
        job.tokens,
        job.seed,
        f"{view.path}@{mtime}",
    )


def _train_here(bundle_id: str, model, layer, site, n_features, k, l1, n_train, seed) -> Lab:
    """An SAE trained in the page on `model`'s activations, over the text of `bundle_id`."""
    bundle = cache.bundle(bundle_id)
    config = SAEConfig(n_features=n_features, k=k, l1_coeff=l1 or 3e-2, seed=seed)
    hook = hook_name(layer, site)
    held_out = corpus.source_of(bundle).get("val_fraction", VAL_FRACTION)
    text = corpus.text_of(bundle)
    return train_lab(model, bundle.tokenizer, text, hook, config, n_train, val_fraction=held_out)


@cache.per_model(keep=2)
def _trained(
    bundle_id: str,
    layer: int,
    site: str,
    n_features: int,
    k: int,
    l1: float,
    n_train: int,
    seed: int,
    job: str,
) -> Lab:
    bundle = cache.bundle(bundle_id)
    if job:  # a finished job's lab, read and checked (sae_files.SAEFileError if damaged)
        return sae_files.load_lab(job.rsplit("@", 1)[0], bundle.model.cfg.d_model)
    return _train_here(bundle_id, bundle.model, layer, site, n_features, k, l1, n_train, seed)


@cache.per_model(keep=2)
def _untrained_lab(
    bundle_id: str,
    layer: int,
    site: str,
    n_features: int,
    k: int,
    l1: float,
    n_train: int,
    seed: int,
    fresh_seed: int = -1,
) -> Lab:
    """The same SAE trained on the model's shape with random weights: cache.untrained's, or a
    fresh initialisation under `fresh_seed` when that is not -1 (analysis/untrained.py)."""
    twin = _blank_model(bundle_id, fresh_seed)
    return _train_here(bundle_id, twin, layer, site, n_features, k, l1, n_train, seed)


def _blank_model(bundle_id: str, fresh_seed: int):
    if fresh_seed < 0:
        return cache.untrained(bundle_id).model
    return fresh_model(cache.bundle(bundle_id).config, fresh_seed)


def control_seed(spec: Spec) -> int:
    """-1: the matching's model that learned nothing is the untrained twin; else the seed of a
    fresh initialisation, used when the model on screen is that twin itself (its step-0
    snapshot): an SAE matched against one trained the same way on the same weights finds every
    feature again, which says nothing."""
    final_id = models.split_step(spec.bundle_id)[0]
    if not same_weights(cache.bundle(spec.bundle_id).model, cache.untrained(final_id).model):
        return -1
    return int((cache.bundle(final_id).train_config or {}).get("seed", 0)) + 1


def control_source(spec: Spec) -> str:
    """The model that learned nothing the matching is checked against, in words."""
    seed = control_seed(spec)
    final_id = models.split_step(spec.bundle_id)[0]
    if seed < 0:
        return cache.untrained(final_id).source
    return f"a fresh initialisation (seed {seed}; the model on screen is its own random weights)"


def trained(spec: Spec) -> Lab:
    """The SAE `spec` describes, trained (or read) once per server (plain values key the cache)."""
    return _trained(*astuple(spec))


@cache.per_prompt
def feature_snippets(spec: Spec, feature: int) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The feature's top windows, one each: (window, position) pairs and activations (n, T)."""
    found = trained(spec)
    where = top_snippets(found.table, feature, N_SNIPPETS)
    rows = found.browse.ids[[w for w, _ in where]]
    model = cache.bundle(spec.bundle_id).model
    return where, feature_in_windows(model, found.sae, spec.hook, rows, feature)


@cache.per_prompt
def matched(spec: Spec, other: Spec) -> Matches:
    """The SAE on screen's features matched against another's (another training step's), and
    against one trained the same way (`other`'s settings) on random weights of the same shape."""
    final_id = models.split_step(spec.bundle_id)[0]
    seed = control_seed(spec)
    blank = _untrained_lab(final_id, *astuple(other)[1:-1], fresh_seed=seed)
    return match_labs(
        cache.bundle(spec.bundle_id).model,
        trained(spec),
        cache.bundle(other.bundle_id).model,
        trained(other),
        untrained=(_blank_model(final_id, seed), blank),
    )


@cache.per_prompt
def along(spec: Spec, ids: tuple[int, ...]) -> np.ndarray:
    found = trained(spec)
    return activations_along(cache.bundle(spec.bundle_id).model, found.sae, spec.hook, list(ids))


@cache.per_prompt
def steered(spec: Spec, ids: tuple[int, ...], feature: int, alpha: float, gen_seed: int):
    found = trained(spec)
    vector = alpha * float(found.table.max_act[feature]) * found.sae.direction(feature)
    model = cache.bundle(spec.bundle_id).model
    settings = SamplingSettings(temperature=0.8)
    return sae_steered(model, list(ids), spec.hook, vector, STEER_TOKENS, gen_seed, settings)


job_view = sae_job_panel.choose(ctx.bundle_id)
job_auth = sae_job_panel.password()
sae_job_panel.watch(ctx.bundle_id, job_auth)
sae_job_panel.deleter(ctx.bundle_id, job_auth)
if job_view is None:
    spec = choose_in_page()
    model_name = models.path_of(ctx.bundle_id).name
    sae_job_panel.launcher(
        ctx.bundle_id, model_name, spec.layer, spec.site, spec.k, spec.l1, spec.seed, job_auth
    )
    with st.spinner(f"Training an SAE on {spec.n_train:,} tokens of the training text (20–40 s)…"):
        lab = trained(spec)
else:
    spec = job_spec(job_view)
    try:
        lab = trained(spec)
    except sae_files.SAEFileError as exc:
        st.warning(
            f"The SAE of job {job_view.name} cannot be opened: {exc}. Choose another SAE above, "
            "or train one here."
        )
        st.stop()
m, log = lab.metrics, lab.log

st.subheader("How good is the dictionary?")
m1, m2, m3 = st.columns(3)
m1.metric(
    "Variance explained",
    f"{m.fve:.1%}",
    help="1 − Σ|x − x̂|² / Σ|x − mean x|² over held-out tokens: the share of the activations' "
    "spread the reconstruction keeps.",
)
m2.metric("Active per token", f"{m.l0:.1f}", help=f"L0: features above 0, of {m.n_features:,}")
m3.metric("Alive / dead", f"{m.n_alive:,} / {m.n_dead:,}")
r1, r2, r3 = st.columns(3)
r1.metric("Loss, clean", f"{m.clean_loss:.3f}", help="nats per token on the held-out windows")
r2.metric("Loss, SAE spliced in", f"{m.spliced_loss:.3f}", help="x replaced by x̂ at every token")
r3.metric("Loss, mean-ablated", f"{m.ablated_loss:.3f}", help="x replaced by its mean activation")
if not spec.k:
    st.markdown(
        f"**L1 sparsity** (λ = {spec.l1:g}): nothing caps how many features a token uses. The "
        "penalty pulls every activation toward 0 by the same amount, large ones too (so they "
        "come out a little small), and training settles how many stay above 0: here a "
        f"held-out token has **{m.l0:.1f}** active features on average, of {m.n_features:,}. "
        "A larger λ gives fewer active features and a rougher reconstruction."
    )
st.markdown(splice_claim(m, l1=not spec.k).text)
if (copying := nt.loss_lookahead_claim(ctx.config.causal)).made:
    st.warning(
        f"{copying.text} These losses say how much of that copying the SAE keeps, not how well "
        "the model predicts text."
    )
st.markdown(dead_claim(m, log.dead_window_tokens).text)
made_by = f"Trained as job {job_view.name} on" if job_view is not None else "Trained on"
st.caption(
    f"{made_by} {log.tokens:,} activations at `{spec.hook}` from random windows of the "
    f"training split ({len(log.mse):,} steps of {log.tokens // max(1, len(log.mse)):,}); "
    f"measured on {m.tokens:,} held-out tokens of the validation split. " + resampling_note(log)
)
with st.expander("The training curve"):
    curve = cache.figure(charts.training_curve, log.mse, tuple(s for s, _ in log.resampled))
    present.plot(curve, key="sae_curve")

st.subheader("Read a feature")
alive = alive_by_frequency(lab.table)
if not alive:
    st.warning("No feature fired on the browsing windows: train on more tokens.")
    st.stop()
freq, peak = lab.table.freq, lab.table.max_act
# another SAE (a job's, or other settings) numbers its features afresh: its feature 212 is not
# this one's, so a choice made on the last SAE is dropped (a link's choice, on first open, stays)
state.reset_on_change("sae_feat", astuple(spec), "_sae_feat_of")


def feature_label(f: int) -> str:
    dense = " (dense: usually not one concept)" if is_dense(lab.table, f) else ""
    return f"#{f}: fires on {freq[f]:.2%} of tokens{dense}, largest {peak[f]:.2f}"


feature = state.selectbox(
    "Feature (most frequent first)",
    "sae_feat",
    alive,
    default_feature(lab.table),
    format_func=feature_label,
    help=f"A feature firing on more than {DENSE:.0%} of tokens is marked dense. The page opens "
    f"on the most frequent feature firing on at most {TYPICAL:.0%} of them.",
)
st.markdown(
    f"**Where feature {feature} fires hardest** in {len(lab.browse.texts)} windows spread "
    "through the training text (the strongest token outlined, every token shaded by the "
    "feature's activation):"
)
where, acts = feature_snippets(spec, feature)
rows = [(lab.browse.texts[w], acts[i], p) for i, (w, p) in enumerate(where)]
st.html(snippets_html(rows))

raised, lowered = promoted_tokens(ctx.model, lab.sae, feature, k=8)
bars = cache.figure(
    direction_bars,
    [token_text(tok, i) for i, _ in raised],
    np.array([v for _, v in raised]),
    [token_text(tok, i) for i, _ in lowered],
    np.array([v for _, v in lowered]),
    f"The next tokens feature {feature} promotes and suppresses",
)
present.plot(bars, key="sae_promoted")
st.caption(
    f"The feature's decoder direction read through {readout_path(ctx.model)}: the change in "
    "each token's logit per unit of activation, red raised, blue lowered. It skips the blocks "
    "after this one, which also read the direction."
)
values = along(spec, tuple(ctx.ids))[:, feature]
top = int(np.argmax(values))
if values[top] > 0:
    present.plot(cache.figure(charts.along_prompt, values, ctx.labels, feature), key="sae_along")
    st.caption(
        f"Feature {feature} fires on {int((values > 0).sum())} of your prompt's {len(values)} "
        f"tokens; most at token {top}, “{show_whitespace(ctx.pieces[top])}” ({values[top]:.2f})."
    )
else:
    st.caption(
        f"Feature {feature} does not fire on any of your prompt's {len(values)} tokens: put "
        "text like its snippets above into the prompt to see it along the text."
    )

st.subheader("Steer with the feature")
s1, s2 = st.columns(2)
alpha = state.slider(
    "Strength α",
    "sae_alpha",
    -10.0,
    10.0,
    2.0,
    step=0.5,
    container=s1,
    help="α times the feature's largest activation seen, along its direction, added at "
    "every position while generating.",
)
gen_seed = state.number_input("Sampling seed", "sae_gen_seed", 0, 999, 0, container=s2)
plain, pushed = steered(spec, tuple(ctx.ids), feature, float(alpha), gen_seed)
g1, g2 = st.columns(2)
g1.markdown("**Without steering**")
g1.code(tok.decode(plain), language=None, wrap_lines=True)
g2.markdown(f"**With feature {feature} × {alpha:g}**")
g2.code(tok.decode(pushed), language=None, wrap_lines=True)
st.markdown(steering_claim(plain, pushed, float(alpha)).text)

st.subheader("Across training")
options, final = scrubber.step_options(ctx.bundle)
final_id, here = models.split_step(ctx.bundle_id)
here = final if here is None else here
others = [step for step in options if step != here]
if not others:
    st.caption("This model kept no other training snapshot to compare with.")
elif state.toggle(
    "Train a second SAE, same settings, on the model at another training step, and match the "
    "features",
    "sae_cmp",
):
    middle = others[len(others) // 2]
    other = state.select_slider("Training step to compare with", "sae_snap", others, middle)
    other_id = final_id if other == final else f"{final_id}#{other}"
    # a job's SAE is matched against one trained here: same F and sparsity, the page's tokens
    other_spec = replace(
        spec, bundle_id=other_id, job="", n_train=min(spec.n_train, TRAIN_TOKENS[-1])
    )
    if job_view is not None:
        st.caption(
            f"The SAE for step {other:,} is trained here, in the page, with this job's settings "
            f"but on {other_spec.n_train:,} tokens (the most the page trains on)."
        )
    with st.spinner(f"Training an SAE on the model at step {other:,} and matching features…"):
        found = matched(spec, other_spec)
    st.markdown(
        match_claim(
            found.r,
            found.chance,
            found.alive,
            other,
            found.tokens,
            untrained=found.untrained,
            later=other > here,
        ).text
    )
    j = int(found.best[feature])
    st.markdown(feature_match_claim(feature, found, other).text)
    other_lab = trained(other_spec)
    where_b, acts_b = feature_snippets(other_spec, j)
    if where_b:
        st.markdown(f"Where its closest feature at step {other:,}, feature {j}, fires hardest:")
        rows_b = [(other_lab.browse.texts[w], acts_b[i], p) for i, (w, p) in enumerate(where_b)]
        st.html(snippets_html(rows_b))
    st.caption(
        f"Matched by how the two SAEs' activations correlate over the same "
        f"{MATCH_WINDOWS * lab.browse.ids.shape[1]:,} tokens of the training text (not by their "
        "directions: the residual stream's axes can turn between training steps). Controls: the "
        "same matching with one side's tokens shuffled, and against an SAE trained the same way "
        f"on {control_source(spec)}, the same shape with random weights."
    )

st.info(
    "What this is not: an SAE trained in half a minute (or a job's few minutes) on a small "
    "model is small and quickly trained, so its features are rough: some are split or mixed, and the frequent "
    "ones are often just “this letter” or “start of a word”. Research SAEs train on hundreds "
    "of millions of tokens. The promoted tokens read the direction straight into the output, "
    "skipping the blocks after this one, and steering adds a fixed vector at every position, "
    "which can damage the text as well as push it."
)
