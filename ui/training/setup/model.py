"""The form's Model: the family, the preset and, when customised, every field of its shape and
the block's parts (each one a lesson contrasts), with the model's own complaint if it cannot be
built. A new family or preset resets the fields it sets.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import families, state
from viz_model.model.config import (
    ACT_LABELS,
    ACTS,
    MAX_CTX,
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LAYERS,
    MLPS,
    NORM_KINDS,
    NORMS,
    POSITIONS,
    PRESETS,
    GPTConfig,
    preset,
)
from viz_model.model.recurrent_config import (
    FAMILIES,
    FAMILY_LABELS,
    FAMILY_TEXT,
    MAX_KERNEL,
    RecurrentConfig,
    preset_shape,
)

PRESET_NOTES = {
    "tiny": "the smallest: trains in seconds, learns little",
    "small": "the command line's default",
    "medium": "the largest: slow on a laptop CPU",
    "attn-only-2l": "attention only: where induction heads form (try the repeat task)",
    "quick": "tuned for a one-minute run in class",
}
DEFAULT_PRESET = "quick"
# The model's fields a preset sets: reset to the new preset's values when it changes.
SHAPE_KEYS = ("n_layer", "n_head", "d_model", "n_ctx", "pos", "norm", "attn_only")
BLOCK_KEYS = ("norm_kind", "residual", "mlp", "act", "n_kv_heads")  # the block's parts
CUSTOM_KEYS = (*SHAPE_KEYS, *BLOCK_KEYS, "tie_embeddings", "dropout")
# How the set-up form names each choice: the lecture's word, then the field's value.
POSITION_LABELS = {
    "learned": "learned (GPT-2)",
    "sinusoidal": "sinusoidal (2017)",
    "none": "none",
    "rope": "RoPE (Llama)",
    "alibi": "ALiBi",
}
NORM_KIND_LABELS = {"layernorm": "LayerNorm (GPT-2)", "rmsnorm": "RMSNorm (Llama)", "none": "none"}
MLP_LABELS = {"standard": "standard", "gated": "gated (GLU)"}
PRESET_DEPENDENT = (*(f"t_{k}" for k in CUSTOM_KEYS), "t_kernel", "t_batch", "t_lr")


def draw_model() -> tuple[str, str, bool]:
    """The model family, the preset and whether its shape is customised; a new family or preset
    resets the fields it sets."""
    st.markdown("**Model**")
    family = state.selectbox(
        "Family",
        "t_family",
        list(FAMILIES),
        "gpt",
        format_func=FAMILY_LABELS.get,
        help="The kind of network. The others train on the same data, tokenizer and budget; "
        "each preset gives them about the GPT preset's number of weights.",
    )
    name = state.selectbox("Preset", "t_preset", list(PRESETS), DEFAULT_PRESET)
    if family == "gpt":
        cfg = preset(name, 2)
        st.caption(
            f"{PRESET_NOTES.get(name, name)}: {cfg.n_layer} layers × {cfg.n_head} heads, "
            f"d_model {cfg.d_model}, context {cfg.n_ctx}" + (", attention only" * cfg.attn_only)
        )
    else:
        st.caption(_family_caption(RecurrentConfig(family, 2, **preset_shape(family, name))))
    seen = st.session_state.get("_t_preset_seen")
    name_seen = f"{family}/{name}"
    if seen is not None and seen != name_seen:
        for key in PRESET_DEPENDENT:
            st.session_state.pop(key, None)
            if key in st.query_params:
                del st.query_params[key]
    st.session_state["_t_preset_seen"] = name_seen
    custom = state.toggle("Customise the shape", "t_custom", False)
    return family, name, custom


def _family_caption(cfg: RecurrentConfig) -> str:
    """A family's shape for the preset, in words: what it is, its layers, what it reads."""
    text = families.a_family(cfg.family)
    text = text[0].upper() + text[1:]
    text += f", {FAMILY_TEXT[cfg.family]}: {cfg.n_layer} layers of width {cfg.d_model}, "
    text += f"trained on windows of {cfg.n_ctx} tokens"
    if cfg.receptive_field is not None:
        text += f", reading the last {cfg.receptive_field}"
    return text + ". Heads, positions and MLPs are a GPT's: this model has none."


def draw_family_shape(family: str, preset_name: str) -> tuple[dict[str, Any], str | None]:
    """The fields an RNN, LSTM, GRU or CNN takes, starting from its shape for the preset; the
    GPT's other options are not offered (said in a caption)."""
    base = RecurrentConfig(family, 2, **preset_shape(family, preset_name))
    st.caption(
        f"The {FAMILY_LABELS[family]}'s shape, starting from its {preset_name} preset's. Heads, "
        "positions, the MLP and the block's parts are a transformer's, so they are not offered."
    )
    c1, c2, c3 = st.columns(3)
    fields = {
        "n_layer": state.number_input(
            "Layers",
            "t_n_layer",
            1,
            12 if family == "cnn" else MAX_LAYERS,
            base.n_layer,
            container=c1,
        ),
        "d_model": state.number_input(
            "Width (d_model)", "t_d_model", 1, MAX_D_MODEL, base.d_model, step=16, container=c2
        ),
        "n_ctx": state.number_input(
            "Training window", "t_n_ctx", 1, MAX_CTX, base.n_ctx, step=16, container=c3
        ),
        "dropout": state.number_input(
            "Dropout", "t_dropout", 0.0, 0.9, float(base.dropout), step=0.05, container=c1
        ),
    }
    if family == "cnn":
        fields["kernel_size"] = state.number_input(
            "Kernel width", "t_kernel", 2, MAX_KERNEL, base.kernel_size, container=c2
        )
    try:
        cfg = RecurrentConfig(family, 2, **fields)
    except ValueError as exc:
        message = f"This model cannot be built: {exc}."
        st.error(message)
        return fields, message
    if cfg.receptive_field is not None:
        st.caption(
            f"It reads the last {cfg.receptive_field} tokens: 1 + (kernel − 1) × (1 + 2 + … + "
            f"{cfg.dilations[-1]})."
        )
    return fields, None


def draw_custom_shape(preset_name: str) -> tuple[dict[str, Any], str | None]:
    """Every field of the shape, starting from the preset's; the model's own complaint, if any."""
    base = preset(preset_name, 2)
    st.caption(
        f"The model's shape, starting from the {preset_name} preset's (the MLP keeps "
        "4 × d_model neurons, 8/3 × when gated). Each choice is one the lessons contrast."
    )
    c1, c2, c3 = st.columns(3)
    fields = {
        "n_layer": state.number_input(
            "Layers", "t_n_layer", 1, MAX_LAYERS, base.n_layer, container=c1
        ),
        "n_head": state.number_input("Heads", "t_n_head", 1, MAX_HEADS, base.n_head, container=c2),
        "d_model": state.number_input(
            "d_model", "t_d_model", 1, MAX_D_MODEL, base.d_model, step=16, container=c3
        ),
        "n_ctx": state.number_input(
            "Context", "t_n_ctx", 1, MAX_CTX, base.n_ctx, step=16, container=c1
        ),
        "pos": state.selectbox(
            "Positions",
            "t_pos",
            list(POSITIONS),
            base.pos,
            format_func=POSITION_LABELS.get,
            container=c2,
        ),
        "norm": state.selectbox("Norm placement", "t_norm", list(NORMS), base.norm, container=c3),
        "dropout": state.number_input(
            "Dropout", "t_dropout", 0.0, 0.9, float(base.dropout), step=0.05, container=c1
        ),
        "attn_only": state.checkbox("Attention only", "t_attn_only", base.attn_only, container=c2),
        "tie_embeddings": state.checkbox(
            "Tie embeddings", "t_tie_embeddings", base.tie_embeddings, container=c3
        ),
        **_block_parts(base),
    }
    try:
        preset(preset_name, 2, **fields)
    except ValueError as exc:
        message = f"This model cannot be built: {exc}."
        st.error(message)
        return fields, message
    return fields, None


def _block_parts(base: GPTConfig) -> dict[str, Any]:
    """The parts of the block modern models changed, or that a contrast switches off."""
    st.caption(
        "The block's parts, each one the lectures explain or modern models changed. A gated MLP "
        "keeps about as many weights with 8/3 × d_model neurons; fewer key-value heads than heads "
        "is grouped-query attention (1: multi-query)."
    )
    c1, c2, c3 = st.columns(3)
    parts = {
        "norm_kind": state.selectbox(
            "Normalization",
            "t_norm_kind",
            list(NORM_KINDS),
            base.norm_kind,
            format_func=NORM_KIND_LABELS.get,
            container=c1,
        ),
        "mlp": state.selectbox(
            "MLP", "t_mlp", list(MLPS), base.mlp, format_func=MLP_LABELS.get, container=c2
        ),
        "act": state.selectbox(
            "Nonlinearity", "t_act", list(ACTS), base.act, format_func=ACT_LABELS.get, container=c3
        ),
        "n_kv_heads": state.number_input(
            "Key-value heads (0: one per head)", "t_n_kv_heads", 0, MAX_HEADS, 0, container=c1
        ),
        "residual": state.checkbox(
            "Residual connections", "t_residual", base.residual, container=c2
        ),
    }
    if parts["residual"]:  # the default: said by leaving it out, as the command line does
        del parts["residual"]
    if parts["mlp"] == "gated":
        name = {"silu": "SwiGLU, as in Llama", "gelu": "GeGLU", "relu": "ReGLU"}.get(parts["act"])
        st.caption(f"A gated MLP with this nonlinearity is {name or 'a GLU'}; SiLU makes SwiGLU.")
    return parts
