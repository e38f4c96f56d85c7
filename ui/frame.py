"""The frame every page is drawn in: page config, the lesson navigation, the shared sidebar
(model picker, prompt, model card), and the PageContext the page works from.

    ctx = ui.frame("Attention", "👀")   # the first call on every page
    ctx.model, ctx.ids, ctx.labels ...

The prompt and the model live under the session-state keys "prompt" and "model" and in the URL
(`?model=...&prompt=...`), so they follow the student from page to page and a link reopens the view.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from ui import cache, models, nav, state
from viz_model.charts.common import token_labels
from viz_model.checkpoint import Bundle, CheckpointError
from viz_model.config import GPTConfig
from viz_model.model import GPT
from viz_model.tokenization import Tokenizer

APP_NAME = "Inside a GPT"
DEFAULT_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"
MAX_PROMPT_CHARS = 5000
_GOOD = "_last_good_model"


@dataclass
class PageContext:
    """What a page needs: the loaded model and the prompt as tokens (cropped to the context)."""

    bundle: Bundle
    bundle_id: str  # cache key: folder + weights mtime
    model: GPT
    tokenizer: Tokenizer
    prompt: str  # as typed
    ids: list[int]  # encoded, the first n_ctx tokens
    pieces: list[str]  # each token's text
    labels: list[str]  # distinct axis labels, "3:the"
    n_cut: int = 0  # tokens cut off the end to fit the context
    messages: list[str] = field(default_factory=list)

    @property
    def config(self) -> GPTConfig:
        return self.bundle.config

    @property
    def name(self) -> str:
        return self.bundle.name


def frame(title: str, icon: str = "", *, needs_prompt: bool = True) -> PageContext:
    """Draw the page frame and return the page's context. Call it first, once, on every page.

    It draws the page title (do not draw another). With an empty prompt it shows a note and stops
    the page, unless needs_prompt=False (Home), in which case ctx.ids may be empty.
    """
    st.set_page_config(
        page_title=f"{title} · {APP_NAME}" if title != APP_NAME else title,
        page_icon=icon or None,
        layout="wide",
        initial_sidebar_state="expanded",
    )
    draw_navigation()
    found = models.discover()
    if not found:
        st.error(
            "No model found. Put a model bundle (a folder with config.json, model.safetensors and "
            "tokenizer.json) in assets/models/ or runs/, or train one with `python -m viz_model.train`."
        )
        st.stop()
    bundle_id, bundle, errors = _resolve_model(found)
    _model_picker(list(found))
    prompt = _prompt_box()
    draw_model_card(bundle)

    # Material icons come with Streamlit; emoji need a font some classroom machines lack.
    st.title(f"{icon} {title}" if icon.startswith(":material/") else title)
    for message in errors:
        st.error(message)
    ctx = _context(bundle_id, bundle, prompt)
    for message in ctx.messages:
        st.info(message)
    if not ctx.ids:
        st.info("Type a prompt in the sidebar to see what the model does with it.", icon="✏️")
        if needs_prompt:
            st.stop()
    return ctx


# ---- navigation -------------------------------------------------------------------------------


def draw_navigation() -> None:
    """The lesson's pages in the sidebar, grouped by section; only pages whose file exists."""
    side = st.sidebar
    side.page_link(nav.HOME.file, label=nav.HOME.label, icon=nav.HOME.icon)
    for section, pages in nav.available_sections().items():
        side.caption(section)
        for page in pages:
            page_link(page, side, help=page.description)
    side.divider()


def page_link(page: nav.Page, container=st, **kwargs) -> None:
    """st.page_link to a registered page; a page file added after the server started (Streamlit
    only knows the pages it found at start) is left out instead of breaking the frame."""
    with contextlib.suppress(StreamlitPageNotFoundError):
        container.page_link(page.file, label=page.label, icon=page.icon, **kwargs)


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
        errors.append(f"There is no model called “{requested}” here; showing another one.")
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


def _prompt_box() -> str:
    ss = st.session_state
    if "prompt" not in ss:
        raw = st.query_params.get("prompt")
        ss["prompt"] = DEFAULT_PROMPT if raw is None else raw
    prompt = str(ss["prompt"])[:MAX_PROMPT_CHARS]
    state.set_value("prompt", prompt)
    state.bind(
        st.sidebar.text_area,
        "prompt",
        prompt,
        "Prompt",
        max_chars=MAX_PROMPT_CHARS,
        height=120,
        help="The text every page looks at. Press Ctrl+Enter (or click outside) to apply.",
    )
    return st.session_state["prompt"]


def val_loss(bundle: Bundle) -> float | None:
    """The last validation loss in the training history, else meta['val_loss'], else None."""
    for record in reversed(bundle.history):
        if isinstance(record, dict) and isinstance(record.get("val_loss"), int | float):
            return float(record["val_loss"])
    value = bundle.meta.get("val_loss")
    return float(value) if isinstance(value, int | float) else None


def model_card(bundle: Bundle) -> list[tuple[str, str]]:
    """(field, value) rows describing a model in a few words, for the sidebar."""
    cfg, tok = bundle.config, bundle.tokenizer
    blocks = "attention only" if cfg.attn_only else "attention + MLP"
    rows = [
        ("parameters", f"{bundle.model.n_params():,}"),
        ("layers", f"{cfg.n_layer} ({blocks}, {cfg.norm}-LN)"),
        ("heads", f"{cfg.n_head} per layer (d_head {cfg.d_head})"),
        ("d_model", f"{cfg.d_model}"),
        ("context", f"{cfg.n_ctx} tokens"),
        ("tokenizer", f"{tok.kind}, {tok.vocab_size:,} tokens"),
    ]
    loss = val_loss(bundle)
    if loss is not None:
        rows.append(("validation loss", f"{loss:.3f}"))
    return rows


def draw_model_card(bundle: Bundle) -> None:
    lines = "  \n".join(f"{name}: **{value}**" for name, value in model_card(bundle))
    with st.sidebar.expander(f"About “{bundle.name}”", expanded=True):
        st.markdown(lines)


# ---- the prompt as tokens ---------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|<>~$" else c for c in text)


def _context(bundle_id: str, bundle: Bundle, prompt: str) -> PageContext:
    tok, n_ctx = bundle.tokenizer, bundle.config.n_ctx
    pieces = tok.pieces(prompt)
    messages = []
    n_cut = max(0, len(pieces) - n_ctx)
    if n_cut:
        pieces = pieces[:n_ctx]
        messages.append(
            f"The prompt is {n_ctx + n_cut} tokens long, but this model reads at most {n_ctx}: "
            f"the first {n_ctx} are shown and the last {n_cut} were cut."
        )
    ids = [p.id for p in pieces]
    if tok.unk_id is not None:
        unknown = sorted({p.text for p in pieces if p.id == tok.unk_id})
        if unknown:
            shown = ", ".join(_md_escape(repr(c)) for c in unknown[:12])
            messages.append(
                f"Some characters are not in this model's vocabulary and became `<unk>` "
                f"(the unknown token): {shown}{' …' if len(unknown) > 12 else ''}."
            )
    texts = [p.text for p in pieces]
    return PageContext(
        bundle,
        bundle_id,
        bundle.model,
        tok,
        prompt,
        ids,
        texts,
        token_labels(texts),
        n_cut,
        messages,
    )
