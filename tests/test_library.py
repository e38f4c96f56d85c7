"""The engine as a notebook's library: `from viz_model import ...` and docs/LIBRARY.md's examples,
run here block by block, from a folder outside the checkout, their results checked."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import viz_model

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def library_blocks() -> list[str]:
    return BLOCK.findall((ROOT / "docs" / "LIBRARY.md").read_text(encoding="utf-8"))


@pytest.fixture
def run_block(tmp_path, monkeypatch, capsys):
    """Run one block as a notebook cell would, in an empty folder; its names and printout."""
    monkeypatch.chdir(tmp_path)

    def run(code: str) -> tuple[dict, str]:
        names: dict = {}
        exec(compile(code, "docs/LIBRARY.md", "exec"), names)  # noqa: S102  our own docs
        return names, capsys.readouterr().out

    return run


def test_the_page_has_the_four_examples_it_promises():
    blocks = library_blocks()
    assert len(blocks) == 4
    assert all("from viz_model import" in b for b in blocks)


def test_the_first_example_reads_a_bundled_model_as_transformerlens_would(run_block):
    names, out = run_block(library_blocks()[0])
    bundle, tokens, cache = names["bundle"], names["tokens"], names["cache"]
    T = len("To be, or not to be")  # one token a character
    assert tokens.shape == (1, T)
    assert names["logits"].shape == (1, T, bundle.tokenizer.vocab_size)
    assert names["pattern"].shape == (1, bundle.config.n_head, T, T)
    torch.testing.assert_close(names["pattern"].sum(-1), torch.ones(1, bundle.config.n_head, T))
    assert "['T', 'o', ' ', 'b', 'e']" in out
    text = bundle.generate("ROMEO:", 40, temperature=0)  # greedy: what the block printed
    assert text in out and text.startswith("ROMEO:") and len(text) == len("ROMEO:") + 40
    assert bundle.to_string(tokens) == "To be, or not to be"
    assert cache["hook_embed"].shape == (1, T, bundle.config.d_model) and cache.batched


def test_the_hook_example_changes_the_logits_and_nothing_after_it(run_block):
    names, _ = run_block(library_blocks()[1])
    model, tokens = names["model"], names["tokens"]
    assert not torch.allclose(names["ablated"], names["clean"], atol=1e-3)
    with torch.no_grad():
        torch.testing.assert_close(model(tokens), names["clean"])  # the hook was for one call


def test_the_training_example_learns_its_windows(run_block):
    names, _ = run_block(library_blocks()[2])
    # a model that has learned nothing scores about ln(65) = 4.17 nats on random ids
    assert names["loss"].item() < math.log(65) - 0.5


def test_the_export_example_matches_transformers(run_block):
    names, _ = run_block(library_blocks()[3])
    assert names["difference"] < 1e-4
    assert names["hf_model"].config.model_type == "gpt2"


def test_importing_the_package_loads_nothing_until_a_name_is_used():
    code = (
        "import sys, viz_model\n"
        "assert 'torch' not in sys.modules, 'import viz_model loaded torch'\n"
        "from viz_model import GPT, GPTConfig, load_bundle\n"
        "assert GPT.__module__ == 'viz_model.model.gpt' and callable(load_bundle)\n"
        "print(sorted(viz_model.__all__))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "'GPT', 'GPTConfig'" in out.stdout


def test_every_public_name_resolves_and_others_are_refused():
    for name in viz_model.__all__:
        assert getattr(viz_model, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Transformer'"):
        viz_model.Transformer  # noqa: B018


def test_a_bundled_model_opens_by_name_and_an_unknown_name_is_explained():
    from viz_model.bundles.files import CheckpointError

    assert viz_model.load_bundle("shakespeare-tiny").name == "shakespeare-tiny"
    with pytest.raises(CheckpointError, match="nor a bundled model of that name"):
        viz_model.load_bundle("shakespeare-nonesuch")
