"""The Sequence models page on the bundled models (AppTest): one model per family on the same
text and budget, its sentences recomputed from the bundles' own numbers, the gates of the model
on screen when it has them, and the words it says when there is nothing to compare."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.apptest_util import open_link, plotly_figures
from viz_model.analysis import sequence_models as sm
from viz_model.analysis.ngrams import LN2
from viz_model.bundles.load import load_bundle

PAGE = "pages/20_sequence_models.py"
MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
FAMILY_BUNDLES = {
    "GPT": "shakespeare-tiny",
    "RNN": "shakespeare-rnn",
    "LSTM": "shakespeare-lstm",
    "GRU": "shakespeare-gru",
    "causal CNN": "shakespeare-cnn",
}
PROMPT = "ROMEO:\nBut soft, what light"


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.fixture(scope="module")
def on_tiny():
    at = open_link(MODELS, PAGE, {"model": "shakespeare-tiny", "prompt": PROMPT}, timeout=300)
    assert not at.exception, at.exception[0].value
    return at


def test_one_model_per_family_is_compared_with_its_recorded_bits_per_character(on_tiny):
    bars = next(f for f in plotly_figures(on_tiny) if "Bits per character" in str(f["layout"]))
    shown = dict(zip(bars["data"][0]["y"], bars["data"][0]["x"], strict=True))
    for kind, name in FAMILY_BUNDLES.items():
        bpc = load_bundle(MODELS / name).meta["val_loss"] / LN2  # characters are the tokens
        assert shown[f"{name} ({kind})"] == pytest.approx(bpc, abs=1e-3)
    gpts = [label for label in shown if label.endswith("(GPT)")]
    assert gpts == ["shakespeare-tiny (GPT)"]  # the variants share the budget but not the chart


def test_the_ranking_sentence_is_the_claim_of_the_recorded_numbers(on_tiny):
    entries = [
        sm.Entry(n, kind, load_bundle(MODELS / n).meta["val_loss"] / LN2)
        for kind, n in FAMILY_BUNDLES.items()
    ]
    bars = next(f for f in plotly_figures(on_tiny) if "Bits per character" in str(f["layout"]))
    gram = next(label for label in bars["data"][0]["y"] if "n-gram" in label)
    gram_bpc = dict(zip(bars["data"][0]["y"], bars["data"][0]["x"], strict=True))[gram]
    entries.append(sm.Entry(gram.removesuffix(" (n-gram)"), "n-gram", gram_bpc))
    assert sm.bpc_claim(entries).text in _markdown(on_tiny)


def test_the_default_model_opens_the_whole_page():
    """shakespeare-char's bundle records no validation share: the default one is read."""
    at = open_link(MODELS, PAGE, {"model": "shakespeare-char", "prompt": PROMPT}, timeout=300)
    assert not at.exception, at.exception[0].value
    assert any("k steps back" in str(f["layout"]) for f in plotly_figures(at))
    assert "Mean gate values" in _markdown(at)


def test_the_cnn_is_blind_past_its_receptive_field_and_the_sentence_says_so(on_tiny):
    field = load_bundle(MODELS / "shakespeare-cnn").config.receptive_field
    assert f"shakespeare-cnn reads only the last {field} tokens" in _markdown(on_tiny)
    reach = next(f for f in plotly_figures(on_tiny) if "k steps back" in str(f["layout"]))
    cnn = next(t for t in reach["data"] if t.get("name", "").startswith("shakespeare-cnn"))
    y = np.array([np.nan if v is None else v for v in _values(cnn["y"])], dtype=float)
    assert np.all(np.isnan(y[field:]))  # exactly zero there: off a log axis
    assert np.all(y[:field] > 0)


def _values(y):
    """A plotly array: a list, or numpy's base64 typed array."""
    if isinstance(y, dict):
        import base64

        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    return y


def test_the_reach_sentence_sets_each_reach_beside_random_weights_of_its_shape(on_tiny):
    """Recomputed as the page measures it (its windows, each model's untrained twin): every
    reach stands beside a model that learned nothing, and the claim is that function's."""
    from viz_model.analysis.untrained import untrained_twin
    from viz_model.analysis.variants import windows as val_windows
    from viz_model.text.data import VAL_FRACTION, TokenData, load_text

    rows = []
    for name in sorted(FAMILY_BUNDLES.values()):
        b = load_bundle(MODELS / name)
        data = b.meta["data"]
        val = TokenData.from_text(
            load_text(data), b.tokenizer, data.get("val_fraction", VAL_FRACTION)
        )
        w = val_windows(val.val, b.config.n_ctx, 32)
        field = b.config.receptive_field if b.family == "cnn" else None
        twin = untrained_twin(b).model
        rows.append(sm.ReachRow(name, sm.sensitivity(b.model, w), sm.sensitivity(twin, w), field))
    claim = sm.reach_claim(rows, 128)
    text = _markdown(on_tiny)
    assert "(random weights: " in claim.text and claim.text in text


def test_memory_grows_only_for_the_gpt(on_tiny):
    text = _markdown(on_tiny)
    assert "grow for shakespeare-tiny" in text
    for name in ("shakespeare-rnn", "shakespeare-lstm", "shakespeare-gru", "shakespeare-cnn"):
        assert name in text.split("stay the same for")[1]


def test_the_gates_are_the_lstm_s_and_its_sentence_its_numbers(on_tiny):
    text = _markdown(on_tiny)
    assert "**shakespeare-lstm**, layer 0: Mean gate values on this prompt" in text
    assert any("forget gate at each token" in str(f["layout"]) for f in plotly_figures(on_tiny))


def test_a_gru_on_screen_shows_its_own_gates():
    at = open_link(
        MODELS,
        PAGE,
        {"model": "shakespeare-gru", "prompt": PROMPT, "seq_gate": "reset"},
        timeout=300,
    )
    assert not at.exception
    assert "**shakespeare-gru**, layer 0" in _markdown(at)
    assert any("reset gate at each token" in str(f["layout"]) for f in plotly_figures(at))


def test_a_model_with_no_other_family_on_its_text_says_so():
    at = open_link(MODELS, PAGE, {"model": "induction-1l", "prompt": "abcabc"}, timeout=300)
    assert not at.exception
    assert any("nothing to set side by side" in i.value for i in at.info)


def test_a_one_character_prompt_leaves_the_gates_for_later():
    at = open_link(MODELS, PAGE, {"model": "shakespeare-lstm", "prompt": "R"}, timeout=300)
    assert not at.exception
    assert any("at least two characters" in i.value for i in at.info)


def test_plain_gpt_picks_the_gpt_2_block():
    tiny = load_bundle(MODELS / "shakespeare-tiny").config
    rope = load_bundle(MODELS / "shakespeare-rope").config
    assert sm.is_plain_gpt(tiny) and not sm.is_plain_gpt(rope)
    rows = [("b-rope", "gpt", rope), ("a-tiny", "gpt", tiny), ("lstm", "lstm", None)]
    assert sm.one_per_family(rows, on_screen="x") == {"gpt": "a-tiny", "lstm": "lstm"}
    assert sm.one_per_family(rows, on_screen="b-rope")["gpt"] == "b-rope"


@pytest.fixture(scope="module")
def class_lstm(tmp_path_factory):
    """An LSTM a class trains in a minute: the tiny preset on Shakespeare characters, by the job's
    own code (new_run, then train), 200 steps of windows 64 long: another budget than the bundles'.
    Evaluated at steps 100 and 200; snapshots at 0, 14, 150 and 200."""
    from tests.conftest import made_once
    from viz_model.training.loop import RunStart, train
    from viz_model.training.settings import RunSettings, new_run

    def build(root):
        settings = RunSettings(
            corpus="shakespeare",
            tokenizer="char",
            preset="tiny",
            family="lstm",
            model={"n_ctx": 64},
            train={"max_steps": 200, "seed": 0, "threads": 1, "eval_every": 100,
                   "eval_batches": 4, "sample_every": 0, "sample_tokens": 0, "n_snapshots": 2,
                   "snapshot_at": [150]},
        )  # fmt: skip
        run = new_run(settings, root / "class-lstm", command="tests: a class's LSTM")
        start = RunStart(meta=run.meta)
        for _ in train(run.model, run.data, run.cfg, run.out, run.tokenizer, start=start):
            pass

    return made_once(tmp_path_factory, "sequence_class_lstm", build)


def test_an_lstm_trained_in_class_is_named_drawn_and_its_gates_shown(class_lstm):
    at = open_link(class_lstm, PAGE, {"model": "class-lstm", "prompt": PROMPT}, timeout=300)
    assert not at.exception, at.exception[0].value
    bundle = load_bundle(class_lstm / "class-lstm")
    bpc = bundle.meta["val_loss"] / LN2
    seen = bundle.meta["tokens_seen"]
    captions = " ".join(c.value for c in at.caption)
    assert (
        f"class-lstm (LSTM, {bundle.model.n_params():,} parameters), scores {bpc:.3f}" in captions
    )
    assert f"after {seen:,} training tokens: another budget, so it is not ranked" in captions
    reach = next(f for f in plotly_figures(at) if "k steps back" in str(f["layout"]))
    assert any(t.get("name") == "class-lstm (LSTM)" for t in reach["data"])
    assert "up to k = 63" in _markdown(at)  # its windows are 64 long: every line is cut there
    assert "**class-lstm**, layer 0: Mean gate values" in _markdown(at)


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_class_run_at_an_earlier_step_is_described_at_that_step(class_lstm):
    """Issue 36: with the sidebar at step 0 the page said the model on screen 'scores 2.845 bits
    per character after 665,600 training tokens', its final step's numbers. The sentence is of
    the step shown: its last evaluation by then, at which step, the tokens read by it."""
    bundle = load_bundle(class_lstm / "class-lstm")
    final_bpc = bundle.meta["val_loss"] / LN2
    params = bundle.model.n_params()
    at = open_link(class_lstm, PAGE, {"model": "class-lstm", "prompt": PROMPT, "train_step": "0"})
    assert not at.exception, at.exception[0].value
    zero = _captions(at)
    assert (
        f"The model on screen, class-lstm at training step 0 of 200 (LSTM, {params:,} "
        "parameters), is the random weights it started from: it has read no training text, and "
        "no validation loss is recorded for it (the first evaluation came at step 100)" in zero
    )
    assert f"{final_bpc:.3f}" not in zero and f"{bundle.meta['tokens_seen']:,}" not in zero
    reach = next(f for f in plotly_figures(at) if "k steps back" in str(f["layout"]))
    assert any(t.get("name") == "class-lstm at step 0 (LSTM)" for t in reach["data"])
    assert "**class-lstm at step 0**, layer 0: Mean gate values" in _markdown(at)

    at = open_link(class_lstm, PAGE, {"model": "class-lstm", "prompt": PROMPT, "train_step": "150"})
    assert not at.exception, at.exception[0].value
    loss = next(r["val_loss"] for r in bundle.history if r["step"] == 100 and "val_loss" in r)
    per_step = bundle.train_config["batch_size"] * bundle.config.n_ctx
    tokens = bundle.meta["tokens_seen"] - (200 - 100) * per_step
    assert (
        f"class-lstm at training step 150 of 200 (LSTM, {params:,} parameters), scored "
        f"{loss / LN2:.3f} bits per character at its last evaluation by then, at step 100 after "
        f"{tokens:,} training tokens. It is not ranked here" in _captions(at)
    )


def test_a_compared_model_at_an_earlier_step_says_the_comparison_is_of_its_final_weights():
    """A bundled model stands for its family with its final weights; at step 0 the page says so,
    and its step-0 weights get their own line and the gates."""
    at = open_link(MODELS, PAGE, {"model": "shakespeare-lstm", "prompt": PROMPT, "train_step": "0"})
    assert not at.exception, at.exception[0].value
    final = load_bundle(MODELS / "shakespeare-lstm").meta["step"]
    assert (
        "The model on screen, shakespeare-lstm at training step 0 of "
        f"{final:,} (LSTM, 116,237 parameters), is the random weights it started from"
    ) in _captions(at)
    assert (
        f"The comparison above has its final weights (step {final:,}); its line at step 0 is in "
        "the next chart." in _captions(at)
    )
    bars = next(f for f in plotly_figures(at) if "Bits per character" in str(f["layout"]))
    assert "shakespeare-lstm (LSTM)" in bars["data"][0]["y"]  # the final weights' score
    assert "**shakespeare-lstm at step 0**, layer 0: Mean gate values" in _markdown(at)


def test_the_variants_sharing_the_budget_are_named_with_what_each_changes(on_tiny):
    """Issue 36: '10 more models ... GPTs with one part changed' named none, and one of them
    (shakespeare-llama) changes four parts."""
    from viz_model.model.config import GPTConfig

    captions = _captions(on_tiny)
    assert "shakespeare-llama (RoPE positions, RMSNorm, a SwiGLU MLP, no biases)" in captions
    assert "one part" not in captions
    tiny = load_bundle(MODELS / "shakespeare-tiny")
    variants = {}
    for folder in sorted(MODELS.iterdir()):
        if not (folder / "config.json").is_file() or folder.name == tiny.name:
            continue
        b = load_bundle(folder)
        same = all(b.meta.get(k) == tiny.meta.get(k) for k in ("data", "tokens_seen"))
        if isinstance(b.config, GPTConfig) and b.config.causal and same:
            variants[folder.name] = sm.changed_parts(b.config, tiny.config)
    assert f"{len(variants)} more models on this text share the budget" in captions
    for name, parts in variants.items():
        assert f"{name} ({', '.join(parts)})" in captions


def test_the_cost_curves_are_drawn_and_their_sentences_state_the_numbers_the_figures_show(on_tiny):
    """The time and memory against T measured on this server: the sentences are the claims of
    the numbers the two figures draw (no time is asserted, only that what is printed is shown)."""
    from viz_model.analysis import cost_curves as cc

    figures = plotly_figures(on_tiny)
    timed = next(f for f in figures if "Time against context length" in str(f["layout"]))
    memory = next(f for f in figures if "Memory that grows with T" in str(f["layout"]))
    series = {t["name"]: [float(v) for v in _values(t["y"])] for t in timed["data"]}
    counted = {t["name"]: [float(v) for v in _values(t["y"])] for t in memory["data"]}
    lengths = tuple(int(x) for x in _values(timed["data"][0]["x"]))
    assert lengths == cc.LENGTHS
    assert set(series) == {
        "GPT: training step",
        "LSTM: training step",
        "GPT: forward",
        "LSTM: forward",
    }
    shown = cc.CostCurves(
        lengths=lengths,
        batch=2,
        repeats=5,
        threads=1,
        weights={},
        shapes={},
        step_s={m: tuple(v / 1e3 for v in series[f"{m}: training step"]) for m in ("GPT", "LSTM")},
        forward_s={m: tuple(v / 1e3 for v in series[f"{m}: forward"]) for m in ("GPT", "LSTM")},
        attention_bytes=tuple(round(v * 1e6) for v in counted["GPT: attention patterns"]),
        state_bytes=tuple(round(v * 1e6) for v in counted["LSTM: states kept for backprop"]),
        recorded_bytes=(),
        seconds=0.0,
    )
    text = _markdown(on_tiny)
    assert cc.step_claim(shown).text in text
    assert cc.memory_claim(shown).text in text
    gpt = load_bundle(MODELS / "shakespeare-tiny").config
    assert shown.attention_bytes[-1] == gpt.n_layer * 2 * gpt.n_head * 1024 * 1024 * 4
    captions = "\n".join(c.value for c in on_tiny.caption)
    assert "Measured once per server process, at " in captions and ", as counted." in captions


def test_the_equal_time_sentence_is_the_claim_of_the_gpt_and_lstm_bundles_histories(on_tiny):
    from viz_model.analysis import cost_curves as cc

    runs = [
        cc.timed_run(FAMILY_BUNDLES[k], k, load_bundle(MODELS / FAMILY_BUNDLES[k]).history)
        for k in ("GPT", "LSTM")
    ]
    claim = cc.same_time_claim(*runs)
    assert claim.numbers["seconds"] > 0 and claim.text in _markdown(on_tiny)


def test_opened_the_benchmark_run_and_the_numbers_are_drawn_with_their_sentences():
    from viz_model.analysis import cost_curves as cc

    query = {"model": "shakespeare-tiny", "open": "Sequence_models:cost_bench,numbers"}
    at = open_link(MODELS, PAGE, query, timeout=300)
    assert not at.exception, at.exception[0].value
    bench = cc.load_benchmark()
    assert any("bench_cost_curves" in str(f["layout"]) for f in plotly_figures(at))
    text = _markdown(at)
    assert cc.step_claim(bench, where="On the benchmark's machine").text in text
    assert cc.memory_claim(bench).text in text
    columns = {c for t in at.table for c in t.value.columns}
    assert {"GPT step (ms)", "LSTM states (MB)"} <= columns
