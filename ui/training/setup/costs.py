"""What the run will cost, before Start: parameters, tokens a second measured on this machine in a
process of its own (as a job runs), time and memory, and what the server's caps would refuse.
The figures a student weighs before a run, apart from the form's choices.
"""

from __future__ import annotations

import json
import math

import streamlit as st

from serving import jobs
from ui import cache
from viz_model.model.config import TrainConfig
from viz_model.model.families import config_from_dict, config_to_dict
from viz_model.text.data import load_text
from viz_model.training import estimate
from viz_model.training.optim import state_floats
from viz_model.training.settings import RunSettings, estimate_params, model_shape

# The speed is timed on at most this many tokens a step (batch cut down, time per token kept):
# a large batch would hold the page for seconds and measure nothing the smaller one does not.
MEASURE_TOKENS = 2048
MEASURE_MAX_BYTES = 1_000_000_000  # a shape needing more than this is not timed in the server


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


def draw_costs(settings: RunSettings, text: str | None) -> tuple[list[str], dict | None]:
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
