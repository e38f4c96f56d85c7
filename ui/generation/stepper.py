"""The Generation page's stepper: the idea and the formula (`intro`), the sampling controls and the
seed (`controls`), and the stepper itself (`step_by_step`, a fragment): the text so far
(`text_so_far`), this step's proposal, buttons and candidates (`this_step`), then the sections of
ui/generation/views.py and the training-text checks of the generated text."""

from __future__ import annotations

from functools import partial

import streamlit as st

from ui import classroom, families, parts, present, state, training_text
from ui.charts import next_token as charts
from ui.controls import sampling_controls
from ui.frame import PageContext
from ui.generation import runs, views
from ui.generation.steps import MAX_STEPS, STATE, URL_KEY, Sampling, reset, take_steps, undo
from ui.generation.views import N_CANDIDATES
from viz_model.analysis import generation as gen
from viz_model.analysis import next_token as nt
from viz_model.analysis.tokens import token_text
from viz_model.model.sampling import Distribution
from viz_model.text.instructions import END


def intro(ctx: PageContext) -> None:
    """The move a language model repeats, sampling, greedy, forcing and the seed."""
    a_family = families.a_family(ctx.bundle.family)
    st.markdown(
        f"{a_family[:1].upper()}{a_family[1:]} writes by repeating one move: read the text so far, "
        "give a probability to every token "
        "of the vocabulary, pick one, append it, and go again. Here you make that move yourself, one "
        "step at a time. The **sampler** draws the next token at random from the distribution "
        "(reshaped by temperature, top-k and top-p, as on the *Next token* page); at temperature 0 "
        "it is **greedy** and always takes the most likely token. You may overrule it and **force** "
        "any other token. The **seed** fixes the random draws: the same model, seed and choices "
        "give the same text again, so a class can follow along."
    )
    st.latex(
        r"x_{t+1} \sim p(\,\cdot \mid x_1, \dots, x_t) \qquad "
        r"\text{greedy: } x_{t+1} = \arg\max_i \, p(i \mid x_1, \dots, x_t)"
    )


def controls(ctx: PageContext) -> Sampling:
    """Temperature, top-k and top-p (shared with Next token) and the seed, in one row."""
    c1, c2, c3, c4 = st.columns([3, 3, 3, 2], gap="large")
    settings = sampling_controls(ctx.tokenizer.vocab_size, (c1, c2, c3))
    seed = state.number_input(
        "Seed",
        "seed",
        0,
        999_999,
        0,
        container=c4,
        help="Fixes the random draws. Changing it replays your steps with the new seed "
        "(the tokens you forced stay).",
    )
    return Sampling(settings, seed)


def _link_notes(steps: list[gen.Step], problems: list[str]) -> None:
    """What of the URL's steps could not be rebuilt, and how many steps a link carries."""
    if problems:
        st.warning(
            "The link's generated text did not fit entirely: " + "; ".join(problems) + ". "
            f"Showing the {len(steps)} step{'s' * (len(steps) != 1)} before that.",
            icon=":material/link_off:",
        )
    if len(steps) > gen.LINK_MAX_STEPS:
        st.caption(
            f"The page's link (its URL) carries the first {gen.LINK_MAX_STEPS} generated tokens, "
            "to stay short enough to share: a reload or a shared link shows those."
        )


def _last_step(ctx: PageContext, steps: list[gen.Step]) -> None:
    """How the newest token came about, and a note when it is the chat template's end of turn."""
    tok, last = ctx.tokenizer, steps[-1]
    how = (
        f"you forced **“{parts.md_token(token_text(tok, last.token))}”** (the sampler had picked "
        f"“{parts.md_token(token_text(tok, last.sampled))}”)"
        if last.forced
        else ("greedy took" if last.settings.temperature == 0 else "the sampler drew")
        + f" **“{parts.md_token(token_text(tok, last.token))}”**"
    )
    st.markdown(f"Step {len(steps)}: {how}, with probability **{last.prob:.3f}**.")
    end_id = tok.token_to_id(END)  # the chat template's end of turn, in tuned models only
    if end_id is not None and any(s.token == end_id for s in steps):
        st.info(
            f"The model wrote `{END}`: a chat app stops here and hands the turn back; this "
            "page keeps sampling so you can see what it would do next.",
            icon=":material/keyboard_return:",
        )


def text_so_far(ctx: PageContext, steps: list[gen.Step], seq: list[int], n_cropped: int) -> None:
    """The prompt and the generated tokens as chips, the newest step, and what the context crops."""
    tok, n_ctx = ctx.tokenizer, ctx.config.n_ctx
    st.subheader(f"The text so far: prompt + {len(steps)} generated token{'s' * (len(steps) != 1)}")
    _link_notes(steps, st.session_state[STATE]["link_problems"])
    st.html(
        charts.history_chips(
            ctx.pieces,
            [token_text(tok, s.token) for s in steps],
            [s.prob for s in steps],
            [s.forced for s in steps],
        )
    )
    if steps:
        _last_step(ctx, steps)
    if n_cropped:
        st.info(
            f"The text is {len(seq)} tokens long, more than this model's context of {n_ctx}: "
            f"from here on it sees only the last {n_ctx} tokens (the first {n_cropped} are "
            "cropped from its view, on the left).",
            icon=":material/content_cut:",
        )


def _buttons(ctx: PageContext, sampling: Sampling, steps: list[gen.Step], take: str) -> None:
    """Take the proposed step, run N steps, undo, reset."""
    on = (ctx.bundle_id, tuple(ctx.ids), sampling)  # the callbacks' arguments: the text's start
    # two rows: five buttons in one row were cut to "Run 20 s…", "U", "R" at 1024 px
    b1, b4, b5 = st.columns([3, 1, 1], vertical_alignment="bottom")
    b1.button(
        take,
        key="take",
        type="primary",
        icon=":material/play_arrow:",
        on_click=take_steps,
        args=on,
        disabled=len(steps) >= MAX_STEPS,
        help="Append the token the sampler drew with this seed at this step.",
    )
    b2, b3, _ = st.columns([1.2, 2, 1.8], vertical_alignment="bottom")
    n_run = b2.number_input("Steps", 1, 200, 20, key="n_run")
    b3.button(
        f"Run {n_run} steps",
        key="run",
        icon=":material/fast_forward:",
        on_click=take_steps,
        args=(*on, n_run),
        disabled=len(steps) >= MAX_STEPS,
    )
    b4.button("Undo", key="undo", icon=":material/undo:", on_click=undo, disabled=not steps)
    b5.button(
        "Reset", key="reset", icon=":material/restart_alt:", on_click=reset, disabled=not steps
    )


def _force(ctx: PageContext, sampling: Sampling, dist: Distribution) -> None:
    """The most likely candidates as buttons, and any token of the vocabulary from a list."""
    tok = ctx.tokenizer
    on = (ctx.bundle_id, tuple(ctx.ids), sampling)
    top = nt.top_tokens(dist, N_CANDIDATES, partial(token_text, tok))
    st.caption("Or force another token: click a candidate (its probability after the settings).")
    # a wrapping row of buttons as wide as their labels: five fixed columns cut BPE tokens
    # ("“␣not” 0.…") at 1024 px
    row = st.container(horizontal=True, gap="small")
    for tid, label, p, kept in zip(top.ids, top.labels, top.probs, top.kept, strict=True):
        row.button(
            f"“{parts.md_token(label)}” {p:.3f}" if kept else f"“{parts.md_token(label)}” cut",
            key=f"candidate_{int(tid)}",
            on_click=take_steps,
            args=(*on, 1, int(tid)),
            width="content",
            type="tertiary" if not kept else "secondary",
        )
    with st.popover("Force any token…", icon=":material/touch_app:"):
        order = list(nt.top_tokens(dist, min(tok.vocab_size, 1000), partial(token_text, tok)).ids)
        chosen = st.selectbox(
            "Token (most likely first; type to search)",
            order,
            format_func=lambda i: (
                f"“{parts.token_label(tok, int(i))}”   p = {dist.probs[int(i)]:.4f}"
            ),
            key="force_any",
        )
        st.button("Force it", key="force_any_go", on_click=take_steps, args=(*on, 1, int(chosen)))


def this_step(
    ctx: PageContext,
    sampling: Sampling,
    steps: list[gen.Step],
    seq: list[int],
    dist: Distribution,
    proposal: gen.Step,
) -> None:
    """The proposed token and the buttons, the candidates to force, and this step's distribution."""
    V, settings = ctx.tokenizer.vocab_size, sampling.settings
    st.subheader(f"Step {len(steps) + 1}: what comes next?")
    pick_label = parts.md_token(token_text(ctx.tokenizer, proposal.token))
    take = f"Next token: “{pick_label}” (p = {dist.probs[proposal.token]:.3f})"
    _buttons(ctx, sampling, steps, take)
    _force(ctx, sampling, dist)
    present.plot(
        runs.bars_figure(
            ctx.bundle_id,
            tuple(seq),
            len(steps) + 1,
            settings.temperature,
            settings.top_k,
            settings.top_p,
        ),
        key="step_bars",
    )
    st.caption(
        f"Entropy of this step: {dist.entropy:.3f} nats ({nt.entropy_bits(dist.entropy):.3f} "
        f"bits); {int(dist.kept.sum())} of {V} tokens can be picked. Green: after "
        "temperature; grey: cut; dark blue: renormalised; red ticks: the model's own probabilities."
    )


@classroom.view_fragment
def step_by_step(ctx: PageContext, sampling: Sampling) -> None:
    """Everything a step changes. A step, undo, reset or forced token reruns only this fragment,
    not the sidebar, the intro and the sliders above (which rerun the whole page when moved)."""
    stepper = st.session_state[STATE]
    steps: list[gen.Step] = stepper["steps"]
    seq = ctx.ids + [s.token for s in steps]
    last_logits, _, n_cropped = runs.step_view(ctx.bundle_id, tuple(seq))
    dist = nt.distribution(last_logits, sampling.settings)
    proposal = gen.choose(dist, sampling.seed, len(steps), sampling.settings)
    stepper["proposal"] = proposal.token
    state.mirror(URL_KEY, gen.encode_steps(steps, sampling.settings), drop_empty=True)
    text_so_far(ctx, steps, seq, n_cropped)
    this_step(ctx, sampling, steps, seq, dist, proposal)
    views.newest_attention(ctx, seq)
    views.with_and_without_the_cache(ctx, sampling, seq, stepper)
    parts.page_link(
        "Using_a_model",
        "Beam search, repetition and its penalty, and what a forced token does to what follows",
        use_part="beam",
    )
    training_text.generation_checks(ctx, seq, len(ctx.ids))  # probability, memorisation
    views.numbers_behind_it(ctx, steps, seq, dist)
