"""The Compare models page in AppTest: two bundles on one prompt, each with its own tokens, bits
per character, next token, head and training curve; every choice in the URL."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.apptest_util import ROOT, app_test, plotly_array, plotly_figures
from ui.state import widget_key
from viz_model.analysis.labs.compare import cut_inside_token, percent, shown
from viz_model.bundles.load import load_bundle

PAGE = "pages/13_compare_models.py"
PROMPT = "the king and the queen"


def _table(at) -> dict[str, dict[str, str]]:
    """{row name: {model: value}} from the page's table (one column per model)."""
    return at.dataframe[0].value.to_dict(orient="index")


def _bits_per_char(path, prompt: str) -> float:
    b = load_bundle(path)
    ids = b.tokenizer.encode(prompt)[: b.config.n_ctx]
    with torch.no_grad():
        logp = torch.log_softmax(b.model(torch.tensor(ids))[:-1].double(), -1)
    nats = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].sum().item()
    chars = len("".join(p.text for p in b.tokenizer.pieces(prompt)[1 : b.config.n_ctx]))
    return nats / math.log(2) / chars


def test_two_bundles_side_by_side(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"cmp_model": "shakespeare-bpe"})
    assert not at.exception
    table = _table(at)
    tokens = {m: int(v) for m, v in table["prompt tokens"].items()}
    assert tokens["test-char"] == len(PROMPT) > tokens["shakespeare-bpe"]  # BPE makes fewer
    assert [len(c.value.split()) for c in at.code] == [
        tokens["test-char"],
        tokens["shakespeare-bpe"],
    ]
    expected = _bits_per_char(models_dir / "test-char", PROMPT)
    assert float(table["bits/char, prompt"]["test-char"]) == round(expected, 3)
    assert table["bits/char, validation"]["test-char"] == "–"  # its training text is not known
    assert 1.0 < float(table["bits/char, validation"]["shakespeare-bpe"]) < 3.0
    figs = plotly_figures(at)
    titles = [f["layout"]["title"]["text"] for f in figs]
    assert titles[:4] == [
        "test-char: top 8",
        "shakespeare-bpe: top 8",
        "test-char: L0 H0",
        "shakespeare-bpe: L0 H0",
    ]
    next_a = plotly_array(figs[0]["data"][0]["x"])
    assert len(next_a) == 8 and np.all(np.diff(next_a) >= 0)  # drawn bottom-up: largest on top
    curves = figs[4]["data"]
    assert [t["name"] for t in curves] == [
        "test-char: training",
        "test-char: validation",
        "shakespeare-bpe: training",
        "shakespeare-bpe: validation",
    ]


def test_every_choice_is_in_the_url_and_changes_the_view(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"cmp_model": "shakespeare-bpe"})
    bpe_val = plotly_array(plotly_figures(at)[4]["data"][3]["y"])
    at.radio(key=widget_key("cmp_unit")).set_value("nats per token").run()
    assert not at.exception and at.query_params["cmp_unit"] in (
        "nats per token",
        ["nats per token"],
    )
    nats = plotly_array(plotly_figures(at)[4]["data"][3]["y"])
    chars_per_token = nats[-1] / bpe_val[-1] / math.log(2)
    assert 1.5 < chars_per_token < 2.5  # a 512-token BPE holds about two characters a token

    steps = plotly_array(plotly_figures(at)[4]["data"][0]["x"])
    at.radio(key=widget_key("cmp_x")).set_value("tokens").run()
    assert not at.exception and at.query_params["cmp_x"] in ("tokens", ["tokens"])
    tokens = plotly_array(plotly_figures(at)[4]["data"][0]["x"])
    np.testing.assert_allclose(tokens, steps * 64)  # test-char: context 64, batch unrecorded (1)

    at.slider(key=widget_key("cmp_head_a")).set_value(1).run()
    assert plotly_figures(at)[2]["layout"]["title"]["text"] == "test-char: L0 H1"
    at.slider(key=widget_key("cmp_layer_b")).set_value(2).run()
    at.slider(key=widget_key("cmp_head_b")).set_value(3).run()
    assert not at.exception and at.query_params["cmp_head_b"] in ("3", ["3"])
    heatmap = plotly_figures(at)[3]
    assert heatmap["layout"]["title"]["text"] == "shakespeare-bpe: L2 H3"
    z = plotly_array(next(t for t in heatmap["data"] if "colorbar" in t)["z"])
    bpe = load_bundle(ROOT / "assets" / "models" / "shakespeare-bpe")
    ids = torch.tensor(bpe.tokenizer.encode(PROMPT))
    _, cache = bpe.model.run_with_cache(ids, names=["blocks.2.attn.hook_pattern"])
    pattern = cache.numpy("blocks.2.attn.hook_pattern")[3]
    shown = ~np.isnan(z)
    np.testing.assert_allclose(z[shown], pattern[shown], atol=1e-5)

    at.selectbox(key=widget_key("cmp_model")).set_value("induction-2l").run()
    assert not at.exception and at.query_params["cmp_model"] in ("induction-2l", ["induction-2l"])
    assert "induction-2l" in _table(at)["prompt tokens"]
    # the layer chosen for the BPE model is out of range for a 2-layer model: clamped, no error
    assert plotly_figures(at)[3]["layout"]["title"]["text"].startswith("induction-2l: L1 H3")


def test_a_broken_second_model_is_reported_and_the_first_stays(models_dir, tmp_path):
    import shutil

    folder = tmp_path / "more"
    shutil.copytree(models_dir / "test-char", folder / "a-first")
    shutil.copytree(models_dir / "test-char", folder / "broken")
    (folder / "broken" / "model.safetensors").write_bytes(b"not weights")
    at = app_test(folder, PAGE, prompt=PROMPT, query={"model": "a-first", "cmp_model": "broken"})
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert "“broken”" in error and "model.safetensors" in error
    assert at.session_state["model"] == "a-first"


def test_it_opens_on_the_same_text_read_by_another_tokenizer(models_dir):
    """The bug: it opened shakespeare-char beside induction-1l (random letters), which teaches
    nothing about comparing; the lesson is one text read by two tokenizers."""
    for first, second in (
        ("shakespeare-char", "shakespeare-bpe"),
        ("shakespeare-bpe", "shakespeare-char"),
    ):
        at = app_test(models_dir, PAGE, query={"model": first})
        assert not at.exception
        assert at.selectbox(key=widget_key("cmp_model")).value == second


def test_the_cut_word_shows_the_token_boundary_effect_with_its_numbers(models_dir):
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})  # the default prompt
    assert not at.exception
    said = next(m.value for m in at.markdown if m.value.startswith("Cut inside “"))
    cut_line = next(m.value for m in at.markdown if m.value.startswith("The prompt, cut: "))
    char = load_bundle(ROOT / "assets" / "models" / "shakespeare-char")
    prompt = at.session_state["prompt"]
    bpe = load_bundle(ROOT / "assets" / "models" / "shakespeare-bpe")
    cut = cut_inside_token(prompt, bpe.tokenizer)
    assert cut is not None and shown(cut.text[-12:]) in cut_line
    ids = char.tokenizer.encode(cut.text)[-char.config.n_ctx :]
    with torch.no_grad():
        p = torch.softmax(char.model(torch.tensor(ids))[-1], -1)
    p_letter = float(p[char.tokenizer.encode(cut.rest[0])[0]])
    assert f"gives the right next letter, “{shown(cut.rest[0])}”, {percent(p_letter)}" in said
    # the BPE model's probability of a token that continues the word as it really goes on
    ids = bpe.tokenizer.encode(cut.text)[-bpe.config.n_ctx :]
    with torch.no_grad():
        q = torch.softmax(bpe.model(torch.tensor(ids))[-1], -1)
    texts = [bpe.tokenizer.id_to_token(i) for i in range(bpe.tokenizer.vocab_size)]
    right = [i for i, t in enumerate(texts) if t and cut.rest.startswith(t)]
    right += [
        i
        for i, t in enumerate(texts)
        if t.startswith(cut.rest) and not t[len(cut.rest) :][:1].isalpha()
    ]
    p_bpe = float(q[sorted(set(right))].sum())
    assert f"continues “{shown(cut.word)}” rightly {percent(p_bpe)}" in said
    if p_bpe <= 0.5 * p_letter and p_letter >= 0.1:  # beside the character model: the effect
        assert "**the token-boundary effect**" in said


@pytest.fixture(scope="module")
def stepped_models(models_dir, tmp_path_factory):
    """'a-run' and its copy 'b-run': the test model with snapshots at steps 0, 1, 37 and 150, its text named in
    meta.data and validation losses recorded at steps 20 (3.0 nats) and 150 (2.0 nats) only."""
    import json
    import shutil

    from viz_model.text.data import load_corpus

    root = tmp_path_factory.mktemp("stepped_models")
    text = root / "train.txt"
    text.write_text(load_corpus("shakespeare")[:60_000], encoding="utf-8")
    shutil.copytree(models_dir / "test-char", root / "a-run")
    config = root / "a-run" / "config.json"
    raw = json.loads(config.read_text())
    raw["meta"].update(data={"text_file": str(text)})
    config.write_text(json.dumps(raw))
    history = json.loads((root / "a-run" / "history.json").read_text())
    for record in history:
        if record["step"] in (20, 150):
            record["val_loss"] = 3.0 if record["step"] == 20 else 2.0
    (root / "a-run" / "history.json").write_text(json.dumps(history))
    shutil.copytree(root / "a-run", root / "b-run")  # the same run, to compare with
    return root


def test_the_validation_figure_is_the_step_shown_or_says_whose_it_is(stepped_models):
    """Issue 36: the column "our-model (step 0)" showed the step-650 validation loss (2.845
    bits/char) below the step-0 weights' 6.334 on the prompt, unlabelled."""
    query = {"model": "a-run", "cmp_model": "b-run"}
    bits = {loss: f"{loss / math.log(2):.3f}" for loss in (2.0, 3.0)}  # characters: 1 a token
    at = app_test(stepped_models, PAGE, prompt=PROMPT, query={**query, "train_step": "0"})
    assert not at.exception, at.exception
    validation = _table(at)["bits/char, validation"]
    assert validation["a-run (step 0)"] == f"{bits[2.0]} (final step 150)"
    assert validation["b-run"] == bits[2.0]  # the model beside it: its final weights
    captions = " ".join(c.value for c in at.caption)
    assert "“a-run” at step 0: no validation loss was recorded by that step" in captions

    at = app_test(stepped_models, PAGE, prompt=PROMPT, query={**query, "train_step": "37"})
    assert _table(at)["bits/char, validation"]["a-run (step 37)"] == f"{bits[3.0]} (step 20)"
    at = app_test(stepped_models, PAGE, prompt=PROMPT, query={**query, "train_step": "150"})
    assert _table(at)["bits/char, validation"]["a-run"] == bits[2.0]  # the final: no step
