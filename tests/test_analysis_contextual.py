"""Contextual embeddings: the occurrences' vectors are the model's residual stream at each station,
and the similarity profile measures what it says."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.claims_models import GPT_CLAIM_MODELS, claim_bundle
from tests.conftest import tiny_model
from viz_model.analysis.labs import contextual as cx
from viz_model.analysis.neurons import Windows


def _windows() -> Windows:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 23, size=(6, 16))
    ids[:, 10] = 5  # token 5 occurs at position 10 of every window (and maybe elsewhere)
    return Windows(ids=ids, texts=[[f"<{t}>" for t in row] for row in ids])


def test_occurrence_vectors_are_the_residual_stream_at_each_station():
    model, windows = tiny_model(), _windows()
    resid = cx.resid_by_station(model, windows.ids, batch_size=4)
    assert resid.shape == (3, 6, 16, model.cfg.d_model)
    c = cx.token_contexts(resid, windows, 5)
    assert all(p >= cx.MIN_LEFT and windows.ids[w, p] == 5 for w, p in c.where)
    assert sum(1 for w, p in c.where if w == 2) <= cx.PER_WINDOW
    w, p = c.where[0]
    _, cache = model.run_with_cache(torch.as_tensor(windows.ids[w]))
    np.testing.assert_allclose(c.vectors[0, 0], cache["blocks.0.hook_resid_pre"][p], atol=1e-5)
    np.testing.assert_allclose(c.vectors[2, 0], cache["blocks.1.hook_resid_post"][p], atol=1e-5)
    assert c.snippets[0].endswith("<5>") and c.previous[0] == windows.ids[w, p - 1]


def test_profile_by_hand():
    # two occurrences, three stations: identical, orthogonal, opposite
    v = np.array(
        [
            [[1.0, 0.0], [1.0, 0.0]],
            [[1.0, 0.0], [0.0, 2.0]],
            [[1.0, 0.0], [-3.0, 0.0]],
        ]
    )
    p = cx.context_profile(v)
    np.testing.assert_allclose(p.between, [1.0, 0.0, -1.0])
    np.testing.assert_allclose(p.to_layer0, [1.0, 0.5, 0.0])
    np.testing.assert_allclose(p.to_layer0_min, [1.0, 0.0, -1.0])


def test_projections_and_groups():
    rng = np.random.default_rng(1)
    v = rng.standard_normal((3, 10, 8))
    points, shares = cx.layer_projections(v)
    assert points.shape == (3, 10, 2) and np.all(shares <= 1)
    assert shares[0, 0] >= shares[0, 1]
    groups = cx.previous_groups(np.array([1, 1, 2, 3, 3, 3, 4]), n=2)
    assert groups == [1, 1, -1, 3, 3, 3, -1]


def test_task_model_reads_its_task_text():
    text = cx.corpus_text({"data": {"task": "repeat", "task_len": 16}})
    line = text.splitlines()[0]
    assert line.isalpha() and line[: len(line) // 2] == line[len(line) // 2 :]
    assert cx.corpus_text({}).startswith(cx.load_corpus("shakespeare")[:50])


def test_a_token_that_never_occurs_has_no_contexts():
    windows = _windows()
    resid = np.zeros((3, 6, 16, 4))
    c = cx.token_contexts(resid, windows, 99)
    assert c.vectors.shape == (3, 0, 4) and c.where == [] and c.snippets == []


def test_fewer_windows_for_a_larger_model(monkeypatch):
    from viz_model.text.tokenization import Tokenizer

    text = cx.load_corpus("shakespeare")[:200_000]
    tok = Tokenizer.train(text[:20_000], "char")
    model = tiny_model(vocab_size=tok.vocab_size)
    assert len(cx.windows_for(model, tok, text).ids) == cx.MAX_WINDOWS
    per_window = 3 * 16 * 32  # stations x context x d_model
    monkeypatch.setattr(cx, "RESID_BUDGET", 20 * per_window)
    windows = cx.windows_for(model, tok, text)
    assert windows.ids.shape == (20, 16)


def test_a_move_every_context_shares_is_not_called_the_contexts_doing():
    """The review's class model: 0.95 alike at embed, 0.92 after the last block."""
    claim = cx.context_claim(
        np.array([0.95, 0.93, 0.92]), np.array([1.0, 0.5, 0.32]), 80, "learned"
    )
    assert not claim.made and "about the same direction" in claim.text
    assert "pulled" not in claim.text and "0.92" in claim.text and "0.32" in claim.text
    apart = cx.context_claim(np.array([0.9, 0.5, 0.3]), np.array([1.0, 0.6, 0.4]), 40, "learned")
    assert apart.made and "pulled the occurrences apart" in apart.text
    assert "fell to 0.30 after the last block" in apart.text
    # the review's shakespeare-char: apart in the middle, alike again at the end
    middle = cx.context_claim(np.array([0.83, 0.49, 0.54, 0.63, 0.85]), np.ones(5), 80, "learned")
    assert middle.made and "fell to 0.49 after block 0" in middle.text
    assert "then they grow alike again (0.85 at the end)" in middle.text


@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
def test_without_a_position_vector_the_embed_vectors_are_not_said_to_differ_by_position(pos):
    claim = cx.context_claim(np.array([1.0, 0.6]), np.array([1.0, 0.7]), 80, pos)
    assert "differ only by their position" not in claim.text
    assert "one and the same" in claim.text and "no position vector" in claim.text
    learned = cx.context_claim(np.array([0.9, 0.6]), np.array([1.0, 0.7]), 80, "learned")
    assert "differ only by their position (cosine 0.90" in learned.text


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_context_claim_on_every_claim_model_matches_its_profile(name, claim_bundles):
    b = claim_bundle(claim_bundles, name)
    windows = cx.windows_for(b.model, b.tokenizer, cx.corpus_text(b.meta))
    resid = cx.resid_by_station(b.model, windows.ids)
    c = cx.token_contexts(resid, windows, cx.frequent_tokens(windows)[0])
    profile = cx.context_profile(c.vectors)
    claim = cx.context_claim(profile.between, profile.to_layer0, c.vectors.shape[1], b.config.pos)
    n = claim.numbers
    # issue 36: RoPE, ALiBi and no-position models add no position vector at `embed`
    assert ("differ only by their position" in claim.text) == b.config.adds_positions
    if not b.config.adds_positions:
        assert n["between_embed"] == pytest.approx(1.0, abs=1e-4)
        assert "one and the same" in claim.text
    assert n["between_embed"] == pytest.approx(float(profile.between[0]))
    assert n["between_last"] == pytest.approx(float(profile.between[-1]))
    assert n["between_least"] == pytest.approx(float(profile.between[1:].min()))
    assert claim.made == (n["between_embed"] - n["between_least"] > cx.APART)
    assert f"{n['between_last']:.2f}" in claim.text and f"{n['to_layer0_last']:.2f}" in claim.text
    baseline = cx.anisotropy(resid, windows.ids)
    drift = cx.anisotropy_claim(profile.between, baseline, "it")
    d = drift.numbers
    assert drift.made == (d["baseline_last"] - d["baseline_embed"] > cx.APART)
    assert f"{d['baseline_embed']:.2f} at `embed` and {d['baseline_last']:.2f}" in drift.text


def test_the_anisotropy_baseline_compares_different_tokens_only():
    """Each token's vector is its own axis, the same at every position: two different tokens are
    orthogonal (baseline 0), while a shared offset added at the second station shows up."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 5, (6, 20))
    eye = np.eye(8)
    first = eye[ids]  # (N, W, D): token t is axis t
    second = first + 2 * eye[7]  # every vector drifts along one shared axis
    resid = np.stack([first, second])  # (S=2, N, W, D)
    baseline = cx.anisotropy(resid, ids)
    assert baseline[0] == pytest.approx(0.0)
    assert baseline[1] == pytest.approx(0.8)  # (0 + 4) / (sqrt(5) sqrt(5))
    drift = cx.anisotropy_claim(np.array([0.9, 0.95]), baseline, "x")
    assert drift.made and "+0.15 above any two tokens" in drift.text
    one_token = cx.anisotropy(resid, np.zeros_like(ids))
    assert np.isnan(one_token).all()
    # issue 36 (an audit on a class run): "0.93 ... 0.13 ... +0.79": the page prints the two
    # cosines to 2 decimals, so the gap it states is theirs (0.93 - 0.13 = 0.80)
    printed = cx.anisotropy_claim(np.array([0.9, 0.9349]), np.array([0.0, 0.1251]), "x")
    assert "+0.80 above any two tokens" in printed.text and "0.13 after the last" in printed.text


def test_groups_and_fills_read_what_a_teacher_types():
    assert cx.parse_groups("kind, good |cruel,\n base, ") == [["kind", "good"], ["cruel", "base"]]
    assert cx.parse_groups(" | a") == [["a"]]
    assert cx.fill("You are {}. {}", "kind") == "You are kind. {}"


def test_the_filler_s_last_token_is_found_in_the_filled_prompt():
    from viz_model.text.tokenization import Tokenizer

    tok = Tokenizer.train("My lord, you are kind. cruel", "char")
    ends = cx.filler_ends(tok, "My lord, you are {}.", ["kind", "cruel"])
    for (ids, end), word in zip(ends, ["kind", "cruel"], strict=True):
        assert tok.decode(ids) == f"My lord, you are {word}."
        assert tok.decode(ids[: end + 1]).endswith(word)  # the position is the filler's end


def test_template_vectors_are_each_prompt_s_last_token_at_every_station():
    model = tiny_model(seed=1)
    prompts = [[1, 2, 3], [4, 5]]
    vectors = cx.template_vectors(model, prompts)
    assert vectors.shape == (model.cfg.n_layer + 1, 2, model.cfg.d_model)
    _, cache = model.run_with_cache(torch.tensor([4, 5]), names=cx.stations(model))
    last = cache[cx.stations(model)[-1]][-1].numpy()
    np.testing.assert_allclose(vectors[-1, 1], last, rtol=1e-6)
    at_first = cx.template_vectors(model, prompts, at=[0, 0])
    first = cache[cx.stations(model)[-1]][0].numpy()
    np.testing.assert_allclose(at_first[-1, 1], first, rtol=1e-6)


def test_separation_tells_apart_groups_that_differ_and_not_shuffled_ones():
    rng = np.random.default_rng(0)
    labels = np.array([0] * 8 + [1] * 8)
    apart = rng.normal(size=(1, 16, 6)) * 0.3 + np.where(labels[None, :, None] == 0, 1.0, -1.0)
    mixed = rng.normal(size=(1, 16, 6))
    vectors = np.concatenate([mixed, apart])  # station 0: noise, station 1: two clusters
    accuracy = cx.separation(vectors, labels)
    chance = cx.separation_chance(vectors, labels, shuffles=50)
    assert accuracy[1] == 1.0 and accuracy[1] > chance[1]
    assert accuracy[0] <= chance[0] + 0.2  # noise is about as good as shuffled labels
    claim = cx.template_claim(["embed", "after block 0"], accuracy, chance, 16)
    assert claim.made and "`after block 0`" in claim.text and "100%" in claim.text
    none = cx.template_claim(["embed"], np.array([0.5]), np.array([0.7]), 16)
    assert not none.made and "No layer tells these groups apart" in none.text
