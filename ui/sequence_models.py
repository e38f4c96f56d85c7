"""The Sequence models page's sections, one function each, drawn in order by
pages/20_sequence_models.py: the idea (`intro`), which models stand side by side (`lineup`), their
bits per character on the same text and budget (`same_budget`), how far back each looks
(`how_far_back`), an LSTM's or GRU's gates on the prompt (`gates`), and what reading one more
token costs (`cost`).

Not here: the measures and claims (viz_model/analysis/sequence_models.py), the models of other
families (viz_model/model/recurrent*.py), the chart builders (ui/charts/sequence_models.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
import torch

from serving import models as served
from ui import cache, corpus, parts, present, state
from ui.charts import sequence_models as charts
from ui.charts.common import token_labels
from ui.frame import PageContext
from viz_model.analysis import cost_curves as cc
from viz_model.analysis import ngrams as ng
from viz_model.analysis import sequence_models as sm
from viz_model.analysis.tokens import token_text
from viz_model.analysis.training import final_step
from viz_model.analysis.variants import windows as val_windows
from viz_model.model.recurrent_cells import inspect
from viz_model.model.recurrent_config import FAMILY_LABELS
from viz_model.text.data import VAL_FRACTION, TokenData, load_text

WINDOWS = 32  # validation windows averaged for the sensitivity (fewer leave each line noisy)
SHOWN_UNITS = 24  # the gate heatmap's rows: the units that vary most along the prompt
COUNTED_LENGTHS = (16, 64, 256, 1024, 4096)  # context lengths for the counted memory
TIMED_LENGTHS = (8, 32, 127)  # a GPT of the bundled shape reads at most 128 tokens


# ---- cached measures ------------------------------------------------------------------------------


@cache.per_model
def budget_of(bundle_id: str) -> tuple[str, int | None, int, float | None]:
    """(family, tokens seen in training, parameters, bits per validation character)."""
    b = cache.bundle(bundle_id)
    seen = b.meta.get("tokens_seen")
    return (
        b.family,
        int(seen) if seen is not None else None,
        sum(p.numel() for p in b.model.parameters()),
        corpus.gpt_bits_per_char(bundle_id),
    )


@cache.per_model(keep=8)
def reach_profiles(bundle_id: str) -> tuple[np.ndarray, np.ndarray]:
    """(n_ctx,) gradient sensitivity by distance on validation windows of the training length,
    of the model and of the same shape with random weights (cache.untrained), on the same windows."""
    b = cache.bundle(bundle_id)
    val = TokenData.from_text(
        load_text(b.meta["data"]), b.tokenizer, b.meta["data"].get("val_fraction", VAL_FRACTION)
    )
    windows = val_windows(val.val, b.config.n_ctx, WINDOWS)
    return (
        sm.sensitivity(b.model, windows),
        sm.sensitivity(cache.untrained(bundle_id).model, windows),
    )


@cache.per_prompt
def traced_gates(bundle_id: str, ids: tuple[int, ...], layer: int) -> dict[str, np.ndarray]:
    trace = inspect(cache.bundle(bundle_id).model, torch.tensor(ids)).layers[layer]
    return {name: g.numpy() for name, g in trace.gates.items()}


@cache.per_model(keep=8)
def step_times(bundle_id: str) -> tuple[float, ...]:
    """Seconds of one generation step after each of TIMED_LENGTHS tokens (measured once a server)."""
    model = cache.bundle(bundle_id).model
    return tuple(sm.step_seconds(model, T) for T in TIMED_LENGTHS)


@cache.per_model(spinner="Timing a GPT and an LSTM on this machine…", keep=2)
def cost_curves(vocab_size: int) -> tuple[cc.CostCurves, str]:
    """Training-step and forward time and memory against T for a fresh GPT and LSTM (random
    weights), measured once a server process: (the curves, when they were measured, UTC)."""
    curves = cc.measure(vocab_size)
    return curves, time.strftime("%H:%M UTC", time.gmtime())


@cache.per_model
def benchmark_curves(path: str) -> cc.CostCurves | None:
    """The committed run of benchmarks/bench_cost_curves.py (None when it is not there)."""
    return cc.load_benchmark(Path(path))


# ---- the models side by side --------------------------------------------------------------------


@dataclass(frozen=True)
class Lineup:
    """The models the page sets side by side, and the model on screen among them."""

    final_id: str  # the model on screen's final weights
    shown_step: int | None  # the sidebar's training step (None: the final weights)
    last_step: int | None  # the run's final step
    earlier: bool  # the sidebar shows a snapshot before the final step
    here: str  # the model on screen's name, with its step when earlier
    group: dict[str, str]  # name -> bundle id: one per family, trained on one budget
    budget: int | None  # the tokens each of the group read in training
    others: dict[str, str]  # the other models on this text
    kinds: dict[str, str]  # name -> "GPT", "LSTM", ... for the group
    models: ng.TokenModels | None  # the text counted (ui/corpus.py), for the n-gram's bits


def intro() -> None:
    """What a recurrent network, an LSTM, a GRU and a causal CNN are, with the two formulas."""
    st.markdown(
        "Before the transformer, language models read text one token at a time and carried what "
        "they needed forward. A **recurrent network** (RNN) keeps one hidden vector $h_t$ and "
        "updates it at every token; an **LSTM** adds a cell state $c_t$ with gates that decide "
        "what to forget, what to write and what to show; a **GRU** does the same with two gates; "
        "a **causal CNN** reads a fixed window of earlier tokens through stacked convolutions. "
        "All of them answer the GPT's question, $p(x_t \\mid x_{<t})$, and all were trained here "
        "by the same command on the same text."
    )
    st.latex(r"\text{RNN: } h_t = \tanh(W_{ih} x_t + W_{hh} h_{t-1} + b)")
    st.latex(
        r"\text{LSTM: } c_t = f_t \odot c_{t-1} + i_t \odot g_t, \quad h_t = o_t \odot \tanh(c_t)"
    )


def lineup(ctx: PageContext) -> Lineup:
    """The models to compare; the run stops with a note when fewer than two families are found."""
    # The sidebar's training step: the comparison below is of each run's final weights, and a
    # snapshot before the final step is the model on screen under its own label ("our-model at
    # step 0").
    final_id, shown_step = served.split_step(ctx.bundle_id)
    last_step = final_step(ctx.bundle.history, ctx.bundle.meta)
    earlier = shown_step is not None and last_step is not None and shown_step < last_step
    here = f"{ctx.name} at step {shown_step:,}" if earlier else ctx.name
    group, budget, others = _peers(ctx, final_id)
    if len({budget_of(b)[0] for b in group.values()}) < 2:
        st.info(
            f"No models of two different families were trained on “{ctx.name}”'s text with the "
            "same budget, so there is nothing to set side by side. The bundled Shakespeare models "
            "are: pick `shakespeare-tiny` (a GPT) in the sidebar, or train an RNN, LSTM, GRU or "
            "CNN on the Training page with the same settings."
        )
        st.stop()
    kinds = {name: FAMILY_LABELS[budget_of(bid)[0]] for name, bid in group.items()}
    models = corpus.token_models(ctx.bundle_id)
    return Lineup(
        final_id, shown_step, last_step, earlier, here, group, budget, others, kinds, models
    )


def _peers(ctx: PageContext, final_id: str) -> tuple[dict[str, str], int | None, dict[str, str]]:
    """The models on this model's text with the same tokenizer kind, trained on the same number
    of tokens (the budget with the most families; the model on screen's on a tie), one per family
    (the model on screen for its own; a plain GPT before a variant): (name -> bundle id, that
    budget, the others on this text)."""
    same = {
        name: bid
        for name, bid in corpus.same_corpus_models(ctx.bundle).items()
        if cache.bundle(bid).tokenizer.kind == ctx.tokenizer.kind
        and cache.bundle(bid).config.causal
    }
    families: dict[int | None, set[str]] = {}
    for bid in same.values():
        family, seen, _, _ = budget_of(bid)
        families.setdefault(seen, set()).add(family)
    own = budget_of(final_id)[1]
    budget = max(families, key=lambda b: (len(families[b]), b == own), default=None)
    rows = [
        (name, budget_of(bid)[0], cache.bundle(bid).config)
        for name, bid in same.items()
        if budget_of(bid)[1] == budget
    ]
    chosen = {name: same[name] for name in sm.one_per_family(rows, ctx.name).values()}
    return chosen, budget, {n: b for n, b in same.items() if n not in chosen}


# ---- same text, same budget -----------------------------------------------------------------------


def same_budget(ctx: PageContext, lu: Lineup) -> None:
    """Bits per character of each family and the best n-gram, as bars and a table, with notes on
    the models left out and sentences on who wins."""
    st.subheader("Same text, same budget")
    models = lu.models
    entries = [
        sm.Entry(name, lu.kinds[name], budget_of(bid)[3], budget_of(bid)[2])
        for name, bid in sorted(lu.group.items())
        if budget_of(bid)[3] is not None
    ]
    if models is not None and ctx.tokenizer.kind == "char":
        order = int(np.argmin(models.scores.kneser_ney))
        best_gram = models.scores.kneser_ney[order] / ng.LN2 / models.chars_per_token
        entries.append(
            sm.Entry(f"{models.scores.orders[order]}-gram (Kneser-Ney)", "n-gram", best_gram)
        )
    present.plot(
        cache.figure(
            charts.bpc_bars,
            [e.name for e in entries],
            [e.kind for e in entries],
            [float(e.bpc) for e in entries],
        ),
        key="seq_bpc",
    )
    st.markdown(sm.bpc_claim(entries).text)
    st.caption(
        f"Each network read {lu.budget:,} training tokens of the same text (one seed each: another "
        "seed moves each number by a few hundredths). Bits per character are each model's last "
        "recorded validation loss; the n-gram is the best order of the N-grams page, counted on "
        "the training split."
    )
    table = pd.DataFrame(
        [
            {
                "model": e.name,
                "family": e.kind,
                "parameters": f"{e.params:,}" if e.params else "–",
                "bits per character": f"{e.bpc:.3f}",
            }
            for e in sorted(entries, key=lambda e: e.bpc)
        ]
    ).set_index("model")
    st.table(table)
    other_budgets = {
        n: b for n, b in lu.others.items() if budget_of(b)[1] != lu.budget and n != ctx.name
    }
    notes = [note for note in [_variants_note(ctx, lu)] if note]
    if other_budgets:
        notes.append(
            "Trained on other budgets, so not compared: "
            + ", ".join(
                f"{n} ({budget_of(b)[1] or 0:,} tokens)" for n, b in sorted(other_budgets.items())
            )
            + "."
        )
    if note := _on_screen_note(ctx, lu):
        notes.insert(0, note)
    if notes:
        st.caption(" ".join(notes))

    nets = [e for e in entries if e.kind != "n-gram"]
    best_net = min(nets, key=lambda e: e.bpc)
    gpts = [e for e in nets if e.kind == "GPT"]
    if (
        best_net.kind != "GPT"
        and gpts
        and sm.printed_gap(best_net.bpc, gpts[0].bpc) > sm.BPC_MARGIN
    ):
        st.markdown(
            "A recurrent or convolutional model beating the GPT is not a bug: with a few million "
            "characters and about a hundred thousand parameters, an LSTM-era model is a strong "
            "baseline. The transformer won on what these numbers do not show: it trains on all "
            "positions of a sequence at once (an RNN must go token by token), so on a GPU it reads "
            "far more text in the same time, and it keeps improving as models and data grow."
        )
    grams = [e for e in entries if e.kind == "n-gram"]
    if (
        grams
        and models is not None
        and sm.printed_gap(grams[0].bpc, best_net.bpc) > sm.BPC_MARGIN
        and lu.budget
    ):
        st.markdown(
            f"The counting model wins here because it keeps a count for every context in all "
            f"{models.index.n_train:,} training characters, while each network has "
            f"{min(e.params or 0 for e in nets):,} to {max(e.params or 0 for e in nets):,} "
            "parameters and read the training text "
            f"{lu.budget / models.index.n_train:.1f} times." + _passes(ctx, lu, grams[0].bpc)
        )


def _variants_note(ctx: PageContext, lu: Lineup) -> str:
    """The models of the budget left out of the comparison, each named with what it changes of
    the model standing for its family (a GPT variant: its parts, sm.changed_parts)."""
    stand_in = {budget_of(bid)[0]: name for name, bid in lu.group.items()}
    named, families = [], set()
    for name, bid in sorted(lu.others.items()):
        family = budget_of(bid)[0]
        if budget_of(bid)[1] != lu.budget or name == ctx.name or family not in stand_in:
            continue
        base = cache.bundle(lu.group[stand_in[family]]).config
        parts = sm.changed_parts(cache.bundle(bid).config, base) if family == "gpt" else []
        named.append(f"{name} ({', '.join(parts) if parts else FAMILY_LABELS[family]})")
        families.add(family)
    if not named:
        return ""
    return (
        f"{len(named)} more models on this text share the budget; each is named with what it "
        f"changes of {' or '.join(stand_in[f] for f in sorted(families))}, which "
        f"{'stands' if len(families) == 1 else 'stand'} for {'it' if len(named) == 1 else 'them'} "
        f"here: {', '.join(named)}. The Architecture contrasts page sets them side by side."
    )


def _on_screen_note(ctx: PageContext, lu: Lineup) -> str:
    """The model on screen at the sidebar's step, when it is not one of the compared models as
    they are drawn (another budget, or a snapshot before its final step): its last validation
    loss by then, with the step and tokens (sm.on_screen_claim), and where the page shows it."""
    if ctx.name not in lu.others and not lu.earlier:
        return ""
    family, _, params, final_bpc = budget_of(lu.final_id)
    if not lu.earlier and final_bpc is None:
        return ""
    step = lu.shown_step if lu.earlier else lu.last_step
    if step is None:  # a run that records no step: nothing to say its loss is of
        return ""
    b = ctx.bundle
    score = sm.score_at(b.history, b.meta, b.train_config, ctx.config.n_ctx, step)
    bits = (
        ng.bits_per_char(score.val_loss, lu.models.chars_per_token)
        if score.val_loss is not None and lu.models is not None
        else None
    )
    claim = sm.on_screen_claim(
        ctx.name, FAMILY_LABELS[family], params, score, bits, bool(ctx.bundle.meta.get("base"))
    )
    if lu.earlier and ctx.name in lu.group:
        where = (
            f". The comparison above has its final weights (step {lu.last_step:,}); its line at "
            f"step {lu.shown_step:,} is in the next chart."
        )
    elif lu.earlier:
        where = f". It is not ranked here; its line at step {lu.shown_step:,} is in the next chart."
    elif budget_of(lu.final_id)[1] != lu.budget:
        where = ": another budget, so it is not ranked; its line is in the next chart."
    else:
        where = ": the same budget as a model that stands for its family."
    return claim.text + where


def _passes(ctx: PageContext, lu: Lineup, gram_bpc: float) -> str:
    """A sentence naming the lowest-bpc model on this text, trained on another budget, that beats
    the n-gram by more than the margin; empty when none does."""
    beating = [
        (budget_of(bid)[3], name, bid)
        for name, bid in lu.others.items()
        if budget_of(bid)[1] != lu.budget
        and budget_of(bid)[3] is not None
        and sm.printed_gap(budget_of(bid)[3], gram_bpc) > sm.BPC_MARGIN
    ]
    if not beating:
        return ""
    bpc, name, bid = min(beating)
    if lu.earlier and name == ctx.name:  # the sidebar shows an earlier step: these are the final's
        name = f"{name} at its final step ({lu.last_step:,})"
    return (
        f" {name}, with {budget_of(bid)[2]:,} parameters and {budget_of(bid)[1] or 0:,} training "
        f"tokens, scores {bpc:.3f} and passes it."
    )


# ---- how far back -----------------------------------------------------------------------------------


def how_far_back(ctx: PageContext, lu: Lineup) -> None:
    """Each model's gradient sensitivity to the token k steps back, against its untrained twin."""
    st.subheader("How far back each one looks")
    shown = dict(sorted(lu.group.items()))
    kinds = dict(lu.kinds)
    if lu.earlier or ctx.name in lu.others:  # the model on screen as the sidebar shows it
        shown[lu.here] = ctx.bundle_id
        kinds[lu.here] = FAMILY_LABELS[budget_of(lu.final_id)[0]]
    window = min(cache.bundle(b).config.n_ctx for b in shown.values())
    st.markdown(
        "Which earlier tokens does a prediction depend on? For each model we take windows of the "
        "validation text, ask how much the log-probability of the true next token changes when "
        "the embedding of the token $k$ steps back changes (the size of the gradient "
        "$\\lVert \\partial \\log p(x_T \\mid x_{<T}) / \\partial e_{T-1-k} \\rVert$), average over "
        f"{WINDOWS} windows, and divide by the value at $k=0$ (the last token read). A CNN cannot "
        "see past its receptive field, so its gradient there is exactly zero; an RNN squeezes the "
        "past through one vector and its gradient shrinks with every step (the *vanishing "
        "gradient*); the LSTM's cell and the GPT's attention are meant to carry it further."
    )
    with st.spinner("Measuring each model's sensitivity to the past…"):
        measured = {name: reach_profiles(bid) for name, bid in shown.items()}
        profiles = {name: trained[:window] for name, (trained, _) in measured.items()}
        untrained = {name: random[:window] for name, (_, random) in measured.items()}
    fields = {
        name: cache.bundle(bid).config.receptive_field
        for name, bid in shown.items()
        if budget_of(bid)[0] == "cnn"
    }
    present.plot(
        cache.figure(charts.reach_chart, profiles, kinds, fields, sm.REACH_FRACTION),
        key="seq_reach",
    )
    st.markdown(
        sm.reach_claim(
            [
                sm.ReachRow(name, profiles[name], untrained[name], fields.get(name))
                for name in sorted(profiles)
            ],
            window,
        ).text
    )


# ---- gates --------------------------------------------------------------------------------------------


def gates(ctx: PageContext, lu: Lineup) -> None:
    """One gate of an LSTM or GRU on the prompt, the units that vary most, and what it did."""
    st.subheader("Inside an LSTM: its gates on your prompt")
    gated = _gate_model(ctx, lu)
    if gated is None:
        st.info("No LSTM or GRU was trained on this text with this budget, so there are no gates.")
        return
    g_name, g_bid = gated
    g_bundle = cache.bundle(g_bid)
    g_ids = g_bundle.tokenizer.encode(ctx.prompt)[-g_bundle.config.n_ctx :]
    if len(g_ids) < 2:
        st.info("Type a prompt of at least two characters to see the gates move.")
        return
    family = g_bundle.family
    names = ["forget", "input", "output", "cell"] if family == "lstm" else ["update", "reset"]
    c1, c2 = st.columns(2)
    gate = state.radio("Gate", "seq_gate", names, names[0], horizontal=True, container=c1)
    layer = state.selectbox(
        "Layer", "seq_layer", list(range(g_bundle.config.n_layer)), 0, container=c2
    )
    traced = traced_gates(g_bid, tuple(g_ids), layer)
    values = traced[gate]  # (T, D)
    units = np.argsort(-values.std(axis=0))[:SHOWN_UNITS]
    labels = token_labels([token_text(g_bundle.tokenizer, t) for t in g_ids])
    present.plot(
        cache.figure(charts.gate_heatmap, values[:, units], labels, gate, [int(u) for u in units]),
        key="seq_gates",
    )
    summary = sm.gate_summary({k: torch.tensor(v) for k, v in traced.items()})
    st.markdown(f"**{g_name}**, layer {layer}: " + sm.gate_claim(family, summary).text)
    st.caption(
        "A gate is a sigmoid, between 0 and 1, one per unit and token: the forget gate "
        "multiplies the old cell state (1 keeps it, 0 wipes it), the input gate scales what "
        "is written, the output gate what the cell shows as $h_t$. A GRU's update gate mixes "
        "the old state with a new candidate; its reset gate decides how much of the old it "
        "reads. Rows are the units whose gate varies most along this prompt."
    )


def _gate_model(ctx: PageContext, lu: Lineup) -> tuple[str, str] | None:
    """The model on screen when it has gates, else the first LSTM (then GRU) of the group."""
    if ctx.bundle.family in ("lstm", "gru"):
        return lu.here, ctx.bundle_id
    for family in ("lstm", "gru"):
        for name, bid in sorted(lu.group.items()):
            if budget_of(bid)[0] == family:
                return name, bid
    return None


# ---- cost ---------------------------------------------------------------------------------------------


def cost(lu: Lineup) -> None:
    """The memory each model carries to read one more token (counted), and one step timed."""
    st.subheader("What reading one more token costs")
    st.markdown(
        "To predict the next token, a recurrent model needs only its state: the same few numbers "
        "whatever the length of the text so far. A GPT keeps the keys and values of every earlier "
        "token (its KV cache) and compares the new query with all of them; reading a whole text "
        "at once it fills a $T \\times T$ table of attention scores per head. Counted from each "
        "model's shape:"
    )
    rows, memory = [], {}
    for name, bid in sorted(lu.group.items()):
        model = cache.bundle(bid).model
        counted = [sm.memory_floats(model, T) for T in COUNTED_LENGTHS]
        memory[name] = [c.get("kv cache", c.get("state", 0)) for c in counted]
        for T, c in zip(COUNTED_LENGTHS, counted, strict=True):
            rows.append((name, T, c))
    present.plot(
        cache.figure(
            charts.cost_chart,
            COUNTED_LENGTHS,
            memory,
            lu.kinds,
            "numbers kept per sequence",
            "Memory carried to read one more token (counted)",
        ),
        key="seq_memory",
    )
    st.markdown(sm.cost_claim(rows).text)
    gpt_contexts = [
        f"{name} itself reads at most {cache.bundle(bid).config.n_ctx:,} tokens"
        for name, bid in sorted(lu.group.items())
        if budget_of(bid)[0] == "gpt" and cache.bundle(bid).config.n_ctx < COUNTED_LENGTHS[-1]
    ]
    if gpt_contexts:
        st.caption(
            "; ".join(gpt_contexts) + ": past that, the count is what a GPT of its shape with a "
            "longer context would keep."
        )
    scores = {
        name: f"{c['attention scores']:,}"
        for name, T, c in rows
        if COUNTED_LENGTHS[-1] == T and c["attention scores"]
    }
    if scores:
        st.caption(
            f"Reading {COUNTED_LENGTHS[-1]:,} tokens at once, a GPT's attention fills "
            + ", ".join(f"{v} scores ({k})" for k, v in scores.items())
            + " (layers × heads × T × T); a recurrent model none."
        )
    with parts.followed_expander("Measured: one generation step on this server", "step_cost"):
        timed = {name: step_times(bid) for name, bid in sorted(lu.group.items())}
        st.table(
            pd.DataFrame(
                {
                    f"after {T} tokens (ms)": [f"{timed[n][i] * 1e3:.2f}" for n in timed]
                    for i, T in enumerate(TIMED_LENGTHS)
                },
                index=pd.Index([f"{n} ({lu.kinds[n]})" for n in timed], name="model"),
            )
        )
        st.caption(
            "Best of 5 runs of one step, one thread, measured once per server and model. At these "
            "toy sizes fixed costs (Python, small matrix products) dominate, so the GPT's growth "
            "with T is small here; the counted memory above is what grows without bound."
        )
    measured_here(lu)


def measured_here(lu: Lineup) -> None:
    """Why the transformer won, measured on this server: a training step's and a forward pass's
    time against T for a GPT and an LSTM of about the same weights, and the memory that grows
    with T, with the sentence computed from them (viz_model/analysis/cost_curves.py)."""
    c, when = cost_curves(cache.bundle(lu.final_id).config.vocab_size)
    gpt, lstm = c.shapes["GPT"], c.shapes["LSTM"]
    st.markdown(
        "**Training time, where the transformer won on GPUs.** A GPT reads all $T$ positions of "
        "a sequence in the same matrix products; an LSTM must step through them one after "
        "another, each step waiting for the last. Whether that parallelism pays depends on the "
        "hardware: measured on this server, a GPT of "
        f"{c.weights['GPT']:,} weights ({gpt['n_layer']} blocks of {gpt['d_model']}, "
        f"{gpt['n_head']} heads; its position table aside) and an LSTM of "
        f"{c.weights['LSTM']:,} ({lstm['n_layer']} layers of {lstm['d_model']}), both with "
        f"random weights, on {c.batch} sequences of $T$ tokens."
    )
    lengths = list(c.lengths)
    present.plot(
        cache.figure(
            charts.cost_curves_chart,
            lengths,
            ["GPT: training step", "LSTM: training step", "GPT: forward", "LSTM: forward"],
            ["GPT", "LSTM", "GPT", "LSTM"],
            [[s * 1e3 for s in c.step_s[m]] for m in ("GPT", "LSTM")]
            + [[s * 1e3 for s in c.forward_s[m]] for m in ("GPT", "LSTM")],
            ["solid", "solid", "dot", "dot"],
            "milliseconds (log)",
            "Time against context length, measured now on this server",
        ),
        key="seq_cost_time",
    )
    st.markdown(cc.step_claim(c).text)
    present.plot(
        cache.figure(
            charts.cost_curves_chart,
            lengths,
            ["GPT: attention patterns", "LSTM: states kept for backprop"],
            ["GPT", "LSTM"],
            [[b / 1e6 for b in c.attention_bytes], [b / 1e6 for b in c.state_bytes]],
            ["solid", "solid"],
            "megabytes (log)",
            "Memory that grows with T (counted from the shapes)",
        ),
        key="seq_cost_memory",
    )
    st.markdown(cc.memory_claim(c).text)
    recorded = [
        (T, b, counted)
        for T, b, counted in zip(c.lengths, c.recorded_bytes, c.attention_bytes, strict=True)
        if b is not None
    ]
    same = all(b == counted for _, b, counted in recorded)
    st.caption(
        f"Measured once per server process, at {when}, in {c.seconds:.1f} s: each time the median "
        f"of {c.repeats} runs after two warm-up runs, with the server's {c.threads} torch "
        f"thread{'s' if c.threads != 1 else ''}; another busy program on this machine slows every "
        "figure, so these are this machine's numbers now, not the model's. Memory: the GPT's "
        "attention patterns are layers × B × heads × T × T floats (4 bytes each; fused attention "
        "computes them in tiles instead, but a plain implementation keeps them for backprop), "
        f"the LSTM's hidden and cell states layers × B × T × 2 × {lstm['d_model']} (the least "
        "backprop must keep; one step alone needs only B × 2 × d). The patterns "
        "`run_with_cache` recorded took "
        + ", ".join(f"{cc.mb(b)} MB at T = {T:,}" for T, b, _ in recorded)
        + (", as counted." if same else ", not what was counted: the count is wrong here.")
    )
    _benchmark_run()
    runs = {
        kind: cc.timed_run(name, kind, cache.bundle(lu.group[name]).history)
        for name, kind in sorted(lu.kinds.items())
        if kind in ("GPT", "LSTM")
    }
    if len(runs) == 2:
        st.markdown(cc.same_time_claim(runs["GPT"], runs["LSTM"]).text)
        st.caption(
            "Equal time, from each run's own records (history.json: seconds of training at each "
            "validation): each clock ran on the machine the run trained on, under that moment's "
            "load, so the times say as much about that machine as about the models."
        )
    with parts.numbers_behind_it() as is_open:
        if is_open:
            st.table(
                pd.DataFrame(
                    {
                        "GPT step (ms)": [cc.ms(s) for s in c.step_s["GPT"]],
                        "LSTM step (ms)": [cc.ms(s) for s in c.step_s["LSTM"]],
                        "GPT forward (ms)": [cc.ms(s) for s in c.forward_s["GPT"]],
                        "LSTM forward (ms)": [cc.ms(s) for s in c.forward_s["LSTM"]],
                        "GPT patterns (MB)": [cc.mb(b) for b in c.attention_bytes],
                        "LSTM states (MB)": [cc.mb(b) for b in c.state_bytes],
                    },
                    index=pd.Index([f"{T:,}" for T in c.lengths], name="T"),
                )
            )


def _benchmark_run() -> None:
    """The benchmark's committed run beside the live one: its step times to T = 2,048 and its
    sentence, computed from its JSON by the same claim."""
    b = benchmark_curves(str(cc.BENCHMARK_FILE))
    if b is None:
        return
    with parts.followed_expander(
        f"The benchmark's run: T up to {b.lengths[-1]:,} on the project's 2-core machine",
        "cost_bench",
    ) as is_open:
        if not is_open:
            return
        present.plot(
            cache.figure(
                charts.cost_curves_chart,
                list(b.lengths),
                ["GPT: training step", "LSTM: training step"],
                ["GPT", "LSTM"],
                [[s * 1e3 for s in b.step_s[m]] for m in ("GPT", "LSTM")],
                ["solid", "solid"],
                "milliseconds (log)",
                "Time of a training step, benchmarks/bench_cost_curves.py",
            ),
            key="seq_cost_bench",
        )
        st.markdown(cc.step_claim(b, where="On the benchmark's machine").text)
        st.markdown(cc.memory_claim(b).text)
        st.caption(
            f"`python -m benchmarks.bench_cost_curves`: {b.batch} sequences, the median of "
            f"{b.repeats} runs after two warm-ups, {b.threads} torch thread"
            f"{'s' if b.threads != 1 else ''}, {b.seconds:.1f} s in all, on a 2-core machine "
            "shared with other work (benchmarks/README.md says when), not the one in front of "
            "you."
        )
