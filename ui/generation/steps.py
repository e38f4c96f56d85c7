"""The Generation page's steps in the session: the generated tokens of the prompt on screen, kept
in `st.session_state[STATE]` ({"key", "seed", "steps", "proposal", "kv", "link_problems"}),
opened from the URL a link carries, replayed when the seed changes, and taken, undone and reset by
the stepper's buttons (their callbacks run before the next run of the page)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui.frame import PageContext
from ui.generation.runs import step_view
from viz_model.analysis import generation as gen
from viz_model.analysis import next_token as nt
from viz_model.model.sampling import SamplingSettings

STATE = "gen_stepper"  # session-state key: {"key", "seed", "steps", "proposal", "kv", ...}
URL_KEY = "gen"  # the generated tokens in the URL (gen.encode_steps)
MAX_STEPS = 500


@dataclass(frozen=True)
class Sampling:
    """The sampler's settings and the seed that fixes its random draws."""

    settings: SamplingSettings
    seed: int


def restore(ctx: PageContext, sampling: Sampling) -> None:
    """The session's steps, reset when the model or the prompt changes: a new session opens the
    steps its URL carries (a shared link, a reload), a new model or prompt within a session starts
    from none; a new seed replays the same choices (the forced tokens stay, the sampled ones are
    drawn again)."""
    ss = st.session_state
    key = (ctx.bundle_id, tuple(ctx.ids))
    if ss.get(STATE, {}).get("key") != key:
        steps, problems = [], []
        if STATE not in ss and (link := st.query_params.get(URL_KEY, "")):
            with st.spinner("Rebuilding the generated text of the link…"):
                steps, problems = gen.restore_link(
                    ctx.model, ctx.ids, link, sampling.seed, sampling.settings
                )
        ss[STATE] = {
            "key": key,
            "seed": sampling.seed,
            "steps": steps,
            "kv": None,
            "link_problems": problems,
        }
    stepper = ss[STATE]
    if stepper["seed"] != sampling.seed:
        actions = gen.actions_of(stepper["steps"])
        stepper["steps"] = gen.replay(ctx.model, ctx.ids, actions, sampling.seed)
        stepper["seed"] = sampling.seed


def take_steps(
    bundle_id: str,
    ids: tuple[int, ...],
    sampling: Sampling,
    n: int = 1,
    forced: int | None = None,
) -> None:
    """Button callback: take n steps (the first one forced, when given) from the current text.
    Each step reads the (cached) forward pass the page draws, so the token taken is the one the
    page proposed, and the rerun after it finds the newest text's view already computed."""
    s = st.session_state[STATE]
    s["link_problems"] = []
    settings = sampling.settings
    for _ in range(n):
        if len(s["steps"]) >= MAX_STEPS:
            break
        text = ids + tuple(x.token for x in s["steps"])
        step_dist = nt.distribution(step_view(bundle_id, text)[0], settings)
        s["steps"].append(gen.choose(step_dist, sampling.seed, len(s["steps"]), settings, forced))
        forced = None


def undo() -> None:
    """Button callback: drop the newest step."""
    st.session_state[STATE]["link_problems"] = []
    if st.session_state[STATE]["steps"]:
        st.session_state[STATE]["steps"].pop()


def reset() -> None:
    """Button callback: back to the prompt alone."""
    st.session_state[STATE].update(steps=[], link_problems=[])
