"""The set-up form in order: start from scratch or fine-tune, the four choices, then what the run
will cost, its name and Start. The one module the Training page calls (`draw_setup`); each part
is drawn by a module of its own.
"""

from __future__ import annotations

import streamlit as st

from serving import jobs
from ui import state
from ui.training import finetune
from ui.training.setup.costs import draw_costs
from ui.training.setup.data import draw_data, draw_tokenizer
from ui.training.setup.model import draw_custom_shape, draw_family_shape, draw_model
from ui.training.setup.start import draw_name_and_start
from ui.training.setup.training import draw_training
from viz_model.training.settings import RunSettings

STARTS = {"scratch": "A new model", "finetune": "A trained model (fine-tune)"}
REPEAT_PRESET = "attn-only-2l"  # the preset the repeat task teaches with (induction-2l's)


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
        source, text, data_problem = draw_data()
    with right:
        tokenizer, vocab = draw_tokenizer()
    left, right = st.columns(2)
    with left:
        family, preset_name, custom = draw_model()
        copying_gpt = family == "gpt" and preset_name != REPEAT_PRESET
        if source.get("task") == "repeat" and copying_gpt and not custom:
            st.info(
                f"Copying needs two attention layers and little else: choose **{REPEAT_PRESET}** "
                "for this task: in a run of about a minute on a laptop it can form an induction head "
                "(Training dynamics measures whether yours did); a model with MLPs tends to spend "
                "the minute on letter frequencies."
            )
    with right:
        train, minutes = draw_training(preset_name)
    if family != "gpt":
        overrides, shape_problem = draw_family_shape(family, preset_name) if custom else ({}, None)
    else:
        overrides, shape_problem = draw_custom_shape(preset_name) if custom else ({}, None)
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
        refusals, promised = draw_costs(settings, text)
        problems += refusals
    return draw_name_and_start(settings, text, auth, problems, promised)


def _finetune_setup(auth: jobs.Auth) -> str | None:
    """The fine-tune form (ui/training/finetune.py), then the same costs, name and Start."""
    settings, text, problems = finetune.draw_form(draw_data)
    return _costs_then_start(settings, text, auth, problems)
