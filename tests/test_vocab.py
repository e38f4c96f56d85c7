"""extend_vocab (viz_model/model/vocab.py): new rows at the mean, old logits unchanged, a new model."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import VOCAB, tiny_config
from viz_model.model.gpt import GPT
from viz_model.model.vocab import extend_vocab


def _model(**overrides) -> GPT:
    torch.manual_seed(0)
    return GPT(tiny_config(**overrides)).eval()


@pytest.mark.parametrize("tied", [False, True])
def test_old_logits_for_old_tokens_are_unchanged_and_the_new_rows_are_the_mean(tied):
    model = _model(tie_embeddings=tied)
    grown = extend_vocab(model, 3).eval()
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        old, new = model(ids), grown(ids)
    assert new.shape == (2, 9, VOCAB + 3) and grown.cfg.vocab_size == VOCAB + 3
    torch.testing.assert_close(new[..., :VOCAB], old, rtol=0, atol=1e-6)
    emb = model.embed.weight
    torch.testing.assert_close(grown.embed.weight[VOCAB:], emb.mean(0).expand(3, -1))
    # each new token's logit is the mean of the old logits (the unembedding row is the mean row)
    torch.testing.assert_close(new[..., VOCAB], old.mean(-1), rtol=1e-5, atol=1e-5)
    assert (grown.unembed.W_U.data_ptr() == grown.embed.weight.data_ptr()) == tied


def test_the_given_model_is_left_alone():
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    grown = extend_vocab(model, 2)
    grown.embed.weight.data.add_(1.0)
    assert model.cfg.vocab_size == VOCAB
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])


def test_bad_counts_are_refused():
    with pytest.raises(ValueError):
        extend_vocab(_model(), -1)
    with pytest.raises(TypeError):
        extend_vocab(torch.nn.Linear(2, 2), 1)
