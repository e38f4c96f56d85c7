"""The Training page's "Set up a new run": data, tokenizer, model, training, what the run will cost
(measured on this machine), a name, and Start.

    started = training_setup.draw_setup(auth)   # the run started on this rerun; auth: ui.teacher

Every choice is carried in the URL under a "t_" key, so a teacher shares one link and every
laptop sets up the same run; pasted and uploaded text are not (a link cannot carry a file).
Whatever would make Start fail (a shape the model refuses, text that fails its checks, a server
cap, a taken name) is said where it arises, and Start stays disabled until it is fixed.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import streamlit as st

from serving import jobs
from ui import cache, classroom, families, state, training_finetune
from viz_model.analysis.training import OPTIMIZER_NAMES
from viz_model.model.config import (
    ACT_LABELS,
    ACTS,
    MAX_CTX,
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_VOCAB,
    MLPS,
    NORM_KINDS,
    NORMS,
    OPTIMIZER_TRAINING,
    OPTIMIZERS,
    POSITIONS,
    PRESET_TRAINING,
    PRESETS,
    GPTConfig,
    TrainConfig,
    preset,
)
from viz_model.model.families import config_from_dict, config_to_dict
from viz_model.model.recurrent_config import (
    FAMILIES,
    FAMILY_LABELS,
    FAMILY_TEXT,
    MAX_KERNEL,
    RecurrentConfig,
    preset_shape,
)
from viz_model.text.data import (
    CORPORA,
    MAX_UPLOAD_BYTES,
    MIN_TRAIN_CHARS,
    TASKS,
    DataError,
    load_text,
    validate_user_text,
)
from viz_model.text.tokenization import DEFAULT_VOCAB
from viz_model.training import estimate
from viz_model.training.optim import state_floats
from viz_model.training.settings import RunSettings, estimate_params, model_shape

SOURCES = {"corpus": "Shakespeare", "task": "A synthetic task", "own": "Your own text"}
OWN = {"paste": "Paste it", "upload": "Upload a .txt"}
TOKENIZERS = {"char": "Characters", "bpe": "BPE", "word": "Words"}
TOKENIZER_NOTES = {
    "char": "One token per character: a tiny vocabulary, long sequences.",
    "bpe": "Frequent byte pairs merged into tokens, as in GPT-2: any text, shorter sequences.",
    "word": "One token per word or punctuation mark; words it never saw become <unk>.",
}
PRESET_NOTES = {
    "tiny": "the smallest: trains in seconds, learns little",
    "small": "the command line's default",
    "medium": "the largest: slow on a laptop CPU",
    "attn-only-2l": "attention only: where induction heads form (try the repeat task)",
    "quick": "tuned for a one-minute run in class",
}
BUDGETS = {"minutes": "Minutes", "steps": "Steps"}
DEFAULT_PRESET = "quick"
DEFAULT_NAME = "our-model"
MAX_BATCH = 1024
# The speed is timed on at most this many tokens a step (batch cut down, time per token kept):
# a large batch would hold the page for seconds and measure nothing the smaller one does not.
MEASURE_TOKENS = 2048
MEASURE_MAX_BYTES = 1_000_000_000  # a shape needing more than this is not timed in the server
# The model's fields a preset sets: reset to the new preset's values when it changes.
SHAPE_KEYS = ("n_layer", "n_head", "d_model", "n_ctx", "pos", "norm", "attn_only")
BLOCK_KEYS = ("norm_kind", "residual", "mlp", "act", "n_kv_heads")  # the block's parts
CUSTOM_KEYS = (*SHAPE_KEYS, *BLOCK_KEYS, "tie_embeddings", "dropout")
# How the set-up form names each choice: the lecture's word, then the field's value.
POSITION_LABELS = {
    "learned": "learned (GPT-2)",
    "sinusoidal": "sinusoidal (2017)",
    "none": "none",
    "rope": "RoPE (Llama)",
    "alibi": "ALiBi",
}
NORM_KIND_LABELS = {"layernorm": "LayerNorm (GPT-2)", "rmsnorm": "RMSNorm (Llama)", "none": "none"}
MLP_LABELS = {"standard": "standard", "gated": "gated (GLU)"}
PRESET_DEPENDENT = (*(f"t_{k}" for k in CUSTOM_KEYS), "t_kernel", "t_batch", "t_lr")


STARTS = {"scratch": "A new model", "finetune": "A trained model (fine-tune)"}


def draw_setup(auth: jobs.Auth) -> str | None:
    """Draw the set-up form; return the name of the run it started on this rerun, else None."""
    start = state.radio(
        "Start from",
        "t_from",
        list(STARTS),
        "scratch",
        format_func=STARTS.get,
        horizontal=True,
        help="A new model starts from random weights; a fine-tune starts from a model of this "
        "server and trains it on new text, all of it or with LoRA.",
    )
    if start == "finetune":
        return _finetune_setup(auth)
    left, right = st.columns(2)
    with left:
        source, text, data_problem = _data()
    with right:
        tokenizer, vocab = _tokenizer()
    left, right = st.columns(2)
    with left:
        family, preset_name, custom = _preset()
        copying_gpt = family == "gpt" and preset_name != REPEAT_PRESET
        if source.get("task") == "repeat" and copying_gpt and not custom:
            st.info(
                f"Copying needs two attention layers and little else: choose **{REPEAT_PRESET}** "
                "for this task: in a run of about a minute on a laptop it can form an induction head "
                "(Training dynamics measures whether yours did); a model with MLPs tends to spend "
                "the minute on letter frequencies."
            )
    with right:
        train, minutes = _training(preset_name)
    if family != "gpt":
        overrides, shape_problem = _family_shape(family, preset_name) if custom else ({}, None)
    else:
        overrides, shape_problem = _custom_shape(preset_name) if custom else ({}, None)
    problems = [p for p in (data_problem, shape_problem) if p]
    settings = None
    if not problems:
        try:
            settings = RunSettings(
                **source,
                tokenizer=tokenizer,
                vocab_size=vocab,
                preset=preset_name,
                model=overrides,
                train=train,
                minutes=minutes,
                family=family,
            )
        except ValueError as exc:
            problems.append(str(exc))
            st.error(str(exc))
    return _costs_then_start(settings, text, auth, problems)


def _costs_then_start(
    settings: RunSettings | None, text: str | None, auth: jobs.Auth, problems: list[str]
) -> str | None:
    """What the run will cost (or what to fix first), then its name and Start: both forms end so."""
    st.markdown("#### Before you start")
    promised = None
    if settings is None:
        st.info("Fix what is marked above to see what this run will cost.")
    else:
        refusals, promised = _costs(settings, text)
        problems += refusals
    return _name_and_start(settings, text, auth, problems, promised)


def _finetune_setup(auth: jobs.Auth) -> str | None:
    """The fine-tune form (ui/training_finetune.py), then the same costs, name and Start."""
    settings, text, problems = training_finetune.draw_form(_data)
    return _costs_then_start(settings, text, auth, problems)


# ---- the four choices ---------------------------------------------------------------------------


def _data() -> tuple[dict[str, Any], str | None, str | None]:
    """(the RunSettings data fields, the user's checked text or None, what is wrong or None)."""
    st.markdown("**Data**")
    kind = state.radio("Train on", "t_data", list(SOURCES), "corpus", format_func=SOURCES.get)
    if kind == "corpus":
        st.caption(CORPORA["shakespeare"])
        return {"corpus": "shakespeare"}, None, None
    if kind == "task":
        task = state.selectbox("Task", "t_task", list(TASKS), "repeat")
        st.caption(TASKS[task])
        return {"task": task}, None, None
    how = state.radio(
        "Your text", "t_own", list(OWN), "paste", format_func=OWN.get, horizontal=True
    )
    st.caption(
        "Your text is not carried in the page's link: each laptop pastes or uploads its own."
    )
    if how == "paste":
        raw = st.text_area("Text to train on", key="t_paste", height=110)
        label = "pasted text"
    else:
        upload = st.file_uploader(
            "A plain-text file",
            type=["txt"],
            key="t_upload",
            max_upload_size=math.ceil(MAX_UPLOAD_BYTES / 1e6),
        )
        raw, label = (upload.getvalue(), upload.name) if upload else (None, "")
    if not raw:
        need = f"Give at least {MIN_TRAIN_CHARS:,} characters of text to train on."
        if how == "upload":  # the browser refuses a larger file with a red mark and a tooltip
            need += (
                f" A file may be at most {MAX_UPLOAD_BYTES / 1e6:g} MB; a larger one is not sent."
            )
        st.info(need)
        return {"text_file": label or "text"}, None, need
    try:
        text = validate_user_text(raw)
    except DataError as exc:
        st.error(str(exc))
        return {"text_file": label}, None, str(exc)
    st.caption(f"{len(text):,} characters, {len(set(text)):,} distinct.")
    return {"text_file": label}, text, None


def _tokenizer() -> tuple[str, int | None]:
    st.markdown("**Tokenizer**")
    kind = state.radio(
        "Split the text into", "t_tok", list(TOKENIZERS), "char", format_func=TOKENIZERS.get
    )
    st.caption(TOKENIZER_NOTES[kind])
    if kind == "char":
        return kind, None
    low = 256 if kind == "bpe" else 2
    vocab = state.number_input(
        "Vocabulary size", "t_vocab", low, MAX_VOCAB, DEFAULT_VOCAB[kind], step=64
    )
    return kind, vocab


def _preset() -> tuple[str, str, bool]:
    """The model family, the preset and whether its shape is customised; a new family or preset
    resets the fields it sets."""
    st.markdown("**Model**")
    family = state.selectbox(
        "Family",
        "t_family",
        list(FAMILIES),
        "gpt",
        format_func=FAMILY_LABELS.get,
        help="The kind of network. The others train on the same data, tokenizer and budget; "
        "each preset gives them about the GPT preset's number of weights.",
    )
    name = state.selectbox("Preset", "t_preset", list(PRESETS), DEFAULT_PRESET)
    if family == "gpt":
        cfg = preset(name, 2)
        st.caption(
            f"{PRESET_NOTES.get(name, name)}: {cfg.n_layer} layers × {cfg.n_head} heads, "
            f"d_model {cfg.d_model}, context {cfg.n_ctx}" + (", attention only" * cfg.attn_only)
        )
    else:
        st.caption(_family_caption(RecurrentConfig(family, 2, **preset_shape(family, name))))
    seen = st.session_state.get("_t_preset_seen")
    name_seen = f"{family}/{name}"
    if seen is not None and seen != name_seen:
        for key in PRESET_DEPENDENT:
            st.session_state.pop(key, None)
            if key in st.query_params:
                del st.query_params[key]
    st.session_state["_t_preset_seen"] = name_seen
    custom = state.toggle("Customise the shape", "t_custom", False)
    return family, name, custom


def _family_caption(cfg: RecurrentConfig) -> str:
    """A family's shape for the preset, in words: what it is, its layers, what it reads."""
    text = families.a_family(cfg.family)
    text = text[0].upper() + text[1:]
    text += f", {FAMILY_TEXT[cfg.family]}: {cfg.n_layer} layers of width {cfg.d_model}, "
    text += f"trained on windows of {cfg.n_ctx} tokens"
    if cfg.receptive_field is not None:
        text += f", reading the last {cfg.receptive_field}"
    return text + ". Heads, positions and MLPs are a GPT's: this model has none."


def _family_shape(family: str, preset_name: str) -> tuple[dict[str, Any], str | None]:
    """The fields an RNN, LSTM, GRU or CNN takes, starting from its shape for the preset; the
    GPT's other options are not offered (said in a caption)."""
    base = RecurrentConfig(family, 2, **preset_shape(family, preset_name))
    st.caption(
        f"The {FAMILY_LABELS[family]}'s shape, starting from its {preset_name} preset's. Heads, "
        "positions, the MLP and the block's parts are a transformer's, so they are not offered."
    )
    c1, c2, c3 = st.columns(3)
    fields = {
        "n_layer": state.number_input(
            "Layers",
            "t_n_layer",
            1,
            12 if family == "cnn" else MAX_LAYERS,
            base.n_layer,
            container=c1,
        ),
        "d_model": state.number_input(
            "Width (d_model)", "t_d_model", 1, MAX_D_MODEL, base.d_model, step=16, container=c2
        ),
        "n_ctx": state.number_input(
            "Training window", "t_n_ctx", 1, MAX_CTX, base.n_ctx, step=16, container=c3
        ),
        "dropout": state.number_input(
            "Dropout", "t_dropout", 0.0, 0.9, float(base.dropout), step=0.05, container=c1
        ),
    }
    if family == "cnn":
        fields["kernel_size"] = state.number_input(
            "Kernel width", "t_kernel", 2, MAX_KERNEL, base.kernel_size, container=c2
        )
    try:
        cfg = RecurrentConfig(family, 2, **fields)
    except ValueError as exc:
        message = f"This model cannot be built: {exc}."
        st.error(message)
        return fields, message
    if cfg.receptive_field is not None:
        st.caption(
            f"It reads the last {cfg.receptive_field} tokens: 1 + (kernel − 1) × (1 + 2 + … + "
            f"{cfg.dilations[-1]})."
        )
    return fields, None


def _custom_shape(preset_name: str) -> tuple[dict[str, Any], str | None]:
    """Every field of the shape, starting from the preset's; the model's own complaint, if any."""
    base = preset(preset_name, 2)
    st.caption(
        f"The model's shape, starting from the {preset_name} preset's (the MLP keeps "
        "4 × d_model neurons, 8/3 × when gated). Each choice is one the lessons contrast."
    )
    c1, c2, c3 = st.columns(3)
    fields = {
        "n_layer": state.number_input(
            "Layers", "t_n_layer", 1, MAX_LAYERS, base.n_layer, container=c1
        ),
        "n_head": state.number_input("Heads", "t_n_head", 1, MAX_HEADS, base.n_head, container=c2),
        "d_model": state.number_input(
            "d_model", "t_d_model", 1, MAX_D_MODEL, base.d_model, step=16, container=c3
        ),
        "n_ctx": state.number_input(
            "Context", "t_n_ctx", 1, MAX_CTX, base.n_ctx, step=16, container=c1
        ),
        "pos": state.selectbox(
            "Positions",
            "t_pos",
            list(POSITIONS),
            base.pos,
            format_func=POSITION_LABELS.get,
            container=c2,
        ),
        "norm": state.selectbox("Norm placement", "t_norm", list(NORMS), base.norm, container=c3),
        "dropout": state.number_input(
            "Dropout", "t_dropout", 0.0, 0.9, float(base.dropout), step=0.05, container=c1
        ),
        "attn_only": state.checkbox("Attention only", "t_attn_only", base.attn_only, container=c2),
        "tie_embeddings": state.checkbox(
            "Tie embeddings", "t_tie_embeddings", base.tie_embeddings, container=c3
        ),
        **_block_parts(base),
    }
    try:
        preset(preset_name, 2, **fields)
    except ValueError as exc:
        message = f"This model cannot be built: {exc}."
        st.error(message)
        return fields, message
    return fields, None


def _block_parts(base: GPTConfig) -> dict[str, Any]:
    """The parts of the block modern models changed, or that a contrast switches off."""
    st.caption(
        "The block's parts, each one the lectures explain or modern models changed. A gated MLP "
        "keeps about as many weights with 8/3 × d_model neurons; fewer key-value heads than heads "
        "is grouped-query attention (1: multi-query)."
    )
    c1, c2, c3 = st.columns(3)
    parts = {
        "norm_kind": state.selectbox(
            "Normalization",
            "t_norm_kind",
            list(NORM_KINDS),
            base.norm_kind,
            format_func=NORM_KIND_LABELS.get,
            container=c1,
        ),
        "mlp": state.selectbox(
            "MLP", "t_mlp", list(MLPS), base.mlp, format_func=MLP_LABELS.get, container=c2
        ),
        "act": state.selectbox(
            "Nonlinearity", "t_act", list(ACTS), base.act, format_func=ACT_LABELS.get, container=c3
        ),
        "n_kv_heads": state.number_input(
            "Key-value heads (0: one per head)", "t_n_kv_heads", 0, MAX_HEADS, 0, container=c1
        ),
        "residual": state.checkbox(
            "Residual connections", "t_residual", base.residual, container=c2
        ),
    }
    if parts["residual"]:  # the default: said by leaving it out, as the command line does
        del parts["residual"]
    if parts["mlp"] == "gated":
        name = {"silu": "SwiGLU, as in Llama", "gelu": "GeGLU", "relu": "ReGLU"}.get(parts["act"])
        st.caption(f"A gated MLP with this nonlinearity is {name or 'a GLU'}; SiLU makes SwiGLU.")
    return parts


def _training(preset_name: str) -> tuple[dict[str, Any], float | None]:
    """(TrainConfig overrides, minutes or None); defaults from the preset's own training, then
    the optimiser's (SGD's learning rate)."""
    st.markdown("**Training**")
    a, b = st.columns(2)
    budget = state.radio(
        "Train for", "t_budget", list(BUDGETS), "minutes", format_func=BUDGETS.get, container=a
    )
    if budget == "minutes":
        amount = state.number_input("Minutes", "t_minutes", 0.1, 600.0, 1.0, step=0.5, container=b)
    else:
        amount = state.number_input("Steps", "t_steps", 1, 1_000_000, 500, step=100, container=b)
    optimizer = _optimizer(a)
    defaults = {
        **TrainConfig().to_dict(),
        **PRESET_TRAINING.get(preset_name, {}),
        **OPTIMIZER_TRAINING.get(optimizer, {}),
    }
    lr = state.number_input(
        "Learning rate",
        "t_lr",
        1e-5,
        1.0,
        float(defaults["lr"]),
        step=5e-4,
        format="%g",
        container=b,
    )
    batch = state.number_input(
        "Batch size", "t_batch", 1, MAX_BATCH, defaults["batch_size"], container=a
    )
    seed = state.number_input("Seed", "t_seed", 0, 2**31 - 1, 0, container=b)
    train = {"batch_size": batch, "lr": lr, "seed": seed}
    if optimizer == "sgd":
        momentum = state.number_input(
            "Momentum",
            "t_momentum",
            0.0,
            0.99,
            float(defaults["momentum"]),
            step=0.05,
            container=a,
            help="The share of the previous step kept in the next; 0 is plain gradient descent.",
        )
        train.update(optimizer=optimizer, momentum=momentum)
        st.caption(
            "SGD moves every weight by the learning rate times its gradient, so it needs a far "
            f"larger rate than AdamW ({OPTIMIZER_TRAINING['sgd']['lr']:g} unless you change it), "
            f"and trains here without weight decay. The update is under the run once it starts."
        )
    if budget == "steps":
        return {**train, "max_steps": amount}, None
    return train, amount


def _optimizer(container) -> str:
    """The optimiser; choosing another resets the learning rate to the new one's default."""
    name = state.selectbox(
        "Optimiser",
        "t_opt",
        list(OPTIMIZERS),
        "adamw",
        format_func=OPTIMIZER_NAMES.get,
        container=container,
        help="AdamW scales each weight's step by its own gradient history; SGD with momentum "
        "steps along a running sum of the gradients.",
    )
    seen = st.session_state.get("_t_opt_seen")
    if seen is not None and seen != name:
        st.session_state.pop("t_lr", None)
        if "t_lr" in st.query_params:
            del st.query_params["t_lr"]
    st.session_state["_t_opt_seen"] = name
    return name


# ---- what it will cost ------------------------------------------------------------------------


@cache.per_model(keep=4)
def _distinct_chars(source_json: str) -> str:
    """The distinct characters of a bundled corpus or task: all a char vocabulary needs."""
    return "".join(sorted(set(load_text(json.loads(source_json)))))


@cache.per_model(keep=2)
def _whole_text(source_json: str) -> str:
    """A bundled corpus or task's whole text (a fine-tune checks every character of it)."""
    return load_text(json.loads(source_json))


@cache.per_model(keep=64)
def _speed(cfg_json: str, batch_size: int, threads: int) -> estimate.Speed:
    """This shape's speed, measured in a child process on the job's threads, once per shape
    (a failure raises, and is not cached)."""
    cfg = config_from_dict(json.loads(cfg_json))
    return estimate.measure_speed(cfg, batch_size, threads)


def _costs(settings: RunSettings, text: str | None) -> tuple[list[str], dict | None]:
    """Parameters, speed, time and memory of the run; returns the caps it breaks and the speed
    promised (for estimate.json: the run is compared with it afterwards)."""
    source = json.dumps(settings.data_source())
    if text is not None:
        chars = text
    elif settings.base is not None:  # the base's tokenizer counts unknown characters: all of them
        chars = _whole_text(source)
    else:
        chars = _distinct_chars(source)
    try:
        limits = jobs.Limits.from_env()
        params = estimate_params(settings, chars)
        cfg = model_shape(settings, chars)
        train = settings.train_config()
    except (ValueError, jobs.JobError) as exc:
        st.error(str(exc))
        return [str(exc)], None
    batch = train.batch_size
    memory = estimate.memory_parts(cfg, batch, train)
    refusals = _cap_refusals(params, settings.minutes, memory.total)
    timed_batch = max(1, min(batch, MEASURE_TOKENS // cfg.n_ctx))
    speed = None
    if not refusals and estimate.memory_estimate(cfg, timed_batch) <= MEASURE_MAX_BYTES:
        with st.spinner("Timing a few training steps of this model on this machine…"):
            try:
                speed = _speed(json.dumps(config_to_dict(cfg)), timed_batch, limits.threads)
            except ValueError as exc:
                st.warning(f"The speed could not be measured here ({exc}).")
    rate = speed.tokens_per_s() if speed else None
    c1, c2, c3, c4 = st.columns(4)
    c1.metric(
        "Parameters",
        _count(params),
        help=f"{params:,} parameters: "
        + (
            "the model you fine-tune, all of its weights (what the server's cap counts)."
            if settings.base is not None
            else "exact for characters; for BPE and words, the most the vocabulary asked for gives."
        ),
    )
    c2.metric(
        "Tokens / second",
        _rate_range(*rate) if rate else "–",
        help=f"Measured in a process of its own, as a job runs: the slowest and fastest of "
        f"{len(speed.step_s) if speed else 'a few'} timed training steps of this model on "
        f"{limits.threads} thread(s), the job's, at batch {timed_batch}.",
    )
    steps_per_s = speed.steps_per_s(train) if speed else None
    about_time = _time_metric(c3, train, settings.minutes, cfg.n_ctx, steps_per_s, limits)
    c4.metric(
        "Memory",
        _gb(memory.total),
        help=f"{_gb(memory.state)} for the weights, their gradients and what the optimiser keeps "
        f"({_optimiser_state(train)}), "
        f"{_gb(memory.activations)} for one step's activations.",
    )
    st.caption(about_time)
    st.caption(
        f"This server trains at most {limits.max_jobs} run(s) at once, {limits.max_params:,} "
        f"parameters, {limits.max_minutes:g} minutes a run; a run trains on {limits.threads} "
        "thread(s), so the class's pages stay quick."
    )
    for message in refusals:
        st.error(message)
    promised = None
    if steps_per_s:
        promised = {"steps_per_s": list(steps_per_s), "threads": limits.threads}
        promised["measured"] = speed.to_dict()
    return refusals, promised


def _optimiser_state(train: TrainConfig) -> str:
    """What the optimiser keeps per parameter, and the bytes a parameter needs in all."""
    total = (estimate.WEIGHT_AND_GRAD_FLOATS + state_floats(train)) * estimate.FLOAT_BYTES
    if train.optimizer == "sgd":
        kept = "SGD's momentum buffer" if train.momentum else "nothing: plain SGD"
    else:
        kept = "AdamW's two running moments"
    return f"{kept}; {total} bytes a parameter"


def _short(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _rate_range(low: float, high: float) -> str:
    """A range short enough for a metric a quarter of a 1024-px page wide: in whole thousands when
    the high end is at least 1,000, rounded outwards so the range still holds what was measured:
    (16384, 20747) -> '16–21k', (2400, 6500) -> '2–7k', (300, 420) -> '300–420'."""
    if high < 1000:
        return f"{low:.0f}–{high:.0f}"
    return f"{math.floor(low / 1000)}–{math.ceil(high / 1000)}k"


TIMED_ALONE = (
    " Timed with nothing else running: pages the class opens while it trains share the cores "
    "and can slow it; the run's view compares it with this estimate afterwards."
)


def _time_metric(column, train: TrainConfig, minutes, n_ctx: int, steps_per_s, limits) -> str:
    """The Time metric; returns the sentences that explain it (steps, tokens a step, the range).
    `steps_per_s` is the measured (low, high), evaluations and samples included, or None."""
    per_step = f"A step reads batch × context = {train.batch_size} × {n_ctx} = " + (
        f"{train.batch_size * n_ctx:,} tokens"
    )
    if minutes:
        column.metric("Time", f"{minutes:g} min")
        if not steps_per_s:
            return per_step + "."
        low, high = (int(minutes * 60 * r) for r in steps_per_s)
        return (
            f"{per_step}. At the measured {_short(steps_per_s[0])}–{_short(steps_per_s[1])} "
            f"steps a second (evaluations and samples included): {low:,}–{high:,} steps in "
            f"{minutes:g} min." + TIMED_ALONE
        )
    if not steps_per_s:
        column.metric("Time", "–")
        return per_step + "."
    fast, slow = (train.max_steps / r for r in reversed(steps_per_s))
    span, unit = duration_range(fast, slow)
    column.metric(
        f"Time ({unit})",
        span,
        help="Training, evaluations and samples; the start before the first step is not counted.",
    )
    if slow > limits.max_minutes * 60:
        reach = int(limits.max_minutes * 60 * steps_per_s[0])
        st.warning(
            f"The server stops a run after {limits.max_minutes:g} minutes: at the slow end of "
            f"this estimate it would end near step {reach:,} of {train.max_steps:,}."
        )
    return (
        f"{per_step}; {train.max_steps:,} steps at the measured {_short(steps_per_s[0])}–"
        f"{_short(steps_per_s[1])} steps a second." + TIMED_ALONE
    )


def _cap_refusals(params: int, minutes: float | None, need: int) -> list[str]:
    """What the server would refuse (jobs.cap_problems: start's own words), and a run that needs
    more memory than the machine has free, said before Start."""
    out = [f"{problem[0].upper()}{problem[1:]}." for problem in jobs.cap_problems(params, minutes)]
    free = estimate.available_memory()
    if free is not None and need > free:
        out.append(f"This run needs about {_gb(need)} of memory; the server has {_gb(free)} free.")
    return out


def _count(n: int) -> str:
    """A count short enough for a metric at 1024 px: 424,704, 4.82 M or 2.42 B."""
    if n >= 1_000_000_000:
        return f"{n / 1e9:.3g} B"
    return f"{n:,}" if n < 1_000_000 else f"{n / 1e6:.3g} M"


def duration_range(fast: float, slow: float) -> tuple[str, str]:
    """(range, unit) short enough for a metric a quarter of a 1024-px page wide, the unit going
    in the label: one unit for both ends (the slow end's: s below 90 s, min below 90 min, else
    h), one decimal below 10, rounded outwards so the range holds what was measured:
    (32, 63) -> ('32–63', 's'), (130, 250) -> ('2.1–4.2', 'min'), (2000, 2500) -> ('33–42', 'min')."""
    unit, size = ("s", 1) if slow < 90 else ("min", 60) if slow < 90 * 60 else ("h", 3600)

    def shown(seconds: float, up: bool) -> str:
        value = seconds / size
        digits = 1 if value < 10 and unit != "s" else 0
        rounded = (math.ceil if up else math.floor)(value * 10**digits) / 10**digits
        return f"{rounded:.{digits}f}"

    return f"{shown(fast, False)}–{shown(slow, True)}", unit


def _gb(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:.3g} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e6:.0f} MB"


# ---- name and start ---------------------------------------------------------------------------


REPEAT_PRESET = "attn-only-2l"  # the preset the repeat task teaches with (induction-2l's)
START_GUARD_S = 5.0  # a second Start within this long of the first is a double click
_JUST_STARTED = "_t_just_started"  # (name, time) of this session's last Start


def _name_problem(name: str) -> str | None:
    try:
        path = jobs.run_dir(name)
    except jobs.JobError as exc:
        return str(exc)
    if path.exists() or (jobs.REPO / "assets" / "models" / name).exists():
        return f"A run or model named {name!r} already exists; choose another name."
    return None


def _free_name(base: str = DEFAULT_NAME) -> str:
    """base, or base-2, base-3, ... : the first name no run has."""
    names = (base, *(f"{base}-{i}" for i in range(2, 1000)))
    return next((n for n in names if _name_problem(n) is None), base)


def _name_and_start(
    settings, text, auth: jobs.Auth, problems: list[str], promised: dict | None = None
) -> str | None:
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    first_draw = "t_name" not in st.session_state
    wanted = state.url_str("t_name", _free_name(), 64)
    if first_draw and _name_problem(wanted) and (jobs.runs_root() / wanted).is_dir():
        wanted = _free_name(wanted)  # a shared link names the teacher's run: offer name-2
        state.set_value("t_name", wanted)
    name = state.bind(
        left.text_input,
        "t_name",
        wanted,
        "Run name",
        help="Letters, digits, '-' and '_'; the model appears under this name in the picker.",
    )
    name_problem = _name_problem(name)
    auth = classroom.run_grant(settings) or auth  # a class's budget lets its students train
    locked = auth.required and not auth.given
    clicked = right.button(
        "Start training",
        key="t_start",
        type="primary",
        disabled=bool(problems or name_problem or locked or settings is None),
        use_container_width=True,
    )
    if name_problem:
        st.error(name_problem)
    if locked:
        st.info("Starting a run needs the teacher password.")
    if not clicked:
        return None
    just = st.session_state.get(_JUST_STARTED)
    if just and time.monotonic() - just[1] < START_GUARD_S:  # a double click: one run, not two
        st.info(f"“{just[0]}” has just started; it is below.")
        return None
    try:
        jobs.start(name, settings, text=text, auth=auth, estimate=promised)
    except jobs.JobError as exc:
        st.error(str(exc))
        return None
    st.session_state[_JUST_STARTED] = (name, time.monotonic())
    st.success(f"Started “{name}”.")
    classroom.run_started(name)  # on the class's leaderboard, or why not
    state.set_value("t_name", _free_name(name))  # the form is ready for the next run
    return name
