"""Inside a block, part 5: linear probes, what a straight line can read from the residual stream
at each layer, against the majority baseline and its noise."""

from __future__ import annotations

import streamlit as st

from ui import cache, parts, present
from ui.charts import block as charts
from ui.frame import PageContext
from ui.inside_block.context import corpus_resid
from viz_model.analysis import probes as pr
from viz_model.analysis.residual import layer_labels

PROPERTY_WORDS = {
    "vowel": "the token's first letter is a vowel: the token alone tells it",
    "line start": "the token is a line break or the first of a line: the break alone tells its "
    "part, the first token of a line needs a look at the token before",
    "speaker name": "the token is inside a speaker's name (“Ham.”, “LADY MACBETH.”): it takes context",
    "second copy": "the token is in the copied half of its line: it takes counting or matching",
    "deep bracket": "the token leaves two or more brackets open: it takes counting",
}


@cache.per_model(spinner="Training a probe at every layer…", keep=8)
def probes_of(bundle_id: str) -> dict[str, pr.ProbeResult]:
    windows, resid = corpus_resid(bundle_id)
    data = cache.bundle(bundle_id).meta.get("data") or {}
    labels = pr.properties(windows.texts, data.get("task") or "shakespeare")
    return {name: pr.probe_by_station(resid, y) for name, y in labels.items()}


def draw(ctx: PageContext) -> None:
    st.markdown(
        "Is a fact about the token *written in* its vector, where a straight line could read it? "
        "A **linear probe** is a logistic regression trained to answer a yes/no question from the "
        "residual vector alone, at one layer; if it answers text it never saw better than always "
        "giving the commoner answer (the **majority baseline**), by more than chance could "
        "explain, the layer holds that fact in a readable form."
    )
    st.latex(r"p(\text{yes} \mid x) = \sigma(w \cdot x + b)")
    results = probes_of(ctx.bundle_id)
    windows, _ = corpus_resid(ctx.bundle_id)
    stations = layer_labels(ctx.config.n_layer)
    shown = {
        n: (r.test_accuracy, r.train_accuracy, r.baseline, pr.noise_margin(r))
        for n, r in results.items()
    }
    title = "Probe accuracy by layer"
    present.plot(cache.figure(charts.probe_accuracy, stations, shown, title=title))
    some = next(iter(results.values()))
    st.markdown(
        "\n".join(f"- **{n}**: {PROPERTY_WORDS.get(n, '')}." for n in results)
        + f"\n\nTrained on {some.n_train:,} tokens of {len(windows.ids)} snippets of the training "
        f"text (two of every three), scored on the {some.n_test:,} tokens of the third. All "
        "panels share one scale. A layer counts as holding a property only when its held-out "
        "accuracy beats the majority baseline by more than the held-out noise (the shaded band: "
        f"{pr.NOISE_SE} binomial standard errors; tokens of one snippet are related, so the "
        "margin is wide)."
    )
    st.markdown("\n".join(f"- {pr.probe_claim(n, stations, r).text}" for n, r in results.items()))
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            st.dataframe(
                [
                    {
                        "property": n,
                        "station": s,
                        "held-out accuracy": round(float(r.test_accuracy[i]), 4),
                        "training accuracy": round(float(r.train_accuracy[i]), 4),
                        "majority baseline": round(r.baseline, 4),
                        "noise margin": round(pr.noise_margin(r), 4),
                        "share of yes": round(r.share_yes, 4),
                    }
                    for n, r in results.items()
                    for i, s in enumerate(stations)
                ],
                hide_index=True,
            )
