"""Inside a block, part 5: linear probes, what a straight line can read from the residual stream
at each layer, against the majority baseline and its noise."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present
from ui.charts.block import probes as charts
from ui.frame import PageContext
from ui.inside_block.context import corpus_resid
from viz_model.analysis.labs import contextual as cx
from viz_model.analysis.labs import probes as pr
from viz_model.analysis.residual import layer_labels

PROPERTY_WORDS = {
    "vowel": "the token's first letter is a vowel: the token alone tells it",
    "line start": "the token is a line break or the first of a line: the break alone tells its "
    "part, the first token of a line needs a look at the token before",
    "speaker name": "the token is inside a speaker's name (“Ham.”, “LADY MACBETH.”): it takes context",
    "second copy": "the token is in the copied half of its line: it takes counting or matching",
    "deep bracket": "the token leaves two or more brackets open: it takes counting",
}


def _labels(bundle_id: str, texts: list) -> dict:
    data = cache.bundle(bundle_id).meta.get("data") or {}
    return pr.properties(texts, data.get("task") or "shakespeare")


@cache.per_model(spinner="Training a probe at every layer…", keep=8)
def probes_of(bundle_id: str) -> dict[str, pr.ProbeResult]:
    windows, resid = corpus_resid(bundle_id)
    return {n: pr.probe_by_station(resid, y) for n, y in _labels(bundle_id, windows.texts).items()}


@cache.per_model(spinner="The same probes on the model's shape with random weights…", keep=8)
def untrained_probes_of(bundle_id: str) -> dict[str, pr.ProbeResult]:
    """The same probes on the same tokens through cache.untrained: what a model that learned
    nothing already gives (a random embedding tells tokens apart), the claims' second baseline."""
    windows, _ = corpus_resid(bundle_id)
    resid = cx.resid_by_station(cache.untrained(bundle_id).model, windows.ids)
    return {n: pr.probe_by_station(resid, y) for n, y in _labels(bundle_id, windows.texts).items()}


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Is a fact about the token *written in* its vector, where a straight line could read it? "
        "A **linear probe** is a logistic regression trained to answer a yes/no question from the "
        "residual vector alone, at one layer; if it answers text it never saw better than always "
        "giving the commoner answer (the **majority baseline**), by more than chance could "
        "explain, the layer holds that fact in a readable form. And it must beat the same "
        "probe on the same shape with **random weights**: a random embedding already tells "
        "tokens apart, so a fact the token alone decides reads from a model that learned nothing."
    )
    st.latex(r"p(\text{yes} \mid x) = \sigma(w \cdot x + b)")
    results = probes_of(ctx.bundle_id)
    blank = untrained_probes_of(ctx.bundle_id)
    windows, _ = corpus_resid(ctx.bundle_id)
    stations = layer_labels(ctx.config.n_layer)
    shown = {
        n: (r.test_accuracy, r.train_accuracy, r.baseline, pr.noise_margin(r))
        for n, r in results.items()
    }
    title = "Probe accuracy by layer"
    blank_shown = {n: r.test_accuracy for n, r in blank.items()}
    present.plot(
        cache.figure(charts.probe_accuracy, stations, shown, title=title, untrained=blank_shown)
    )
    some = next(iter(results.values()))
    st.markdown(
        "\n".join(f"- **{n}**: {PROPERTY_WORDS.get(n, '')}." for n in results)
        + f"\n\nTrained on {some.n_train:,} tokens of {len(windows.ids)} snippets of the training "
        f"text (two of every three), scored on the {some.n_test:,} tokens of the third. All "
        "panels share one scale. A layer counts as holding a property only when its held-out "
        "accuracy beats the majority baseline by more than the held-out noise (the shaded band: "
        f"{pr.NOISE_SE} binomial standard errors; tokens of one snippet are related, so the "
        "margin is wide), and beats the grey line, the same probe on "
        f"{cache.untrained(ctx.bundle_id).source} with random weights, by as much."
    )
    st.markdown(
        "\n".join(
            f"- {pr.probe_claim(n, stations, r, blank.get(n)).text}" for n, r in results.items()
        )
    )
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.dataframe(
                [
                    {
                        "property": n,
                        "station": s,
                        "held-out accuracy": round(float(r.test_accuracy[i]), 4),
                        "training accuracy": round(float(r.train_accuracy[i]), 4),
                        "random weights' held-out accuracy": round(
                            float(blank[n].test_accuracy[i]), 4
                        )
                        if n in blank
                        else None,
                        "majority baseline": round(r.baseline, 4),
                        "noise margin": round(pr.noise_margin(r), 4),
                        "share of yes": round(r.share_yes, 4),
                    }
                    for n, r in results.items()
                    for i, s in enumerate(stations)
                ],
                hide_index=True,
            )
