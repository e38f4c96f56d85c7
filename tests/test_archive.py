"""The model card's download: one zip with our bundle (which load_bundle opens as the same model)
and, for GPT-2's architecture only, a folder transformers opens with the same logits."""

from __future__ import annotations

import dataclasses
import io
import zipfile
from pathlib import Path

import torch

from tests.conftest import tiny_model
from viz_model.bundles.archive import model_zip
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.hf_export import why_not_gpt2
from viz_model.bundles.load import load_bundle
from viz_model.text.tokenization import Tokenizer

TEXT = "ROMEO: But soft, what light through yonder window breaks? It is the east.\n"


def _bundle(tmp_path: Path, seed: int = 3, **shape) -> Bundle:
    tokenizer = Tokenizer.train(TEXT, "char")
    model = tiny_model(seed=seed, vocab_size=tokenizer.vocab_size, **shape)
    history = [{"step": 10, "train_loss": 2.5}]
    return Bundle(tmp_path / "my-run", model, tokenizer, model.cfg, history=history)


def _unzip(data: bytes, into: Path) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(into)
        return archive.namelist()


def _logits(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        out = model(torch.tensor([ids]))
    return out.logits if hasattr(out, "logits") else out


def test_the_zip_holds_our_bundle_and_a_transformers_folder_with_the_same_logits(tmp_path):
    from transformers import AutoModelForCausalLM

    bundle = _bundle(tmp_path)
    names = _unzip(model_zip(bundle), tmp_path / "out")
    assert "my-run/README.txt" in names
    assert "my-run/my-run/model.safetensors" in names
    assert "my-run/my-run-transformers/config.json" in names
    assert not any("snapshots" in name for name in names)

    ids = bundle.tokenizer.encode("But soft, what")
    ours = _logits(bundle.model, ids)
    assert ours.std() > 0.1  # logits that vary: a real comparison
    back = load_bundle(tmp_path / "out" / "my-run" / "my-run")
    assert back.config == bundle.config and back.history == bundle.history
    torch.testing.assert_close(_logits(back.model, ids), ours)
    theirs = AutoModelForCausalLM.from_pretrained(tmp_path / "out/my-run/my-run-transformers")
    torch.testing.assert_close(_logits(theirs.eval(), ids), ours, atol=1e-4, rtol=1e-4)


def test_a_model_transformers_cannot_hold_goes_without_that_folder_and_says_why(tmp_path):
    bundle = _bundle(tmp_path, pos="rope")
    reason = why_not_gpt2(bundle.config)
    assert reason is not None
    names = _unzip(model_zip(bundle), tmp_path / "out")
    assert not any("transformers" in name for name in names)
    readme = (tmp_path / "out" / "my-run" / "README.txt").read_text(encoding="utf-8")
    assert reason in readme
    back = load_bundle(tmp_path / "out" / "my-run" / "my-run")
    ids = bundle.tokenizer.encode("soft")
    torch.testing.assert_close(_logits(back.model, ids), _logits(bundle.model, ids))


def test_a_snapshot_goes_with_its_own_weights_and_its_step_in_the_name(tmp_path):
    final = _bundle(tmp_path, seed=3)
    early = dataclasses.replace(final, model=_bundle(tmp_path, seed=4).model, step=120)
    names = _unzip(model_zip(early), tmp_path / "out")
    assert "my-run-step-120/my-run-step-120/model.safetensors" in names
    back = load_bundle(tmp_path / "out" / "my-run-step-120" / "my-run-step-120")
    ids = final.tokenizer.encode("window")
    torch.testing.assert_close(_logits(back.model, ids), _logits(early.model, ids))
    assert not torch.allclose(_logits(back.model, ids), _logits(final.model, ids))


def test_the_card_builds_a_models_zip_once_however_often_it_is_clicked(models_dir, monkeypatch):
    from serving.models import bundle_id
    from ui import model_download

    built = []
    monkeypatch.setattr(model_download, "model_zip", lambda bundle: built.append(bundle) or b"z")
    model_download._zip_of.clear()
    plain_id = bundle_id(models_dir / "test-char")
    assert [model_download._zip_of(plain_id) for _ in range(4)] == [b"z"] * 4  # four clicks
    assert len(built) == 1
    model_download._zip_of.clear()
