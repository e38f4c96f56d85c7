"""Drawing a training run's history: the loss curves against the counting baselines, the
learning rate, the log loss beside accuracy at the saved snapshots, the gradient's health, the update it was trained with, and the samples it wrote as
it learned. Used for a finished bundle and for a run that is still training (the Training page),
so both read the same way; the gradient's health also on Training dynamics.
"""

from __future__ import annotations

from collections.abc import Hashable

import streamlit as st

from serving import models
from ui import cache, parts, present, state
from ui.charts import grad_health as health_charts
from ui.charts import training as charts
from viz_model.analysis import grad_health as gh
from viz_model.analysis import loss_accuracy as la
from viz_model.analysis import next_token as nt
from viz_model.analysis import training as tr
from viz_model.model.config import TrainConfig
from viz_model.training.optim import ADAM_EPS

BASELINES_NOTE = (
    "Grey lines: what counting alone scores on the same validation text. **blind guess**: every "
    "token equally likely (ln V). **unigram**: each token as often as it appears in the training "
    "text. **bigram**: each token given only the one before it. A curve below the bigram line has "
    "learned something counting pairs cannot."
)


def baselines_of(bundle_id: str) -> dict[str, float] | None:
    """Blind, unigram and bigram validation loss on a bundle's own data (None if not found);
    a snapshot shares its bundle's data, so it is keyed by the final model."""
    return _baselines(models.split_step(bundle_id)[0])


@cache.per_model(spinner="Counting the training text…")
def _baselines(final_id: str) -> dict[str, float] | None:
    found = tr.bundle_baselines(cache.bundle(final_id))
    return found.as_dict() if found else None


EVENTS_NOTE = (
    " Green dotted lines: where the run was changed as it trained (a new peak learning rate, a "
    "pause, a resume, more training, damage); the curve may bend there."
)


# A history is one version of a run's records: a bundle's id, or a live run's folder and the
# stat of its history file. Every student watching the same run shares one set of curves and one
# figure per version (a plotly figure costs ~10 ms to build; a live view redraws each second).
@cache.per_model(keep=32)
def _curves(version: Hashable, x: str, tokens_per_step: int, _history: list[dict]) -> tr.Curves:
    return tr.curves(_history, x, tokens_per_step)


def draw_curves(
    history: list[dict],
    version: Hashable,
    baselines: dict[str, float] | None,
    tokens_per_step: int,
    key: str,
) -> None:
    """The loss chart (x axis chosen by the student, carried in the URL under `key`) and, in an
    expander, the learning-rate schedule. `version` names this history (see _curves)."""
    x = state.radio(
        "Against",
        f"{key}_x",
        list(tr.X_AXES),
        "step",
        horizontal=True,
        format_func=lambda v: tr.X_AXES[v],
        help="Training steps, tokens read (steps × batch × context), or seconds of training.",
    )
    curves = _curves(version, x, tokens_per_step, history)
    if curves.train_x.size == 0:
        st.info("No training step has been recorded yet.")
        return
    present.plot(
        cache.figure(charts.loss_curves, curves, baselines),
        key=f"{key}_loss",
    )
    st.caption(
        "Blue: the loss on each training batch (averaged into a few hundred points). Red: the "
        "loss on held-out validation text the model never trains on; when it rises while blue "
        "falls, the model is memorising. "
        + (BASELINES_NOTE if baselines else "")
        + (EVENTS_NOTE if curves.events else "")
    )
    with parts.followed_expander("Learning rate schedule", f"{key}_lr"):
        st.markdown(
            "How big each step is: the learning rate $\\eta_t$ of the optimiser's update (the "
            "formula above). It warms up from 0 (large early steps on random weights are "
            "unstable), then decays along a cosine so the last steps only fine-tune."
        )
        lr_figure = cache.figure(charts.lr_curve, curves)
        present.plot(lr_figure, key=f"{key}_lr")


@cache.per_model(spinner="Scoring the snapshots on validation text…")
def _along(final_id: str) -> la.AlongTraining | None | str:
    """Log loss and accuracy at each snapshot on the same validation tokens; "no text" when the
    bundle's text cannot be found, None when it kept no snapshot."""
    bundle = cache.bundle(final_id)
    tokens = la.validation_slice(bundle)
    return "no text" if tokens is None else la.along_training(bundle, tokens)


def draw_accuracy(final_id: str, causal: bool, finetune: bool, key: str) -> None:
    """The log loss and the 0/1 loss (accuracy) of the saved snapshots on a fixed slice of
    validation text, with what they did and why training follows the first."""
    st.markdown(
        "**Log loss beside accuracy.** The loss above is the log loss (cross-entropy). The "
        "simplest score, **accuracy** (1 minus the 0/1 loss), counts the positions where the "
        "model's most likely token is the one that came next. Training never looks at it: "
        "accuracy does not move while $p(\\text{next})$ rises from 0.2 to 0.4 without becoming "
        "the most likely token, the log loss does, and the log loss is differentiable."
    )
    along = _along(final_id)
    if along is None:
        st.info(
            "This model kept no snapshots before its final weights, so its accuracy along "
            "training cannot be measured; only the recorded losses above exist."
        )
        return
    if isinstance(along, str):
        st.info(
            "This model does not say what text it trained on (or the text is gone), so its "
            "snapshots cannot be scored on its validation text."
        )
        return
    present.plot(
        cache.figure(charts.loss_and_accuracy, along.steps, along.loss, along.accuracy),
        key=f"{key}_accuracy",
    )
    vocab = cache.bundle(final_id).tokenizer.vocab_size
    st.caption(
        f"Each saved snapshot (the steps are log-spaced, so they are listed, not to scale) scored "
        f"on the first {along.n_tokens:,} positions of the validation text: the same tokens every "
        "time, so its log loss differs a little from the red curve above, which the run measured "
        "on random validation windows."
    )
    st.markdown(la.accuracy_claim(along, vocab, finetune).text)
    if (note := nt.loss_lookahead_claim(causal)).made:
        st.caption(note.text)


def draw_samples(history: list[dict], key: str, finetune: bool = False) -> None:
    """The text sampled from the weights at each sample step, one step at a time on a slider,
    under a caption that says what the slider spans (tr.samples_note); `finetune`: step 0 is
    the base model, not random weights."""
    found = tr.samples(history)
    steps = [step for step, _ in found]
    caption, slider_help = tr.samples_note(steps, finetune)
    if not found:
        st.info(caption)
        return
    st.caption(caption)
    texts = dict(found)
    if len(steps) == 1:
        step = steps[0]
    else:
        step = state.select_slider(
            "Sample written at step", f"{key}_sample", steps, steps[-1], help=slider_help
        )
    st.code(texts[step], language=None, wrap_lines=True)


def draw_update_rule(
    train_config: dict | None, label: str = "The update it was trained with", key: str = "rule"
) -> None:
    """The update the run was trained with (training/optim.py's AdamW or SGD, the schedule and
    the clipping), with the numbers of its own TrainConfig, as Streamlit's LaTeX, in an expander."""
    try:
        cfg = TrainConfig.from_dict(train_config or {})
    except (TypeError, ValueError):
        return
    timed = cfg.time_limit > 0
    name = tr.optimizer_name(cfg)
    with parts.followed_expander(f"{label} ({name}, with this run's numbers)", key):
        rule = tr.update_rule(cfg, ADAM_EPS, timed)
        for line in rule.lines:
            st.latex(line)
        decay = (
            f"Weight decay {cfg.weight_decay:g} applies to the weight matrices and embeddings; "
            "biases and LayerNorm gains have none"
            + (
                " (SGD adds it to the gradient, as torch.optim.SGD does)."
                if cfg.optimizer == "sgd"
                else "."
            )
        )
        warm = (
            f"The learning rate warms up from 0 over the first {cfg.warmup_steps:,} steps, then "
            "follows the cosine."
            if cfg.warmup_steps > 0
            else "No warm-up: the rate starts at its peak and follows the cosine from step 1."
        )
        st.caption(
            f"{decay} {warm} Batch {cfg.batch_size}: each step's gradient averages the loss over "
            "batch × context tokens."
            + (" The run was on the clock: the cosine follows the share of time used." * timed)
        )


@cache.per_model(keep=32)
def _health(version: Hashable, grad_clip: float, _history: list[dict]) -> gh.GradHealth | None:
    return gh.grad_health(_history, grad_clip)


HEALTH_NOTE = (
    "How big the gradient is in each layer before clipping, and how far one step moves each "
    "layer's weights, on log axes. Lines far apart by depth: the gradient **vanishes** (or "
    "grows) on its way down to block 0. Lines that climb by orders of magnitude: it is "
    "**exploding**. The black line above the red cap: **clipping** is at work, and the step "
    "uses the gradient scaled down to the cap."
)


def draw_grad_health(
    history: list[dict],
    version: Hashable,
    train_config: dict | None,
    key: str,
    marked_step: int | None = None,
    adapters: bool = False,
) -> None:
    """The run's gradient health (analysis/grad_health.py): the two charts in tabs and what its
    numbers say; one sentence when the run recorded none. `version` names this history (see
    _curves); `marked_step` draws a dotted line (Training dynamics: the sidebar's step);
    `adapters`: a LoRA run, whose numbers are its adapters' (gh.is_lora)."""
    try:
        cfg = TrainConfig.from_dict(train_config or {})
    except (TypeError, ValueError):
        cfg = TrainConfig()
    health = _health(version, cfg.grad_clip, history)
    if health is None:
        st.caption(gh.NOT_RECORDED)
        return
    st.markdown(HEALTH_NOTE)
    if adapters:
        st.info(gh.ADAPTERS_NOTE)
    norms_tab, updates_tab = parts.followed_tabs(
        ["Gradient norms", "Update sizes"], f"{key}_health"
    )
    present.plot(
        cache.figure(health_charts.gradient_norms, health, marked_step),
        key=f"{key}_grads",
        container=norms_tab,
    )
    if health.steps.size:
        present.plot(
            cache.figure(health_charts.update_ratios, health, marked_step),
            key=f"{key}_updates",
            container=updates_tab,
        )
    else:
        updates_tab.caption("No per-layer record yet.")
    claims = [gh.depth_claim(health), gh.growth_claim(health), gh.clipping_claim(health)]
    claims.append(gh.update_claim(health, adapters))
    st.markdown("\n".join(f"- {claim.text}" for claim in claims))
    st.caption(
        f"The whole gradient's norm is recorded at every step, each layer's every "
        f"{cfg.health_every:,} steps (`health_every`). Blocks have the same shape, so their "
        f"norms compare directly; the embeddings and the output layer (dashed, grey) do not. "
        f"**Vanishing** is said when, over the last quarter of the records, the top block's "
        f"median norm is at least {gh.DEPTH_RATIO:g} times block 0's; **exploding** when the "
        f"median norm of the last quarter of the steps is at least {gh.GROWTH_RATIO:g} times the "
        f"first quarter's (or the gradient became NaN); an update ratio is called large or small "
        f"beyond a factor of {gh.UPDATE_BAND:g} from the rule of thumb."
    )


def draw_claims(
    history: list[dict],
    baselines: dict[str, float] | None,
    promised: dict | None = None,
    causal: bool = True,
) -> None:
    """What the run's numbers say: did the validation loss fall, where it sits among the counting
    baselines, and (for a run started here) its speed against the estimate made before Start.
    Each sentence is a claim computed from the numbers (analysis/training.py)."""
    lines = [tr.loss_claim(history).text, tr.baseline_claim(history, baselines, causal).text]
    low_high = (promised or {}).get("steps_per_s")
    achieved = tr.achieved_speed(history)
    if isinstance(low_high, list) and len(low_high) == 2 and achieved:
        lines.append(tr.speed_claim(float(low_high[0]), float(low_high[1]), *achieved).text)
    st.markdown("\n".join(f"- {line}" for line in lines))
