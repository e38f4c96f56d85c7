"""MLP neuron analyses against brute force: per-window search and a direct matmul."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.neurons import (
    corpus_windows,
    dead_neurons_claim,
    has_mlp,
    neuron_activations,
    neuron_maxima,
    output_direction_logits,
    post_name,
    promoted_tokens,
    top_examples,
    top_neurons,
)
from viz_model.text.tokenization import Tokenizer

TEXT = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n"
) * 20


def test_top_neurons_orders_by_peak():
    post = np.array([[0.0, 5.0, 1.0, -1.0], [3.0, 0.0, 1.0, 2.0]])
    assert top_neurons(post, 3).tolist() == [1, 0, 3]
    assert top_neurons(post, 10).tolist() == [1, 0, 3, 2]


@pytest.mark.parametrize("kind", ["char", "bpe", "word"])
def test_corpus_windows_have_equal_length_and_their_text(kind):
    tok = Tokenizer.train(TEXT, kind, vocab_size=300 if kind == "bpe" else None)
    w = corpus_windows(TEXT, tok, n_windows=12, length=10)
    assert w.ids.shape[1] == 10 and 1 <= w.ids.shape[0] <= 12
    assert len(w.texts) == w.ids.shape[0] and all(len(row) == 10 for row in w.texts)
    for row_ids, row_text in zip(w.ids, w.texts, strict=True):
        # Each shown piece is the token's own text (with the whitespace before it).
        assert tok.encode("".join(row_text)) == row_ids.tolist()


def test_corpus_windows_refuse_a_too_short_corpus():
    tok = Tokenizer.train(TEXT, "char")
    with pytest.raises(ValueError, match="too short"):
        corpus_windows("ab", tok, n_windows=3, length=10)


def _windows(n=13, w=9, vocab=23, seed=1):
    return torch.randint(0, vocab, (n, w), generator=torch.Generator().manual_seed(seed)).numpy()


@pytest.mark.parametrize("batch_size", [1, 4, 32])
def test_neuron_maxima_and_top_examples_match_brute_force(batch_size):
    model = tiny_model()  # gelu: no ties at zero, so the order of the top windows is unique
    ids = _windows()
    maxima, argmax = neuron_maxima(model, ids, batch_size=batch_size)
    L, M = model.cfg.n_layer, model.cfg.d_mlp
    assert maxima.shape == argmax.shape == (L, len(ids), M)
    # Brute force: every window alone, every neuron.
    full = np.stack(
        [
            np.stack(
                [
                    model.run_with_cache(torch.as_tensor(row), names=[post_name(i)])[1].numpy(
                        post_name(i)
                    )
                    for row in ids
                ]
            )
            for i in range(L)
        ]
    )  # (L, N, W, M)
    np.testing.assert_allclose(maxima, full.max(axis=2), atol=1e-5)
    for layer, neuron in [(0, 0), (1, 17), (1, M - 1)]:
        examples = top_examples(maxima, argmax, layer, neuron, k=5)
        acts = full[layer, :, :, neuron]  # (N, W)
        best = sorted(((acts[w].max(), w) for w in range(len(ids))), reverse=True)[:5]
        assert [e.window for e in examples] == [w for _, w in best]
        for e in examples:
            assert e.value == pytest.approx(acts[e.window].max(), abs=1e-5)
            assert acts[e.window, e.position] == pytest.approx(e.value, abs=1e-5)


def test_neuron_activations_of_some_windows(model):
    ids = _windows(n=3)
    acts = neuron_activations(model, ids, layer=1, neuron=5)
    one = neuron_activations(model, ids[1], layer=1, neuron=5)
    assert acts.shape == (3, ids.shape[1]) and one.shape == (1, ids.shape[1])
    np.testing.assert_allclose(one[0], acts[1], atol=1e-5)


def test_output_direction_logits_equal_a_direct_matmul(model):
    got = output_direction_logits(model, layer=1, neuron=9)
    with torch.no_grad():
        direct = (model.blocks[1].mlp.fc_out.weight @ torch.eye(model.cfg.d_mlp)[:, 9]) @ model.W_U
    np.testing.assert_allclose(got, direct.numpy(), atol=1e-6)
    up, down = promoted_tokens(got, k=10)
    assert got[up[0]] == got.max() and got[down[0]] == got.min()
    assert list(got[up]) == sorted(got[up], reverse=True)
    assert list(got[down]) == sorted(got[down])
    assert not set(up) & set(down)


def test_attention_only_models_have_no_mlp():
    assert not has_mlp(tiny_model(attn_only=True))
    assert has_mlp(tiny_model())


def test_corpus_search_on_a_char_model():
    from viz_model.analysis.neurons import corpus_search

    tok = Tokenizer.train(TEXT, "char")
    model = tiny_model(vocab_size=tok.vocab_size)
    found = corpus_search(model, tok, TEXT, n_windows=10, batch_size=4)
    n, w = found.windows.ids.shape
    assert w == model.cfg.n_ctx and found.maxima.shape == (2, n, model.cfg.d_mlp)
    best = top_examples(found.maxima, found.argmax, 1, 3, k=1)[0]
    acts = neuron_activations(model, found.windows.ids[best.window], 1, 3)[0]
    assert acts.max() == pytest.approx(best.value, abs=1e-5)


def test_corpus_search_keeps_the_top_windows_activations():
    from viz_model.analysis.neurons import corpus_search

    tok = Tokenizer.train(TEXT, "char")
    model = tiny_model(vocab_size=tok.vocab_size)
    found = corpus_search(model, tok, TEXT, n_windows=10, batch_size=3, keep=4)
    for layer, neuron in [(0, 0), (1, 5), (1, 17)]:
        examples = top_examples(found.maxima, found.argmax, layer, neuron, 4)
        windows = [e.window for e in examples]
        stored = found.stored_activations(layer, neuron, windows)
        direct = neuron_activations(model, found.windows.ids[windows], layer, neuron)
        assert stored is not None
        np.testing.assert_allclose(stored, direct, atol=1e-5)
    assert found.stored_activations(0, 0, [w for w in range(10)]) is None  # only 4 kept


def _constructed_peaks():
    """Window peaks of 3 neurons over 10 windows of 16 tokens, one layer: (1, 10, 3) each.

    Neuron 0 is position-driven: it peaks higher (5.0) but always at position 0. Neuron 1 is
    token-driven: a bit lower (4.0), at a different position in every window. Neuron 2 is dead.
    """
    rng = np.random.default_rng(0)
    maxima = np.stack([5.0 + 0.1 * rng.random(10), 4.0 + 0.1 * rng.random(10), np.full(10, 0.05)])
    argmax = np.stack([np.zeros(10), rng.permutation(16)[:10], np.arange(10)]).astype(np.int64)
    return maxima.T[None], argmax.T[None]


def test_rank_neurons_prefers_a_token_driven_neuron_to_a_position_driven_one():
    from viz_model.analysis.neurons import rank_neurons

    maxima, argmax = _constructed_peaks()
    r = rank_neurons(maxima, argmax, k=8)
    assert r.strength[0, 0] > r.strength[0, 1]  # the position-driven one is stronger...
    assert r.position_share[0].tolist() == [1.0, 1 / 8, 1 / 8]
    assert r.score[0, 0] == 0 and r.best(0) == 1  # ...but loses
    # Without the position discount the strongest would have won: the discount decides.
    assert int(np.argmax(r.strength[0])) == 0


def test_rank_neurons_flags_and_skips_dead_neurons():
    from viz_model.analysis.neurons import DEAD_BELOW, rank_neurons

    maxima, argmax = _constructed_peaks()
    maxima[0, :, :2] = DEAD_BELOW / 2  # neurons 0 and 1 never reach the threshold
    maxima[0, :, 2], argmax[0, :, 2] = DEAD_BELOW * 3, 0  # neuron 2 fires, always at position 0
    # Dead means silent while the layer fires: four layer-mates peak at 1.0 (at position 0, so
    # they score 0 like neuron 2 and it still comes first).
    maxima = np.concatenate([maxima, np.ones((1, 10, 4))], axis=2)
    argmax = np.concatenate([argmax, np.zeros((1, 10, 4), dtype=np.int64)], axis=2)
    r = rank_neurons(maxima, argmax, k=8)
    assert r.dead[0].tolist() == [True, True, False, False, False, False, False]
    assert r.score[0, 1] > r.score[0, 2] == 0  # the dead neuron 1 would win on score alone
    assert r.best(0) == 2


def test_no_neuron_of_a_gated_mlp_is_called_dead():
    peaks = np.array([3.0, 2.0, 0.01, 0.0])  # two would be dead in a plain MLP
    assert dead_neurons_claim(peaks, 100).numbers["dead"] == 2
    gated = dead_neurons_claim(peaks, 100, gated=True)
    assert not gated.made and "none is called dead" in gated.text
