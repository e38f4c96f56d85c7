"""Shared fixtures (a seeded two-layer GPT for every config option, a prompt, the claim models)
and the kinds of test: each test gets one marker, `unit`, `pages`, `browser` or `system`, from its
file's name or what it uses, so a new file is marked without anyone thinking of it.

A plain `pytest` runs `unit` (the loop for someone changing code; how long it takes:
docs/ARCHITECTURE.md, Tests) and says at the end what it left out; `pytest --all`,
`pytest -m ...`, named files or tests, or `CI=true` run what they ask for, everything by default.
Not here: how a test runs (tests/apptest_util.py, the browser and server fixtures in
tests/test_browser.py).
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest
import torch

from viz_model.model.config import BLOCK_VARIANTS, LLAMA_BLOCK, GPTConfig
from viz_model.model.gpt import GPT

VOCAB = 23

# ---- the kinds of test ---------------------------------------------------------------------------

KINDS = (
    "unit",
    "pages",
    "browser",
    "system",
)  # registered, with what each means, in pyproject.toml
SLOW = ("pages", "browser", "system")  # left out of a plain `pytest`: minutes, not seconds
# First match wins, on the file's name or "file::test" (a test's own marker wins over both). A test
# that uses the claim models (the `claim_bundles` fixture) is `system`, and one that calls AppTest
# (`app_test`) is `pages`, wherever it lives.
KIND_BY_FILE = (
    ("browser", ("test_browser*.py",)),
    ("system", ("test_class_serving.py", "test_jobs.py", "test_retrain.py", "test_ui_imports.py")),
    ("system", ("test_finetune_jobs.py",)),
    ("system", ("test_portable.py", "test_deploy.py", "test_launch.py")),
    ("system", ("test_installed_copy.py",)),  # builds the wheel, installs it in a fresh venv
    ("system", ("test_sae_jobs.py",)),  # SAE jobs: child processes
    ("system", ("test_estimate.py::test_speed_is_*",)),  # times real training steps
    ("pages", ("test_page_*.py", "test_app_home.py", "test_ui.py", "test_scrubber.py")),
    ("pages", ("test_hostile_input.py",)),
)
PAGE_CALLS = {"app_test", "AppTest"}


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        help="run every kind of test, the slow browser and system ones too (CI=true does this)",
    )


def pytest_configure(config):
    config.stash[_fast_only] = _runs_fast_only(config)
    config.stash[_left_out] = {}


_fast_only = pytest.StashKey[bool]()
_left_out = pytest.StashKey[dict]()


def _runs_fast_only(config) -> bool:
    """Whether this run leaves the slow kinds out: only a plain `pytest` (with options such as -x,
    -k or -n), never under CI=true, with --all, with -m, or when files or tests are named."""
    named = config.args_source == pytest.Config.ArgsSource.ARGS
    chose = any(a == "-m" or a.startswith("-m") for a in config.invocation_params.args)
    ci = os.environ.get("CI", "").lower() == "true"
    return not (ci or named or chose or config.getoption("--all"))


def kind_of(item) -> str:
    """The test's kind: its own marker, else `system` when it uses the claim models, else by its
    file's name, else `pages` when it calls AppTest itself, else `unit`."""
    own = [m.name for m in item.iter_markers() if m.name in KINDS]
    if own:
        return own[0]
    if "claim_bundles" in getattr(item, "fixturenames", ()):
        return "system"
    names = (item.path.name, f"{item.path.name}::{getattr(item, 'originalname', item.name)}")
    for kind, patterns in KIND_BY_FILE:
        if any(fnmatch.fnmatch(n, p) for n in names for p in patterns):
            return kind
    code = getattr(getattr(item, "function", None), "__code__", None)
    if code is not None and PAGE_CALLS & {*code.co_names, *code.co_varnames}:
        return "pages"
    return "unit"


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        kind = kind_of(item)
        item.add_marker(kind)
        (dropped if config.stash[_fast_only] and kind in SLOW else kept).append(item)
        if kind in SLOW and config.stash[_fast_only]:
            config.stash[_left_out][kind] = config.stash[_left_out].get(kind, 0) + 1
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_report_header(config):
    if config.stash[_fast_only]:
        return f"kinds: unit only; {', '.join(SLOW)} left out (pytest --all runs them)"
    return None


def pytest_terminal_summary(terminalreporter, config):
    if not config.stash[_fast_only]:
        return
    counts = config.stash[_left_out]
    what = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or ", ".join(SLOW)
    terminalreporter.write_sep("-", "fast tests only")
    terminalreporter.write_line(
        f"Left out: {what} tests. Everything, as CI runs it: `pytest --all -n auto` "
        "(or `CI=true pytest`, where a missing browser or HAProxy fails instead of skipping); "
        "one kind: `pytest -m pages`; named files run whole: `pytest tests/test_page_attention.py`."
    )


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
    # What modern models changed, and the parts switched off (issue 25, Architecture contrasts),
    # with multi-query attention inside the Llama-style block.
    **BLOCK_VARIANTS,
    "llama": {**LLAMA_BLOCK, "n_kv_heads": 1},
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


def made_once(tmp_path_factory, name: str, build) -> Path:
    """`build(folder)` run once per test run, even under pytest-xdist: the workers share the
    run's base temporary folder, the first to come builds under a file lock, the others wait for it
    and reuse its folder (built before: a `done` file says so)."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-of-<user>/pytest-N/, the parent of every worker's folder
    folder = base / name
    with FileLock(str(base / f"{name}.lock")):
        if not (folder / "done").is_file():
            folder.mkdir(exist_ok=True)
            build(folder)
            (folder / "done").touch()
    return folder


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    """A folder holding one small trained bundle, 'test-char', for page and app tests."""
    from tests.bundles import build_test_bundle

    return made_once(tmp_path_factory, "models", lambda root: build_test_bundle(root / "test-char"))


@pytest.fixture(scope="session")
def claim_bundles(tmp_path_factory) -> dict[str, Path]:
    """Every model a claim is tested on (tests/claims_models.py): name -> bundle folder."""
    from tests.claims_models import build_claim_bundles, claim_folders

    return claim_folders(made_once(tmp_path_factory, "claim_models", build_claim_bundles))
