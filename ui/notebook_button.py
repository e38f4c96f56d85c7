"""The sidebar's "Take this view to a notebook" button: the page's current view (model, training
step, precision, prompt and the few settings the page keeps in the URL) as a Jupyter notebook
that recomputes its numbers with the engine, for a student to take home after class.

    offer(page, ctx)    # ui/frame.py, once a run, under the model card

The notebook is a few kilobytes of JSON built from plain values each run; no model runs for it.
The settings are read as the page will read them (session state, else the URL; clamped by the
same `ui.state.parse_*`), before the page itself runs, so a link's view is the one exported.

Not here: what the notebook says and computes (serving/notebooks.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from serving import models, notebooks
from ui import state
from viz_model.bundles.load import BUNDLED_DIR
from viz_model.model.scale import view_tokens

if TYPE_CHECKING:  # ui/frame.py calls offer(): importing it back would be a cycle
    from ui import nav
    from ui.frame import PageContext

LABEL = "Take this view to a notebook"
HELP = (
    "A Jupyter notebook that loads this model, this prompt and this page's settings with the "
    "engine (`from viz_model import load_bundle`), recomputes the page's main numbers, prints "
    "them and plots them."
)


def offer(page: nav.Page, ctx: PageContext) -> None:
    """The download button, in the sidebar; none while the prompt is empty (no view to take)."""
    if not ctx.ids:
        return
    view = view_of(page, ctx)
    st.sidebar.download_button(
        LABEL,
        notebooks.to_json(notebooks.build(view)),
        file_name=notebooks.file_name(view),
        mime=notebooks.MIME,
        on_click="ignore",
        key="_notebook_download",
        help=HELP,
        icon=":material/download:",
        use_container_width=True,
    )


def view_of(page: nav.Page, ctx: PageContext) -> notebooks.View:
    """The view this run shows, in the plain values the notebook builder takes."""
    bundle = ctx.bundle
    path = bundle.path.resolve()
    bundled = path.parent == BUNDLED_DIR.resolve()
    cfg = ctx.config
    return notebooks.View(
        route=page.route,
        title=page.title,
        model=path.name if bundled else str(path),
        bundled=bundled,
        prompt=ctx.prompt,
        max_tokens=view_tokens(cfg),  # the frame reads the prompt's last tokens, as many
        step=models.split_step(ctx.bundle_id)[1],
        precision=models.split_precision(ctx.bundle_id)[1],
        family=bundle.family,
        has_mlp=not getattr(cfg, "attn_only", False),
        settings=settings(page.route, ctx) if bundle.family == "gpt" else {},
    )


def _raw(key: str) -> Any:
    """A page's value as its next read will find it: this session's, else the URL's."""
    ss = st.session_state
    return ss[key] if key in ss else st.query_params.get(key)


def settings(route: str, ctx: PageContext) -> dict[str, Any]:
    """The page's settings the notebook recomputes with, parsed and clamped as the page does
    (defaults and ranges from ui/attention/head.py, ui/controls.py, ui/next_token.py,
    ui/mlp_neurons.py, ui/residual_stream.py); empty for a page without a recipe."""
    cfg, T = ctx.config, len(ctx.ids)
    last_layer, last = cfg.n_layer - 1, T - 1
    if route == "Attention":
        return {
            "layer": state.parse_int(_raw("layer"), 0, 0, last_layer),
            "head": state.parse_int(_raw("head"), 0, 0, cfg.n_head - 1),
            "query": state.parse_int(_raw("query"), last, 0, last),
            "view": state.parse_choice(_raw("view"), "pattern", ["pattern", "scores"]),
        }
    if route == "Next_token":
        vocab = ctx.tokenizer.vocab_size
        return {
            "temperature": state.parse_float(_raw("temperature"), 1.0, 0.0, 2.0),
            "top_k": state.parse_int(_raw("top_k"), 0, 0, min(vocab, 100)),
            "top_p": state.parse_float(_raw("top_p"), 1.0, 0.05, 1.0),
            "bars": state.parse_choice(_raw("bars"), 20, [10, 15, 20, 30, 50]),
        }
    if route == "MLP_neurons":
        return {
            "mlp_layer": state.parse_int(_raw("mlp_layer"), 0, 0, last_layer),
            "n_neurons": state.parse_choice(_raw("n_neurons"), 20, [10, 20, 30, 50]),
        }
    if route == "Residual_stream":
        return {"pos": state.parse_int(_raw("pos"), last, 0, last)}
    return {}
