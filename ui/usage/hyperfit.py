"""Hyperfitting: a model fine-tuned on a few pages to near-zero training loss against its base,
both writing greedily from the same held-out prompts: how much each repeats itself, how much the
hyperfitted one recites, and what memorising cost (viz_model/analysis/labs/hyperfit.py)."""

from __future__ import annotations

import streamlit as st

from serving import models
from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.frame import PageContext
from viz_model.analysis.labs import hyperfit
from viz_model.analysis.training import training_data
from viz_model.bundles.checkpoint import Bundle
from viz_model.text.data import load_text

FITTED_MODEL = "shakespeare-tiny-hyperfit"  # the bundled hyperfitted model (scripts/hyperfit.py)


def _bundle_id(name: str) -> str | None:
    path = models.discover().get(name)
    return None if path is None else models.bundle_id(path)


def _base_id(bundle: Bundle) -> str | None:
    """The base a hyperfitted bundle names (meta "base"), when it is here; else None."""
    base = bundle.meta.get("base")
    return _bundle_id(base) if "hyperfit" in bundle.meta and isinstance(base, str) else None


@cache.per_model(spinner="Both models writing greedily from eight held-out prompts…")
def report(fitted_id: str, base_id: str, n_new: int) -> hyperfit.HyperfitReport | None:
    """The comparison; None when either model's text cannot be read back."""
    fitted, base = cache.bundle(fitted_id), cache.bundle(base_id)
    pages, rest = training_data(fitted), training_data(base)
    if pages is None or rest is None:
        return None
    text = load_text(fitted.meta["data"])
    return hyperfit.compare(base.model, fitted.model, fitted.tokenizer, text, pages, rest, n_new)


def _open_fitted() -> None:
    state.set_value("model", FITTED_MODEL)


def _pair(ctx: PageContext) -> tuple[str, str] | None:
    """(fitted, base) bundle ids: the model on screen when it is hyperfitted, else the bundled
    pair (said so, with a button to open it); None, said why, when there is none."""
    base = _base_id(ctx.bundle)
    if base is not None:
        return ctx.bundle_id, base
    fitted = _bundle_id(FITTED_MODEL)
    base = _base_id(cache.bundle(fitted)) if fitted else None
    if fitted is None or base is None:
        st.info(
            f"No hyperfitted model is here: `python scripts/hyperfit.py` makes "
            f"“{FITTED_MODEL}” from the model it names."
        )
        return None
    st.caption(
        f"“{ctx.name}” was not hyperfitted, so this part compares the bundled pair: "
        f"“{FITTED_MODEL}” and the model it was tuned from, "
        f"“{cache.bundle(fitted).meta['base']}”."
    )
    st.button(
        f"Open “{FITTED_MODEL}”",
        key="use_open_hyperfit",
        icon=":material/swap_horiz:",
        on_click=_open_fitted,
    )
    return fitted, base


def draw(ctx: PageContext) -> None:
    st.markdown(
        "**Hyperfitting** (Carlsson et al., 2024): keep training a model on a handful of pages "
        "until its training loss is nearly zero. By every usual measure that is overfitting: its "
        "loss on any other text gets much worse. Yet greedy decoding, which makes small models "
        "go round in loops (see Repetition), may loop far less afterwards. Below, the model "
        "before and after write greedily from the same prompts, taken from text neither trained "
        "on."
    )
    pair = _pair(ctx)
    if pair is None:
        return
    fitted_id, base_id = pair
    c1, _ = st.columns(2)
    n_new = state.slider("Tokens", "u_hf_n", 100, 300, 200, step=50, container=c1)
    result = report(fitted_id, base_id, n_new)
    if result is None or not result.prompts:
        st.warning(
            "The text these models were trained on cannot be read here, so nothing can be compared."
        )
        return
    labels = [str(i + 1) for i in range(len(result.prompts))]
    present.plot(
        cache.figure(
            charts.hyperfit_bars,
            labels,
            [g.stats.repeated_phrases for g in result.base],
            [g.stats.repeated_phrases for g in result.fitted],
        ),
        key="use_hyperfit_bars",
    )
    st.caption(
        f"The share of {hyperfit.PHRASE_WORDS}-word phrases each model's greedy text had already "
        f"written earlier in the same text, after each of {len(labels)} held-out prompts "
        f"({hyperfit.PROMPT_TOKENS} tokens each, evenly spaced through the validation text)."
    )
    claim = hyperfit.hyperfit_claim(result)
    (st.success if claim.made else st.info)(claim.text)
    c2, _ = st.columns(2)
    which = state.slider("Prompt", "u_hf_prompt", 1, len(labels), 1, container=c2)
    st.caption(f"Prompt {which}: …{result.prompts[which - 1][-80:]!r}")
    cols = st.columns(2)
    for col, name, runs in (
        (cols[0], "the base", result.base),
        (cols[1], "hyperfitted", result.fitted),
    ):
        g = runs[which - 1]
        col.caption(
            f"**{name}**: {g.stats.repeated_phrases:.0%} of phrases repeated, "
            f"{g.recited:.0%} found in the memorised pages"
        )
        col.code(g.text, language=None, wrap_lines=True)
    with parts.numbers_behind_it() as opened:
        if opened:
            _numbers(result)


def _numbers(result: hyperfit.HyperfitReport) -> None:
    parts.numbers_table(
        "Both models' losses, on the same windows (nats a token):",
        [
            {
                "model": name,
                f"the {result.pages_chars:,} memorised characters": loss.pages,
                "the validation text": loss.rest,
            }
            for name, loss in (("base", result.base_loss), ("hyperfitted", result.fitted_loss))
        ],
    )
    parts.numbers_table(
        "Per prompt:",
        [
            {
                "prompt": i + 1,
                "base: repeated": b.stats.repeated_phrases,
                "hyperfitted: repeated": f.stats.repeated_phrases,
                "base: recited": b.recited,
                "hyperfitted: recited": f.recited,
            }
            for i, (b, f) in enumerate(zip(result.base, result.fitted, strict=True))
        ],
    )
