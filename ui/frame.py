"""The frame every page is drawn in: page config, the shared sidebar (model picker, training step,
precision, prompt, model card), the page's title, and the PageContext the page works from.

    frame(nav.find(page.url_path))      # app.py, once a run, between st.navigation and page.run()
    ctx = ui.context()                  # the first call on every page
    ctx.model, ctx.ids, ctx.labels ...

The prompt and the model live under the session-state keys "prompt" and "model" and in the URL
(`?model=...&prompt=...`), so they follow the student from page to page and a link reopens the view.

Not here: which pages exist and the navigation (ui/nav.py); values a single page keeps in the URL
(ui/state.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import streamlit as st

from serving import models
from ui import (
    cache,
    families,
    model_download,
    nav,
    notebook_button,
    precision,
    present,
    scrubber,
    state,
)
from ui.charts.common import UNK_CLOSE, UNK_OPEN, show_whitespace, token_labels
from viz_model.analysis.claims import md_escape
from viz_model.analysis.next_token import loss_lookahead_claim
from viz_model.analysis.training import final_step, losses_at
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.model.config import GPTConfig
from viz_model.model.families import LanguageModel, family_of
from viz_model.model.scale import cache_bytes, view_tokens
from viz_model.text.data import (
    MAX_TASK_SEQ_LEN,
    MIN_TASK_SEQ_LEN,
    TASK_UNPREDICTABLE,
    TASKS,
    task_loss_floor,
)
from viz_model.text.tokenization import Tokenizer

APP_NAME = "Inside a GPT"
DEFAULT_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"
MAX_PROMPT_CHARS = 5000
UNKNOWN_SHARE = 0.25  # above this share of <unk> tokens, the sidebar offers the model's examples
MAX_EXAMPLES = 5
_GOOD = "_last_good_model"
_CUT = "_prompt_cut"  # (the kept prompt, characters cut): the paste message lasts while it stands
_CONTEXT = "_page_context"  # this run's PageContext, from frame() to the page's context()


@dataclass
class PageContext:
    """What a page needs: the loaded model and the prompt as tokens (cropped to the context)."""

    bundle: Bundle
    bundle_id: str  # cache key: folder + weights mtime
    model: LanguageModel  # a GPT unless the page's entry takes other families (ui/nav.py)
    tokenizer: Tokenizer
    prompt: str  # as typed
    ids: list[int]  # encoded, the last n_ctx tokens (scale.view_tokens for a big model)
    pieces: list[str]  # each token's text
    labels: list[str]  # distinct axis labels, "3:the"
    n_cut: int = 0  # tokens cut off the start to fit the context (a GPT reads the last n_ctx)
    messages: list[str] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)  # positions the model reads as <unk>

    @property
    def config(self) -> GPTConfig:  # a RecurrentConfig on a page that takes other families
        return self.bundle.config

    @property
    def name(self) -> str:
        return self.bundle.name


def frame(page: nav.Page, stop: tuple[int, int] | None = None) -> PageContext:
    """Draw the frame around `page` and keep its context for `context()`. app.py calls it once a
    run, after the navigation and before the page runs.

    It draws the page title (pages draw no other); in presenter mode, above it, a header line
    with the model, its training step and the lesson `stop` ((stop, stops), from app.py's
    lesson.enter), which the folded sidebar hides. With
    an empty prompt it shows a note and stops the run before the page, unless the page's entry
    says needs_prompt=False (Home, Training, ...), in which case ctx.ids is empty.
    """
    ss = st.session_state
    ss.pop(_CONTEXT, None)  # a run the frame stops leaves no context from an earlier run
    ss[state.ROUTE] = page.route
    title = page.title
    st.set_page_config(
        page_title=title if title == APP_NAME else f"{title} · {APP_NAME}",
        layout="wide",
        initial_sidebar_state=present.sidebar_state(),
    )
    found = models.discover()
    if not found:
        st.error(
            "No model found. Put a model bundle (a folder with config.json, model.safetensors and "
            "tokenizer.json) in assets/models/ or runs/, or train one with `python -m viz_model.training`."
        )
        st.stop()
    bundle_id, bundle, errors = _resolve_model(found)
    _model_picker(list(found))
    bundle_id, bundle, step, step_shown = scrubber.pick_training_step(
        st.session_state["model"], bundle_id, bundle
    )
    bundle_id, bundle, _, quant_errors = precision.pick_precision(bundle_id, bundle)
    errors += quant_errors
    prompt, pasted_too_much = _prompt_box()
    ctx = _context(bundle_id, bundle, prompt)
    _offer_examples(bundle, ctx)
    draw_model_card(bundle_id, step)
    notebook_button.offer(page, ctx)  # the view as a Jupyter notebook (serving/notebooks.py)
    present.apply()  # the presenter-mode toggle and the page styles
    if present.is_on():  # the sidebar is folded away: the room sees the model and step up here
        present.header(st.session_state["model"], step_shown, stop)

    st.title(f"{page.icon} {title}")
    for message in errors:
        st.error(message)
    if bundle.family not in page.families:
        families.refuse(page, bundle)  # stops the run: the picker above stays usable
    for message in [pasted_too_much] * bool(pasted_too_much) + ctx.messages:
        st.info(message)
    if not ctx.ids:
        st.info("Type a prompt in the sidebar to see what the model does with it.", icon="✏️")
        if page.needs_prompt:
            st.stop()
    ss[_CONTEXT] = ctx
    return ctx


def context() -> PageContext:
    """The context the frame made for this run: the first call on every page.

    A page opened without app.py (a fresh server's first request at a file's own path, such as
    /attention, goes to Streamlit's legacy pages/ router) has none: it links to the app instead.
    """
    ctx = st.session_state.get(_CONTEXT)
    if ctx is None:
        st.info("This page opens inside the app: [go to the app](./).")
        st.stop()
    return ctx


# ---- the model --------------------------------------------------------------------------------


def _resolve_model(found: dict[str, models.Path]) -> tuple[str, Bundle, list[str]]:
    """Load the requested model; on failure fall back to the last good one (then any that loads)."""
    ss = st.session_state
    names = list(found)
    default = models.default_model(names)
    errors: list[str] = []
    if "model" not in ss:
        ss["model"] = st.query_params.get("model") or default
    requested = ss["model"]
    if requested not in found:
        # the URL's text, drawn as typed: no Markdown, no link, no emoji or colour directive
        shown = "".join("\\" + c if c in "\\`*_[]<>$~|:#" else c for c in str(requested)[:80])
        errors.append(f"There is no model called “{shown}” here; showing another one.")
    candidates = [requested, ss.get(_GOOD), default, *names]
    tried: set[str] = set()
    for name in candidates:
        if name not in found or name in tried:
            continue
        tried.add(name)
        bid = models.bundle_id(found[name])
        try:
            bundle = cache.bundle(bid)
        except CheckpointError as exc:
            errors.append(f"Could not open the model “{name}”: {exc}.")
            continue
        if name != requested and requested in found:
            errors[-1] += f" Still showing “{name}”."
        if name != requested:  # a step chosen for the requested model: this one opens at its final
            state.forget(scrubber.KEY)  # (step 0 would be random weights under another name)
        ss["model"] = ss[_GOOD] = name
        state.mirror("model", name)
        return bid, bundle, errors
    for message in errors:
        st.error(message)
    st.error("None of the model bundles could be opened.")
    st.stop()
    raise AssertionError  # unreachable: st.stop() ends the script


def _model_picker(names: list[str]) -> None:
    state.bind(
        st.sidebar.selectbox,
        "model",
        st.session_state["model"],
        "Model",
        names,
        help="Bundled models, and the ones trained on this server.",
    )


def _prompt_box() -> tuple[str, str]:
    """The prompt text area; returns (prompt, message about text cut to MAX_PROMPT_CHARS or "").

    The widget has no max_chars: Streamlit's limit silently refuses a longer paste, so a student
    pasting a page of text saw nothing happen. The text is cut here instead, and said so.
    """
    ss = st.session_state
    if "prompt" not in ss:
        raw = st.query_params.get("prompt")
        ss["prompt"] = DEFAULT_PROMPT if raw is None else raw
    typed = str(ss["prompt"])
    prompt = typed[:MAX_PROMPT_CHARS]
    if len(typed) > len(prompt):
        ss[_CUT] = (prompt, len(typed))
    state.set_value("prompt", prompt)
    state.bind(
        st.sidebar.text_area,
        "prompt",
        prompt,
        "Prompt",
        height=120,
        help=f"The text every page looks at (up to {MAX_PROMPT_CHARS:,} characters). "
        "Press Ctrl+Enter (or click outside) to apply.",
    )
    kept, length = ss.get(_CUT) or ("", 0)
    if kept != prompt or not prompt:
        return prompt, ""
    return prompt, (
        f"The pasted prompt was {length:,} characters long; the prompt box keeps the first "
        f"{MAX_PROMPT_CHARS:,}, so the last {length - MAX_PROMPT_CHARS:,} were cut."
    )


def example_prompts(bundle: Bundle) -> list[str]:
    """The bundle's example prompts (meta["example_prompts"], written by the training command);
    anything that is not a short list of text is ignored, as a bundle may come from anywhere."""
    found = bundle.meta.get("example_prompts")
    if not isinstance(found, list):
        return []
    texts = [t[:MAX_PROMPT_CHARS] for t in found if isinstance(t, str) and t.strip()]
    return texts[:MAX_EXAMPLES]


def mostly_unknown(n_unknown: int, n_tokens: int) -> bool:
    """More than UNKNOWN_SHARE of the tokens are <unk>: the prompt does not suit the model."""
    return n_tokens > 0 and n_unknown > UNKNOWN_SHARE * n_tokens


def _example_label(text: str, width: int = 36) -> str:
    shown = show_whitespace(text)
    return md_escape(shown if len(shown) <= width else shown[: width - 1] + "…")


def _offer_examples(bundle: Bundle, ctx: PageContext) -> None:
    """When most of the prompt is <unk> to this model, say so under the box and offer the
    model's own example prompts (a click replaces the prompt)."""
    if not mostly_unknown(len(ctx.unknown), len(ctx.ids)):
        return
    examples = example_prompts(bundle)
    st.sidebar.warning(
        f"“{bundle.name}” does not know {len(ctx.unknown)} of this prompt's {len(ctx.ids)} "
        f"tokens: they became `<unk>`. "
        + (
            "Try a prompt like its training text:"
            if examples
            else "Type text like its training text."
        )
    )
    for i, text in enumerate(examples):
        st.sidebar.button(
            _example_label(text),
            key=f"_example_prompt_{i}",
            help="Use this prompt",
            on_click=state.set_value,
            args=("prompt", text),
            use_container_width=True,
        )


def val_loss(bundle: Bundle) -> float | None:
    """The last validation loss in the training history, else meta['val_loss'], else None."""
    for record in reversed(bundle.history):
        if isinstance(record, dict) and isinstance(record.get("val_loss"), int | float):
            return float(record["val_loss"])
    value = bundle.meta.get("val_loss")
    return float(value) if isinstance(value, int | float) else None


# How the sidebar's model card names positions that are not a learned table.
POSITION_NOTES = {
    "sinusoidal": ", sine-wave positions",
    "none": ", no positions",
    "rope": ", RoPE positions",
    "alibi": ", ALiBi positions",
}


def model_card(bundle: Bundle, step: int | None = None) -> list[tuple[str, str]]:
    """(field, value) rows describing a model in a few words, for the sidebar; with `step`, the
    snapshot saved at that training step (its losses then, not the final ones)."""
    cfg, tok = bundle.config, bundle.tokenizer
    if family_of(cfg) != "gpt":
        rows = families.model_card_rows(bundle)
        return rows + (_loss_rows(bundle) if step is None else _step_rows(bundle, step))
    blocks = "attention only" if cfg.attn_only else "attention + MLP"
    norm = {"layernorm": f"{cfg.norm}-LN", "rmsnorm": f"{cfg.norm}-RMSNorm", "none": "no norm"}
    parts = [blocks, norm[cfg.norm_kind]]
    parts += [] if cfg.residual else ["no residual"]
    parts += ["SwiGLU" if cfg.act == "silu" else "gated"] if cfg.mlp == "gated" else []
    heads = f"{cfg.n_head} per layer (d_head {cfg.d_head})"
    if cfg.n_kv_heads < cfg.n_head:
        heads += f", {cfg.n_kv_heads} key-value"
    rows = [
        ("parameters", f"{bundle.model.n_params():,}"),
        ("layers", f"{cfg.n_layer} ({', '.join(parts)})"),
        ("heads", heads),
        ("d_model", f"{cfg.d_model}"),
        ("context", f"{cfg.n_ctx} tokens" + POSITION_NOTES.get(cfg.pos, "")),
        ("tokenizer", f"{tok.kind}, {tok.vocab_size:,} tokens"),
    ]
    if isinstance(source := bundle.meta.get("source"), str):  # e.g. a Hugging Face folder
        rows.append(("from", source[:80]))
    if step is not None:
        return rows + _step_rows(bundle, step)
    return rows + _loss_rows(bundle)


def _step_rows(bundle: Bundle, step: int) -> list[tuple[str, str]]:
    """Which training step is shown, and the losses recorded nearest it."""
    final = final_step(bundle.history, bundle.meta)
    of = f" of {final:,}" if final is not None else ""
    if step == 0:
        return [("training step", f"0{of}: the random weights before training")]
    rows = [("training step", f"{step:,}{of}")]
    train, val = losses_at(bundle.history, step)
    if train is not None:
        rows.append(("training loss then", f"{train:.3f} nats per token"))
    if val is not None:
        rows.append(("validation loss then", f"{val:.3f} nats per token (last evaluation)"))
    return rows


def _loss_rows(bundle: Bundle) -> list[tuple[str, str]]:
    """The validation loss with its unit and perplexity, beside what a blind guess scores (ln V,
    a uniform guess over the vocabulary) and, for a task, the best any model can score."""
    loss = val_loss(bundle)
    if loss is None:
        return []
    vocab = bundle.tokenizer.vocab_size
    # a model tuned from another (meta "base") was validated on its tuning text, not the base's
    label = "validation loss (tuning text)" if bundle.meta.get("base") else "validation loss"
    rows = [
        (label, f"{loss:.3f} nats per token (perplexity {math.exp(loss):,.1f})"),
        ("blind guess", f"{math.log(vocab):.3f} nats (ln {vocab:,}; perplexity {vocab:,})"),
    ]
    task = _task_of(bundle)
    if task is not None:
        rows.append(("best possible", f"{task_loss_floor(*task):.3f} nats (a perfect model)"))
    return rows


def _task_of(bundle: Bundle) -> tuple[str, int] | None:
    """(task, line length) of a model trained on a synthetic task with a char tokenizer, whose
    loss per token is per character (the unit task_loss_floor counts in); else None."""
    data = bundle.meta.get("data")
    if not isinstance(data, dict) or bundle.tokenizer.kind != "char":
        return None
    task, seq_len = data.get("task"), data.get("task_len")
    ok = (
        task in TASKS
        and isinstance(seq_len, int)
        and MIN_TASK_SEQ_LEN <= seq_len <= MAX_TASK_SEQ_LEN
    )
    return (task, seq_len) if ok else None


def loss_note(bundle: Bundle) -> str:
    """What the loss rows mean, under the model card; for a task, what part of it is luck."""
    note = (
        "Loss: the average −ln p the model gave the true next token on held-out text; "
        "perplexity e^loss: as unsure as a fair pick among that many tokens. "
        "A blind guess gives every token the same chance."
    )
    if (lookahead := loss_lookahead_claim(getattr(bundle.config, "causal", True))).made:
        note += " " + lookahead.text
    task = _task_of(bundle)
    if task is not None:
        note += f" On this task {TASK_UNPREDICTABLE[task[0]]}, so no model scores below the best possible."
    return note


@cache.per_model
def _card_text(bundle_id: str, step: int | None) -> tuple[str, str, str | None]:
    """The card's title, its lines and the loss note: once per model, not once per page run
    (counting the parameters walks every weight)."""
    bundle = cache.bundle(bundle_id)
    rows = model_card(bundle, step)
    rows += precision.card_rows(bundle, any("loss" in name for name, _ in rows))
    lines = "  \n".join(f"{name}: **{value}**" for name, value in rows)
    has_loss = any(name == "validation loss" for name, _ in rows)
    return f"About “{bundle.name}”", lines, loss_note(bundle) if has_loss else None


def draw_model_card(bundle_id: str, step: int | None = None) -> None:
    title, lines, note = _card_text(bundle_id, step)
    with st.sidebar.expander(title, expanded=True):
        st.markdown(lines)
        if note:
            st.caption(note)
        model_download.button(bundle_id)


# ---- the prompt as tokens ---------------------------------------------------------------------


def _unknown_message(bundle: Bundle, pieces: list, unknown: list[int]) -> str:
    chars = sorted({pieces[i].text for i in unknown})
    # whitespace as every label shows it (␣ ↵ ⇥), so a space reads the same on every page
    shown = ", ".join(f"“{md_escape(show_whitespace(c))}”" for c in chars[:12])
    message = (
        f"Some characters are not in this model's vocabulary and became `<unk>` "
        f"(the unknown token): {shown}{' …' if len(chars) > 12 else ''}. Labels mark them "
        f"{UNK_OPEN}like this{UNK_CLOSE}."
    )
    if mostly_unknown(len(unknown), len(pieces)) and example_prompts(bundle):
        message += (
            f" That is {len(unknown)} of {len(pieces)} tokens: under the Prompt box, the sidebar "
            f"offers prompts “{bundle.name}” knows."
        )
    return message


def _context(bundle_id: str, bundle: Bundle, prompt: str) -> PageContext:
    tok, n_ctx = bundle.tokenizer, bundle.config.n_ctx
    n_view = view_tokens(bundle.config)  # n_ctx, unless a model as big as GPT-2 needs less
    pieces = tok.pieces(prompt)
    messages = []
    n_cut = max(0, len(pieces) - n_view)
    if n_cut:
        pieces = pieces[n_cut:]  # a GPT reads the last n_ctx tokens, as Generation does
        why = (
            f"it was trained on windows of {n_ctx:,}"
            if bundle.family != "gpt"
            else f"this model reads at most {n_ctx:,}"
            if n_view == n_ctx
            else f"the pages look inside a model this large on at most {n_view:,} at a time "
            f"(it reads up to {n_ctx:,}; its activations on {n_view:,} tokens already take "
            f"{cache_bytes(bundle.config, n_view) / 2**20:,.0f} MB)"
        )
        messages.append(
            f"The prompt is {n_view + n_cut:,} tokens long, but {why}: "
            + ("like a GPT writing text, " if bundle.family == "gpt" else "")
            + f"every page reads the last {n_view:,}; the first {n_cut:,} were cut."
        )
    ids = [p.id for p in pieces]
    unknown = [i for i, p in enumerate(pieces) if tok.unk_id is not None and p.id == tok.unk_id]
    if unknown:
        messages.append(_unknown_message(bundle, pieces, unknown))
    texts = [p.text for p in pieces]
    return PageContext(
        bundle,
        bundle_id,
        bundle.model,
        tok,
        prompt,
        ids,
        texts,
        token_labels(texts, unknown),
        n_cut,
        messages,
        unknown,
    )
