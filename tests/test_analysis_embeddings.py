"""PCA, cosine neighbours, position similarity and the swap exercise, against direct computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis import embeddings as E
from viz_model.model.gpt import sinusoidal_positions


def test_pca_components_are_orthonormal_and_explain_decreasing_variance():
    torch.manual_seed(0)
    x = torch.randn(200, 12) @ torch.randn(12, 12) + 3.0
    result = E.pca(x, k=5)
    comps = result.components
    assert np.allclose(comps @ comps.T, np.eye(5), atol=1e-8)
    assert np.all(np.diff(result.explained) <= 0) and 0 < result.explained.sum() <= 1
    # Against the covariance matrix's eigen-decomposition, the textbook definition.
    cov = np.cov(x.numpy(), rowvar=False)
    eigvals, eigvecs = np.linalg.eigh(cov)
    order = np.argsort(eigvals)[::-1]
    assert np.allclose(result.explained, eigvals[order][:5] / eigvals.sum(), atol=1e-8)
    for i in range(5):
        assert abs(abs(comps[i] @ eigvecs[:, order[i]]) - 1) < 1e-6
    # Projections are the centred rows along the components, and their variance is the eigenvalue.
    centred = x.double().numpy() - x.double().numpy().mean(0)
    assert np.allclose(result.projected, centred @ comps.T, atol=1e-8)
    assert np.allclose(result.projected.var(0, ddof=1), eigvals[order][:5], rtol=1e-6)


def test_pca_on_a_model_embedding_matrix(model):
    result = E.pca(model.W_E.detach(), k=2)
    assert result.projected.shape == (model.cfg.vocab_size, 2)
    assert result.explained[0] >= result.explained[1]


def test_nearest_neighbours_match_a_direct_cosine_computation(model):
    w = model.W_E.detach().numpy()
    for token in (0, 5, 22):
        got = E.nearest_neighbours(w, token, k=10)
        sims = (w @ w[token]) / (np.linalg.norm(w, axis=1) * np.linalg.norm(w[token]))
        sims[token] = -np.inf
        order = np.argsort(-sims)[:10]
        assert list(got.ids) == list(order)
        assert np.allclose(got.similarity, sims[order], atol=1e-6)
        assert token not in got.ids and np.all(np.diff(got.similarity) <= 1e-7)
    with pytest.raises(ValueError):
        E.nearest_neighbours(w, len(w))


def test_a_scaled_copy_is_the_nearest_neighbour():
    w = np.random.default_rng(0).normal(size=(30, 8))
    w[7] = 5.0 * w[3]
    got = E.nearest_neighbours(w, 3, k=3)
    assert got.ids[0] == 7 and got.similarity[0] == pytest.approx(1.0, abs=1e-6)


def test_position_tables_and_their_similarity(model):
    table = E.position_table(model)
    assert table.shape == (model.cfg.n_ctx, model.cfg.d_model)
    sim = E.cosine_matrix(table)
    assert np.allclose(np.diag(sim), 1, atol=1e-5) and np.allclose(sim, sim.T, atol=1e-6)
    sinus = tiny_model(pos="sinusoidal")
    assert np.allclose(E.position_table(sinus, 5), sinusoidal_positions(16, 32)[:5].numpy())
    assert E.position_table(tiny_model(pos="none")) is None


def test_sinusoidal_similarity_depends_only_on_the_distance():
    """sin/cos positions: PE[p].PE[q] = sum_i cos((p - q) w_i), a function of p - q alone."""
    pe = sinusoidal_positions(32, 16).numpy()
    dots = pe @ pe.T
    for d in range(5):
        diag = np.diag(dots, d)
        assert np.allclose(diag, diag[0], atol=1e-4)


IDS = [3, 7, 1, 3, 9, 4, 12, 0]


@pytest.mark.parametrize("pos", ["learned", "sinusoidal", "none"])
def test_without_positions_swapping_earlier_tokens_leaves_the_last_tokens_layer0_output(pos):
    model = tiny_model(pos=pos)
    for i, j in [(0, 6), (1, 2), (2, 5)]:
        result = E.swap_experiment(model, IDS, i, j, positions=False)
        assert result.max_diff < 1e-6  # float rounding only (about 1e-8 here)
        assert not result.positions_on
    if pos != "none":  # with positions on, the same swap moves it (2e-5 to 5e-4 here)
        result = E.swap_experiment(model, IDS, 0, 6, positions=True)
        assert result.positions_on and result.max_diff > 1e-6


def test_the_invariance_stops_at_layer_0_under_causal_attention():
    """Layer 1 reads the outputs of the tokens between the swapped ones, which saw a different
    prefix in layer 0: there the last token's attention output changes even without positions."""
    model = tiny_model(pos="none")
    layer1 = E.swap_experiment(model, IDS, 1, 5, positions=False, layer=1)
    assert layer1.max_diff > 1e-5  # about 1.6e-4 here
    # Swapping tokens whose layer-0 outputs are the same everywhere (identical tokens) changes nothing.
    same = E.swap_experiment(model, IDS, 0, 3, positions=False, layer=1)  # both are token 3
    assert same.max_diff < 1e-6


def test_swap_refuses_to_move_the_last_token(model):
    with pytest.raises(ValueError):
        E.swap_experiment(model, IDS, 0, len(IDS) - 1, positions=False)
    assert E.swap([1, 2, 3], 0, 2) == [3, 2, 1]


def test_the_batched_swap_run_equals_separate_runs_of_each_prompt():
    model = tiny_model()
    out = E.swap_experiments(model, IDS, 1, 4, positions=True, layers=(0, 1))
    for layer in (0, 1):
        name = f"blocks.{layer}.hook_attn_out"
        for seq, got in ((IDS, out[layer].original), (E.swap(IDS, 1, 4), out[layer].swapped)):
            _, cache = model.run_with_cache(torch.tensor(seq), names=[name])
            np.testing.assert_allclose(got, cache[name][-1].numpy(), atol=1e-5)
    assert out[0].positions_on
