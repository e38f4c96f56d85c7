"""The frame's plain parts: URL value parsing (bad values clamp or fall back), bundle discovery,
the page registry, the model card, and the prompt as tokens (cropping, unknown characters)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from serving import models
from tests.apptest_util import ROOT
from tests.conftest import tiny_model
from ui import nav, state
from ui.frame import _context, loss_note, model_card, val_loss
from viz_model.analysis.next_token import crop_to_context
from viz_model.bundles.load import load_bundle
from viz_model.text.data import task_loss_floor

# ---- parsing URL values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("2", 2),
        ("2.7", 2),
        ("-4", 0),
        ("99", 5),
        ("1e9", 5),
        ("abc", 3),
        ("", 3),
        (None, 3),
        ("nan", 3),
        ("inf", 3),
        (" 4 ", 4),
    ],
)
def test_parse_int_clamps_or_falls_back(raw, expected):
    assert state.parse_int(raw, 3, 0, 5) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [("0.5", 0.5), ("-1", 0.1), ("1e6", 2.0), ("nan", 1.0), ("inf", 2.0), ("x", 1.0), (None, 1.0)],
)
def test_parse_float_clamps_or_falls_back(raw, expected):
    assert state.parse_float(raw, 1.0, 0.1, 2.0) == expected


def test_parse_choice_matches_text_of_options():
    assert state.parse_choice("2", 0, [0, 1, 2]) == 2
    assert state.parse_choice("7", 0, [0, 1, 2]) == 0
    assert state.parse_choice("greedy", "sample", ["sample", "greedy"]) == "greedy"
    assert state.parse_choice(None, "b", ["a", "b"]) == "b"
    assert state.parse_choice("zzz", "gone", ["a", "b"]) == "a"  # a default no longer offered


@pytest.mark.parametrize(
    "raw, expected", [("1", True), ("true", True), ("off", False), ("0", False), ("maybe", True)]
)
def test_parse_bool(raw, expected):
    assert state.parse_bool(raw, True) is expected


def test_to_url_round_trips():
    assert state.to_url(True) == "1" and state.parse_bool(state.to_url(False), True) is False
    assert state.parse_float(state.to_url(0.15), 0.0, 0.0, 1.0) == pytest.approx(0.15)
    assert state.to_url(3) == "3"
    assert state.parse_str("x" * 50, "", 10) == "x" * 10


def _state_script():
    import streamlit as st

    from ui import state

    layer = state.slider("Layer", "layer", 0, 3, 1)
    head = state.selectbox("Head", "head", [0, 1, 2], 0)
    temp = state.slider("Temperature", "temp", 0.1, 2.0, 1.0, step=0.05)
    scores = state.toggle("Scores", "scores", False)
    st.write(f"layer={layer} head={head} temp={temp} scores={scores}")


def _run_state(query: dict) -> AppTest:
    at = AppTest.from_function(_state_script, default_timeout=30)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def test_widgets_read_the_url():
    at = _run_state({"layer": "2", "head": "1", "temp": "0.5", "scores": "1"})
    assert not at.exception
    assert at.markdown[0].value == "layer=2 head=1 temp=0.5 scores=True"
    assert at.slider(key=state.widget_key("layer")).value == 2


def test_bad_url_values_never_crash():
    at = _run_state({"layer": "99", "head": "seven", "temp": "nan", "scores": "<script>"})
    assert not at.exception
    assert at.markdown[0].value == "layer=3 head=0 temp=1.0 scores=False"
    # The clamped values are written back, so the URL now says what is shown.
    assert at.query_params["layer"] == "3" and at.query_params["head"] == "0"


def test_a_widget_change_goes_into_the_url_and_survives_reruns():
    at = _run_state({})
    assert at.query_params["layer"] == "1"
    at.slider(key=state.widget_key("layer")).set_value(3).run()
    assert at.query_params["layer"] == "3" and at.session_state["layer"] == 3
    at.selectbox(key=state.widget_key("head")).set_value(2).run()
    assert at.markdown[0].value == "layer=3 head=2 temp=1.0 scores=False"


# ---- discovery --------------------------------------------------------------------------------


def _fake_bundle(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"")
    return path


def test_discover_looks_in_assets_runs_and_the_env_var(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    _fake_bundle(root / "assets" / "models" / "b-bundled")
    _fake_bundle(root / "runs" / "a-trained")
    _fake_bundle(root / "runs" / "b-bundled")  # same name: the bundled one wins
    (root / "runs" / "not-a-bundle").mkdir()
    extra1 = _fake_bundle(tmp_path / "elsewhere" / "c-extra").parent
    single = _fake_bundle(tmp_path / "single")  # a listed folder that is itself a bundle
    missing = tmp_path / "missing"
    dirs = os.pathsep.join([str(extra1), str(missing), str(single), ""])
    monkeypatch.setenv(models.ENV_VAR, dirs)
    found = models.discover(root)
    assert list(found) == ["b-bundled", "a-trained", "c-extra", "single"]
    assert found["b-bundled"] == (root / "assets" / "models" / "b-bundled").resolve()


def test_discover_without_any_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(models.ENV_VAR, raising=False)
    assert models.discover(tmp_path) == {}


def test_default_model():
    assert models.default_model(["x", "shakespeare-char"]) == "shakespeare-char"
    assert models.default_model(["x", "y"]) == "x"
    assert models.default_model([]) is None


def test_bundle_id_changes_when_the_model_is_retrained(tmp_path):
    path = _fake_bundle(tmp_path / "m")
    first = models.bundle_id(path)
    assert models.path_of(first) == path
    later = time.time() + 10
    os.utime(path / "model.safetensors", (later, later))
    assert models.bundle_id(path) != first
    assert models.path_of(models.bundle_id(path)) == path


# ---- navigation -------------------------------------------------------------------------------


def test_the_registry_names_every_page_once_and_each_file_exists():
    pages = nav.all_pages()
    assert pages[0] is nav.HOME and nav.HOME.url_path == "" and nav.HOME.file != "app.py"
    for attr in ("file", "url_path", "label"):
        values = [getattr(p, attr) for p in pages]
        assert len(set(values)) == len(values), attr
    assert all((ROOT / p.file).is_file() for p in pages)
    assert sorted(p.file for p in pages) == sorted(
        f"pages/{f.name}" for f in (ROOT / "pages").glob("*.py")
    )
    assert all(p.icon.startswith(":material/") and p.description for p in pages)
    assert all(p.section for p in nav.lesson_pages())
    assert list(dict.fromkeys(p.section for p in nav.lesson_pages())) == list(nav.SECTIONS)


def test_no_page_file_is_served_where_a_page_url_is():
    """Streamlit's legacy pages/ router takes a fresh server's first request when its path is
    a file-derived one: every link must name a path no file in pages/ maps to."""
    from ui.streamlit_internals import legacy_page_name

    urls = {p.route for p in nav.all_pages()}  # Home's too: AppTest asks for it by it
    derived = {legacy_page_name(ROOT / p.file) for p in nav.all_pages()}
    assert not urls & derived
    assert nav.find("Attention").file == "pages/03_attention.py" and nav.find("") is nav.HOME


def test_the_old_links_keep_their_paths():
    assert [p.url_path for p in nav.all_pages()] == [
        "", "Lessons", "Class", "Tokenization", "Embeddings", "Attention", "Residual_stream", "LayerNorm",
        "MLP_neurons", "Next_token", "Generation", "Using_a_model", "Training", "N-grams", "Sequence_models", "Interventions",
        "Adversarial_suffix", "Sparse_autoencoder", "Training_dynamics", "Compare_models",
        "Architecture_contrasts", "Scaling", "Inside_a_block", "Quantization",
    ]  # fmt: skip


def test_the_pages_that_need_no_prompt_say_so():
    free = {p.url_path for p in nav.all_pages() if not p.needs_prompt}
    assert free == {
        "", "Lessons", "Class", "Training", "N-grams", "Training_dynamics", "Scaling", "Quantization",
    }  # fmt: skip


# ---- the model card and the prompt as tokens --------------------------------------------------


@pytest.fixture(scope="module")
def bundle(models_dir):
    return load_bundle(models_dir / "test-char")


def test_model_card_matches_the_bundle(bundle):
    card = dict(model_card(bundle))
    cfg = bundle.config
    assert card["parameters"] == f"{bundle.model.n_params():,}"
    assert card["layers"].startswith(f"{cfg.n_layer} ")
    assert card["heads"].startswith(f"{cfg.n_head} ")
    assert card["context"] == f"{cfg.n_ctx} tokens"
    assert card["tokenizer"] == f"char, {bundle.tokenizer.vocab_size:,} tokens"


def test_the_model_card_names_the_blocks_parts():
    def card(**shape) -> dict[str, str]:
        model = tiny_model(**shape)
        fake = SimpleNamespace(
            config=model.cfg,
            model=model,
            tokenizer=SimpleNamespace(kind="char", vocab_size=model.cfg.vocab_size),
            meta={},
            history=[],
        )
        return dict(model_card(fake))

    assert card()["layers"] == "2 (attention + MLP, pre-LN)"
    llama = card(norm_kind="rmsnorm", mlp="gated", act="silu", pos="rope", n_kv_heads=2)
    assert llama["layers"] == "2 (attention + MLP, pre-RMSNorm, SwiGLU)"
    assert llama["heads"].endswith(", 2 key-value") and llama["context"].endswith("RoPE positions")
    off = card(norm_kind="none", residual=False, pos="alibi")
    assert off["layers"] == "2 (attention + MLP, no norm, no residual)"
    assert off["context"] == "16 tokens, ALiBi positions"


def test_val_loss_from_history_then_meta(bundle):
    assert val_loss(bundle) is None  # the test bundle logs train loss only
    bundle.meta["val_loss"] = 2.5
    try:
        assert val_loss(bundle) == 2.5
        bundle.history.append({"step": 999, "val_loss": 1.25})
        assert val_loss(bundle) == 1.25
        card = dict(model_card(bundle))
        assert card["validation loss"] == "1.250 nats per token (perplexity 3.5)"
        vocab = bundle.tokenizer.vocab_size
        assert card["blind guess"] == f"{math.log(vocab):.3f} nats (ln {vocab}; perplexity {vocab})"
        assert "best possible" not in card  # trained on prose: no known floor
    finally:
        bundle.meta.pop("val_loss")
        bundle.history.pop()


def test_a_task_model_card_says_what_loss_is_possible(bundle):
    bundle.meta.update(val_loss=2.1, data={"task": "repeat", "task_len": 32})
    try:
        best = dict(model_card(bundle))["best possible"]
        assert best == f"{task_loss_floor('repeat', 32):.3f} nats (a perfect model)"
        assert "the first copy of each line is random letters" in loss_note(bundle)
        bundle.meta["data"] = {"task": "repeat", "task_len": "32"}  # a hand-edited bundle
        assert "best possible" not in dict(model_card(bundle))
        assert "first copy" not in loss_note(bundle) and "perplexity e^loss" in loss_note(bundle)
    finally:
        bundle.meta.pop("val_loss"), bundle.meta.pop("data")


def test_context_keeps_the_last_n_ctx_tokens_as_a_gpt_reads_them(bundle):
    n_ctx = bundle.config.n_ctx
    prompt = "abcdefghij" * 20 + "xyz"  # 203 characters: the cut falls mid-word
    ctx = _context("id", bundle, prompt)
    assert ctx.ids == bundle.tokenizer.encode(prompt)[-n_ctx:]
    assert ctx.n_cut == len(prompt) - n_ctx
    assert "".join(ctx.pieces) == prompt[-n_ctx:] and ctx.pieces[-1] == "z"
    assert len(ctx.labels) == n_ctx and ctx.labels[0] == f"0:{prompt[-n_ctx]}"
    assert any(f"the first {ctx.n_cut} were cut" in m for m in ctx.messages)
    # the window is the one generation reads before its first step
    assert ctx.ids == crop_to_context(bundle.tokenizer.encode(prompt), n_ctx)[0]


def test_context_names_unknown_characters(bundle):
    ctx = _context("id", bundle, "hello ☃ world ☃")
    unk = bundle.tokenizer.unk_id
    assert ctx.ids.count(unk) == 2
    assert len(ctx.messages) == 1 and "☃" in ctx.messages[0] and "<unk>" in ctx.messages[0]
    assert _context("id", bundle, "hello").messages == []
    assert ctx.unknown == [6, 14] and ctx.labels[6] == "6:«☃»" and ctx.labels[5] == "5:␣"
    assert "«like this»" in ctx.messages[0]
    assert _context("id", bundle, "").ids == []


def test_an_unknown_space_is_named_as_every_label_shows_it():
    task = load_bundle(Path(__file__).resolve().parents[1] / "assets" / "models" / "induction-2l")
    ctx = _context("id", task, "ab cd")
    (message,) = ctx.messages
    assert "“␣”" in message and "' '" not in message
