"""The Interventions page's cached computations and its grid-of-pills widget.

Each cached function takes plain values (a bundle id, token ids as a tuple, choices as tuples of
ints) and calls one function of viz_model.analysis.labs.interventions, so every student on the same
view shares one result. Nothing here changes the shared model: interventions are per call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st
import torch

from serving import jobs, retrain
from ui import cache, nav, state, teacher
from viz_model.analysis.labs import interventions as iv
from viz_model.model.sampling import SamplingSettings
from viz_model.text.data import load_corpus

VAL_TOKENS = 512  # tokens of validation text the loss is measured on (a few windows)


@cache.per_model
def validation_ids(bundle_id: str) -> tuple[list[int], bool]:
    """(token ids of the bundle's held-out text, True), or ([], False) when it does not say what
    it was trained on (the page then measures on the prompt)."""
    bundle = cache.bundle(bundle_id)
    text = iv.validation_text(bundle.meta)
    if not text:
        return [], False
    return bundle.tokenizer.encode(text), True


def windows(bundle_id: str, prompt_ids: Sequence[int]) -> torch.Tensor:
    """The validation windows (N, T + 1): of the held-out text, else of the prompt."""
    ids, found = validation_ids(bundle_id)
    n_ctx = cache.bundle(bundle_id).config.n_ctx
    return iv.validation_windows(ids if found else list(prompt_ids), n_ctx, VAL_TOKENS)


@cache.per_prompt
def means(bundle_id: str, ref: str, prompt_ids: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """Reference means (read-only, shared): over the validation text, or over the prompt."""
    model = cache.bundle(bundle_id).model
    if ref == "prompt":
        return iv.reference_means(model, torch.tensor(prompt_ids))
    return iv.reference_means(model, windows(bundle_id, prompt_ids)[:, :-1])


def ablation(heads, mlps, neurons, how) -> iv.Ablation:
    return iv.Ablation(tuple(heads), tuple(mlps), tuple(neurons), how)


@cache.per_model(spinner="Finding the training text's facts and knocking out each layer…", keep=4)
def fact_ablations(bundle_id: str) -> tuple[list, object] | None:
    """(facts, FactAblations) on the model's own training text (its training split), or None
    when the bundle does not say what it read."""
    from viz_model.analysis.labs import facts as fa
    from viz_model.text.data import VAL_FRACTION, load_text

    b = cache.bundle(bundle_id)
    data = b.meta.get("data")
    ids, found = validation_ids(bundle_id)
    if not data or not found:
        return None
    text = load_text(data)
    train = text[: int(len(text) * (1 - data.get("val_fraction", VAL_FRACTION)))]
    found_facts = fa.corpus_facts(train)
    if not found_facts:
        return found_facts, None
    reference = iv.validation_windows(ids, b.config.n_ctx)
    tok = b.tokenizer
    return found_facts, fa.fact_ablations(b.model, tok.encode, tok.decode, found_facts, reference)


@cache.per_prompt
def ablation_effect(
    bundle_id: str,
    ids: tuple[int, ...],
    heads: tuple,
    mlps: tuple,
    neurons: tuple,
    how: str,
    ref: str,
) -> iv.Effect:
    model = cache.bundle(bundle_id).model
    m = means(bundle_id, ref, ids) if how == "mean" else None
    hooks = iv.ablation_hooks(model, ablation(heads, mlps, neurons, how), m)
    return iv.effect(model, list(ids), windows(bundle_id, ids), hooks)


@cache.per_prompt
def head_sweep(bundle_id: str, ids: tuple[int, ...], how: str, ref: str) -> iv.HeadSweep:
    model = cache.bundle(bundle_id).model
    m = means(bundle_id, ref, ids) if how == "mean" else None
    return iv.head_sweep_stats(model, windows(bundle_id, ids), how, m)


@cache.per_prompt
def untrained_head_sweep(bundle_id: str, ids: tuple[int, ...], how: str, ref: str) -> iv.HeadSweep:
    """The same sweep on the same text through cache.untrained (means of its own for a mean
    ablation): how far a head of a model that learned nothing moves the loss."""
    model = cache.untrained(bundle_id).model
    m = None
    if how == "mean":
        text = torch.tensor(ids) if ref == "prompt" else windows(bundle_id, ids)[:, :-1]
        m = iv.reference_means(model, text)
    return iv.head_sweep_stats(model, windows(bundle_id, ids), how, m)


@cache.per_prompt
def suggested_experiment(bundle_id: str, ids: tuple[int, ...]) -> tuple[int, int, int]:
    """The page's default (end, position, token): where a one-token change moves the prediction."""
    bundle = cache.bundle(bundle_id)
    tok = bundle.tokenizer
    candidates = iv.candidate_tokens(tok.encode, tok.decode, list(ids))
    return iv.suggest_experiment(bundle.model, list(ids), candidates)


@cache.per_prompt
def suggested_corruption(bundle_id: str, ids: tuple[int, ...]) -> tuple[int, int]:
    """The default change for a prompt cut where the student chose."""
    bundle = cache.bundle(bundle_id)
    tok = bundle.tokenizer
    candidates = iv.candidate_tokens(tok.encode, tok.decode, list(ids))
    return iv.suggest_corruption(bundle.model, list(ids), candidates)


@cache.per_prompt
def patching(bundle_id: str, clean: tuple[int, ...], corrupted: tuple[int, ...]) -> iv.Patching:
    return iv.patching(cache.bundle(bundle_id).model, list(clean), list(corrupted))


@cache.per_prompt
def steering_vector(
    bundle_id: str, a: tuple[tuple[int, ...], ...], b: tuple[tuple[int, ...], ...], layer: int
) -> np.ndarray:
    model = cache.bundle(bundle_id).model
    return iv.steering_vector(model, [list(p) for p in a], [list(p) for p in b], layer).numpy()


@cache.per_prompt
def steered(
    bundle_id: str,
    ids: tuple[int, ...],
    a: tuple[tuple[int, ...], ...],
    b: tuple[tuple[int, ...], ...],
    layer: int,
    strength: float,
    n_tokens: int,
    seed: int,
) -> tuple[list[int], list[int]]:
    model = cache.bundle(bundle_id).model
    vector = torch.tensor(
        steering_vector(bundle_id, a, b, layer)
    )  # a copy: the cached one is shared
    return iv.steered_generation(
        model, list(ids), layer, vector, strength, n_tokens, seed, SamplingSettings()
    )


@cache.per_prompt
def positions(bundle_id: str, ids: tuple[int, ...], mode: str, seed: int) -> dict:
    """Surprisal of each prompt token, the next token, and the validation loss, with the
    position embeddings as trained and changed."""
    model = cache.bundle(bundle_id).model
    val = windows(bundle_id, ids)
    hooks = iv.position_hooks(model, mode, len(ids), seed)
    val_hooks = iv.position_hooks(model, mode, val.shape[1] - 1, seed)
    return {
        "before": iv.surprisals(model, list(ids)),
        "after": iv.surprisals(model, list(ids), hooks),
        "effect": iv.effect_from(model, list(ids), val, hooks, val_hooks),
    }


@cache.per_prompt
def steering_push(
    bundle_id: str,
    a: tuple[tuple[int, ...], ...],
    b: tuple[tuple[int, ...], ...],
    layer: int,
    strength: float,
) -> iv.SteeringPush:
    """The push towards A against alpha (the page's alpha included), and the random baseline."""
    model = cache.bundle(bundle_id).model
    vector = torch.tensor(
        steering_vector(bundle_id, a, b, layer)
    )  # a copy: the cached one is shared
    alphas = (*iv.STEER_ALPHAS, strength)
    return iv.steering_push(
        model, [list(p) for p in a], [list(p) for p in b], layer, vector, alphas
    )


@cache.per_prompt
def direction_report(
    bundle_id: str, a: tuple[tuple[int, ...], ...], b: tuple[tuple[int, ...], ...], layer: int
) -> iv.DirectionReport:
    vector = torch.tensor(
        steering_vector(bundle_id, a, b, layer)
    )  # a copy: the cached one is shared
    return iv.direction_report(cache.bundle(bundle_id).model, vector)


@cache.per_prompt
def steering_defaults(bundle_id: str, prompt: str) -> tuple[str, str]:
    """The default prompt sets A and B (iv.steering_defaults)."""
    return iv.steering_defaults(cache.bundle(bundle_id).meta, prompt, load_corpus)


def free_run_name(base: str) -> str:
    """base, or base-2, base-3, ...: the first name no run has yet (a name too long or unsafe
    for a run comes back as it is: the start then says what is wrong with it)."""
    for name in (base, *(f"{base}-{i}" for i in range(2, 100))):
        try:
            if not jobs.run_dir(name).exists():
                return name
        except jobs.JobError:
            return base
    return base


# ---- damage, then retrain -------------------------------------------------------------------


def retrain_form(ctx, chosen: iv.Ablation, ref: str) -> None:
    """Damage, then retrain: the ablation baked into a copy of the weights, trained on as a job
    (retrain.start_damaged: the teacher password and the server's caps apply), with a link to
    watch it on the Training page."""
    st.subheader("Damage, then retrain")
    st.markdown(
        "Bake the ablation above into a copy of the weights (a head's columns of $W_O$ set to 0, "
        "an MLP's output weights, a neuron's output column) and train the copy on the model's "
        "own data. Watch the loss jump, then recover, on the Training page: other parts learn to "
        "do the missing part's job, or it grows back. The learning rate carries on where the "
        "model's schedule ended (the Training page can raise it while the run trains)."
    )
    problem = None
    if chosen.empty:
        problem = "Choose what to ablate above first."
    elif not retrain.can_retrain(ctx.bundle.meta):
        problem = "This model does not say what it was trained on, so it cannot be retrained here."
    elif chosen.how == "mean" and not ctx.config.bias:
        problem = "Mean ablation needs biases to hold the mean; this model has none. Use zero."
    if problem:
        st.info(problem)
        return
    c1, c2, c3 = st.columns([2, 1, 1], vertical_alignment="bottom")
    name = c1.text_input(
        "Run name", free_run_name(f"{ctx.name}-damaged"), key="iv_run_name", max_chars=64
    )
    steps = c2.number_input("More steps", 10, retrain.MAX_STEPS, 300, step=50, key="iv_steps")
    auth = teacher.password_field("iv_password")  # the one resolver (ui/teacher.py)
    if c3.button("Start retraining", type="primary", key="iv_start", use_container_width=True):
        ref_means = means(ctx.bundle_id, ref, tuple(ctx.ids)) if chosen.how == "mean" else None
        damaged = iv.damaged_copy(ctx.model, chosen, ref_means)
        try:
            retrain.start_damaged(
                name,
                ctx.bundle.path,
                damaged,
                int(steps),
                f"{chosen.describe()} {chosen.how}-ablated",
                auth=auth,
            )
        except jobs.JobError as exc:
            st.error(str(exc))
            return
        st.session_state["t_run"] = name  # the Training page opens on this run
        st.success(f"Started “{name}”: {int(steps)} steps from the damaged copy.")
        training = nav.find("Training")
        st.page_link(
            training.file,
            label=f"Watch “{name}” recover on the Training page",
            icon=training.icon,
            query_params={"t_run": name},
        )


# ---- a grid of pills bound to one URL key ------------------------------------------------------


def pills_grid(
    rows: Sequence[str], options: Sequence[str], key: str, container=st
) -> list[tuple[int, int]]:
    """One multi-select row of pills per row label; the chosen (row, option index) pairs live
    in the URL under `key`: "row.option,..." (heads "0.1,1.3"), or "option,..." for one row."""
    flat = len(rows) == 1
    raw = state.url_str(key, "", 2000)
    if flat:
        chosen = [(0, i) for i in iv.parse_ints(raw, len(options))]
    else:
        chosen = iv.parse_heads(raw, len(rows), len(options))

    def copy_back() -> None:
        picked = [
            (r, list(options).index(o))
            for r in range(len(rows))
            for o in st.session_state.get(f"{state.widget_key(key)}_{r}") or []
        ]
        text = ",".join(str(o) for _, o in picked) if flat else iv.heads_to_url(picked)
        state.set_value(key, text)

    for r, label in enumerate(rows):
        wkey = f"{state.widget_key(key)}_{r}"
        st.session_state[wkey] = [options[o] for row, o in chosen if row == r]
        # the row's name beside its pills, not above: a 12-layer grid stays one screen high
        name, pills = container.columns([1, 3] if flat else [1, 4], vertical_alignment="center")
        name.markdown(label)
        pills.pills(
            label,
            list(options),
            selection_mode="multi",
            key=wkey,
            on_change=copy_back,
            label_visibility="collapsed",
        )
    return chosen
