"""The Compare models page's sections, one function each, drawn in order by
pages/13_compare_models.py: bits per character (`intro`), the model to compare with (`chosen`),
the prompt read by each (`read`, then `prompt_table`), what each would write next (`next_token`),
where a word is cut (`cut_word`), one head of each (`one_head`), and their training curves
(`how_they_trained`).

Not here: the measures and claims (viz_model/analysis/labs/compare.py), the chart builders
(ui/charts/compare.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from serving import models
from ui import cache, corpus, families, present, state
from ui.charts import compare as charts
from ui.charts.common import token_labels
from ui.frame import PageContext
from ui.training import finetune_view
from viz_model.analysis import training as tr
from viz_model.analysis.labs import compare as cmp
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.files import CheckpointError
from viz_model.model.recurrent_config import FAMILY_LABELS

TOP_K = 8  # the next tokens shown for each model


@dataclass(frozen=True)
class Model:
    """One of the two models: its name (with the sidebar's step for the first), id and bundle."""

    name: str
    bundle_id: str
    bundle: Bundle


@dataclass(frozen=True)
class Side:
    """One model and the prompt as it reads it: its tokens and its scores on them."""

    name: str
    bundle_id: str
    bundle: Bundle
    tokens: cmp.PromptTokens
    scores: cmp.PromptScores


@cache.per_model(keep=64)
def model_info(folder: str, mtime: float) -> cmp.ModelInfo:
    """What a bundle's config.json says about its text, tokenizer and shape (cached per file)."""
    return cmp.model_info(Path(folder))


def _mtime(folder: Path) -> float:
    try:
        return (folder / "config.json").stat().st_mtime
    except OSError:
        return 0.0


def _chars_per_token(bundle_id: str, bundle: Bundle) -> float | None:
    """Characters per token on the model's validation text: 1 for characters, else counted."""
    if bundle.tokenizer.kind == "char":
        return 1.0
    found_models = corpus.token_models(bundle_id)
    return found_models.chars_per_token if found_models else None


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "–" if x is None or not math.isfinite(x) else format(x, spec)


def intro() -> None:
    """Why two tokenizers' losses are put on one scale: bits per character."""
    st.markdown(
        "Two models, one prompt. Each reads the prompt with **its own tokenizer**, so their "
        "losses per token measure different things: a BPE token often holds several characters "
        "(the table counts them), a character token one. Dividing by the characters puts them on "
        "one scale, **bits per character**: how many yes/no questions the model needs, on "
        "average, to pin down each next character."
    )
    # Two short lines, not one long one: the main column is ~560 px on a 1024 px projector.
    st.latex(
        r"\begin{gathered}\text{bits per character} = "
        r"\frac{\sum_t -\log_2 p(x_t \mid x_{<t})}{\text{characters}}\\"
        r"= \frac{\text{loss in nats per token}}{\ln 2 \times \text{characters per token}}"
        r"\end{gathered}"
    )


def chosen(ctx: PageContext) -> list[Model]:
    """The sidebar's model and the one chosen to compare with; the run stops with a note when
    that one cannot be opened."""
    found = models.discover()
    infos = {n: model_info(str(path), _mtime(path)) for n, path in found.items()}
    other = state.selectbox(
        "Compare with",
        "cmp_model",
        list(found),
        cmp.partner(ctx.name, infos),
        help="Any bundled model or one trained on this server (in runs/). It opens on the same "
        "text read by another tokenizer when there is one. The sidebar chooses the first model, "
        "and its training step.",
    )
    other_id = models.bundle_id(found[other])
    try:
        other_bundle = cache.bundle(other_id)
    except CheckpointError as exc:
        st.error(f"Could not open “{other}”: {exc}. Choose another model to compare with.")
        st.stop()
    step = models.split_step(ctx.bundle_id)[1]
    first = ctx.name + (f" (step {step:,})" if step is not None else "")
    return [Model(first, ctx.bundle_id, ctx.bundle), Model(other, other_id, other_bundle)]


def read(ctx: PageContext, chosen_models: list[Model]) -> list[Side]:
    """The prompt read by each model: its tokens and its scores; the run stops with a note when
    a model makes no tokens of it."""
    sides = []
    for m in chosen_models:
        b = m.bundle
        tokens = cmp.read_prompt(b.tokenizer, b.config.n_ctx, ctx.prompt)
        if not tokens.ids:
            st.info(f"“{m.name}” makes no tokens of this prompt. Type another in the sidebar.")
            st.stop()
        logits = cache.logits(m.bundle_id, tuple(tokens.ids))
        scores = cmp.prompt_scores(logits, tokens, TOP_K, b.tokenizer.id_to_token)
        sides.append(Side(m.name, m.bundle_id, b, tokens, scores))
    return sides


def prompt_table(ctx: PageContext, sides: list[Side]) -> None:
    """Each model's family, tokenizer, size and bits per character on the prompt and on its
    validation text; a warning for a model without the causal mask; the tokens of each."""
    st.subheader("The prompt, read by each")
    rows, stood_in = [], []
    for side in sides:
        row, stands_in = _table_row(side)
        rows.append(row)
        if stands_in:
            stood_in.append(side.name)
    # one column per model: two columns fit a projector, seven did not
    st.dataframe(pd.DataFrame(rows).set_index("model").T, width="stretch")
    step = models.split_step(ctx.bundle_id)[1]
    if step is None:
        at_step = ""
    elif stood_in:
        at_step = (
            f" For “{ctx.name}” at step {step:,}: no validation loss was recorded by that step, "
            "so the final step's stands in, labelled so."
        )
    else:
        at_step = (
            f" For “{ctx.name}” at step {step:,}: the last one recorded by then, at the step in "
            "brackets."
        )
    st.caption(
        "bits/char: bits per character. Validation: the last validation loss recorded in "
        "training, on each model's own held-out text "
        "(two models trained on different texts are not scored on the same one; the prompt is "
        f"the same for both).{at_step} “–”: not known (a model whose training text cannot be "
        "found)."
    )
    for side in sides:
        if not side.bundle.config.causal:
            st.warning(
                f"“{side.name}” has **no causal mask**: each position also sees the token it is "
                "scored on, so its bits per character measure copying, not predicting, and are "
                "not comparable with a masked model's. Below, it is left out of the cut-word test."
            )
    for col, side in zip(st.columns(2), sides, strict=True):
        col.markdown(f"**{side.name}**: {len(side.tokens.ids)} tokens")
        col.code(" ".join(token_labels(side.tokens.texts)), language=None, wrap_lines=True)


def _table_row(side: Side) -> tuple[dict[str, str], bool]:
    """A model's column of the table, and whether its validation figure is the final step's
    standing in for the snapshot on screen."""
    b, tokens = side.bundle, side.tokens
    # the loss recorded for the weights on screen: a snapshot's, not the run's last (issue 36)
    shown = models.split_step(side.bundle_id)[1]
    recorded = tr.val_loss_at(b.history, b.meta, shown)
    found_text = (
        corpus.token_models(side.bundle_id) if recorded is not None and b.meta.get("data") else None
    )
    val_cell = cmp.validation_cell(
        recorded, found_text.chars_per_token if found_text else None, shown
    )
    stands_in = shown is not None and recorded is not None and recorded.of_final and val_cell != "–"
    row = {
        "model": side.name,
        "family": FAMILY_LABELS[b.family],
        "tokenizer": f"{b.tokenizer.kind} ({b.tokenizer.vocab_size:,})",
        "parameters": f"{b.model.n_params():,}",
        "prompt tokens": f"{len(tokens.ids)}" + (f" (+{tokens.n_cut} cut)" if tokens.n_cut else ""),
        "chars per token": _fmt(tokens.n_chars / len(tokens.ids), ".2f"),
        "bits/char, prompt": _fmt(side.scores.bits_per_char),
        "bits/char, validation": val_cell,
    }
    return row, stands_in


def next_token(sides: list[Side]) -> None:
    """Each model's most likely next tokens after the whole prompt, side by side."""
    st.subheader("What each would write next")
    for i, (col, side) in enumerate(zip(st.columns(2), sides, strict=True)):
        top = side.scores.top
        fig = cache.figure(
            charts.next_token_bars,
            top.labels,
            top.base_probs,
            f"{side.name}: top {TOP_K}",
            charts.MODEL_COLOURS[i],
        )
        present.plot(fig, key=f"cmp_next_{i}", container=col)


def cut_word(ctx: PageContext, sides: list[Side]) -> None:
    """The prompt cut inside a multi-letter token: how much each masked model gives the word's
    real ending (the token-boundary problem)."""
    st.subheader("Where a word is cut")
    st.markdown(
        "A BPE model only ever read text the way its tokenizer splits it. A common piece of a "
        "word is one token (“ion” in “question”), so in training the model saw the letters of "
        "that piece together. Cut a prompt **inside such a token** and the model reads a split "
        "its tokenizer makes only where the text goes on differently: it can give the word's "
        "real ending little probability, where a character model, which saw the text cut after "
        "every character, has no such blind spot. This is the **token-boundary** problem; some "
        "systems that complete a user's half-typed word back up one token and let the model "
        "write it whole (“token healing”)."
    )
    # a model without the causal mask learned to read the answer, not to predict it: not a witness
    masked = [side for side in sides if side.bundle.config.causal]
    split_by = next((s.bundle.tokenizer for s in masked if s.bundle.tokenizer.kind != "char"), None)
    cut = cmp.cut_inside_token(ctx.prompt, split_by) if split_by is not None else None
    if cut is None:
        st.caption(
            "Nothing to cut here: that needs a model with a causal mask whose tokens hold several "
            "letters, and a prompt with such a token inside a word."
        )
        return
    boundary = []
    for side in masked:
        b, bid = side.bundle, side.bundle_id
        train = None
        if b.tokenizer.kind != "char" and (tm := corpus.token_models(bid)) is not None:
            train = tm.index.tokens[: tm.index.n_train]
        run = partial(lambda bid, ids: cache.logits(bid, tuple(ids)), bid)
        boundary.append(cmp.boundary_side(side.name, b.tokenizer, b.config.n_ctx, cut, run, train))
    st.markdown(f"The prompt, cut: “…{cmp.shown(cut.text[-40:])}”")
    st.markdown(cmp.boundary_claim(cut, boundary).text)


def one_head(sides: list[Side]) -> None:
    """One head's attention pattern on the prompt for each GPT (its layer and head chosen
    beside it); nothing when neither model has heads."""
    if not any(side.bundle.family == "gpt" for side in sides):  # an RNN, LSTM, GRU or CNN
        return
    st.subheader("One head of each")
    for i, (col, side) in enumerate(zip(st.columns(2), sides, strict=True)):
        b = side.bundle
        if b.family != "gpt":
            col.caption(f"“{side.name}”: {families.no_attention_note(b)}")
            continue
        c1, c2 = col.columns(2)
        which = "ab"[i]
        layer = state.slider(
            "Layer", f"cmp_layer_{which}", 0, b.config.n_layer - 1, 0, container=c1
        )
        head = state.slider("Head", f"cmp_head_{which}", 0, b.config.n_head - 1, 0, container=c2)
        hook = f"blocks.{layer}.attn.hook_pattern"
        ids = tuple(side.tokens.ids)
        pattern = cache.activations(side.bundle_id, ids, (hook,))[hook][head]  # (T, T)
        fig = cache.figure(  # built once per pattern and labels; drawing a built one is cheap
            charts.half_width_pattern,
            pattern,
            token_labels(side.tokens.texts),
            title=f"{side.name}: L{layer} H{head}",
        )
        present.plot(fig, key=f"cmp_attn_{i}", container=col)


def how_they_trained(sides: list[Side]) -> None:
    """Both training curves overlaid, in the unit and against the axis chosen, with notes on
    what differs between the runs; a note for a model without a curve in that unit."""
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
    for side in sides:
        b = side.bundle
        per_step = int((b.train_config or {}).get("batch_size", 1)) * b.config.n_ctx
        final_id = models.split_step(side.bundle_id)[0]
        curves = cmp.curves_in(
            tr.curves(b.history, x, per_step), _chars_per_token(final_id, b), unit
        )
        (named if curves is not None and curves.train_x.size else missing).append(
            (side.name, curves)
        )
    if named:
        present.plot(cache.figure(charts.overlaid_curves, named, unit), key="cmp_curves")
        notes = cmp.training_notes(
            [
                (s.name, s.bundle.meta, finetune_view.text_key(s.bundle.meta.get("data")))
                for s in sides
            ]
        )
        if notes:
            st.caption(" ".join(notes))
    for name, _ in missing:
        st.info(
            f"“{name}” has no training curve in {unit} (no history, or its characters per token "
            "are not known: its training text cannot be found)."
        )
