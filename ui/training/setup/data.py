"""The form's Data and Tokenizer: Shakespeare, a synthetic task or the user's own text (pasted or
uploaded, checked before Start), and how the text is split into tokens. Also drawn by the
fine-tune form (ui/training/finetune.py), which is handed `draw_data`.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from ui import state
from viz_model.model.config import MAX_VOCAB
from viz_model.text.data import (
    CORPORA,
    MAX_UPLOAD_BYTES,
    MIN_TRAIN_CHARS,
    TASKS,
    DataError,
    validate_user_text,
)
from viz_model.text.tokenization import DEFAULT_VOCAB

SOURCES = {"corpus": "Shakespeare", "task": "A synthetic task", "own": "Your own text"}
OWN = {"paste": "Paste it", "upload": "Upload a .txt"}
TOKENIZERS = {"char": "Characters", "bpe": "BPE", "word": "Words"}
TOKENIZER_NOTES = {
    "char": "One token per character: a tiny vocabulary, long sequences.",
    "bpe": "Frequent byte pairs merged into tokens, as in GPT-2: any text, shorter sequences.",
    "word": "One token per word or punctuation mark; words it never saw become <unk>.",
}


def draw_data() -> tuple[dict[str, Any], str | None, str | None]:
    """(the RunSettings data fields, the user's checked text or None, what is wrong or None)."""
    st.markdown("**Data**")
    kind = state.radio("Train on", "t_data", list(SOURCES), "corpus", format_func=SOURCES.get)
    if kind == "corpus":
        st.caption(CORPORA["shakespeare"])
        return {"corpus": "shakespeare"}, None, None
    if kind == "task":
        task = state.selectbox("Task", "t_task", list(TASKS), "repeat")
        st.caption(TASKS[task])
        return {"task": task}, None, None
    how = state.radio(
        "Your text", "t_own", list(OWN), "paste", format_func=OWN.get, horizontal=True
    )
    st.caption(
        "Your text is not carried in the page's link: each laptop pastes or uploads its own."
    )
    if how == "paste":
        raw = st.text_area("Text to train on", key="t_paste", height=110)
        label = "pasted text"
    else:
        upload = st.file_uploader(
            "A plain-text file",
            type=["txt"],
            key="t_upload",
            max_upload_size=math.ceil(MAX_UPLOAD_BYTES / 1e6),
        )
        raw, label = (upload.getvalue(), upload.name) if upload else (None, "")
    if not raw:
        need = f"Give at least {MIN_TRAIN_CHARS:,} characters of text to train on."
        if how == "upload":  # the browser refuses a larger file with a red mark and a tooltip
            need += (
                f" A file may be at most {MAX_UPLOAD_BYTES / 1e6:g} MB; a larger one is not sent."
            )
        st.info(need)
        return {"text_file": label or "text"}, None, need
    try:
        text = validate_user_text(raw)
    except DataError as exc:
        st.error(str(exc))
        return {"text_file": label}, None, str(exc)
    st.caption(f"{len(text):,} characters, {len(set(text)):,} distinct.")
    return {"text_file": label}, text, None


def draw_tokenizer() -> tuple[str, int | None]:
    st.markdown("**Tokenizer**")
    kind = state.radio(
        "Split the text into", "t_tok", list(TOKENIZERS), "char", format_func=TOKENIZERS.get
    )
    st.caption(TOKENIZER_NOTES[kind])
    if kind == "char":
        return kind, None
    low = 256 if kind == "bpe" else 2
    vocab = state.number_input(
        "Vocabulary size", "t_vocab", low, MAX_VOCAB, DEFAULT_VOCAB[kind], step=64
    )
    return kind, vocab
