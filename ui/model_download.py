"""The model card's "Download this model": one zip, built only when the button is clicked.

    model_download.button(bundle_id)   # inside the card's expander (ui/frame.py)

The zip (viz_model/bundles/archive.py) holds the model as the pages show it at the chosen training
step, as our bundle and, for GPT-2's architecture, as a folder transformers opens; at full
precision, whatever the precision select says, since a quantised copy is made on load.
"""

from __future__ import annotations

import streamlit as st

from serving.models import split_precision
from ui import cache
from viz_model.bundles.archive import archive_name, model_zip
from viz_model.bundles.hf_export import why_not_gpt2


def _what_is_inside(why_not: str | None) -> str:
    if why_not is None:
        return (
            "A zip with the model for this app and `load_bundle` in a notebook, and the same "
            "weights as a GPT-2 folder that Hugging Face `transformers` opens."
        )
    return (
        "A zip with the model for this app and `load_bundle` in a notebook. No folder for "
        f"`transformers`: {why_not}."
    )


@cache.per_model(keep=2)  # megabytes each: the last two models' zips only
def _zip_of(plain_id: str) -> bytes:
    """Built once per model and shared: a class that clicks at once (or a student who clicks
    four times) costs one build, about 1 to 2 s of a core, not one each."""
    return model_zip(cache.bundle(plain_id))


def button(bundle_id: str) -> None:
    plain_id, _ = split_precision(bundle_id)
    bundle = cache.bundle(plain_id)
    name = archive_name(bundle)
    st.download_button(
        "Download this model",
        data=lambda: _zip_of(plain_id),  # built on the first click, not on every run
        file_name=f"{name}.zip",
        mime="application/zip",
        on_click="ignore",  # the download needs no rerun of the page
        icon=":material/download:",
        help=_what_is_inside(why_not_gpt2(bundle.config)),
        key="model_download",
    )
