"""Model bundles: round trips, snapshots, and one clear CheckpointError for every kind of bad bundle."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from tests.conftest import tiny_model
from viz_model.bundles.checkpoint import save_bundle, save_snapshot
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.load import load_bundle
from viz_model.text.tokenization import Tokenizer

TEXT = "the quick brown fox jumps over the lazy dog. " * 3 + "ABCDEFGHIJ"


@pytest.fixture
def tokenizer() -> Tokenizer:
    return Tokenizer.train(TEXT, "char")


@pytest.fixture
def bundle_dir(tmp_path, tokenizer) -> Path:
    model = tiny_model(vocab_size=tokenizer.vocab_size, tie_embeddings=False)
    history = [{"step": 1, "train_loss": 3.1}, {"step": 2, "train_loss": 2.9, "val_loss": 3.0}]
    path = save_bundle(tmp_path / "b", model, tokenizer, {"lr": 1e-3}, history, {"command": "x"})
    save_snapshot(path, model, 7)
    return path


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"tie_embeddings": True},
        {"pos": "sinusoidal"},
        {"attn_only": True, "bias": False},
        {"norm": "post"},
    ],
)
def test_round_trip_gives_identical_logits(tmp_path, tokenizer, variant):
    model = tiny_model(vocab_size=tokenizer.vocab_size, **variant)
    path = save_bundle(tmp_path / "m", model, tokenizer)
    bundle = load_bundle(path)
    ids = torch.tensor(tokenizer.encode("the lazy fox"))
    assert torch.equal(bundle.model(ids), model(ids))
    assert bundle.config == model.cfg
    assert bundle.tokenizer.encode("the dog") == tokenizer.encode("the dog")
    assert bundle.name == "m"
    assert not bundle.model.training


def test_history_meta_and_snapshots_come_back(bundle_dir):
    bundle = load_bundle(bundle_dir)
    assert bundle.history[-1]["val_loss"] == 3.0
    assert bundle.meta == {"command": "x"} and bundle.train_config == {"lr": 1e-3}
    assert bundle.snapshot_steps() == [7]
    snap = bundle.load_snapshot(7)
    for (name, a), b in zip(
        snap.state_dict().items(), bundle.model.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(a, b, atol=1e-3, rtol=1e-3, msg=name)  # float16 snapshots
    with pytest.raises(CheckpointError, match="no snapshot at step 8"):
        bundle.load_snapshot(8)


def test_tied_weights_are_stored_once(tmp_path, tokenizer):
    path = save_bundle(
        tmp_path / "t", tiny_model(vocab_size=tokenizer.vocab_size, tie_embeddings=True), tokenizer
    )
    names = set(load_file(path / "model.safetensors"))
    assert "embed.weight" in names and not any(n.startswith("unembed") for n in names)


def test_writes_leave_no_temp_files(bundle_dir):
    assert not [p for p in bundle_dir.rglob("*") if p.name.endswith(".tmp")]


def test_saved_files_get_the_mode_open_would_give(bundle_dir, tmp_path):
    # mkstemp alone makes 0600 files, which an app running as another user cannot read.
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    expected = stat.S_IMODE(plain.stat().st_mode)  # 0o644 under the usual umask 022
    files = sorted(p.relative_to(bundle_dir) for p in bundle_dir.rglob("*") if p.is_file())
    assert [p.as_posix() for p in files] == [
        "config.json",
        "history.json",
        "model.safetensors",
        "snapshots/step_000007.safetensors",
        "tokenizer.json",
    ]
    modes = {p.as_posix(): stat.S_IMODE((bundle_dir / p).stat().st_mode) for p in files}
    assert modes == {p.as_posix(): expected for p in files}


def corrupt(bundle_dir: Path, how: str) -> None:
    weights = bundle_dir / "model.safetensors"
    config = bundle_dir / "config.json"
    if how == "missing_weights":
        weights.unlink()
    elif how == "truncated_weights":
        weights.write_bytes(weights.read_bytes()[:500])
    elif how == "garbage_weights":
        weights.write_bytes(b"\x00\x01not a safetensors file" * 10)
    elif how == "nan_weights":
        tensors = load_file(weights)
        tensors["embed.weight"][0, 0] = float("nan")
        save_file(tensors, weights)
    elif how == "wrong_shape":
        tensors = load_file(weights)
        tensors["blocks.0.attn.qkv.weight"] = tensors["blocks.0.attn.qkv.weight"][:, :-1].clone()
        save_file(tensors, weights)
    elif how == "missing_tensor":
        tensors = load_file(weights)
        del tensors["blocks.1.mlp.fc_in.weight"]
        save_file(tensors, weights)
    elif how == "bad_json":
        config.write_text("{ not json")
    elif how == "bad_config_value":
        data = json.loads(config.read_text())
        data["model"]["n_head"] = 5
        config.write_text(json.dumps(data))
    elif how == "future_version":
        data = json.loads(config.read_text())
        data["format_version"] = 99
        config.write_text(json.dumps(data))
    elif how == "other_tokenizer":
        Tokenizer.train(TEXT + "@#%", "char").save(bundle_dir / "tokenizer.json")
    elif how == "garbage_tokenizer":
        (bundle_dir / "tokenizer.json").write_text("[1, 2, 3]")
    elif how == "binary_history":
        (bundle_dir / "history.json").write_bytes(b"\xff\xfe\x00\x00")


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("missing_weights", "has no model.safetensors"),
        ("truncated_weights", "not a readable safetensors file"),
        ("garbage_weights", "not a readable safetensors file"),
        ("nan_weights", "NaN or infinite"),
        ("wrong_shape", "has shape"),
        ("missing_tensor", "does not match config.json"),
        ("bad_json", "config.json is not valid JSON"),
        ("bad_config_value", "divisible by n_head"),
        ("future_version", "format version 99"),
        ("other_tokenizer", "not the tokenizer this model was trained with"),
        ("garbage_tokenizer", "tokenizer.json"),
        ("binary_history", "history.json is not valid JSON"),
    ],
)
def test_bad_bundles_raise_one_clear_error(bundle_dir, how, message):
    corrupt(bundle_dir, how)
    with pytest.raises(CheckpointError, match=message):
        load_bundle(bundle_dir)


def test_mismatched_tokenizer_and_embedding_are_refused(tmp_path, tokenizer):
    model = tiny_model(vocab_size=tokenizer.vocab_size + 1)
    with pytest.raises(CheckpointError, match="tokenizer has"):
        save_bundle(tmp_path / "x", model, tokenizer)
    # the same mismatch arriving from disk (tokenizer replaced, sha256 updated to match)
    path = save_bundle(tmp_path / "y", tiny_model(vocab_size=tokenizer.vocab_size), tokenizer)
    other = Tokenizer.train(TEXT + "@#%", "char")
    other.save(path / "tokenizer.json")
    data = json.loads((path / "config.json").read_text())
    data["tokenizer_sha256"] = other.sha256
    (path / "config.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="tokens but the model embeds"):
        load_bundle(path)


def test_not_a_folder_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="no model bundle"):
        load_bundle(tmp_path / "nothing-here")


def test_a_failed_write_raises_checkpoint_error_and_keeps_the_old_file(
    bundle_dir, tokenizer, monkeypatch
):
    before = (bundle_dir / "model.safetensors").read_bytes()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("viz_model.bundles.checkpoint.save_file", full_disk)
    with pytest.raises(CheckpointError, match="No space left"):
        save_bundle(bundle_dir, tiny_model(seed=5, vocab_size=tokenizer.vocab_size), tokenizer)
    assert (bundle_dir / "model.safetensors").read_bytes() == before
    assert not [p for p in bundle_dir.rglob("*") if p.name.endswith(".tmp")]
    shutil.rmtree(bundle_dir)


def test_a_disk_full_inside_safetensors_is_a_checkpoint_error_and_keeps_the_old_file(
    bundle_dir, tokenizer, monkeypatch
):
    before = (bundle_dir / "model.safetensors").read_bytes()

    def full_disk(*args, **kwargs):  # what safetensors raises when the write fails (not OSError)
        raise SafetensorError(
            "Error while serializing: I/O error: No space left on device (os error 28)"
        )

    monkeypatch.setattr("viz_model.bundles.checkpoint.save_file", full_disk)
    with pytest.raises(
        CheckpointError, match="could not write model.safetensors: I/O error: No space"
    ):
        save_bundle(bundle_dir, tiny_model(seed=5, vocab_size=tokenizer.vocab_size), tokenizer)
    assert (bundle_dir / "model.safetensors").read_bytes() == before
    assert load_bundle(bundle_dir).config.vocab_size == tokenizer.vocab_size
    assert not [p for p in bundle_dir.rglob("*") if p.name.endswith(".tmp")]
