"""Every page opens on models with the block's new parts (issue 25): a Llama-style block (RMSNorm,
SwiGLU, RoPE, no biases, grouped-query attention) and one with the parts switched off (no norm, no
residual connections, ALiBi positions). Each page finishes with no exception and no error
message; where a page's view needs a part the model lacks, it says so in words (an info), which
is also checked here."""

from __future__ import annotations

import pytest

from tests.apptest_util import open_link
from tests.bundles import build_test_bundle
from tests.conftest import made_once
from ui import nav

VARIANT_BUNDLES = {
    "llama-style": dict(
        norm_kind="rmsnorm", mlp="gated", act="silu", pos="rope", bias=False, n_kv_heads=2
    ),
    "parts-off": dict(norm_kind="none", residual=False, pos="alibi"),
}
PAGES = (None, *(page.file for page in nav.lesson_pages()))
# What a page says instead of a view the model cannot have: (bundle, page) -> words.
SAYS = {
    ("llama-style", "pages/05_layernorm.py"): "RMSNorm",
    ("parts-off", "pages/05_layernorm.py"): "no normalization",
    ("parts-off", "pages/04_residual_stream.py"): "no residual connections",
}


@pytest.fixture(scope="module")
def variant_models(tmp_path_factory):
    def build(root):
        for name, shape in VARIANT_BUNDLES.items():
            build_test_bundle(root / name, steps=60, **shape)

    return made_once(tmp_path_factory, "variant_models", build)


def _shown(at) -> str:
    parts = [*at.error, *at.warning, *at.info, *at.caption, *at.markdown, *at.text]
    return " ".join(str(p.value) for p in parts)


@pytest.mark.parametrize("bundle", list(VARIANT_BUNDLES))
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p or "home")
def test_every_page_opens_on_a_variant_block(variant_models, bundle, page):
    at = open_link(variant_models, page, {"model": bundle, "prompt": "ROMEO: But soft"})
    assert not at.exception, f"{page} on {bundle}: {at.exception[0].value}"
    assert not at.error, f"{page} on {bundle}: {[e.value for e in at.error]}"
    if (bundle, page) in SAYS:
        assert SAYS[bundle, page] in _shown(at)
