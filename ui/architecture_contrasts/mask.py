"""The Architecture contrasts page's "no causal mask" contrast: the two models' losses on the
prompt with the window seen whole and as generated, how much attention goes to the next token,
the claims those numbers allow, and what each model writes after the prompt.

Not here: the measures and claims (viz_model/analysis/contrasts.py), the chart builders
(ui/charts/contrasts.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui import cache, parts, present
from ui.architecture_contrasts import runs
from ui.architecture_contrasts.pair import Pair, fmt, last_losses
from ui.charts import contrasts as charts
from ui.charts.common import token_labels
from ui.frame import PageContext
from viz_model.analysis import contrasts as ct
from viz_model.analysis.labs import compare as cmp


def draw(ctx: PageContext, pair: Pair) -> None:
    """The idea and the mask's formula, then the losses, the claims, the chart and what each
    model writes."""
    st.markdown(
        "A GPT is trained to predict token *t+1* from tokens *1..t*; the **causal mask** hides "
        "the rest of the window from position *t*. Remove it and the answer is in the input: "
        "the training loss falls towards zero. But when the model **generates**, token *t+1* "
        "does not exist yet, so what it learned (copy the next token) has nothing to copy."
    )
    # two lines: one overflows the ~560 px main column of a 1024 px projector
    st.latex(
        r"\begin{gathered}\text{pattern} = \operatorname{softmax}\Big(\frac{QK^\top}{\sqrt{d}}"
        r" + M\Big)\\ M_{ts} = -\infty \text{ where } s > t"
        r" \text{ (with the mask), else } 0\end{gathered}"
    )
    b0 = pair.sides[0][2]
    tokens = cmp.read_prompt(b0.tokenizer, b0.config.n_ctx, ctx.prompt)
    if len(tokens.ids) < 2:
        st.info("The prompt needs at least two characters. Type a longer one in the sidebar.")
        return
    ids = tuple(tokens.ids)  # the two models share one tokenizer
    la = [runs.look_ahead(bid, ids) for _, bid, _ in pair.sides]
    ahead = _next_token_weights(pair, ids)
    _table(pair, la, ahead)
    _claims(pair, la, ahead, len(ids))
    fig = cache.figure(
        charts.look_ahead_lines,
        list(zip(pair.contrast.models, la, strict=True)),
        tokens.texts[1:],
        "Loss at each position",
    )
    present.plot(fig, key="ctr_look_ahead")
    _continuations(pair, ids)
    with parts.followed_expander("The numbers: the loss at each position", "position_loss"):
        table = {"predicting": token_labels(tokens.texts)[1:]}
        for name, lk in zip(pair.contrast.models, la, strict=True):
            table[f"{name}, whole window"] = lk.seen
            table[f"{name}, as generated"] = lk.generated
        st.dataframe(pd.DataFrame(table).round(3), hide_index=True)


def _next_token_weights(pair: Pair, ids: tuple[int, ...]) -> list[np.ndarray]:
    """Each model's mean attention from a query onto the key right after it, head by head."""
    n_layer = pair.sides[1][2].config.n_layer
    hooks = tuple(f"blocks.{i}.attn.hook_pattern" for i in range(n_layer))
    ahead = []
    for _, bid, _ in pair.sides:
        acts = cache.activations(bid, ids, hooks)
        ahead.append(ct.next_token_weight([acts[h] for h in hooks]))
    return ahead


def _table(pair: Pair, la: list[ct.LookAhead], ahead: list[np.ndarray]) -> None:
    """One column a model: the mask, the losses in training and on the prompt, the attention."""
    rows = {}
    for (name, _, b), lk, w in zip(pair.sides, la, ahead, strict=True):
        train, val = last_losses(b)
        rows[name] = {
            "causal mask": "yes" if b.config.causal else "no",
            "training loss (last step)": fmt(train),
            "validation loss (window seen whole)": fmt(val),
            "prompt loss, window seen whole": fmt(lk.mean_seen),
            "prompt loss, as generated": fmt(lk.mean_generated),
            "most attention on the next token": f"{w.max():.0%}",
        }
    st.dataframe(pd.DataFrame(rows), width="stretch")
    st.caption(
        "Losses in nats per character. As generated: position t sees only tokens 1..t, as when "
        "writing; for the masked model that changes nothing, so its two lines are one. Most "
        "attention on the next token: the largest mean weight any head puts on "
        "the key right after its query (the answer)."
    )


def _claims(pair: Pair, la: list[ct.LookAhead], ahead: list[np.ndarray], n_tokens: int) -> None:
    """The claims computed from the table's numbers, each against its baseline."""
    by_mask = {
        b.config.causal: (name, lk, w)
        for (name, _, b), lk, w in zip(pair.sides, la, ahead, strict=True)
    }
    (m_name, m_la, _), (u_name, u_la, u_w) = by_mask[True], by_mask[False]
    st.markdown(
        f"- {ct.look_ahead_claim((m_name, m_la), (u_name, u_la)).text}\n"
        f"- {ct.next_token_claim(u_name, u_w, n_tokens).text}"
    )


def _continuations(pair: Pair, ids: tuple[int, ...]) -> None:
    """What each model writes after the prompt, side by side."""
    st.subheader("What each writes after the prompt")
    for col, (name, bid, _) in zip(st.columns(2), pair.sides, strict=True):
        col.markdown(f"**{name}**")
        col.code(runs.continuation(bid, ids), language=None, wrap_lines=True)
    st.caption(
        f"{runs.CONTINUATION} characters each, temperature {runs.SAMPLING.temperature}, seed 0."
    )
