"""The sidebar's "Training step" slider: look at any page as the model was at a saved step of its
training (bundles keep float16 snapshots at log-spaced steps), carried in the URL as train_step.

Choosing a step swaps the page context's bundle id for the snapshot's ("...#step"); every page
loads its model through ui.cache.bundle, so every page then shows that snapshot's model.
"""

from __future__ import annotations

import streamlit as st

from serving import models
from ui import cache, state
from viz_model.analysis.training import final_step, training_steps
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError

KEY = "train_step"
_OWNER = "_train_step_model"  # the model the chosen step belongs to


def step_options(bundle: Bundle) -> tuple[list[int], int | None]:
    """(the steps a student can pick, in order, the last being the final model; the final step).
    No options when the bundle has no snapshots before its final step."""
    final = final_step(bundle.history, bundle.meta)
    return training_steps(bundle.snapshot_steps(), final), final


def step_label(step: int, final: int | None) -> str:
    """A step as the slider writes it: "11,404 (final)" for the final model, else "37"."""
    return f"{step:,} (final)" if step == final else f"{step:,}"


def pick_training_step(
    name: str, bundle_id: str, bundle: Bundle
) -> tuple[str, Bundle, int | None, str | None]:
    """Draw the slider when the bundle has snapshots; return (bundle id, bundle, step, label),
    with step None for the final model and label the step on screen as the slider writes it
    (None when there is no slider: a model without snapshots). A snapshot that cannot be read
    is reported; the final model stays."""
    options, final = step_options(bundle)
    ss = st.session_state
    if not options:
        return bundle_id, bundle, None, None
    if ss.get(_OWNER, name) != name:  # another model was chosen: start at its final weights
        state.set_value(KEY, final)
    ss[_OWNER] = name
    step = state.select_slider(
        "Training step",
        KEY,
        options,
        final,
        container=st.sidebar,
        format_func=lambda s: step_label(s, final),
        help="Look at every page as this model was at a saved step of its training: step 0 is "
        "the random weights it started from.",
    )
    if step == final:
        return bundle_id, bundle, None, step_label(step, final)
    snapshot_id = models.bundle_id(models.path_of(bundle_id), step)
    try:
        return snapshot_id, cache.bundle(snapshot_id), step, step_label(step, final)
    except CheckpointError as exc:
        st.sidebar.error(f"Could not open the weights saved at step {step:,}: {exc}.")
        return bundle_id, bundle, None, step_label(final, final)
