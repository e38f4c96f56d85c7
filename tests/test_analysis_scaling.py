"""Scaling: exact parameter counts, the 12 L d^2 rule, compute, and the power-law fit."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import VARIANTS, tiny_config, tiny_model
from viz_model.analysis.labs import scaling as sc
from viz_model.model.config import GPTConfig

EMBEDDING_NAMES = ("embed.", "pos_embed.", "unembed.")


@pytest.mark.parametrize("variant", [*VARIANTS.values(), {"attn_only": True, "bias": False}])
def test_count_params_equals_the_models_own_count(variant):
    model = tiny_model(**variant)
    total, non_embedding = sc.count_params(tiny_config(**variant))
    assert total == model.n_params()
    blocks = sum(
        p.numel() for n, p in model.named_parameters() if not n.startswith(EMBEDDING_NAMES)
    )
    assert non_embedding == blocks


def test_the_rule_of_thumb_leaves_out_only_biases_and_layernorms():
    cfg = GPTConfig(
        vocab_size=50257, n_ctx=1024, d_model=768, n_layer=12, n_head=12, tie_embeddings=True
    )
    total, non_embedding = sc.count_params(cfg)
    assert total == 124_439_808  # GPT-2 small as Hugging Face counts it
    assert non_embedding - sc.rule_of_thumb(12, 768) == 12 * 13 * 768 + 2 * 768


def test_published_shapes_are_close_to_the_rule_of_thumb():
    for p in sc.PUBLISHED:
        if p.params >= 700_000_000:  # embeddings matter less as models grow
            assert sc.rule_of_thumb(p.n_layer, p.d_model) == pytest.approx(p.params, rel=0.12)


def test_compute_is_six_n_d_and_unmasked_or_unmeasured_bundles_are_left_out():
    cfg = tiny_config()
    point = sc.bundle_point("m", "bundled", cfg, {"val_loss": 2.0, "tokens_seen": 1000})
    assert point.compute == 6 * sc.count_params(cfg)[1] * 1000
    assert (
        sc.bundle_point(
            "m", "bundled", tiny_config(causal=False), {"val_loss": 0.1, "tokens_seen": 9}
        )
        is None
    )
    assert sc.bundle_point("m", "bundled", cfg, {"tokens_seen": 9}) is None


def test_a_power_law_is_recovered_exactly_and_one_size_is_refused():
    x = np.array([1e4, 3e4, 1e5, 1e6])
    law = sc.fit_power_law(x, 5.0 * x**-0.08)
    assert law.a == pytest.approx(5.0) and law.b == pytest.approx(0.08)
    np.testing.assert_allclose(law(x), 5.0 * x**-0.08)
    with pytest.raises(ValueError, match="two different sizes"):
        sc.fit_power_law([10, 10], [1, 2])


def test_sweep_points_count_each_runs_shape():
    model = tiny_config().to_dict()
    results = {"runs": [{"name": "a", "model": model, "tokens_seen": 50, "val_loss": 2.5}]}
    (point,) = sc.sweep_points(results)
    assert point.n_params == sc.count_params(tiny_config())[1] and point.source == "sweep"


def test_a_missing_or_damaged_sweep_file_is_a_plain_value_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read the sweep results"):
        sc.load_sweep(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": [{"name": "a", "model": {"vocab_size": 1}}]}')
    with pytest.raises(ValueError, match="damaged"):
        sc.load_sweep(bad)


def test_bundle_points_take_bundles_of_the_same_text_and_tokenizer(tmp_path):
    from viz_model.bundles.checkpoint import read_config, save_bundle
    from viz_model.text.tokenization import Tokenizer

    tok = Tokenizer.train("abcdefghij " * 20, "char")
    model = tiny_model(vocab_size=tok.vocab_size)
    metas = {
        "mine": {"corpus": "shakespeare", "tokenizer": "char", "val_loss": 2.0, "tokens_seen": 9},
        "other-text": {"corpus": "repeat", "tokenizer": "char", "val_loss": 2.0, "tokens_seen": 9},
        # fine-tuned from another (shakespeare-tiny-hyperfit): its tokens are the tuning's alone
        "tuned": {"corpus": "shakespeare", "tokenizer": "char", "val_loss": 6.0, "tokens_seen": 9}
        | {"base": "mine"},
    }
    for name, meta in metas.items():
        save_bundle(tmp_path / "runs" / name, model, tok, meta=meta)
    (tmp_path / "runs" / "broken").mkdir()
    (tmp_path / "runs" / "broken" / "config.json").write_text("{")
    found = {p.name: p for p in (tmp_path / "runs").iterdir()}
    (point,) = sc.bundle_points(found, tmp_path / "assets", "shakespeare", "char")
    assert (point.name, point.source, point.val_loss) == ("mine", "class run", 2.0)
    assert point.n_params == sc.count_params(read_config(tmp_path / "runs" / "mine")[0])[1]
