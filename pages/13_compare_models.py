"""Compare models: the sidebar's model and any other side by side on one prompt: tokens, bits per
character, next-token distributions, one head's attention each, and their training curves."""

import math
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

import ui
from serving import models
from ui import cache, corpus, families, finetune_view, present, state
from ui.charts import compare as charts
from ui.charts.common import token_labels
from viz_model.analysis import compare as cmp
from viz_model.analysis import training as tr
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.model.recurrent_config import FAMILY_LABELS

TOP_K = 8

ctx = ui.context()
found = models.discover()

st.markdown(
    "Two models, one prompt. Each reads the prompt with **its own tokenizer**, so their losses per "
    "token measure different things: a BPE token often holds several characters (the table "
    "counts them), a character token one. Dividing by the characters puts them on one scale, "
    "**bits per character**: how many yes/no questions the model needs, on average, to pin "
    "down each next character."
)
# Two short lines, not one long one: the main column is ~560 px on a 1024 px projector.
st.latex(
    r"\begin{gathered}\text{bits per character} = "
    r"\frac{\sum_t -\log_2 p(x_t \mid x_{<t})}{\text{characters}}\\"
    r"= \frac{\text{loss in nats per token}}{\ln 2 \times \text{characters per token}}"
    r"\end{gathered}"
)


@cache.per_model(keep=64)
def model_info(folder: str, mtime: float) -> cmp.ModelInfo:
    """What a bundle's config.json says about its text, tokenizer and shape (cached per file)."""
    return cmp.model_info(Path(folder))


def mtime(folder: Path) -> float:
    try:
        return (folder / "config.json").stat().st_mtime
    except OSError:
        return 0.0


names = list(found)
infos = {n: model_info(str(path), mtime(path)) for n, path in found.items()}
other = state.selectbox(
    "Compare with",
    "cmp_model",
    names,
    cmp.partner(ctx.name, infos),
    help="Any bundled model or one trained on this server (in runs/). It opens on the same text "
    "read by another tokenizer when there is one. The sidebar chooses the first model, and its "
    "training step.",
)
other_id = models.bundle_id(found[other])
try:
    other_bundle = cache.bundle(other_id)
except CheckpointError as exc:
    st.error(f"Could not open “{other}”: {exc}. Choose another model to compare with.")
    st.stop()

step = models.split_step(ctx.bundle_id)[1]
sides: list[tuple[str, str, Bundle]] = [
    (ctx.name + (f" (step {step:,})" if step is not None else ""), ctx.bundle_id, ctx.bundle),
    (other, other_id, other_bundle),
]


def chars_per_token(bundle_id: str, bundle: Bundle) -> float | None:
    """Characters per token on the model's validation text: 1 for characters, else counted."""
    if bundle.tokenizer.kind == "char":
        return 1.0
    found_models = corpus.token_models(bundle_id)
    return found_models.chars_per_token if found_models else None


read = []  # (tokens, scores) per side
for name, bid, b in sides:
    tokens = cmp.read_prompt(b.tokenizer, b.config.n_ctx, ctx.prompt)
    if not tokens.ids:
        st.info(f"“{name}” makes no tokens of this prompt. Type another in the sidebar.")
        st.stop()
    logits = cache.logits(bid, tuple(tokens.ids))
    read.append((tokens, cmp.prompt_scores(logits, tokens, TOP_K, b.tokenizer.id_to_token)))


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "–" if x is None or not math.isfinite(x) else format(x, spec)


st.subheader("The prompt, read by each")
rows, stood_in = [], []
for (name, bid, b), (tokens, scores) in zip(sides, read, strict=True):
    # the loss recorded for the weights on screen: a snapshot's, not the run's last (issue 36)
    shown = models.split_step(bid)[1]
    recorded = tr.val_loss_at(b.history, b.meta, shown)
    found_text = corpus.token_models(bid) if recorded is not None and b.meta.get("data") else None
    val_cell = cmp.validation_cell(
        recorded, found_text.chars_per_token if found_text else None, shown
    )
    if shown is not None and recorded is not None and recorded.of_final and val_cell != "–":
        stood_in.append(name)
    rows.append(
        {
            "model": name,
            "family": FAMILY_LABELS[b.family],
            "tokenizer": f"{b.tokenizer.kind} ({b.tokenizer.vocab_size:,})",
            "parameters": f"{b.model.n_params():,}",
            "prompt tokens": f"{len(tokens.ids)}"
            + (f" (+{tokens.n_cut} cut)" if tokens.n_cut else ""),
            "chars per token": fmt(tokens.n_chars / len(tokens.ids), ".2f"),
            "bits/char, prompt": fmt(scores.bits_per_char),
            "bits/char, validation": val_cell,
        }
    )
# one column per model: two columns fit a projector, seven did not
st.dataframe(pd.DataFrame(rows).set_index("model").T, width="stretch")
if step is None:
    at_step = ""
elif stood_in:
    at_step = (
        f" For “{ctx.name}” at step {step:,}: no validation loss was recorded by that step, so "
        "the final step's stands in, labelled so."
    )
else:
    at_step = (
        f" For “{ctx.name}” at step {step:,}: the last one recorded by then, at the step in "
        "brackets."
    )
st.caption(
    "bits/char: bits per character. Validation: the last validation loss recorded in training, "
    "on each model's own held-out text "
    "(two models trained on different texts are not scored on the same one; the prompt is the "
    f"same for both).{at_step} “–”: not known (a model whose training text cannot be found)."
)
for name, _, b in sides:
    if not b.config.causal:
        st.warning(
            f"“{name}” has **no causal mask**: each position also sees the token it is scored "
            "on, so its bits per character measure copying, not predicting, and are not "
            "comparable with a masked model's. Below, it is left out of the cut-word test."
        )
columns = st.columns(2)
for col, (name, _, _), (tokens, _) in zip(columns, sides, read, strict=True):
    col.markdown(f"**{name}**: {len(tokens.ids)} tokens")
    col.code(" ".join(token_labels(tokens.texts)), language=None, wrap_lines=True)

st.subheader("What each would write next")
columns = st.columns(2)
for i, (col, (name, _, _), (_, scores)) in enumerate(zip(columns, sides, read, strict=True)):
    fig = charts.next_token_bars(
        scores.top.labels, scores.top.base_probs, f"{name}: top {TOP_K}", charts.MODEL_COLOURS[i]
    )
    present.plot(fig, key=f"cmp_next_{i}", container=col)

st.subheader("Where a word is cut")
st.markdown(
    "A BPE model only ever read text the way its tokenizer splits it. A common piece of a word "
    "is one token (“ion” in “question”), so in training the model saw the letters of that piece "
    "together. Cut a prompt **inside such a token** and the model reads a split its tokenizer "
    "makes only where the text goes on differently: it can give the word's real ending "
    "little probability, where a character model, which saw the text cut after every "
    "character, has no such blind spot. This is the **token-boundary** problem; some systems that "
    "complete a user's half-typed word back up one token and let the model write it whole "
    "(“token healing”)."
)
# a model without the causal mask learned to read the answer, not to predict it: not a witness
masked = [side for side in sides if side[2].config.causal]
split_by = next((b.tokenizer for _, _, b in masked if b.tokenizer.kind != "char"), None)
cut = cmp.cut_inside_token(ctx.prompt, split_by) if split_by is not None else None
if cut is None:
    st.caption(
        "Nothing to cut here: that needs a model with a causal mask whose tokens hold several "
        "letters, and a prompt with such a token inside a word."
    )
else:
    boundary = []
    for name, bid, b in masked:
        train = None
        if b.tokenizer.kind != "char" and (tm := corpus.token_models(bid)) is not None:
            train = tm.index.tokens[: tm.index.n_train]
        run = partial(lambda bid, ids: cache.logits(bid, tuple(ids)), bid)
        side = cmp.boundary_side(name, b.tokenizer, b.config.n_ctx, cut, run, train)
        boundary.append(side)
    st.markdown(f"The prompt, cut: “…{cmp.shown(cut.text[-40:])}”")
    st.markdown(cmp.boundary_claim(cut, boundary).text)

if any(b.family == "gpt" for _, _, b in sides):  # an RNN, LSTM, GRU or CNN has no heads
    st.subheader("One head of each")
    columns = st.columns(2)
    for i, (col, (name, bid, b), (tokens, _)) in enumerate(zip(columns, sides, read, strict=True)):
        side = "ab"[i]
        if b.family != "gpt":
            col.caption(f"“{name}”: {families.no_attention_note(b)}")
            continue
        c1, c2 = col.columns(2)
        layer = state.slider("Layer", f"cmp_layer_{side}", 0, b.config.n_layer - 1, 0, container=c1)
        head = state.slider("Head", f"cmp_head_{side}", 0, b.config.n_head - 1, 0, container=c2)
        hook = f"blocks.{layer}.attn.hook_pattern"
        pattern = cache.activations(bid, tuple(tokens.ids), (hook,))[hook][head]  # (T, T)
        fig = cache.figure(  # built once per pattern and labels; drawing a built one is cheap
            charts.half_width_pattern,
            pattern,
            token_labels(tokens.texts),
            title=f"{name}: L{layer} H{head}",
        )
        present.plot(fig, key=f"cmp_attn_{i}", container=col)

st.subheader("How they trained")
c1, c2 = st.columns(2)
unit = state.radio(
    "Loss in", "cmp_unit", list(cmp.UNITS), cmp.UNITS[0], horizontal=True, container=c1
)
x = state.radio(
    "Against",
    "cmp_x",
    list(tr.X_AXES),
    "step",
    horizontal=True,
    format_func=lambda v: tr.X_AXES[v],
    container=c2,
)
named, missing = [], []
for name, bid, b in sides:
    per_step = int((b.train_config or {}).get("batch_size", 1)) * b.config.n_ctx
    curves = cmp.curves_in(
        tr.curves(b.history, x, per_step), chars_per_token(models.split_step(bid)[0], b), unit
    )
    (named if curves is not None and curves.train_x.size else missing).append((name, curves))
if named:
    present.plot(cache.figure(charts.overlaid_curves, named, unit), key="cmp_curves")
    notes = cmp.training_notes(
        [(name, b.meta, finetune_view.text_key(b.meta.get("data"))) for name, _, b in sides]
    )
    if notes:
        st.caption(" ".join(notes))
for name, _ in missing:
    st.info(
        f"“{name}” has no training curve in {unit} (no history, or its characters per token "
        "are not known: its training text cannot be found)."
    )
