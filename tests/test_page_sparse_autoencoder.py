"""The Sparse autoencoder page (AppTest): it trains on the smallest settings on a bundled model and on
one trained in the tests, prints the metrics and claims of the SAE it trained (the lab run again by
hand), keeps its choices in the URL, and a model without a known training text gets words."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.apptest_util import open_link
from tests.claims_models import CLASS_TRAINED
from viz_model.analysis.labs.sae.activations import hook_name
from viz_model.analysis.labs.sae.claims import dead_claim, match_claim, splice_claim
from viz_model.analysis.labs.sae.features import TYPICAL, default_feature
from viz_model.analysis.labs.sae.lab import Lab
from viz_model.analysis.labs.sae.lab import lab as train_lab
from viz_model.analysis.labs.sae.matching import match_labs
from viz_model.analysis.labs.sae.training import SAEConfig
from viz_model.analysis.untrained import untrained_twin
from viz_model.bundles.load import load_bundle
from viz_model.text.data import load_text

PAGE = "pages/23_sparse_autoencoder.py"
MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
PROMPT = "ROMEO:\nBut soft"
SMALL = {"sae_tokens": "25000", "sae_f": "256", "sae_k": "8", "sae_layer": "0"}


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def page_lab(model, bundle, cfg: SAEConfig) -> Lab:
    """The SAE the page trains on the SMALL settings (block 0, 25k activations) of `model` with
    `bundle`'s tokenizer and text, on one thread: the app's thread count, so the same arithmetic
    gives the same numbers."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        text = load_text(bundle.meta["data"])
        return train_lab(model, bundle.tokenizer, text, hook_name(0), cfg, 25_000)
    finally:
        torch.set_num_threads(threads)


def test_the_page_prints_the_sae_it_trained_on_a_bundled_model():
    _check_page(MODELS, "shakespeare-char")


@pytest.mark.system
def test_the_page_prints_the_sae_it_trained_on_a_model_trained_by_a_class(claim_bundles):
    folder = claim_bundles[CLASS_TRAINED]
    _check_page(folder.parent, folder.name)


def test_a_model_without_a_known_training_text_gets_words(models_dir):
    at = open_link(models_dir, PAGE, {"model": "test-char", "prompt": PROMPT}, timeout=300)
    assert not at.exception
    assert any("training text cannot be found" in i.value for i in at.info)


def _check_page(folder: Path, name: str) -> None:
    at = open_link(folder, PAGE, {"model": name, "prompt": PROMPT, **SMALL}, timeout=600)
    assert not at.exception, at.exception[0].value
    bundle = load_bundle(folder / name)
    lab = page_lab(bundle.model, bundle, SAEConfig(n_features=256, k=8, seed=0))
    m = lab.metrics
    assert _metric(at, "Variance explained") == f"{m.fve:.1%}"
    assert _metric(at, "Alive / dead") == f"{m.n_alive:,} / {m.n_dead:,}"
    printed = [md.value for md in at.markdown]
    assert splice_claim(m).text in printed
    assert dead_claim(m, lab.log.dead_window_tokens).text in printed
    assert at.query_params["sae_tokens"] == "25000" and at.query_params["sae_f"] == "256"
    feature = next(s for s in at.selectbox if s.label.startswith("Feature"))
    assert feature.value == default_feature(lab.table)
    assert lab.table.freq[feature.value] <= TYPICAL or not any(lab.table.freq <= TYPICAL)


def test_another_sae_resets_the_chosen_feature():
    query = {"model": "shakespeare-char", "prompt": PROMPT, **SMALL}
    at = open_link(MODELS, PAGE, query, timeout=600)
    feature = next(s for s in at.selectbox if s.label.startswith("Feature"))
    first_default = feature.value
    chosen = next(f for f in feature.options if str(f) != str(first_default))
    feature.set_value(int(chosen.split(":")[0].lstrip("#")) if isinstance(chosen, str) else chosen)
    at.run(timeout=600)
    feature = next(s for s in at.selectbox if s.label.startswith("Feature"))
    assert feature.value != first_default  # the choice holds while the SAE is the same
    at.select_slider(key="_w_sae_k").set_value(4).run(timeout=600)
    assert not at.exception, at.exception[0].value
    feature = next(s for s in at.selectbox if s.label.startswith("Feature"))
    bundle = load_bundle(MODELS / "shakespeare-char")
    lab = page_lab(bundle.model, bundle, SAEConfig(n_features=256, k=4, seed=0))
    assert feature.value == default_feature(lab.table)


def test_a_chosen_feature_and_strength_come_from_the_url():
    query = {"model": "shakespeare-char", "prompt": PROMPT, **SMALL, "sae_alpha": "0"}
    at = open_link(MODELS, PAGE, query, timeout=600)
    assert not at.exception, at.exception[0].value
    assert any("With strength 0 the" in md.value and "same" in md.value for md in at.markdown)


def test_the_comparison_with_a_snapshot_prints_the_matching_it_ran():
    query = {
        "model": "shakespeare-char",
        "prompt": PROMPT,
        **SMALL,
        "sae_cmp": "true",
        "sae_snap": "34",
    }
    at = open_link(MODELS, PAGE, query, timeout=600)
    assert not at.exception, at.exception[0].value
    bundle = load_bundle(MODELS / "shakespeare-char")
    cfg = SAEConfig(n_features=256, k=8, seed=0)
    early = bundle.load_snapshot(34)
    twin = untrained_twin(bundle)
    lab, lab_early = page_lab(bundle.model, bundle, cfg), page_lab(early, bundle, cfg)
    lab_blank = page_lab(twin.model, bundle, cfg)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        found = match_labs(bundle.model, lab, early, lab_early, (twin.model, lab_blank))
    finally:
        torch.set_num_threads(threads)
    printed = [md.value for md in at.markdown]
    claim = match_claim(
        found.r, found.chance, found.alive, 34, found.tokens, untrained=found.untrained
    )
    assert claim.text in printed and f"fire on these {found.tokens:,} tokens" in claim.text
    assert "a model that learned nothing" in claim.text
    assert "its step-0 snapshot, the same shape with random weights" in " ".join(
        c.value for c in at.caption
    )


def test_l1_sparsity_from_the_url_shows_its_measured_l0_and_claims():
    query = {"model": "shakespeare-char", "prompt": PROMPT, **SMALL, "sae_sparsity": "l1"}
    at = open_link(MODELS, PAGE, {**query, "sae_l1": "0.03"}, timeout=600)
    assert not at.exception, at.exception[0].value
    bundle = load_bundle(MODELS / "shakespeare-char")
    cfg = SAEConfig(n_features=256, k=0, l1_coeff=0.03, seed=0)
    lab = page_lab(bundle.model, bundle, cfg)
    m = lab.metrics
    assert _metric(at, "Active per token") == f"{m.l0:.1f}"
    assert _metric(at, "Variance explained") == f"{m.fve:.1%}"
    printed = [md.value for md in at.markdown]
    assert splice_claim(m, l1=True).text in printed
    assert dead_claim(m, lab.log.dead_window_tokens).text in printed
    said = next(t for t in printed if t.startswith("**L1 sparsity** (λ = 0.03)"))
    assert f"**{m.l0:.1f}** active features on average, of 256" in said
    assert at.query_params["sae_sparsity"] == "l1" and at.query_params["sae_l1"] == "0.03"
    assert not any(s.label.startswith("Active features per token k") for s in at.select_slider)


def test_a_model_without_a_causal_mask_is_said_to_copy_not_predict():
    """shakespeare-nomask's clean, spliced and ablated losses measure copying (it sees each token
    it is scored on): the page says so beside them, as the model card does."""
    query = {"model": "shakespeare-nomask", "prompt": PROMPT, **SMALL}
    at = open_link(MODELS, PAGE, query, timeout=600)
    assert not at.exception, at.exception[0].value
    warned = " ".join(w.value for w in at.warning)
    assert "no causal mask" in warned and "measures copying" in warned
    assert "how much of that copying the SAE keeps" in warned


def test_a_model_too_large_to_read_here_gets_words(monkeypatch):
    """The size cap is the sections module's constant now, so a test can lower it under a
    bundled model instead of needing a model of 30M parameters: nothing is trained."""
    from ui.sparse_autoencoder import dictionary

    monkeypatch.setattr(dictionary, "MAX_PARAMS", 1_000)
    at = open_link(MODELS, PAGE, {"model": "shakespeare-char", "prompt": PROMPT}, timeout=300)
    assert not at.exception, at.exception[0].value
    said = " ".join(i.value for i in at.info)
    assert "parameters: reading enough tokens to train an SAE would take minutes" in said
    assert not any(s.label == "How good is the dictionary?" for s in at.subheader)
