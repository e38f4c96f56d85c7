"""Small model bundles for tests: trained for a few seconds on a slice of the bundled corpus, so
pages show some structure, without depending on the bundled pre-trained models."""

from __future__ import annotations

from pathlib import Path

import torch

from viz_model.bundles.checkpoint import save_bundle, save_snapshot
from viz_model.model.config import GPTConfig
from viz_model.model.families import build_model
from viz_model.model.recurrent_config import RecurrentConfig
from viz_model.text.data import TokenData, load_corpus
from viz_model.text.tokenization import Tokenizer


def build_test_bundle(
    out: Path, steps: int = 150, kind: str = "char", seed: int = 0, **shape: object
) -> Path:
    """Train a 2-layer model for `steps` steps on 60k characters of Shakespeare and save a bundle.
    `shape`: GPTConfig fields over the default (e.g. pos="rope", norm_kind="rmsnorm"), or
    family="lstm" (rnn, gru, cnn) and RecurrentConfig fields for a model of another family."""
    torch.manual_seed(seed)
    text = load_corpus("shakespeare")[:60_000]
    tok = Tokenizer.train(text, kind, vocab_size=300 if kind == "bpe" else None)
    data = TokenData.from_text(text, tok)
    if "family" in shape:
        base = dict(vocab_size=tok.vocab_size, n_ctx=64, d_model=48, n_layer=2)
        cfg = RecurrentConfig(**{**base, **shape})
    else:
        base = dict(vocab_size=tok.vocab_size, n_ctx=64, d_model=48, n_layer=2, n_head=4)
        cfg = GPTConfig(**{**base, **shape})
    model = build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    history = []
    save_snapshot(out, model, 0)  # the random weights, as the training loop saves them
    for step in range(1, steps + 1):
        x, y = data.batch("train", 16, cfg.n_ctx, gen)
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append({"step": step, "train_loss": round(loss.item(), 4)})
        if step in (1, steps // 4, steps):
            save_snapshot(out, model, step)
    model.eval()
    meta = {"command": "tests/bundles.py build_test_bundle", "corpus": "shakespeare[:60000]"}
    return save_bundle(out, model, tok, history=history, meta=meta)


if (
    __name__ == "__main__"
):  # python -m tests.bundles runs/dev-char: a bundle for trying pages by hand
    import sys

    print(build_test_bundle(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/dev-char"), steps=400))
