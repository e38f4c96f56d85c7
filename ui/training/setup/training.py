"""The form's Training: a budget in minutes or steps, the optimiser (choosing another resets the
learning rate to its default), learning rate, batch size and seed; defaults from the preset's
own training.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import state
from viz_model.analysis.training import OPTIMIZER_NAMES
from viz_model.model.config import OPTIMIZER_TRAINING, OPTIMIZERS, PRESET_TRAINING, TrainConfig

BUDGETS = {"minutes": "Minutes", "steps": "Steps"}
MAX_BATCH = 1024


def draw_training(preset_name: str) -> tuple[dict[str, Any], float | None]:
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
