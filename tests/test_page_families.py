"""Every page on models of other families (issue 26): an LSTM and a causal CNN. A page that can
show them (ui/nav.py, `families`) finishes with no exception and no error and shows something
of its own; every other page refuses in words that name the family and what it lacks, links to
the pages that work, and keeps the model picker, so a student can switch back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from tests.apptest_util import open_link
from tests.bundles import build_test_bundle
from tests.conftest import made_once
from tests.test_page_template import section_modules
from ui import nav
from ui.state import widget_key

ROOT = Path(__file__).resolve().parents[1]

FAMILY_BUNDLES = {
    "test-lstm": dict(family="lstm", d_model=32),
    "test-cnn": dict(family="cnn", d_model=32, n_layer=3, kernel_size=3),
}
LABELS = {"test-lstm": "an LSTM", "test-cnn": "a causal CNN"}
PAGES = (None, *(page.file for page in nav.lesson_pages()))
# Headings that would be false on a model with no heads, blocks or KV cache, if a page that takes
# it drew them (Generation's "Where the newest token looks", Compare's "One head of each", ...).
GPT_ONLY_WORDS = re.compile(r"\bheads?\b|\battention\b|KV cache|logit lens|layer by layer", re.I)


@pytest.fixture(scope="module")
def family_models(tmp_path_factory):
    def build(root):
        for name, shape in FAMILY_BUNDLES.items():
            build_test_bundle(root / name, steps=40, **shape)

    return made_once(tmp_path_factory, "family_models", build)


def _shown(at) -> str:
    parts = [*at.error, *at.warning, *at.info, *at.caption, *at.markdown, *at.text]
    return " ".join(str(p.value) for p in parts)


def _page(file: str | None) -> nav.Page:
    return nav.HOME if file is None else next(p for p in nav.all_pages() if p.file == file)


@pytest.mark.parametrize("bundle", list(FAMILY_BUNDLES))
@pytest.mark.parametrize("file", PAGES, ids=lambda p: p or "home")
def test_every_page_shows_or_refuses_another_family(family_models, bundle, file):
    at = open_link(family_models, file, {"model": bundle, "prompt": "ROMEO: But soft"})
    assert not at.exception, f"{file} on {bundle}: {at.exception[0].value}"
    assert not at.error, f"{file} on {bundle}: {[e.value for e in at.error]}"
    page = _page(file)
    shown = _shown(at)
    family = FAMILY_BUNDLES[bundle]["family"]
    assert at.sidebar.selectbox(key=widget_key("model")).value == bundle  # the picker stays
    if family in page.families:
        assert "has none: it reads the past" not in shown
        assert len(at.main.children) > 2, f"{file} shows nothing on {bundle}"
        headings = " | ".join(h.value for h in at.subheader)
        assert not GPT_ONLY_WORDS.search(headings), headings
    else:
        assert f"is {LABELS[bundle]}" in shown and ("has none" in shown) == (not page.why_not)
        assert page.needs in shown
        links = [link.label for link in at.get("page_link")]
        assert "Generation" in links and "Architecture contrasts" not in links


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru", "cnn"])
def test_the_refusal_names_the_family_what_the_page_needs_and_what_it_has(family):
    from types import SimpleNamespace

    from ui import families
    from viz_model.model.recurrent_config import RecurrentConfig

    cfg = RecurrentConfig(family, 30, n_layer=3, kernel_size=3)
    bundle = SimpleNamespace(name="my_model*", family=family, config=cfg)
    attention = next(p for p in nav.all_pages() if p.url_path == "Attention")
    text = families.refusal(attention, bundle)
    assert f"is {families.a_family(family)}:" in text and "my\\_model\\*" in text  # escaped
    assert "attention heads;" in text and "has none" in text
    if family == "cnn":
        assert "the last 15 tokens" in text  # 1 + 2 x (1 + 2 + 4)
    else:
        assert "cell state" in text if family == "lstm" else "its hidden state," in text


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru", "cnn"])
def test_a_refusal_does_not_deny_what_the_model_has(family):
    """Issue 36: "an LSTM has none" of weight matrices, of embeddings, while 89% of its
    parameters are in its cells' matrices and its tokens are looked up in an embedding."""
    from types import SimpleNamespace

    from ui import families
    from viz_model.model.quantize import matrices
    from viz_model.model.recurrent import RecurrentLM
    from viz_model.model.recurrent_config import RecurrentConfig

    cfg = RecurrentConfig(family, 30, n_layer=2, kernel_size=3)
    model = RecurrentLM(cfg)
    bundle = SimpleNamespace(name="m", family=family, config=cfg)
    by_path = {p.url_path: p for p in nav.all_pages()}
    quant = families.refusal(by_path["Quantization"], bundle)
    layers = [n for n, p in model.named_parameters() if n.startswith("blocks.") and p.dim() >= 2]
    assert len(matrices(model)) >= 2 and layers  # it has weights: the refusal must not deny them
    assert "has none" not in quant and "has weight matrices too" in quant
    assert families.LAYER_WORDS[family] in quant
    adversarial = families.refusal(by_path["Adversarial_suffix"], bundle)
    assert model.W_E.shape == (30, cfg.d_model)  # it has an embedding
    assert "has none" not in adversarial and "has an embedding too" in adversarial
    assert "no attention patterns" in adversarial
    sae = families.refusal(by_path["Sparse_autoencoder"], bundle)
    assert "has none" not in sae and "has no MLP" in sae
    # an audit of a class's LSTM run: "an LSTM has none" of LayerNorms (it has one before its
    # unembedding) and of "position vectors added to each token's embedding" (read: no embedding)
    norms = [n for n, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)]
    assert "ln_final" in norms
    layernorm = families.refusal(by_path["LayerNorm"], bundle)
    assert (
        "has none" not in layernorm and "has a LayerNorm too, before its unembedding" in layernorm
    )
    embeddings = families.refusal(by_path["Embeddings"], bundle)
    assert "has none" not in embeddings and "in an embedding too" in embeddings
    assert "adds no position vector" in embeddings


def test_a_refusal_offers_no_page_that_ignores_the_sidebars_model():
    """Architecture contrasts draws its own pairs of models ("the sidebar's model plays no part
    here"): a refusal does not offer it as a page that shows this model."""
    by_path = {p.url_path: p for p in nav.all_pages()}
    assert not by_path["Architecture_contrasts"].shows_sidebar_model
    page = by_path["Architecture_contrasts"]
    source = "".join(f.read_text(encoding="utf-8") for f in section_modules(page))
    assert "model plays no part here" in source  # the page says so, in one of its sections
    assert all(
        p.shows_sidebar_model for p in by_path.values() if p.url_path != "Architecture_contrasts"
    )
