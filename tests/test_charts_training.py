"""Training history helpers and figures: binning keeps the mean, the axes, the baseline lines."""

from __future__ import annotations

import numpy as np
import pytest

from ui.charts.training import loss_and_accuracy, loss_curves, lr_curve
from viz_model.analysis.training import binned_mean, curves, samples


def history(n: int = 1000, every: int = 100) -> list[dict]:
    records = []
    for step in range(1, n + 1):
        r = {"step": step, "train_loss": 5.0 - step / n, "lr": 1e-3, "elapsed": step * 0.1,
             "tokens_per_s": 1000.0}  # fmt: skip
        if step % every == 0:
            r["val_loss"] = 5.1 - step / n
        if step % (2 * every) == 0:
            r["sample"] = f"text at {step}"
        records.append(r)
    return records


def test_binned_mean_keeps_the_overall_mean_and_the_point_budget():
    values = np.random.default_rng(0).normal(size=1003)
    binned = binned_mean(values, 100)
    assert binned.size == 100
    assert binned.min() >= values.min() and binned.max() <= values.max()
    assert binned_mean(values[:50], 100).tolist() == values[:50].tolist()


def test_curves_bin_the_train_loss_and_keep_every_evaluation():
    c = curves(history(1000), "step", max_points=50)
    assert c.train_x.size == c.train_loss.size == c.lr.size == 50
    assert c.val_x.tolist() == [float(s) for s in range(100, 1001, 100)]
    assert c.train_loss[0] > c.train_loss[-1]  # the loss falls


def test_curves_against_tokens_and_seconds():
    by_tokens = curves(history(10, every=5), "tokens", tokens_per_step=64)
    assert by_tokens.val_x.tolist() == [5 * 64.0, 10 * 64.0]
    by_time = curves(history(10, every=5), "elapsed")
    assert by_time.val_x.tolist() == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError, match="x must be one of"):
        curves(history(10), "epochs")


def test_a_nan_step_is_left_out_of_the_train_curve():
    h = history(10)
    h[4] = {"step": 5, "train_loss": None, "lr": 1e-3, "elapsed": 0.5}
    assert 5.0 not in curves(h).train_x.tolist()


def test_samples_in_step_order():
    assert samples(list(reversed(history(400)))) == [(200, "text at 200"), (400, "text at 400")]


def test_loss_figure_has_both_curves_and_a_line_per_baseline():
    fig = loss_curves(curves(history(300)), {"blind guess": 4.3, "unigram": 3.3, "bigram": 2.5})
    names = [t.name for t in fig.data]
    assert names == ["training loss", "validation loss"]
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted(round(s.y0, 2) for s in lines) == [2.5, 3.3, 4.3]
    texts = [a.text for a in fig.layout.annotations]
    assert "bigram 2.50" in texts and "blind guess 4.30" in texts


def test_lr_figure_plots_the_schedule():
    h = history(20)
    for i, r in enumerate(h):
        r["lr"] = (i + 1) * 1e-4
    fig = lr_curve(curves(h))
    assert list(fig.data[0].y) == pytest.approx([(i + 1) * 1e-4 for i in range(20)])


def test_records_without_the_x_value_are_left_out():
    h = [{"step": s, "train_loss": 1.0} for s in range(1, 6)]
    assert curves(h, "elapsed").train_x.size == 0
    assert curves(h, "step").train_x.tolist() == [1, 2, 3, 4, 5]


def test_a_run_stores_its_baselines_and_the_page_reads_them_back(tmp_path):
    from viz_model.analysis.training import bundle_baselines
    from viz_model.bundles.checkpoint import save_bundle
    from viz_model.bundles.load import load_bundle
    from viz_model.text.ngram import baselines
    from viz_model.training.settings import RunSettings, new_run

    settings = RunSettings(task="repeat", task_examples=300, preset="tiny", train={"max_steps": 1})
    run = new_run(settings, tmp_path / "r", command="test")
    direct = baselines(run.data.train.numpy(), run.data.val.numpy(), run.tokenizer.vocab_size)
    assert run.meta["baselines"] == direct.as_dict()
    save_bundle(tmp_path / "r", run.model, run.tokenizer, meta=run.meta)
    read = bundle_baselines(load_bundle(tmp_path / "r"))
    assert read.as_dict() == direct.as_dict()


def test_labels_of_nearly_equal_baselines_do_not_overlap():
    curves_ = curves(history(50))
    fig = loss_curves(curves_, {"blind guess": 3.33, "unigram": 3.29, "bigram": 3.29})
    spots = [(a.xanchor, a.yanchor) for a in fig.layout.annotations]
    assert len(set(spots)) == 3
    apart = loss_curves(curves_, {"blind guess": 4.3, "unigram": 3.3, "bigram": 2.5})
    assert len({(a.xanchor, a.yanchor) for a in apart.layout.annotations}) == 1


def test_loss_and_accuracy_share_the_snapshots_axis_with_accuracy_in_percent():
    fig = loss_and_accuracy(
        np.array([0, 34, 1170]), np.array([4.4, 2.8, 1.8]), np.array([0.02, 0.25, 0.46])
    )
    loss, acc = fig.data
    assert list(loss.x) == list(acc.x) == ["0", "34", "1,170"]  # every snapshot, in order
    assert list(loss.y) == [4.4, 2.8, 1.8]
    assert list(acc.y) == pytest.approx([2.0, 25.0, 46.0]) and acc.yaxis == "y2"
    assert tuple(fig.layout.yaxis2.range) == (0, 100)
    assert fig.layout.xaxis.type == "category"
