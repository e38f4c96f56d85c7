"""A page's view as a notebook (serving/notebooks.py): valid nbformat v4 for every page, user text
that reaches the code only as the same string, and, run by a real Jupyter kernel from an empty
folder, the numbers the app's own analysis computes for that view."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from serving.notebooks import MIME, View, build, file_name, to_json
from ui import nav

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = 'He said "hi" \\ then \'bye\'\n\ttab """ end \u202eevil\u202c ` ${x} {y} %s\x00'


def view(route: str = "Attention", **changes) -> View:
    base = View(route, route.replace("_", " "), "shakespeare-char", True, "ROMEO:\nBut soft", 256)
    return dataclasses.replace(base, **changes)


def code_of(notebook: dict) -> str:
    return "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")


def assigned(code: str, name: str):
    """The value of the literal `name = ...` assigns in `code` (parsed, never run)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned")


@pytest.mark.parametrize("page", nav.all_pages(), ids=lambda p: p.route)
def test_every_page_of_the_registry_makes_a_valid_notebook_that_parses_as_python(page):
    notebook = build(view(page.route, title=page.title))
    nbformat.validate(nbformat.reads(to_json(notebook), as_version=4))
    assert [c["cell_type"] for c in notebook["cells"]] == ["markdown"] + ["code"] * 4
    ast.parse(code_of(notebook))
    assert page.title in "".join(notebook["cells"][0]["source"]).replace("\\", "")
    assert "from viz_model import load_bundle" in code_of(notebook)


@pytest.mark.parametrize(
    "prompt", [HOSTILE, "", "'''", '"', "\\", "x\r\ny", "\u2028", "🙂 é 中文", '"""; import os']
)
def test_the_prompt_reaches_the_code_as_exactly_the_same_string(prompt):
    notebook = build(view(prompt=prompt))
    assert assigned(code_of(notebook), "prompt") == prompt
    assert "\u202e" not in code_of(notebook)  # a bidi override is written as its escape
    nbformat.validate(nbformat.reads(to_json(notebook), as_version=4))


def test_a_model_folder_is_loaded_by_its_path_as_the_same_string_and_the_markdown_says_it_must_exist():
    folder = '/srv/runs/it\'s "mine" \\ """'
    notebook = build(view(model=folder, bundled=False))
    tree = ast.parse(code_of(notebook))
    loads = [
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "load_bundle"
    ]
    assert loads == [folder]
    assert "must exist where this notebook runs" in "".join(notebook["cells"][0]["source"])
    named = file_name(view(model="/srv/runs/My Run/", bundled=False))
    assert named == "viz-gpt-attention-my-run.ipynb"  # the folder's own name
    assert file_name(view(model=folder, bundled=False)) == "viz-gpt-attention-model.ipynb"


def test_the_page_settings_go_in_as_literals_and_a_string_where_a_number_was_expected_stays_a_string():
    code = code_of(build(view(settings={"layer": 1, "head": 3, "query": 4})))
    assert assigned(code, "query") == 4 and "layer, head = 1, 3" in code
    code = code_of(build(view(settings={"layer": "0; import os"})))
    assert "layer, head = '0; import os', 0" in code


def test_a_snapshot_and_a_precision_are_loaded_as_the_page_showed_them():
    code = code_of(build(view(step=37, precision="int8")))
    assert "bundle.model = bundle.load_snapshot(37)" in code
    assert "quantize_model(bundle.model, parse_spec('int8'))" in code
    assert code.index("load_snapshot") < code.index("quantize_model")  # "#step#q=" order
    assert "load_snapshot" not in code_of(build(view()))


def test_pages_without_a_recipe_and_models_a_recipe_cannot_show_get_the_generic_notebook():
    generic = "the generic notebook"
    intro = lambda v: "".join(build(v)["cells"][0]["source"])  # noqa: E731
    assert generic in intro(view("Generation"))
    assert generic in intro(view("Attention", family="lstm"))
    assert generic in intro(view("MLP_neurons", has_mlp=False))
    assert "run_with_cache" not in code_of(build(view("Generation", family="gru")))
    for route in ("Attention", "Next_token", "MLP_neurons", "Residual_stream", "Tokenization"):
        assert generic not in intro(view(route))
    assert generic not in intro(view("Next_token", family="lstm"))  # logits only: any family


def test_the_same_view_gives_the_same_file_and_names_it_for_page_and_model():
    assert to_json(build(view())) == to_json(build(view()))
    assert file_name(view("Next_token")) == "viz-gpt-next-token-shakespeare-char.ipynb"
    assert file_name(view("Home")) == "viz-gpt-home-shakespeare-char.ipynb"
    assert MIME == "application/x-ipynb+json"


# ---- the other recipes, run here cell by cell ---------------------------------------------------


@pytest.fixture
def run_cells(models_dir, tmp_path, monkeypatch):
    """Run a view's notebook on the test bundle in this process, an empty folder as the working
    directory; its names, and the figures its plot cell showed (caught, never opened)."""
    import plotly.graph_objects as go

    shown: list = []
    monkeypatch.setattr(go.Figure, "show", lambda fig, *a, **k: shown.append(fig))
    monkeypatch.chdir(tmp_path)
    folder = str(models_dir / "test-char")

    def run(route: str, **changes) -> tuple[dict, list]:
        notebook = build(view(route, model=folder, bundled=False, max_tokens=64, **changes))
        names: dict = {}
        exec(compile(code_of(notebook), "notebook", "exec"), names)  # noqa: S102  our own code
        return names, shown

    return run


PROMPT = "ROMEO:\nBut soft, what light"


def test_the_mlp_notebook_finds_the_neurons_the_page_ranks_first(run_cells, capsys):
    from viz_model.analysis.neurons import post_name, top_neurons

    names, shown = run_cells(
        "MLP_neurons", prompt=PROMPT, settings={"mlp_layer": 1, "n_neurons": 10}
    )
    bundle = names["bundle"]
    _, cache = bundle.model.run_with_cache(names["tokens"][0], names=[post_name(1)])
    post = cache[post_name(1)].numpy()
    assert names["top"].tolist() == top_neurons(post, 10).tolist()
    np.testing.assert_allclose(
        numbers(capsys.readouterr().out), post.max(0)[top_neurons(post, 10)], atol=1e-5
    )
    assert len(shown) == 1 and shown[0].data[0].x == tuple(str(n) for n in names["top"].tolist())


def test_the_logit_lens_notebook_reads_what_the_residual_stream_page_shows(run_cells, capsys):
    from viz_model.analysis.residual import lens_report

    names, shown = run_cells("Residual_stream", prompt=PROMPT, settings={"pos": 5})
    bundle = names["bundle"]
    report = lens_report(bundle.model, names["tokens"][0].tolist())
    np.testing.assert_allclose(names["top_p"].numpy(), report.lens.top_probs, atol=1e-5)
    np.testing.assert_array_equal(names["top_id"].numpy(), report.lens.top_ids)
    np.testing.assert_allclose(
        numbers(capsys.readouterr().out), report.lens.top_probs[:, 5], atol=1e-5
    )
    assert names["stations"] == report.stations and len(shown) == 1


def test_the_tokenization_notebook_lists_the_tokens_the_frame_reads(run_cells, capsys):
    names, shown = run_cells("Tokenization", prompt=PROMPT * 9)  # longer than the context: cut
    tok = names["bundle"].tokenizer
    assert names["ids"] == tok.encode(PROMPT * 9)[-64:]
    assert names["str_tokens"] == [p.text for p in tok.pieces(PROMPT * 9)][-64:]
    assert "64 tokens" in capsys.readouterr().out and len(shown) == 1


def test_a_quantised_snapshot_s_notebook_reads_the_copy_the_page_serves(run_cells, capsys):
    """The Precision selector's copy at a training step, as ui/cache.py builds it (snapshot, then
    quantise): the notebook's probabilities are that copy's, not the float32 snapshot's."""
    from viz_model.analysis import next_token as nt
    from viz_model.bundles.load import load_bundle
    from viz_model.model.quantize import parse_spec, quantize_model

    names, _ = run_cells(
        "Next_token", prompt=PROMPT, step=37, precision="int8", settings={"bars": 8}
    )
    snapshot = load_bundle(names["bundle"].path).load_snapshot(37)
    served, _ = quantize_model(snapshot, parse_spec("int8"))
    ids = names["tokens"][0].tolist()
    expected = torch.softmax(torch.tensor(nt.prompt_logits(served, ids)[-1]), -1)
    as_float = torch.softmax(torch.tensor(nt.prompt_logits(snapshot, ids)[-1]), -1)
    np.testing.assert_allclose(names["p_model"].numpy(), expected.numpy(), atol=1e-6)
    assert (names["p_model"] - as_float).abs().max() > 1e-5  # the int8 copy, not the float32 one
    printed = numbers(capsys.readouterr().out)
    np.testing.assert_allclose(printed, expected.sort(descending=True).values[:8], atol=1e-5)


# ---- run by a Jupyter kernel -------------------------------------------------------------------


def run_notebook(notebook: dict, cwd, monkeypatch) -> str:
    """Execute the notebook with nbclient in `cwd` (no figure is opened: plotly's renderer is
    set to a plain JSON output); everything it printed."""
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # viz_model imports as after `pip install .`
    monkeypatch.setenv("PLOTLY_RENDERER", "json")
    nb = nbformat.reads(to_json(notebook), as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream"
    )


def numbers(printed: str) -> list[float]:
    """The six-decimal numbers the notebook printed, in order."""
    return [float(x) for x in re.findall(r"-?\d+\.\d{6}\b", printed)]


@pytest.mark.system  # a Jupyter kernel per notebook: seconds each
def test_the_notebooks_print_the_numbers_the_app_computes_for_the_same_view(
    models_dir, tmp_path, monkeypatch
):
    from viz_model.analysis import next_token as nt
    from viz_model.analysis.attention import attention_run
    from viz_model.bundles.load import load_bundle
    from viz_model.model.sampling import SamplingSettings

    folder = models_dir / "test-char"
    final = load_bundle(folder)
    step = 37  # a snapshot tests/bundles.py saves (steps // 4)
    snapshot = final.load_snapshot(step)
    prompt = 'ROMEO:\nBut "soft" \\ what light'
    ids = final.tokenizer.encode(prompt)[-64:]
    base = View("Attention", "Attention", str(folder), False, prompt, 64)
    started = time.perf_counter()

    # Attention, at a training step: the chosen head's row of the chosen query
    attention = dataclasses.replace(base, step=step, settings={"layer": 1, "head": 2, "query": 9})
    printed = run_notebook(build(attention), tmp_path, monkeypatch)
    expected = attention_run(snapshot, ids).pattern[1, 2, 9, :10]
    np.testing.assert_allclose(numbers(printed), expected, atol=1e-5)

    # Next token, reshaped by temperature and top-k: the model's and the sampler's probabilities
    settings = {"temperature": 0.7, "top_k": 5, "top_p": 0.9, "bars": 10}
    next_view = dataclasses.replace(base, route="Next_token", title="Next token", settings=settings)
    printed = run_notebook(build(next_view), tmp_path, monkeypatch)
    dist = nt.distribution(nt.prompt_logits(final.model, ids)[-1], SamplingSettings(0.7, 5, 0.9))
    top = nt.top_tokens(dist, 10, lambda i: final.tokenizer.decode([i]))
    expected = np.stack([top.base_probs, top.probs], axis=1).ravel()
    np.testing.assert_allclose(numbers(printed), expected, atol=1e-5)
    shown = re.findall(r"^\s*\d+  p = .*?  (.*?)(?:   after|$)", printed, re.M)
    assert [ast.literal_eval(s) for s in shown] == top.labels

    # a page without a recipe: the next token's top 10 at T = 1 and the hook names
    generic = dataclasses.replace(base, route="Generation", title="Generation")
    printed = run_notebook(build(generic), tmp_path, monkeypatch)
    expected = torch.softmax(torch.tensor(nt.prompt_logits(final.model, ids)[-1]), -1)
    np.testing.assert_allclose(
        numbers(printed), expected.sort(descending=True).values[:10], atol=1e-5
    )
    assert str(final.model.hook_names()) in printed
    assert not list(tmp_path.iterdir())  # nothing written where it ran
    print(f"three notebooks executed in {time.perf_counter() - started:.1f} s")


def test_the_notebook_json_is_what_a_download_offers_even_for_a_folder_name_that_is_not_utf8():
    text = to_json(build(view()))
    assert json.loads(text)["nbformat"] == 4 and text.endswith("\n")
    assert "'café'" in to_json(build(view(prompt="café")))  # readable: no needless escapes
    odd = view(model="/srv/runs/caf\udce9", bundled=False, prompt="x\ud800y")  # os.fsdecode's
    text = to_json(build(odd))
    notebook = json.loads(text.encode("utf-8"))
    assert assigned(code_of(notebook), "prompt") == "x\ud800y"
