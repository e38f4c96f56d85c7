"""A model saved as a GPT-2 folder opens in `transformers` with the same logits and tokens, and
opens back here; a model whose architecture is not GPT-2's is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import VARIANTS, tiny_model
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.gpt2_folder import is_hf_folder
from viz_model.bundles.hf_export import export_gpt2, why_not_gpt2
from viz_model.bundles.load import load_bundle
from viz_model.model.recurrent_config import RecurrentConfig
from viz_model.text.tokenization import Tokenizer

TEXT = "ROMEO: But soft, what light through yonder window breaks? It is the east.\n"
GPT2_LIKE = {  # each a GPT-2 architecture: the activations it offers, tied or untied heads
    "gelu": {},
    "gelu_tanh": {"act": "gelu_tanh"},
    "relu_tied": {"act": "relu", "tie_embeddings": True},
}


def _bundle(tmp_path: Path, **shape) -> Bundle:
    tokenizer = Tokenizer.train(TEXT, "char")
    model = tiny_model(seed=3, vocab_size=tokenizer.vocab_size, **shape)  # noisy biases and gains
    return Bundle(tmp_path / "ours", model, tokenizer, model.cfg)


@pytest.mark.parametrize("shape", GPT2_LIKE.values(), ids=GPT2_LIKE.keys())
def test_an_exported_model_gives_transformers_the_same_logits(tmp_path, shape):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    bundle = _bundle(tmp_path, **shape)
    folder = export_gpt2(bundle, tmp_path / "hf")
    theirs = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokens = AutoTokenizer.from_pretrained(folder)
    prompt = "But soft, what"  # 14 characters: within n_ctx 16
    ids = bundle.tokenizer.encode(prompt)
    assert tokens(prompt)["input_ids"] == ids  # the same tokenizer file, read by transformers
    batch = torch.tensor([ids])
    with torch.no_grad():
        ours = bundle.model(batch)
        hf = theirs(batch).logits
    assert ours.shape == hf.shape == (1, len(ids), bundle.tokenizer.vocab_size)
    tol = 1e-4
    assert ours.std() > 100 * tol  # logits that vary well beyond the tolerance: a real comparison
    torch.testing.assert_close(hf, ours, atol=tol, rtol=tol)
    assert theirs.config.tie_word_embeddings == bundle.config.tie_embeddings


def test_an_exported_folder_opens_back_here_as_the_same_model(tmp_path):
    bundle = _bundle(tmp_path)
    folder = export_gpt2(bundle, tmp_path / "hf")
    assert is_hf_folder(folder)
    back = load_bundle(folder)
    assert back.config == bundle.config
    assert back.tokenizer.sha256 == bundle.tokenizer.sha256
    ids = torch.tensor(bundle.tokenizer.encode(TEXT[:16]))
    torch.testing.assert_close(back.model(ids), bundle.model(ids), atol=1e-5, rtol=0)


NOT_GPT2 = {name: shape for name, shape in VARIANTS.items() if name not in ("default", "tied")}


@pytest.mark.parametrize("shape", NOT_GPT2.values(), ids=NOT_GPT2.keys())
def test_another_architecture_is_refused_with_its_reason(tmp_path, shape):
    bundle = _bundle(tmp_path, **shape)
    reason = why_not_gpt2(bundle.config)
    assert reason and "GPT-2" in reason
    with pytest.raises(ValueError, match="cannot be saved as a GPT-2 folder: it "):
        export_gpt2(bundle, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()  # nothing half-written


def test_the_reasons_name_what_differs():
    assert why_not_gpt2(tiny_model().cfg) is None
    assert "RoPE" in why_not_gpt2(tiny_model(pos="rope").cfg)
    assert "RMSNorm" in why_not_gpt2(tiny_model(norm_kind="rmsnorm").cfg)
    assert "1 key and value" in why_not_gpt2(tiny_model(n_kv_heads=1).cfg)
    lstm = RecurrentConfig(vocab_size=20, family="lstm")
    assert "not a transformer" in why_not_gpt2(lstm) and "LSTM" in why_not_gpt2(lstm)
