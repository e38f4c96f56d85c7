"""The models every claim is tested on (docs/ARCHITECTURE.md, Claims): each bundled model, a small GPT-2
folder, and a model a class would train in a minute, made here by the Training job's own code.

    from tests.claims_models import CLAIM_MODELS, claim_bundle
    @pytest.mark.parametrize("name", CLAIM_MODELS)
    def test_x(name, claim_bundles): bundle = claim_bundle(claim_bundles, name)

`claim_bundles` (a session fixture in conftest.py) is a dict name -> bundle folder; the trained
and GPT-2 folders are made once per session in a temporary folder.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.load import load_bundle
from viz_model.model.config import LLAMA_BLOCK
from viz_model.training.loop import RunStart, train
from viz_model.training.settings import RunSettings, new_run

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "models"
BUNDLED = sorted(p.name for p in ASSETS.iterdir() if (p / "config.json").is_file())
CLASS_TRAINED = "class-tiny"  # the Training page's tiny preset on Shakespeare characters
# The same class run with Llama's block (RoPE positions, RMSNorm, SwiGLU), and as an LSTM: the
# Training page offers both, and a claim true of the bundled models was false on such runs
# (issue 36: a RoPE model's embed vectors "differ only by their position").
CLASS_LLAMA = "class-llama"
CLASS_LSTM = "class-lstm"
GPT2_FOLDER = "gpt2-folder"  # a random GPT-2 saved as Hugging Face's save_pretrained writes it
# made once per test run (conftest.py's claim_bundles): name -> (family, GPTConfig overrides)
CLASS_RUNS = {
    CLASS_TRAINED: ("gpt", {}),
    CLASS_LLAMA: ("gpt", LLAMA_BLOCK),
    CLASS_LSTM: ("lstm", {}),
}
MADE = (GPT2_FOLDER, *CLASS_RUNS)
CLAIM_MODELS = [*BUNDLED, *MADE]


def _family(name: str) -> str:
    """A claim model's family: a class run's own, else its config.json's ("gpt" when it names
    none)."""
    if name in CLASS_RUNS:
        return CLASS_RUNS[name][0]
    path = ASSETS / name / "config.json"
    if not path.is_file():
        return "gpt"
    return json.loads(path.read_text(encoding="utf-8"))["model"].get("family", "gpt")


# The RNN, LSTM, GRU and CNN bundles (issue 26): a claim about heads, blocks, LayerNorms inside
# blocks or the residual stream has nothing to measure on them, so such a test skips them, saying
# why; claims about the loss, the tokenizer, n-grams and generation still run on them.
GPT_MODELS = [name for name in CLAIM_MODELS if _family(name) == "gpt"]
GPT_CLAIM_MODELS = [
    name
    if _family(name) == "gpt"
    else pytest.param(
        name,
        marks=pytest.mark.skip(
            reason=f"a {_family(name)} has no attention heads or transformer blocks to claim about"
        ),
    )
    for name in CLAIM_MODELS
]

# A class's short run: the tiny preset the Training page offers, the job's own new_run + train.
CLASS_STEPS = 300


def train_class_model(
    out: Path,
    steps: int = CLASS_STEPS,
    seed: int = 0,
    family: str = "gpt",
    model: dict | None = None,
) -> Path:
    """What a class gets from the Training page in about a minute: the `tiny` preset on
    Shakespeare characters (a GPT, with `model`'s overrides, or another `family`), trained by the
    job's code (new_run, then train), with snapshots."""
    settings = RunSettings(
        corpus="shakespeare",
        tokenizer="char",
        preset="tiny",
        family=family,
        model=dict(model or {}),
        train={
            "max_steps": steps,
            "seed": seed,
            "threads": 1,
            "eval_every": 50,
            "eval_batches": 4,
            "sample_every": 0,
            "sample_tokens": 0,
            "n_snapshots": 8,
        },
    )
    run = new_run(settings, out, command="tests/claims_models.py train_class_model")
    start = RunStart(meta=run.meta)
    for _ in train(run.model, run.data, run.cfg, run.out, run.tokenizer, start=start):
        pass
    return out


def claim_folders(root: Path) -> dict[str, Path]:
    """Every claim model's folder: the bundled ones where they are, the other two in `root`."""
    return {**{name: ASSETS / name for name in BUNDLED}, **{n: root / n for n in MADE}}


def build_claim_bundles(root: Path) -> dict[str, Path]:
    """Make the two claim models that are not bundled in `root`; return every claim model's folder."""
    from tests.hf_gpt2 import save_gpt2_folder

    save_gpt2_folder(root / GPT2_FOLDER)
    for name, (family, model) in CLASS_RUNS.items():
        train_class_model(root / name, family=family, model=model)
    return claim_folders(root)


@cache
def _load(path: Path) -> Bundle:
    return load_bundle(path)


def claim_bundle(folders: dict[str, Path], name: str) -> Bundle:
    """The loaded bundle of one claim model (loaded once per session; do not change its weights)."""
    return _load(folders[name])
