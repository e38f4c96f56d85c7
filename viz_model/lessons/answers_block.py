"""Answer kinds for the block lesson (assets/lessons/3_block.toml): the residual stream and the
logit lens, direct logit attribution, LayerNorm, and MLP neurons read as a key-value memory.

Each kind measures with what the pages use: `lens_report`, `growth_claim` and
`attribution_for` (analysis/residual.py), `all_stats` (analysis/layernorm.py), the neurons'
`top_neurons`, `output_direction_logits` and `promoted_tokens` (analysis/neurons.py). A token
named in an argument (token = ",") is its first occurrence in the prompt, as a student finds it
on the page; positions may count from the end (-1 is the last token).
Not here: the corpus scan of the MLP page (seconds per model; the lesson's neuron is found on the
prompt instead).
"""

from __future__ import annotations

import numpy as np
import torch

from viz_model.analysis import layernorm as lnx
from viz_model.analysis import neurons as nx
from viz_model.analysis import residual as rs
from viz_model.analysis.claims import md_escape
from viz_model.analysis.tokens import token_text
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, apart, nonzero, visible_token

YES, NO = "yes", "no"
EMPTY = "The prompt is empty: there is nothing to measure."
ATTENTION, MLP = "attention (t2)", "the MLP (t5)"


def _text(subject: Subject, i: int) -> str:
    return token_text(subject.bundle.tokenizer, subject.ids[i])


def _shown(text: str) -> str:
    return md_escape(visible_token(text))


def _index(position: int, T: int) -> int | None:
    i = position + T if position < 0 else position
    return i if 0 <= i < T else None


def _find(subject: Subject, token: str) -> int | None:
    """The first position of the prompt whose token reads `token`."""
    return next((i for i in range(len(subject.ids)) if _text(subject, i) == token), None)


@torch.no_grad()
def _report(subject: Subject) -> rs.LensReport:
    return rs.lens_report(subject.bundle.model, list(subject.ids))


# ---- the residual stream --------------------------------------------------------------------


@answer_kind("choice")
def stream_grows(subject: Subject) -> Truth:
    """Does the residual stream's mean length grow at every block? (the Residual stream page's
    norm claim, for a pre-LN model whose stream is a plain sum)."""
    if not subject.ids:
        return Truth("choice", NO, EMPTY, (YES, NO), holds=False)
    report = _report(subject)
    lengths = rs.mean_norms(report.norms)
    claim = rs.growth_claim(lengths)
    value = YES if claim.made else NO
    if subject.bundle.config.norm != "pre":
        why = (
            f"{claim.text} But this model is **post-LN**: every block ends in a LayerNorm, which "
            "sets the stream's length, so it is not a running sum that grows block by block."
        )
        return Truth("choice", value, why, (YES, NO), holds=False, numbers=claim.numbers)
    outputs = "attention output" if subject.bundle.config.attn_only else "attention and MLP outputs"
    why = claim.text + (
        f" Each block adds its {outputs} to the stream and nothing takes them away, so the sum "
        "tends to grow."
        if claim.made
        else ""
    )
    return Truth("choice", value, why, (YES, NO), holds=claim.made, numbers=claim.numbers)


@answer_kind("choice")
def lens_first_layer(subject: Subject, position: int = -1) -> Truth:
    """At which station the logit lens first gives the model's final top token at `position`
    (default: the last token, the next-token prediction)."""
    stations = tuple(rs.layer_labels(subject.bundle.config.n_layer))
    t = _index(position, len(subject.ids))
    if t is None:
        why = f"The prompt has no position {position}."
        return Truth("choice", stations[-1], why, stations, holds=False)
    report = _report(subject)
    lens = report.lens
    final = int(lens.final_ids[t])
    hits = lens.top_ids[:, t] == final  # (L + 1,)
    first = int(np.argmax(hits))  # the last station always hits: the lens there is the model
    kept = bool(hits[first:].all())
    tok = subject.bundle.tokenizer
    path = " → ".join(_shown(token_text(tok, int(i))) for i in lens.top_ids[:, t])
    why = (
        f"After {_shown(_text(subject, t))} (position {t}) the model predicts "
        f"{_shown(token_text(tok, final))} (probability {lens.final_probs[-1, t]:.2f}). Read "
        f"through the final LayerNorm and the unembedding, the stations guess {path}: the final "
        f"prediction is first the top guess at **{stations[first]}**"
        + ("" if kept else ", is lost again, and comes back later")
        + "."
    )
    if first == len(stations) - 1:
        why += " Only the last layer gets there: the earlier layers guessed something else."
    numbers = {"first": first, "kept": float(kept), "p_final": float(lens.final_probs[-1, t])}
    holds = first < len(stations) - 1
    return Truth("choice", stations[first], why, stations, holds=holds, numbers=numbers)


@answer_kind("choice")
def top_push(subject: Subject, position: int = -1) -> Truth:
    """Which component (embeddings, an attention layer or an MLP) pushes the logit of the
    model's top next token up the most (direct logit attribution, pre-LN models)."""
    model, cfg = subject.bundle.model, subject.bundle.config
    labels = ["embed"] + (["pos"] if cfg.adds_positions else [])
    for i in range(cfg.n_layer):
        labels += [f"attn {i}"] + ([] if cfg.attn_only else [f"mlp {i}"])
    options = tuple(labels)
    t = _index(position, len(subject.ids))
    if t is None or not rs.supports_attribution(model):
        why = (
            "Direct logit attribution needs a pre-LN model: this one is post-LN, so its "
            "outputs do not add up to the logits."
            if t is not None
            else f"The prompt has no position {position}."
        )
        return Truth("choice", options[0], why, options, holds=False)
    token = int(_report(subject).lens.final_ids[t])
    with torch.no_grad():
        att = rs.attribution_for(model, list(subject.ids), t, token)
    order = np.argsort(-att.values)
    best = int(order[0])
    listed = ", ".join(f"{att.labels[i]} {att.values[i]:+.2f}" for i in order[:3])
    why = (
        f"The logit of {_shown(token_text(subject.bundle.tokenizer, token))} after "
        f"{_shown(_text(subject, t))} is {att.logit:.2f}. Split into each component's share "
        f"through the final LayerNorm, the largest pushes are {listed}: **{att.labels[best]}** "
        "pushes it up the most."
    )
    numbers = {label: float(v) for label, v in zip(att.labels, att.values, strict=True)}
    return Truth("choice", att.labels[best], why, options, numbers=numbers | {"logit": att.logit})


# ---- LayerNorm --------------------------------------------------------------------------------


@torch.no_grad()
def _ln(subject: Subject, ln: str) -> lnx.LNStats | None:
    model = subject.bundle.model
    if ln not in lnx.layernorm_names(model):
        return None
    return lnx.stats_for(model, list(subject.ids), ln)


def _no_ln(subject: Subject, ln: str, form: str, value) -> Truth:
    names = ", ".join(lnx.layernorm_names(subject.bundle.model)) or "none"
    why = f"This model has no LayerNorm `{md_escape(ln)}` (it has: {md_escape(names)})."
    return Truth(form, value, why, holds=False)


@answer_kind("number")
def normalized_std(subject: Subject, ln: str = "blocks.0.ln1", position: int = -1) -> Truth:
    """The standard deviation of a token's vector after a LayerNorm subtracts the mean and
    divides by σ, before the gain γ and bias β (1 by construction, up to ε)."""
    s = _ln(subject, ln)
    t = _index(position, len(subject.ids))
    if s is None or t is None:
        return _no_ln(subject, ln, "number", 1.0)
    n = s.normalized[t]  # (D,)
    std, mean = float(n.std()), float(n.mean())
    y = s.y[t]
    why = (
        f"Entering {lnx.title(subject.bundle.model, ln)}, {_shown(_text(subject, t))} has "
        f"μ = {s.mean[t]:.4f} and σ = {s.sigma[t]:.4f}. After (x − μ) / σ its {n.size} numbers "
        f"have mean {round(mean, 4) + 0.0:.4f} and standard deviation **{std:.4f}**: 1, whatever came in "
        f"(ε = {s.eps:g} keeps it a hair under). Then γ and β give the model its own scale back: "
        f"the output has mean {float(y.mean()):.4f} and standard deviation {float(y.std()):.4f}. "
        "(Within 0.01 counts.)"
    )
    numbers = {"std": std, "mean": mean, "sigma": float(s.sigma[t]), "y_std": float(y.std())}
    holds = abs(std - 1) < 0.01 and abs(mean) < 0.01
    return Truth("number", std, why, holds=holds, tolerance=0.01, numbers=numbers)


@answer_kind("token")
def largest_sigma_token(subject: Subject, ln: str = "blocks.0.ln1") -> Truth:
    """Which token of the prompt enters a LayerNorm with the largest standard deviation σ."""
    s = _ln(subject, ln)
    if s is None or not len(subject.ids):
        return _no_ln(subject, ln, "token", "")
    t = int(np.argmax(s.sigma))
    rest = np.delete(s.sigma, t)
    d = apart(float(s.sigma[t]), float(rest.max()), 3) if rest.size else 3
    runner = f" the next largest is {float(rest.max()):.{d}f}" if rest.size else ""
    why = (
        f"{_shown(_text(subject, t))} at position {t} enters {lnx.title(subject.bundle.model, ln)} "
        f"with σ = **{s.sigma[t]:.{d}f}**;{runner}, the median {float(np.median(s.sigma)):.{d}f}."
    )
    if t == 0 and ln == "blocks.0.ln1" and subject.bundle.config.adds_positions:
        why += (
            " The first LayerNorm reads the token embedding plus the position embedding, and "
            "here the vector at position 0 is the most spread out. Dividing by its own σ puts "
            "every token on the same scale."
        )
    numbers = {"sigma": float(s.sigma[t]), "position": t, "median": float(np.median(s.sigma))}
    return Truth("token", _text(subject, t), why, numbers=numbers)


# ---- MLP neurons ------------------------------------------------------------------------------


def _no_mlp(subject: Subject, form: str, value) -> Truth | None:
    if nx.has_mlp(subject.bundle.model):
        return None
    why = "This model is attention-only: its blocks have no MLP, so there are no neurons."
    return Truth(form, value, why, holds=False)


@torch.no_grad()
def _neurons(subject: Subject, layer: int) -> np.ndarray:
    """(T, M) layer `layer`'s neuron activations on the prompt (after the nonlinearity)."""
    name = nx.post_name(layer)
    _, cache = subject.bundle.model.run_with_cache(
        torch.tensor(list(subject.ids), dtype=torch.long), names=[name]
    )
    return cache.numpy(name)


@answer_kind("number")
def top_neuron(subject: Subject, layer: int = 0, token: str = ",") -> Truth:
    """Which neuron of `layer` fires most strongly on the first `token` of the prompt."""
    cfg = subject.bundle.config
    missing = _no_mlp(subject, "number", 0)
    if missing:
        return missing
    t = _find(subject, token)
    if t is None or not 0 <= layer < cfg.n_layer:
        why = f"The prompt has no token {_shown(token)} (or the model no layer {layer})."
        return Truth("number", 0, why, holds=False)
    row = _neurons(subject, layer)[t]  # (M,)
    order = np.argsort(-row, kind="stable")
    n, second = int(order[0]), int(order[1])
    fires = row[n] > nx.DEAD_BELOW
    d = apart(float(row[n]), float(row[second]))
    why = (
        f"On {_shown(token)} (position {t}) neuron **{n}** of layer {layer} fires hardest, at "
        f"{row[n]:.{d}f}; the next is neuron {second} at {row[second]:.{d}f}, and half of the "
        f"{row.size} neurons stay under {float(np.median(row)):.{d}f}."
    )
    numbers = {"activation": float(row[n]), "second": float(row[second]), "position": t}
    return Truth("number", n, why, holds=bool(fires), numbers=numbers)


@answer_kind("token")
def promoted_token(subject: Subject, layer: int = 0, neuron: int = 0) -> Truth:
    """The next token one neuron's output vector promotes most, read through the unembedding
    (W_out[:, n] W_U: the value of the key-value memory)."""
    cfg = subject.bundle.config
    missing = _no_mlp(subject, "token", "")
    if missing:
        return missing
    if not (0 <= layer < cfg.n_layer and 0 <= neuron < cfg.d_mlp):
        why = f"This model has layers 0-{cfg.n_layer - 1} of {cfg.d_mlp} neurons."
        return Truth("token", "", why, holds=False)
    with torch.no_grad():
        effect = nx.output_direction_logits(subject.bundle.model, layer, neuron)  # (V,)
    up, down = nx.promoted_tokens(effect, 3)
    tok = subject.bundle.tokenizer
    top = token_text(tok, int(up[0]))
    if not subject.ids:
        return Truth("token", top, EMPTY, holds=False)
    acts = _neurons(subject, layer)[:, neuron]  # (T,)
    t = int(np.argmax(acts))
    fires = acts[t] > nx.DEAD_BELOW

    shown = [float(effect[i]) for i in (*up, *down)]
    d = max(nonzero(shown), apart(shown[0], shown[1]))  # the named token apart from the next

    def listed(ids: np.ndarray) -> str:
        return ", ".join(f"{_shown(token_text(tok, int(i)))} ({effect[i]:+.{d}f})" for i in ids)

    why = (
        f"Neuron {neuron} of layer {layer} adds its value vector W_out[:, {neuron}] to the stream, "
        f"times its activation. Through W_U that vector raises the logit of **{_shown(top)}** "
        f"most, per unit of activation: it promotes {listed(up)} and suppresses {listed(down)}. "
        f"On this prompt it peaks at {acts[t]:.2f} on {_shown(_text(subject, t))} (position {t})"
        + (
            ": the key it matches is there, and the value it writes says what may come next."
            if fires
            else ", barely firing: here its value hardly reaches the stream."
        )
    )
    numbers = {"effect": float(effect[up[0]]), "peak": float(acts[t]), "position": t}
    return Truth("token", top, why, holds=bool(fires), numbers=numbers)


@answer_kind("choice")
def bigger_write(subject: Subject, layer: int = 0, token: str = ",") -> Truth:
    """Which adds the longer vector to the stream at the first `token` of the prompt in block
    `layer`: attention (t2) or the MLP (t5) (the Inside a block page's walk)."""
    options = (ATTENTION, MLP)
    cfg = subject.bundle.config
    t = _find(subject, token)
    if cfg.attn_only or t is None or not 0 <= layer < cfg.n_layer:
        why = (
            "This model is attention-only: only attention writes into the stream."
            if cfg.attn_only
            else f"The prompt has no token {_shown(token)} (or the model no block {layer})."
        )
        return Truth("choice", ATTENTION, why, options, holds=False)
    names = [f"blocks.{layer}.hook_attn_out", f"blocks.{layer}.hook_mlp_out"]
    with torch.no_grad():
        _, cache = subject.bundle.model.run_with_cache(
            torch.tensor(list(subject.ids), dtype=torch.long), names=names
        )
    attn, mlp = (float(np.linalg.norm(cache.numpy(n)[t])) for n in names)
    value = MLP if mlp > attn else ATTENTION
    why = (
        f"In block {layer}, at {_shown(token)} (position {t}), attention adds a vector of length "
        f"{attn:.2f} and the MLP one of length {mlp:.2f}: **{value}** writes more."
    )
    return Truth("choice", value, why, options, numbers={"attn": attn, "mlp": mlp, "position": t})
