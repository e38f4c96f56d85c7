"""The Architecture contrasts page's frame around a contrast: the idea (`intro`), the radio of
contrasts (`choose`), the chosen pair of bundled models (`load`), and how the two trained
(`how_they_trained`); with the two helpers the contrasts' tables share (`last_losses`, `fmt`).

Not here: the contrasts' own measures (mask.py, copying.py, same_shape.py), the sweeps read from
their results files (ui/contrast_sweeps.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from serving import models
from ui import cache, contrast_sweeps, parts, present, state
from ui.charts import compare as cmp_charts
from viz_model.analysis import contrasts as ct
from viz_model.analysis import training as tr
from viz_model.analysis.labs import sweeps as sw
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError


@dataclass(frozen=True)
class Pair:
    """The chosen contrast and its two bundled models, the usual design first."""

    key: str  # the contrast's key in ct.CONTRASTS, as the URL carries it
    contrast: ct.Contrast
    sides: tuple[tuple[str, str, Bundle], ...]  # (name, bundle id, bundle) for each model


def intro() -> None:
    """What a contrast is, and what of the sidebar plays a part."""
    st.markdown(
        "Each lecture claim about a design choice, tested on tiny models trained by the same "
        "command except for that one choice (the commands are at the foot of the page). The "
        "sidebar's model plays no part here; the sidebar's **prompt** does, for the pairs of "
        "bundled models."
    )


def choose() -> str:
    """The radio of contrasts; a sweep is drawn from its results file and the run stops there."""
    key = state.radio(
        "Contrast",
        "ctr",
        [*ct.CONTRASTS, *sw.SWEEPS],  # a sweep's results, read from a file: ui/contrast_sweeps.py
        "mask",
        format_func=lambda k: ct.CONTRASTS[k].title if k in ct.CONTRASTS else sw.SWEEPS[k].title,
        horizontal=True,
    )
    if key in sw.SWEEPS:
        contrast_sweeps.show(key)
        st.stop()
    return key


def load(key: str) -> Pair:
    """The contrast's two bundled models; the run stops with a note when one is missing or cannot
    be opened."""
    contrast = ct.CONTRASTS[key]
    found = models.discover()
    missing = [name for name in contrast.models if name not in found]
    if missing:
        st.info(
            f"This contrast needs the bundled models {' and '.join(contrast.models)}; "
            f"{', '.join(missing)} is not there. Its command is in "
            "scripts/train_bundled_models.sh.",
            icon=":material/info:",
        )
        st.stop()
    ids_by_name = {name: models.bundle_id(found[name]) for name in contrast.models}
    try:
        sides = tuple((name, bid, cache.bundle(bid)) for name, bid in ids_by_name.items())
    except CheckpointError as exc:
        st.error(f"Could not open a model of this contrast: {exc}.")
        st.stop()
    return Pair(key, contrast, sides)


def how_they_trained(pair: Pair) -> None:
    """The two training curves on one chart, and the commands that trained them."""
    st.subheader("How they trained")
    named = []
    for name, _, b in pair.sides:
        per_step = int((b.train_config or {}).get("batch_size", 1)) * b.config.n_ctx
        named.append((name, tr.curves(b.history, "step", per_step)))
    fig = cache.figure(cmp_charts.overlaid_curves, named, "nats per token")
    present.plot(fig, key="ctr_curves")
    st.caption("Compare models draws any two models this way, in bits per character too.")
    with parts.followed_expander("The commands that trained them", "commands"):
        for name, _, b in pair.sides:
            st.markdown(f"**{name}**")
            st.code(b.meta.get("command", "–"), language="bash", wrap_lines=True)


def last_losses(b: Bundle) -> tuple[float | None, float | None]:
    """(training, validation) loss at the run's final step; None where not recorded."""
    final = tr.final_step(b.history, b.meta)
    return tr.losses_at(b.history, final) if final is not None else (None, None)


def fmt(x: float | None, spec: str = ".3f") -> str:
    """A number for a table, "–" where there is none."""
    return "–" if x is None else format(x, spec)
