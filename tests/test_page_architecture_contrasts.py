"""The Architecture contrasts page in AppTest: each contrast's two bundled models side by side, the
numbers recomputed here from the bundles, every choice in the URL, bad input kept calm."""

from __future__ import annotations

import pytest
import torch

from tests.apptest_util import ROOT, app_test, plotly_array, plotly_figures
from ui.state import widget_key
from viz_model.analysis import contrasts as ct
from viz_model.analysis import dynamics as dyn
from viz_model.bundles.load import load_bundle
from viz_model.model.sampling import SamplingSettings, generate

PAGE = "pages/15_architecture_contrasts.py"
MODELS = ROOT / "assets" / "models"
PROMPT = "ROMEO:\nBut soft, what light"


def _table(at) -> dict[str, dict[str, str]]:
    """{model: {row: value}} from the page's table (one column per model)."""
    return at.dataframe[0].value.to_dict()


def test_no_mask_contrast_shows_cheap_training_and_costly_generation(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    table = _table(at)
    usual, cheat = ct.CONTRASTS["mask"].models
    assert list(table) == [usual, cheat]
    lines = {t["name"]: plotly_array(t["y"]) for t in plotly_figures(at)[0]["data"]}
    for name in (usual, cheat):
        b = load_bundle(MODELS / name)
        ids = b.tokenizer.encode(PROMPT)
        la = ct.look_ahead(b.model, ids)
        assert table[name]["prompt loss, window seen whole"] == f"{la.mean_seen:.3f}"
        assert table[name]["prompt loss, as generated"] == f"{la.mean_generated:.3f}"
        assert lines[f"{name}: whole window"] == pytest.approx(la.seen, abs=1e-5)
        assert lines[f"{name}: as generated"] == pytest.approx(la.generated, abs=1e-5)
        new = generate(b.model, ids, 120, SamplingSettings(temperature=0.8), seed=0)
        assert b.tokenizer.decode(new) in [c.value for c in at.code]
        assert b.meta["command"] in [c.value for c in at.code]
    assert table[usual]["causal mask"] == "yes" and table[cheat]["causal mask"] == "no"
    assert float(table[cheat]["training loss (last step)"]) < 0.1
    assert float(table[cheat]["prompt loss, as generated"]) > 3.0
    assert table[usual]["most attention on the next token"] == "0%"
    assert int(table[cheat]["most attention on the next token"].rstrip("%")) > 50


def test_switching_to_the_layers_contrast_measures_copying_and_goes_in_the_url(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    at.radio(key=widget_key("ctr")).set_value("layers").run()
    assert not at.exception and at.query_params["ctr"] in ("layers", ["layers"])
    table = _table(at)
    two, one = ct.CONTRASTS["layers"].models
    copy = plotly_figures(at)[0]
    for trace, name in zip(copy["data"], (two, one), strict=True):
        b = load_bundle(MODELS / name)
        profile = ct.copy_profile(b.model, dyn.probe(b.tokenizer, b.meta, b.config.n_ctx))
        m = profile.measures
        assert trace["name"] == name
        assert plotly_array(trace["y"]) == pytest.approx(profile.loss, abs=1e-5)
        assert table[name]["loss, second copy"] == f"{m.loss_second:.3f}"
        assert table[name]["copy accuracy (second copy)"] == f"{m.copy_accuracy:.0%}"
        assert table[name]["layers"] == str(b.config.n_layer)
    assert copy["layout"]["shapes"][0]["x0"] == profile.k - 0.5
    curves = [t["name"] for t in plotly_figures(at)[1]["data"]]
    assert curves == [f"{n}: {w}" for n in (two, one) for w in ("training", "validation")]


@pytest.mark.parametrize("raw, title", [("layers", "Induction"), ("nonsense", "Looking ahead")])
def test_a_shared_link_opens_its_contrast_and_a_bad_one_the_first(models_dir, raw, title):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"ctr": raw})
    assert not at.exception
    assert at.subheader[0].value.startswith(title)


@pytest.mark.parametrize("prompt", ["a", "🙂🙂 ☃ unknown ☃"])
def test_a_prompt_too_short_or_unknown_keeps_the_page_running(models_dir, prompt):
    at = app_test(models_dir, PAGE, prompt=prompt)
    assert not at.exception
    if prompt == "a":
        assert any("at least two characters" in i.value for i in at.info)
    else:
        assert at.dataframe  # unknown characters are read as the tokenizer's unknown token


@pytest.mark.parametrize("key", ["norm", "sinusoidal", "nopos", "tied"])
def test_same_shape_contrasts_show_the_setting_the_size_and_the_losses(models_dir, key):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"ctr": key})
    assert not at.exception
    contrast = ct.CONTRASTS[key]
    table = _table(at)
    figs = {f["layout"]["title"]["text"]: f for f in plotly_figures(at)}
    lines = figs["Loss at each position of the prompt"]["data"]
    for trace, name in zip(lines, contrast.models, strict=True):
        b = load_bundle(MODELS / name)
        losses = ct.position_losses(b.model, b.tokenizer.encode(PROMPT))
        assert trace["name"] == name
        assert plotly_array(trace["y"]) == pytest.approx(losses, abs=1e-5)
        assert table[name]["loss on the prompt"] == f"{losses.mean():.3f}"
        assert table[name]["parameters"] == f"{b.model.n_params():,}"
        assert table[name][contrast.differs] == str(getattr(b.config, contrast.differs))
        assert float(table[name]["validation loss"]) == pytest.approx(b.meta["val_loss"], abs=1e-3)
    usual, other = contrast.models
    if key == "tied":  # one V x d matrix fewer
        b = load_bundle(MODELS / usual)
        saved = b.config.vocab_size * b.config.d_model
        params = [int(table[n]["parameters"].replace(",", "")) for n in (usual, other)]
        assert params[0] - params[1] == saved
    if key == "norm":  # post-LN: each block's stream is a LayerNorm's output, length ~ |(g, b)|
        norms = figs["Mean length of the residual vector, layer by layer"]["data"]
        pre, post = (plotly_array(t["y"]) for t in norms)
        assert pre[-1] > 2 * pre[0]  # pre-LN: the stream grows from the embedding
        for block, length in zip(load_bundle(MODELS / other).model.blocks, post[1:], strict=True):
            gain = torch.cat([block.ln2.weight, block.ln2.bias]).norm().item()
            assert length == pytest.approx(gain, rel=0.15)


@pytest.mark.parametrize("key", ["rope", "alibi"])
def test_positions_past_the_context_are_measured_and_said(models_dir, key):
    from viz_model.analysis import variants as vr
    from viz_model.text.data import TokenData, load_text

    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"ctr": key})
    assert not at.exception and not at.error
    usual, variant = ct.CONTRASTS[key].models
    figure = next(f for f in plotly_figures(at) if "twice the training context" in str(f))
    lines = {t["name"]: plotly_array(t["y"]) for t in figure["data"]}
    shown = " ".join(m.value for m in at.markdown)
    for name in (usual, variant):
        b = load_bundle(MODELS / name)
        data = b.meta["data"]
        val = TokenData.from_text(load_text(data), b.tokenizer, data["val_fraction"]).val
        profile = vr.extrapolation(b.model, val, 2 * b.config.n_ctx)
        np_line = lines[name]
        assert np_line[: b.config.n_ctx] == pytest.approx(profile[: b.config.n_ctx], abs=1e-4)
        claim = vr.extrapolation_claim(name, profile, b.config.n_ctx, b.config.pos)
        assert claim.text.replace("**", "") in shown.replace("**", "")


def test_multi_query_attention_shows_the_caches_measured_memory(models_dir):
    from viz_model.analysis import variants as vr

    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"ctr": "mqa"})
    assert not at.exception and not at.error
    usual, mqa = (load_bundle(MODELS / n) for n in ct.CONTRASTS["mqa"].models)
    assert (usual.config.n_kv_heads, mqa.config.n_kv_heads) == (4, 1)
    measured = [
        (name, vr.kv_bytes_per_token(b.model), b.config.n_kv_heads)
        for name, b in zip(ct.CONTRASTS["mqa"].models, (usual, mqa), strict=True)
    ]
    claim = vr.kv_claim(measured)
    assert "4.0 times less" in claim.text
    assert any(claim.text in m.value for m in at.markdown)


def test_every_same_shape_contrast_has_its_lesson_and_every_other_its_section():
    """The page draws a contrast whose measure has no section of its own (ui/architecture_contrasts,
    MEASURES) as a same-shape pair, opening with its LESSONS text: each such contrast needs one."""
    from ui.architecture_contrasts import MEASURES
    from ui.architecture_contrasts.same_shape import LESSONS

    same_shape = {k for k, c in ct.CONTRASTS.items() if c.measure not in MEASURES}
    assert same_shape == set(LESSONS)
    assert {c.measure for c in ct.CONTRASTS.values()} - {"loss", "extrapolate", "kv"} == set(
        MEASURES
    )


def test_the_same_shape_prose_does_not_say_sine_waves_cannot_overfit():
    """The prose moved from the page script into its sections (issue 40): the check follows it."""
    text = (ROOT / "ui" / "architecture_contrasts" / "same_shape.py").read_text(encoding="utf-8")
    assert "cannot overfit" not in text
    assert "(about |γ|)" not in text
