"""Shared fixtures: a seeded two-layer GPT for every config option, and a prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT

VOCAB = 23

# Each option the lectures contrast, on an otherwise tiny model.
VARIANTS = {
    "default": {},
    "post_ln": {"norm": "post"},
    "sinusoidal": {"pos": "sinusoidal"},
    "no_pos": {"pos": "none"},
    "tied": {"tie_embeddings": True},
    "attn_only": {"attn_only": True},
    "relu_nobias": {"act": "relu", "bias": False},
    "no_mask": {"causal": False},
}


def tiny_config(**overrides) -> GPTConfig:
    base = dict(vocab_size=VOCAB, n_ctx=16, d_model=32, n_layer=2, n_head=4)
    return GPTConfig(**{**base, **overrides})


def tiny_model(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    model = GPT(tiny_config(**overrides)).eval()
    # Break the symmetry of zero-initialised biases and unit LayerNorm gains, so invariants that
    # involve them are actually exercised.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln" in name or name.startswith("ln_final"):
                p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.fixture(params=list(VARIANTS), ids=list(VARIANTS))
def variant_model(request) -> GPT:
    return tiny_model(**VARIANTS[request.param])


@pytest.fixture
def model() -> GPT:
    return tiny_model()


@pytest.fixture
def ids() -> torch.Tensor:
    return torch.tensor([3, 7, 1, 3, 7, 1, 9, 4, 3, 7, 12, 0])


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    """A folder holding one small trained bundle, 'test-char', for page and app tests."""
    from tests.bundles import build_test_bundle

    root = tmp_path_factory.mktemp("models")
    build_test_bundle(root / "test-char")
    return root


@pytest.fixture(scope="session")
def claim_bundles(tmp_path_factory) -> dict[str, Path]:
    """Every model a claim is tested on (tests/claims_models.py): name -> bundle folder."""
    from tests.claims_models import build_claim_bundles

    return build_claim_bundles(tmp_path_factory.mktemp("claim_models"))
