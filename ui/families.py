"""Models of other families than the GPT in the frame: the refusal a GPT-only page shows for
them, and their rows of the sidebar's model card.

Not here: which page takes which family (each entry of ui/nav.py says so), the models
(viz_model/model/recurrent.py).
"""

from __future__ import annotations

import streamlit as st

from ui import nav
from viz_model.analysis.claims import md_escape
from viz_model.bundles.checkpoint import Bundle
from viz_model.model.recurrent_config import FAMILY_LABELS, FAMILY_TEXT, RecurrentConfig

ARTICLES = {"gpt": "a", "rnn": "an", "lstm": "an", "gru": "a", "cnn": "a"}


def a_family(family: str) -> str:
    """ "an LSTM", "a causal CNN"."""
    return f"{ARTICLES[family]} {FAMILY_LABELS[family]}"


def reads_the_past(cfg: RecurrentConfig) -> str:
    """How a model of this family reads earlier tokens, in a phrase."""
    if cfg.family == "cnn":
        return (
            f"stacked causal convolutions over the last {cfg.receptive_field} tokens "
            "(its receptive field)"
        )
    carried = "its hidden state and cell state" if cfg.family == "lstm" else "its hidden state"
    return f"{carried}, carried from one token to the next"


# What the layers of each family are, in the words of its Home paragraph.
LAYER_WORDS = {"rnn": "RNN cells", "lstm": "LSTM cells", "gru": "GRU cells", "cnn": "convolutions"}


def refusal(page: nav.Page, bundle: Bundle) -> str:
    """Why `page` cannot show this model: what of a transformer the page looks at, why this
    model cannot give it (it has none, or the page's own `why_not`), and how it reads the past."""
    family = bundle.family
    label = FAMILY_LABELS[family]
    needs = page.needs or "insides"
    if page.why_not:
        why = page.why_not.format(model=a_family(family), layers=LAYER_WORDS[family])
        why += f". {a_family(family)[0].upper()}{a_family(family)[1:]} reads"
    else:
        why = f"{a_family(family)} has none: it reads"
    return (
        f"“{md_escape(bundle.name)}” is {a_family(family)}: {FAMILY_TEXT[family]}. This page looks at a "
        f"transformer's {needs}; {why} the past through {reads_the_past(bundle.config)}. Pick a "
        f"GPT in the sidebar's model picker, or open a page that shows this {label}:"
    )


def refuse(page: nav.Page, bundle: Bundle) -> None:
    """Show the refusal with links to the pages that can show this model, and stop the run."""
    st.info(refusal(page, bundle), icon=":material/block:")
    for other in nav.all_pages():
        if (
            bundle.family in other.families
            and other.shows_sidebar_model
            and other.url_path not in ("Lessons", "Class")
        ):
            st.page_link(other.file, label=other.label, icon=other.icon)
    st.stop()


def model_card_rows(bundle: Bundle) -> list[tuple[str, str]]:
    """The shape rows of the sidebar's model card for an RNN, LSTM, GRU or CNN."""
    cfg: RecurrentConfig = bundle.config
    counts = bundle.model.param_counts()
    rows = [
        ("family", FAMILY_LABELS[cfg.family]),
        ("parameters", f"{bundle.model.n_params():,} ({counts[cfg.family]:,} in the layers)"),
        ("layers", f"{cfg.n_layer} of width {cfg.d_model}"),
    ]
    if cfg.receptive_field is not None:
        reads = f"the last {cfg.receptive_field} tokens (kernel {cfg.kernel_size}, dilations "
        reads += ", ".join(str(d) for d in cfg.dilations) + ")"
    else:
        reads = "everything before, through its state (no context limit)"
    rows += [
        ("reads", reads),
        ("trained on", f"windows of {cfg.n_ctx} tokens"),
        ("tokenizer", f"{bundle.tokenizer.kind}, {bundle.tokenizer.vocab_size:,} tokens"),
    ]
    return rows


def family_sentences(cfg: RecurrentConfig) -> str:
    """Home's paragraph about a model of another family, each sentence decided by its config."""
    d, layers = cfg.d_model, cfg.n_layer
    text = (
        f"This model is {a_family(cfg.family)}, not a GPT: {FAMILY_TEXT[cfg.family]}. "
        f"Token ids are looked up in the **embedding** (a vector of {d} numbers per token), then "
        f"pass through {layers} layers of width {d}, a final LayerNorm and the **unembedding**, "
        "which gives a score to every token of the vocabulary. "
    )
    if cfg.family == "cnn":
        text += (
            f"Each layer is a **causal convolution** of width {cfg.kernel_size}, dilated "
            + ", ".join(str(x) for x in cfg.dilations)
            + ": it mixes each position with a few earlier ones, never later ones, and adds the "
            f"result to its input. Stacked, they read the last **{cfg.receptive_field} tokens** "
            "(the receptive field) and nothing before them. There is no attention and no "
            "position vector: the order comes from which weight meets which earlier token."
        )
    else:
        text += (
            "Each layer reads the tokens **one at a time**, in order, updating a state it carries "
            "to the next token; what it passes up is its hidden state. There is no attention and "
            "no position vector: the order is in the order of the updates. Writing text costs the "
            "same for every new token, however long the text (a GPT's KV cache grows). It was "
            f"trained on windows of {cfg.n_ctx} tokens, starting each from a zero state."
        )
    return text


def no_attention_note(bundle: Bundle) -> str:
    """What a page says where a GPT's view would show attention, for another family."""
    family = bundle.family
    return (
        f"{a_family(family)[0].upper()}{a_family(family)[1:]} has no attention to show: the "
        f"newest token's prediction reads the past through {reads_the_past(bundle.config)}."
    )


def no_heads_here(bundle: Bundle) -> str:
    """Training dynamics' note for another family: what it follows, and what it shows instead."""
    return (
        f"This page follows each attention head's role along training (previous-token and "
        f"induction heads forming); “{md_escape(bundle.name)}” is {a_family(bundle.family)} and "
        "has no heads. Below: its loss along training and the health of its gradients, layer by "
        "layer, recorded while it trained (the Training page also has the text it wrote)."
    )
