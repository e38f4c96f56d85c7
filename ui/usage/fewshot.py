"""Few-shot prompting on the task the model was trained on: accuracy of the query's answer
against the number of examples in the prompt."""

from __future__ import annotations

import streamlit as st

from serving import models
from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.frame import PageContext
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs import fewshot
from viz_model.model.decoding import decode, is_causal
from viz_model.text.data import FEWSHOT_RULES, fewshot_pair

TASK_MODEL = (
    "fewshot-tiny"  # the bundled model trained on the task (scripts/train_bundled_models.sh)
)
EXAMPLE_PROMPT = "abc>cba hed>deh fgb>"


@cache.per_prompt(spinner="Asking the model a few hundred questions…")
def curve(bundle_id: str, k_max: int, n_prompts: int, seed: int) -> fewshot.FewShotCurve:
    b = cache.bundle(bundle_id)
    return fewshot.fewshot_curve(b.model, b.tokenizer.encode, k_max, n_prompts, seed)


@cache.per_prompt
def model_answer(bundle_id: str, prompt: str, n: int) -> str:
    """The model's greedy answer of n tokens after the prompt."""
    b = cache.bundle(bundle_id)
    return b.tokenizer.decode(decode(b.model, b.tokenizer.encode(prompt), n))


def _open_task_model() -> None:
    state.set_value("model", TASK_MODEL)
    state.set_value("prompt", EXAMPLE_PROMPT)


def draw(ctx: PageContext) -> None:
    rules = ", ".join(f"{r} ({fewshot_pair(r, 'abc')})" for r in FEWSHOT_RULES)
    st.markdown(
        "A large model can often do a task it was never named, once the prompt shows a few "
        "worked examples: **few-shot prompting**, learning *in context*, with no weight changed. "
        "This tiny version was trained on lines of input>output pairs in which every pair follows "
        f"one rule, chosen at random for each line: {rules}. Nothing but the examples says which "
        "rule a line follows, so to answer a new input the model must infer the rule from the "
        "pairs before it. Does it answer better the more examples it is shown?"
    )
    task_len = fewshot.task_len_of(ctx.bundle.meta)
    if task_len is None:
        st.info(
            f"“{ctx.name}” was not trained on this task, so there is nothing to measure on it: "
            "few-shot prompting needs a task the model can recognise from examples."
        )
        if TASK_MODEL in models.discover():
            st.button(
                f"Open the few-shot model “{TASK_MODEL}”",
                key="use_open_task_model",
                icon=":material/swap_horiz:",
                on_click=_open_task_model,
            )
        return
    if not is_causal(ctx.model):
        st.info(
            f"“{ctx.name}” reads ahead (it has no causal mask), so one pass would show it the "
            "answers: this part measures causal models only."
        )
        return
    k_max = fewshot.max_examples(task_len)
    c1, c2 = st.columns(2, gap="large")
    n_prompts = state.select_slider(
        "Prompts per number of examples", "u_fs_n", [50, 100, 200, 400], 200, container=c1
    )
    seed = state.number_input("Seed", "u_fs_seed", 0, 999_999, 0, container=c2)
    result = curve(ctx.bundle_id, k_max, n_prompts, seed)
    present.plot(
        cache.figure(
            charts.fewshot_curve,
            result.ks,
            result.accuracy,
            [result.stderr(i) for i in range(len(result.ks))],
            result.chance,
        ),
        key="use_fewshot_curve",
    )
    st.caption(
        f"Each point: {n_prompts} seeded prompts with that many examples, a rule drawn for each; "
        "an answer is right when all three of its letters are the model's most likely ones. Bars: "
        "±2 standard errors. Dashes: chance for a model that knows the format but not the rule."
    )
    claim = fewshot.fewshot_claim(result)
    (st.success if claim.made else st.info)(claim.text)
    prompt, answer = fewshot.make_prompts(min(2, k_max), 1, seed)[0]
    said = model_answer(ctx.bundle_id, prompt, len(answer))
    verdict = "right" if said == answer else f"wrong: the rule gives “{answer}”"
    st.markdown(
        f"One of the prompts with two examples: the model answers **“{md_escape(said)}”** "
        f"({verdict})."
    )
    st.code(prompt.strip("\n") + said, language=None)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            parts.numbers_table(
                "Accuracy and the mean loss of an answer letter for each number of examples:",
                [
                    {
                        "examples": k,
                        "answers right": float(result.accuracy[i]),
                        "± 1 standard error": result.stderr(i),
                        "loss per answer letter (nats)": float(result.loss[i]),
                        "chance": result.chance,
                    }
                    for i, k in enumerate(result.ks)
                ],
            )
