"""Generation stepper: write text one token at a time from the prompt, see each step's distribution,
override the sampler, undo, replay with a seed, and compare generation with and without the KV cache."""

from functools import partial

import plotly.graph_objects as go
import streamlit as st

import ui
from ui import cache, classroom, controls, families, parts, present, state, training_text
from ui.charts import next_token as charts
from ui.charts.common import show_whitespace
from viz_model.analysis import generation as gen
from viz_model.analysis import next_token as nt
from viz_model.analysis.tokens import token_text
from viz_model.model.sampling import SamplingSettings
from viz_model.model.scale import grid_layers
from viz_model.text.instructions import END

ctx = ui.context()
cfg, tok = ctx.config, ctx.tokenizer
RECURRENT = ctx.bundle.family != "gpt"  # an RNN, LSTM, GRU or CNN: no attention, no KV cache
V = tok.vocab_size
STATE = "gen_stepper"  # session-state key: {"key", "seed", "steps", "proposal", "kv", ...}
URL_KEY = "gen"  # the generated tokens in the URL (gen.encode_steps)
MAX_STEPS = 500
N_CANDIDATES = 10

st.markdown(
    f"{families.a_family(ctx.bundle.family)[:1].upper()}{families.a_family(ctx.bundle.family)[1:]} writes by repeating one move: read the text so far, give a probability to every token "
    "of the vocabulary, pick one, append it, and go again. Here you make that move yourself, one "
    "step at a time. The **sampler** draws the next token at random from the distribution "
    "(reshaped by temperature, top-k and top-p, as on the *Next token* page); at temperature 0 it is "
    "**greedy** and always takes the most likely token. You may overrule it and **force** any other "
    "token. The **seed** fixes the random draws: the same model, seed and choices give the same "
    "text again, so a class can follow along."
)
st.latex(
    r"x_{t+1} \sim p(\,\cdot \mid x_1, \dots, x_t) \qquad "
    r"\text{greedy: } x_{t+1} = \arg\max_i \, p(i \mid x_1, \dots, x_t)"
)


# ---- the controls -----------------------------------------------------------------------------
c1, c2, c3, c4 = st.columns([3, 3, 3, 2], gap="large")
settings = controls.sampling_controls(V, (c1, c2, c3))
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

# ---- the stepper's state: reset when the model or the prompt changes ---------------------------
ss = st.session_state
key = (ctx.bundle_id, tuple(ctx.ids))
if ss.get(STATE, {}).get("key") != key:
    # A new session opens the steps its URL carries (a shared link, a reload); a new model or
    # prompt within a session starts from none.
    steps, problems = [], []
    if STATE not in ss and (link := st.query_params.get(URL_KEY, "")):
        with st.spinner("Rebuilding the generated text of the link…"):
            steps, problems = gen.restore_link(ctx.model, ctx.ids, link, seed, settings)
    ss[STATE] = {"key": key, "seed": seed, "steps": steps, "kv": None, "link_problems": problems}
stepper = ss[STATE]
if stepper["seed"] != seed:
    # same choices, new seed: the forced tokens stay, the sampled ones are drawn again
    stepper["steps"] = gen.replay(ctx.model, ctx.ids, gen.actions_of(stepper["steps"]), seed)
    stepper["seed"] = seed


@cache.per_prompt
def step_view(bundle_id: str, seq: tuple[int, ...]):
    """The logits after seq, the newest token's attention per layer, and how many were cropped:
    one forward pass per text, shared by the proposal, the step itself and the figures."""
    return gen.newest_token_view(cache.bundle(bundle_id).model, list(seq))


# Figures are cached per prompt as objects (never mutated, only drawn), keyed by the arguments
# they are built from: building a plotly figure costs more than drawing it, and a rerun that does not take a step
# (the per-head toggle, the KV comparison, a number input) should not rebuild them.
@cache.per_prompt
def bars_figure(
    bundle_id: str, seq: tuple[int, ...], n_step: int, temperature: float, top_k: int, top_p: float
) -> go.Figure:
    """The 20 most likely next tokens after seq, reshaped by the settings (step n_step)."""
    dist = nt.distribution(
        step_view(bundle_id, seq)[0], SamplingSettings(temperature, top_k, top_p)
    )
    tokenizer = cache.bundle(bundle_id).tokenizer
    bars = nt.top_tokens(dist, 20, partial(token_text, tokenizer))
    return charts.distribution_bars(
        bars.labels,
        bars.base_probs,
        bars.scaled_probs,
        bars.probs,
        bars.kept,
        title=f"Step {n_step}: the 20 most likely next tokens (of {tokenizer.vocab_size})",
    )


@cache.per_prompt
def attention_figure(
    bundle_id: str, seq: tuple[int, ...], per_head: bool, layers: range
) -> go.Figure:
    """The newest token's attention over the window, per layer (mean of heads) or per head
    (of `layers`)."""
    _, attention, n_cropped = step_view(bundle_id, seq)
    rows, row_labels = gen.attention_rows(attention, per_head, layers)
    pieces = [token_text(cache.bundle(bundle_id).tokenizer, t) for t in seq[n_cropped:]]
    col_labels = [f"{n_cropped + i}:{show_whitespace(p)}" for i, p in enumerate(pieces)]
    return charts.layer_attention_heatmap(
        rows, row_labels, col_labels, title="Attention of the newest token over the text"
    )


def do_steps(n: int = 1, forced: int | None = None) -> None:
    """Button callback: take n steps (the first one forced, when given) from the current text.
    Each step reads the (cached) forward pass the page draws, so the token taken is the one the
    page proposed, and the rerun after it finds the newest text's view already computed."""
    s = st.session_state[STATE]
    s["link_problems"] = []
    for _ in range(n):
        if len(s["steps"]) >= MAX_STEPS:
            break
        text = tuple(ctx.ids + [x.token for x in s["steps"]])
        step_dist = nt.distribution(step_view(ctx.bundle_id, text)[0], settings)
        s["steps"].append(gen.choose(step_dist, seed, len(s["steps"]), settings, forced))
        forced = None


def undo() -> None:
    st.session_state[STATE]["link_problems"] = []
    if st.session_state[STATE]["steps"]:
        st.session_state[STATE]["steps"].pop()


def reset() -> None:
    st.session_state[STATE].update(steps=[], link_problems=[])


# ---- the text so far --------------------------------------------------------------------------
def draw_link_notes(steps: list[gen.Step], problems: list[str]) -> None:
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


def draw_history(steps: list[gen.Step], seq: list[int], n_cropped: int) -> None:
    st.subheader(f"The text so far: prompt + {len(steps)} generated token{'s' * (len(steps) != 1)}")
    draw_link_notes(steps, st.session_state[STATE]["link_problems"])
    st.html(
        charts.history_chips(
            ctx.pieces,
            [token_text(tok, s.token) for s in steps],
            [s.prob for s in steps],
            [s.forced for s in steps],
        )
    )
    if steps:
        last = steps[-1]
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
    if n_cropped:
        st.info(
            f"The text is {len(seq)} tokens long, more than this model's context of {cfg.n_ctx}: "
            f"from here on it sees only the last {cfg.n_ctx} tokens (the first {n_cropped} are "
            "cropped from its view, on the left).",
            icon=":material/content_cut:",
        )


# ---- this step --------------------------------------------------------------------------------
def draw_step(steps: list[gen.Step], seq: list[int], dist, proposal: gen.Step) -> None:
    st.subheader(f"Step {len(steps) + 1}: what comes next?")
    # two rows: five buttons in one row were cut to "Run 20 s…", "U", "R" at 1024 px
    b1, b4, b5 = st.columns([3, 1, 1], vertical_alignment="bottom")
    pick_label = parts.md_token(token_text(tok, proposal.token))
    b1.button(
        f"Next token: “{pick_label}” (p = {dist.probs[proposal.token]:.3f})",
        key="take",
        type="primary",
        icon=":material/play_arrow:",
        on_click=do_steps,
        disabled=len(steps) >= MAX_STEPS,
        help="Append the token the sampler drew with this seed at this step.",
    )
    b2, b3, _ = st.columns([1.2, 2, 1.8], vertical_alignment="bottom")
    n_run = b2.number_input("Steps", 1, 200, 20, key="n_run")
    b3.button(
        f"Run {n_run} steps",
        key="run",
        icon=":material/fast_forward:",
        on_click=do_steps,
        args=(n_run,),
        disabled=len(steps) >= MAX_STEPS,
    )
    b4.button("Undo", key="undo", icon=":material/undo:", on_click=undo, disabled=not steps)
    b5.button(
        "Reset", key="reset", icon=":material/restart_alt:", on_click=reset, disabled=not steps
    )

    top = nt.top_tokens(dist, N_CANDIDATES, partial(token_text, tok))
    st.caption("Or force another token: click a candidate (its probability after the settings).")
    # a wrapping row of buttons as wide as their labels: five fixed columns cut BPE tokens
    # ("“␣not” 0.…") at 1024 px
    row = st.container(horizontal=True, gap="small")
    for tid, label, p, kept in zip(top.ids, top.labels, top.probs, top.kept, strict=True):
        row.button(
            f"“{parts.md_token(label)}” {p:.3f}" if kept else f"“{parts.md_token(label)}” cut",
            key=f"candidate_{int(tid)}",
            on_click=do_steps,
            args=(1, int(tid)),
            width="content",
            type="tertiary" if not kept else "secondary",
        )
    with st.popover("Force any token…", icon=":material/touch_app:"):
        order = list(nt.top_tokens(dist, min(V, 1000), partial(token_text, tok)).ids)
        chosen = st.selectbox(
            "Token (most likely first; type to search)",
            order,
            format_func=lambda i: (
                f"“{parts.token_label(tok, int(i))}”   p = {dist.probs[int(i)]:.4f}"
            ),
            key="force_any",
        )
        st.button("Force it", key="force_any_go", on_click=do_steps, args=(1, int(chosen)))

    present.plot(
        bars_figure(
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


# ---- the newest token's attention -------------------------------------------------------------
def draw_attention(seq: list[int]) -> None:
    if RECURRENT:
        st.caption(families.no_attention_note(ctx.bundle))
        return
    st.subheader("Where the newest token looks, layer by layer")
    st.markdown(
        f"The newest token, “{parts.md_token(token_text(tok, seq[-1]))}”, is the one whose vector the "
        "model turns into this step's prediction. Each row shows how its attention is spread over "
        "the tokens before it (and itself) in one layer: averaged over the heads, or one row per "
        "head."
    )
    c1, c2 = st.columns(2, vertical_alignment="bottom")
    per_head = state.toggle("One row per head", "per_head", False, container=c1)
    layers, per_view = range(cfg.n_layer), grid_layers(cfg)
    if per_head and per_view < cfg.n_layer:  # GPT-2: 144 rows; a few layers' heads at a time
        first = state.selectbox(
            "Layers",
            "gen_layers",
            list(range(0, cfg.n_layer, per_view)),
            default=0,
            container=c2,
            format_func=lambda s: f"layers {s}–{min(s + per_view, cfg.n_layer) - 1}",
            help=f"{cfg.n_layer * cfg.n_head} heads in all; {per_view} layers' heads at a time.",
        )
        layers = range(first, min(first + per_view, cfg.n_layer))
    present.plot(
        attention_figure(ctx.bundle_id, tuple(seq), per_head, layers), key="newest_attention"
    )


# ---- with and without the KV cache ------------------------------------------------------------
def draw_kv_comparison(seq: list[int], stepper: dict) -> None:
    room = cfg.n_ctx - len(seq)
    if RECURRENT:
        st.subheader("Generation with and without the carried state")
        st.markdown(gen.state_idea(ctx.bundle.family))
        room = 200
    else:
        st.subheader("Generation with and without the KV cache")
        st.markdown(gen.kv_cache_idea(cfg.causal))
        parts.contrast_link(
            "mqa", "What the cache costs in memory, and how multi-query attention cuts it"
        )
        st.caption(
            f"The context holds {cfg.n_ctx} tokens and the text has {len(seq)}, so "
            + (f"{room} more fit. " if room > 0 else "it is full. ")
            + "Past the context the cache cannot be reused: when the oldest token drops out, "
            "every remaining token's position and the tokens it saw change, so both ways re-run "
            "the whole window and take about the same time. Part of each step is fixed overhead "
            "that no cache saves; the saving grows with the context and the model."
        )
    k1, k2 = st.columns([1, 3], vertical_alignment="bottom")
    n_kv = k1.number_input(
        "Tokens to generate", 1, 500, min(room, 200) if room >= 10 else 50, key="n_kv"
    )
    if k2.button(f"Generate {n_kv} tokens both ways", key="kv_go"):
        with st.spinner("Generating twice…"):
            result = gen.compare_kv_cache(ctx.model, seq, int(n_kv), settings, seed)
        stepper["kv"] = (result, len(seq))
    if stepper.get("kv"):
        result, start = stepper["kv"]
        m1, m2, m3 = st.columns(3)
        carried = "the state" if RECURRENT else "the KV cache"
        m1.metric(f"With {carried}", f"{result.seconds_with * 1000:.0f} ms")
        m2.metric("Without it", f"{result.seconds_without * 1000:.0f} ms")
        m3.metric("Speed-up", f"{result.seconds_without / max(result.seconds_with, 1e-9):.1f}×")
        claim = gen.state_claim(result) if RECURRENT else gen.kv_cache_claim(result, cfg.causal)
        if claim.made:
            st.success(claim.text, icon=":material/check_circle:")
        elif cfg.causal:
            st.error(claim.text, icon=":material/error:")
        else:
            st.info(claim.text)
        st.caption(f"Generated after the first {start} tokens of the text above:")
        st.code(tok.decode(result.with_cache), language=None, wrap_lines=True)


# ---- the numbers behind it ----------------------------------------------------------------------
def draw_numbers(steps: list[gen.Step], seq: list[int], dist) -> None:
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.markdown("Every step so far:")
            st.dataframe(
                [
                    {
                        "step": i + 1,
                        "token": parts.token_label(tok, s.token),
                        "p when chosen": s.prob,
                        "how": "forced" if s.forced else "sampled",
                        "sampler's pick": parts.token_label(tok, s.sampled),
                        "T": s.settings.temperature,
                        "top-k": s.settings.top_k,
                        "top-p": s.settings.top_p,
                    }
                    for i, s in enumerate(steps)
                ],
                hide_index=True,
                key="history_table",
            )
            st.markdown("The whole text as plain text:")
            st.code(tok.decode(seq), language=None, wrap_lines=True)
            st.markdown(f"The candidates at step {len(steps) + 1}:")
            st.dataframe(
                nt.top_tokens(dist, N_CANDIDATES, partial(token_text, tok)).rows(), hide_index=True
            )


@classroom.view_fragment
def stepper_section() -> None:
    """Everything a step changes. A step, undo, reset or forced token reruns only this fragment,
    not the sidebar, the intro and the sliders above (which rerun the whole page when moved)."""
    stepper = st.session_state[STATE]
    steps: list[gen.Step] = stepper["steps"]
    seq = ctx.ids + [s.token for s in steps]
    last_logits, _, n_cropped = step_view(ctx.bundle_id, tuple(seq))
    dist = nt.distribution(last_logits, settings)
    proposal = gen.choose(dist, seed, len(steps), settings)
    stepper["proposal"] = proposal.token
    state.mirror(URL_KEY, gen.encode_steps(steps, settings), drop_empty=True)
    draw_history(steps, seq, n_cropped)
    draw_step(steps, seq, dist, proposal)
    draw_attention(seq)
    draw_kv_comparison(seq, stepper)
    parts.page_link(
        "Using_a_model",
        "Beam search, repetition and its penalty, and what a forced token does to what follows",
        use_part="beam",
    )
    training_text.generation_checks(ctx, seq, len(ctx.ids))  # probability, memorisation
    draw_numbers(steps, seq, dist)


stepper_section()
