"""A page's view as a Jupyter notebook a student takes home: the same model, prompt and settings,
recomputed with the engine's public API (docs/LIBRARY.md), then printed and plotted.

    view = View("Attention", "Attention", "shakespeare-char", True, prompt, 256,
                settings={"layer": 1, "head": 2})
    text = to_json(build(view))            # nbformat v4 JSON, ready for a download button
    file_name(view)                        # "viz-gpt-attention-shakespeare-char.ipynb"

Each notebook has five cells: what the view was (page, model, prompt, step; no date, so the same
view gives the same file), the set-up (load the model, the prompt as tokens), the page's main
numbers, those numbers printed, and a plotly figure. Pages with a recipe: Tokenization, Attention,
Residual stream (the logit lens), MLP neurons, Next token; every other page, and a recipe's page on a
model it cannot show, gets the generic notebook (tokens, `run_with_cache`, the next token's top 10,
the hook names) and says so. User text reaches the code only as a Python literal (`repr`).

Plain JSON, no nbformat: the app needs no Jupyter package to offer a notebook (the tests validate
it with nbformat). Not here: the sidebar's button and reading the page's settings (ui/notebook_button.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MIME = "application/x-ipynb+json"
CHOSEN = "the page's choice"  # the comment on each setting the page keeps in the URL


@dataclass(frozen=True)
class View:
    """What a page showed, in plain values: enough to recompute it anywhere."""

    route: str  # the page's route in ui/nav.py: "Attention", "Next_token", "Home", ...
    title: str  # the page's title, as the app shows it
    model: str  # a bundled model's name, or a model folder's path
    bundled: bool  # True: `model` is a name load_bundle finds among the app's own models
    prompt: str
    max_tokens: int  # the app reads the last max_tokens tokens of the prompt (ui/frame.py)
    step: int | None = None  # a training snapshot's step; None for the final weights
    precision: str | None = None  # a quantised copy ("int8"); None for float32
    family: str = "gpt"  # "gpt", "rnn", "lstm", "gru" or "cnn"
    has_mlp: bool = True  # False for an attention-only GPT
    settings: dict[str, Any] = field(default_factory=dict)  # the page's own URL values, parsed

    def get(self, key: str, default: Any) -> Any:
        return self.settings.get(key, default)


def file_name(view: View) -> str:
    """'viz-gpt-<page>-<model>.ipynb', lower case, letters, digits and dashes only.

    >>> file_name(View("Next_token", "Next token", "/srv/runs/My Run", False, "a", 8))
    'viz-gpt-next-token-my-run.ipynb'
    """
    model = re.split(r"[\\/]", view.model.rstrip("/\\"))[-1]
    return f"viz-gpt-{_slug(view.route)}-{_slug(model) or 'model'}.ipynb"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def to_json(notebook: dict) -> str:
    """The notebook as the text of an .ipynb file, always UTF-8 encodable: a folder name that
    is not valid UTF-8 (a lone surrogate) turns the file's non-ASCII text into JSON escapes."""
    text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(notebook, indent=1) + "\n"
    return text


def build(view: View) -> dict:
    """The notebook (nbformat 4.5) of `view`: what it was, set-up, numbers, printout, figure."""
    recipe = _recipe(view)
    intro, compute, show, plot = recipe(view)
    cells = [
        _markdown(_about(view, intro)),
        _code(_setup(view)),
        _code(compute),
        _code(show),
        _code(plot),
    ]
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}


def _code(text: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": _lines(text),
    }


def _lines(text: str) -> list[str]:
    return text.strip("\n").splitlines(keepends=True)


def _md(text: str) -> str:
    """Text shown as itself in Markdown: every character Markdown reads as syntax escaped."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+-.!|$~&" else c for c in text)


# ---- the cells every notebook shares ----------------------------------------------------------


def _about(view: View, intro: str) -> str:
    where = (
        f"**{_md(view.model)}**, a model that ships with the app"
        if view.bundled
        else f"the model folder **{_md(view.model)}** (trained on the app's server: the folder "
        "must exist where this notebook runs; change the path in the next cell if it moved)"
    )
    weights = (
        "the final weights"
        if view.step is None
        else f"the weights saved at training step {view.step:,}"
    )
    if view.precision:
        weights += f", stored in {_md(view.precision)} as the page showed them"
    lines = [
        f"# {_md(view.title)}: the app's view as a notebook",
        "",
        f"What the **{_md(view.title)}** page of viz-gpt showed, recomputed with the engine's "
        "public API (`from viz_model import load_bundle`, the app's docs/LIBRARY.md).",
        "",
        f"- Model: {where}; {weights}.",
        "- Prompt (as a Python string; the app reads at most its last "
        f"{view.max_tokens:,} tokens):",
        "",
        "      " + _short(repr(view.prompt)),
        "",
        intro,
        "",
        "Run the cells from the top, in a Python where `viz_model` imports: the app's folder, or "
        "anywhere after `pip install` of the app. Change the prompt or a setting and run again.",
    ]
    return "\n".join(lines)


def _short(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _setup(view: View) -> str:
    load = (
        f"bundle = load_bundle({view.model!r})  # a model that ships with the app"
        if view.bundled
        else "# a model folder from the app's server: it must exist where this notebook runs\n"
        f"bundle = load_bundle({view.model!r})"
    )
    lines = ["from viz_model import load_bundle", "", f"prompt = {view.prompt!r}", load]
    if view.step is not None:
        lines += [
            f"bundle.model = bundle.load_snapshot({view.step})  # the weights saved at step "
            f"{view.step:,} of training",
            f"bundle.step = {view.step}",
        ]
    if view.precision:
        lines += [
            "",
            "from viz_model.model.quantize import parse_spec, quantize_model",
            "",
            f"# a copy whose weights are stored in {view.precision}, as the page's Precision chose",
            f"bundle.model, _ = quantize_model(bundle.model, parse_spec({view.precision!r}))",
        ]
    lines += [
        "model = bundle.model",
        "",
        f"tokens = bundle.to_tokens(prompt)[:, -{view.max_tokens}:]  # (1, T): the app reads "
        f"the last {view.max_tokens:,}",
        "str_tokens = [bundle.to_string([i]) for i in tokens[0].tolist()]  # each token's text",
        'print(f"{bundle.name}: {tokens.shape[1]} tokens")',
    ]
    return "\n".join(lines)


# ---- the recipes: (what it computes, compute, print, plot) -------------------------------------

Recipe = tuple[str, str, str, str]
LABELS = (
    'labels = [f"{i}:{t}".replace(" ", "␣").replace("\\n", "↵") for i, t in enumerate(str_tokens)]'
)


def _recipe(view: View):
    gpt_recipes = {
        "Attention": _attention,
        "Residual_stream": _logit_lens,
        "MLP_neurons": _neurons,
    }
    any_family = {"Tokenization": _tokenization, "Next_token": _next_token}
    if view.route in any_family:
        return any_family[view.route]
    shows = view.family == "gpt" and (view.route != "MLP_neurons" or view.has_mlp)
    return gpt_recipes[view.route] if view.route in gpt_recipes and shows else _generic


def _attention(view: View) -> Recipe:
    scores = view.get("view", "pattern") == "scores"
    hook, what = ("hook_attn_scores", "scores") if scores else ("hook_pattern", "pattern")
    query = view.get("query", -1)
    intro = (
        "**Attention**: one head's attention "
        + ("scores (q·k/√d_head, before the softmax)" if scores else "pattern")
        + ", and the row of one query token: how much it looks at each token before it. The "
        "page's Layer, Head and Query token are in the next cells."
    )
    compute = f"""
layer, head = {view.get("layer", 0)!r}, {view.get("head", 0)!r}  # {CHOSEN}: Layer and Head
query = {query!r}  # {CHOSEN}: the query token (-1: the last)
logits, cache = model.run_with_cache(tokens)
{what} = cache[f"blocks.{{layer}}.attn.{hook}"][0, head]  # (T, T): row = query, column = key
row = {what}[query]  # {"its scores" if scores else "the weights it gives each token; they sum to 1"}
"""
    show = f"""
position = query % len(str_tokens)
print(f"Layer {{layer}}, head {{head}}: the {what} row of token {{position}} ({{str_tokens[position]!r}})")
for key, (text, value) in enumerate(zip(str_tokens, row.tolist())):
    if key > position and bundle.config.causal:
        break  # a causal model's later tokens are masked: no weight
    print(f"{{value:10.6f}}  {{key:3d}} {{text!r}}")
"""
    plot = f"""
import plotly.graph_objects as go

{LABELS}
fig = go.Figure(go.Heatmap(z={what}.tolist(), x=labels, y=labels, colorscale="Blues"))
fig.update_layout(
    title=f"Layer {{layer}}, head {{head}}: attention {what}",
    xaxis_title="key (looked at)",
    yaxis_title="query (looking)",
    yaxis_autorange="reversed",
)
fig.show()
"""
    return intro, compute, show, plot


def _next_token(view: View) -> Recipe:
    t, k, p = view.get("temperature", 1.0), view.get("top_k", 0), view.get("top_p", 1.0)
    shown = view.get("bars", 20)
    reshaped = (t, k, p) != (1.0, 0, 1.0)
    intro = (
        "**Next token**: the probability of every token of the vocabulary after the prompt "
        "(the softmax of the last position's logits), its most likely tokens"
        + (
            ", and the same after the page's temperature, top-k and top-p reshaped it."
            if reshaped
            else "."
        )
    )
    compute = f"""
import torch

shown = {shown!r}  # {CHOSEN}: Bars shown
logits = model(tokens)[0, -1].detach()  # (V,): a score per token after the last prompt token
p_model = torch.softmax(logits, dim=-1)  # the model's own probabilities (T = 1, nothing cut)
top = torch.argsort(logits, descending=True, stable=True)[:shown]  # the most likely first
"""
    if reshaped:
        compute += _reshape(t, k, p)
    after = "   after the settings: {p[i]:.6f}" if reshaped else ""
    show = f"""
print(f"After {{str_tokens[-1]!r}}: the {{shown}} most likely of {{len(logits):,}} tokens")
for rank, i in enumerate(top.tolist(), start=1):
    print(f"{{rank:3d}}  p = {{p_model[i]:.6f}}  {{bundle.to_string([i])!r}}{after}")
"""
    bars = (
        """fig.add_bar(x=names, y=p[top].tolist(), name="after the settings")
"""
        if reshaped
        else ""
    )
    plot = f"""
import plotly.graph_objects as go

names = [f"{{r}}:{{bundle.to_string([i])!r}}" for r, i in enumerate(top.tolist(), start=1)]
fig = go.Figure()
fig.add_bar(x=names, y=p_model[top].tolist(), name="the model (T = 1)")
{bars}fig.update_layout(title="The most likely next tokens", yaxis_title="probability")
fig.show()
"""
    return intro, compute, show, plot


def _reshape(temperature: float, top_k: int, top_p: float) -> str:
    """The sampler's reshaping in plain torch: temperature, then top-k, then top-p on what top-k
    kept, renormalised (viz_model/model/sampling.py, next_token_distribution)."""
    head = (
        "\n# the page's sampling settings reshape it, in the sampler's order\n"
        f"temperature, top_k, top_p = {temperature!r}, {top_k!r}, {top_p!r}  # {CHOSEN}s\n"
    )
    if temperature == 0:
        return head + (
            "p = torch.zeros_like(p_model)  # temperature 0 is greedy: all on the likeliest\n"
            "p[logits.argmax()] = 1.0\n"
        )
    code = head + (
        "p = torch.softmax(logits / temperature, dim=-1)  # sharper below 1, flatter above\n"
        "kept = torch.ones_like(p, dtype=torch.bool)\n"
    )
    if top_k > 0:
        code += (
            "if top_k < len(p):  # top-k first: keep the k most likely\n"
            "    kept[:] = False\n"
            "    kept[torch.topk(p, top_k).indices] = True\n"
        )
    if top_p < 1.0:
        code += (
            "# then top-p: the fewest most likely (of those kept) whose share reaches top_p\n"
            "masked = torch.where(kept, p, torch.zeros_like(p))\n"
            "order = torch.argsort(masked, descending=True)\n"
            "share = torch.cumsum(masked[order] / masked.sum(), dim=0)\n"
            "kept = torch.zeros_like(kept)\n"
            "kept[order[: int((share < top_p).sum()) + 1]] = True\n"
        )
    return code + (
        "p = torch.where(kept, p, torch.zeros_like(p))\n"
        "p = p / p.sum()  # renormalised over the tokens kept\n"
    )


def _neurons(view: View) -> Recipe:
    intro = (
        "**MLP neurons**: one layer's neurons after the nonlinearity (`mlp.hook_post`) on every "
        "token of the prompt, and the neurons that fire the most anywhere in it, largest first."
    )
    compute = f"""
import torch

layer, n_show = {view.get("mlp_layer", 0)!r}, {view.get("n_neurons", 20)!r}  # {CHOSEN}: Layer, Neurons shown
logits, cache = model.run_with_cache(tokens)
post = cache[f"blocks.{{layer}}.mlp.hook_post"][0]  # (T, d_mlp): each neuron on each token
peak = post.max(dim=0).values  # each neuron's largest activation on the prompt
top = torch.argsort(peak, descending=True, stable=True)[:n_show]
"""
    show = """
print(f"Layer {layer}: the {len(top)} most active of {post.shape[1]} neurons")
for n in top.tolist():
    at = int(post[:, n].argmax())
    print(f"neuron {n:5d}  peak {peak[n]:10.6f}  on token {at} ({str_tokens[at]!r})")
"""
    plot = f"""
import plotly.graph_objects as go

{LABELS}
columns = [str(n) for n in top.tolist()]
fig = go.Figure(go.Heatmap(z=post[:, top].tolist(), x=columns, y=labels, colorscale="RdBu", zmid=0))
fig.update_layout(
    title=f"Layer {{layer}}: the most active neurons (columns) on each token (rows)",
    xaxis_title="neuron",
    yaxis_autorange="reversed",
)
fig.show()
"""
    return intro, compute, show, plot


def _logit_lens(view: View) -> Recipe:
    intro = (
        "**Residual stream**, the logit lens: the residual stream after each layer read out as "
        "if it were the last (the final norm, then the unembedding): the most likely next token "
        "at each layer and its probability."
    )
    compute = f"""
import torch

position = {view.get("pos", -1)!r}  # {CHOSEN}: the position to follow (-1: the last)
logits, cache = model.run_with_cache(tokens)
n_layer = bundle.config.n_layer
# the residual stream before each block, and after the last one
names = [f"blocks.{{l}}.hook_resid_pre" for l in range(n_layer)]
names.append(f"blocks.{{n_layer - 1}}.hook_resid_post")
stations = ["embed"] + [f"after block {{l}}" for l in range(n_layer)]
with torch.no_grad():  # each read out as the last layer's is: the final norm, then W_U
    readouts = [model.unembed(model.final_norm(cache[name][0])) for name in names]
lens = torch.softmax(torch.stack(readouts), dim=-1)  # (layers + 1, T, V)
top_p, top_id = lens.max(dim=-1)  # (layers + 1, T): the likeliest token at each station
"""
    show = """
at = position % len(str_tokens)
print(f"The prediction after token {at} ({str_tokens[at]!r}), layer by layer")
for station, p, i in zip(stations, top_p[:, at].tolist(), top_id[:, at].tolist()):
    print(f"{station:>15}  {p:.6f}  {bundle.to_string([i])!r}")
"""
    plot = f"""
import plotly.graph_objects as go

{LABELS}
words = [[bundle.to_string([i]) for i in row] for row in top_id.tolist()]
fig = go.Figure(
    go.Heatmap(
        z=top_p.tolist(), x=labels, y=stations, text=words, texttemplate="%{{text}}", colorscale="Blues"
    )
)
fig.update_layout(title="The logit lens: the likeliest next token at each layer")
fig.update_yaxes(autorange="reversed")
fig.show()
"""
    return intro, compute, show, plot


def _tokenization(view: View) -> Recipe:
    intro = (
        "**Tokenization**: the prompt as the model reads it, a list of token ids, each with its "
        "text."
    )
    compute = """
ids = tokens[0].tolist()
vocab_size = bundle.tokenizer.vocab_size
"""
    show = """
print(f"{len(ids)} tokens from {len(prompt)} characters, a vocabulary of {vocab_size:,}")
for position, (i, text) in enumerate(zip(ids, str_tokens)):
    print(f"{position:4d}  id {i:6d}  {text!r}")
"""
    plot = """
import plotly.graph_objects as go

fig = go.Figure(go.Table(
    header={"values": ["position", "id", "text"]},
    cells={"values": [list(range(len(ids))), ids, [repr(t) for t in str_tokens]]},
))
fig.update_layout(title=f"The prompt as {len(ids)} tokens")
fig.show()
"""
    return intro, compute, show, plot


def _generic(view: View) -> Recipe:
    gpt = view.family == "gpt"
    intro = (
        f"The {_md(view.title)} page has no recipe of its own here: this is the generic notebook, "
        "the model on the prompt"
        + (", every activation it records (`run_with_cache`)" if gpt else "")
        + " and its next-token top 10, a start to recompute the page's numbers from."
    )
    run = (
        "logits, cache = model.run_with_cache(tokens)  # every hook point's activation\n"
        if gpt
        else "logits = model(tokens).detach()  # this model family records no activations\n"
    )
    compute = f"""
import torch

{run}p = torch.softmax(logits[0, -1], dim=-1)  # the next token's probabilities
top = torch.argsort(logits[0, -1], descending=True, stable=True)[:10]
"""
    show = """
print("The next token's top 10:")
for rank, i in enumerate(top.tolist(), start=1):
    print(f"{rank:3d}  p = {p[i]:.6f}  {bundle.to_string([i])!r}")
""" + (
        """print("The hook names, in the order the forward pass reaches them:")
print(model.hook_names())
"""
        if gpt
        else ""
    )
    plot = """
import plotly.graph_objects as go

names = [f"{r}:{bundle.to_string([i])!r}" for r, i in enumerate(top.tolist(), start=1)]
fig = go.Figure(go.Bar(x=names, y=p[top].tolist()))
fig.update_layout(title="The next token's top 10", yaxis_title="probability")
fig.show()
"""
    return intro, compute, show, plot
