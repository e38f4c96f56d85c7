"""Instruction tuning: the chat template token by token, the model before and after tuning
answering the same held-out instructions, and the student's own instruction."""

from __future__ import annotations

import streamlit as st

from serving import models
from ui import cache, parts, present, state
from ui.charts import usage as charts
from ui.charts.tokens import token_chips_html
from ui.frame import PageContext
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs import forgetting, instruct, quantization
from viz_model.analysis.tokens import display_tokens
from viz_model.bundles.checkpoint import Bundle
from viz_model.model.gpt import GPT
from viz_model.model.vocab import extend_vocab
from viz_model.text.instructions import (
    END,
    INSTRUCTION_HELP,
    WORD_LENGTHS,
    Instruction,
    instructions,
    parse_instruction,
)

TUNED_MODEL = "shakespeare-instruct"  # the bundled tuned model (scripts/instruction_tune.py)
N_SHOWN = 8  # held-out answers shown side by side
DEFAULT_INSTRUCTION = "reverse: bard"


def tuned_model_bundled() -> bool:
    """Whether the bundled instruction-tuned model is here to point a student to."""
    return TUNED_MODEL in models.discover()


def _bundle_id(name: str) -> str | None:
    path = models.discover().get(name)
    return None if path is None else models.bundle_id(path)


@cache.per_model(spinner="Growing the base model's vocabulary by the template's tokens…")
def before_model(base_id: str, n_new: int) -> GPT:
    """The model before tuning: the base with a mean row per template token (the tune's step 0)."""
    return extend_vocab(cache.bundle(base_id).model, n_new).eval()


def _base_name(bundle: Bundle) -> str | None:
    """The bundle's base model (meta "base", written by scripts/instruction_tune.py) when found."""
    base = bundle.meta.get("base")
    return base if isinstance(base, str) and _bundle_id(base) is not None else None


@cache.per_model(spinner="Asking both models a hundred held-out instructions…")
def reports(bundle_id: str, base_id: str | None) -> tuple:
    """(before, after) reports on the held-out instructions; before is None without a base."""
    b = cache.bundle(bundle_id)
    items = instructions(instruct.N_HELD_OUT, seed=0, held_out=True)
    after = instruct.evaluate_instructions(b.model, b.tokenizer, items)
    if base_id is None:
        return None, after
    n_new = b.tokenizer.vocab_size - cache.bundle(base_id).tokenizer.vocab_size
    before = instruct.evaluate_instructions(before_model(base_id, n_new), b.tokenizer, items)
    return before, after


@cache.per_model(spinner="Reading the base model's validation text with both models…")
def forgetting_measured(bundle_id: str, base_id: str) -> forgetting.Forgetting | None:
    """Base and tuned model on the base's validation windows; None when the tuned vocabulary does
    not start with the base's (the two would not read the same ids)."""
    tuned, base = cache.bundle(bundle_id), cache.bundle(base_id)
    if not forgetting.same_ids(base.tokenizer, tuned.tokenizer):
        return None
    val, _ = quantization.validation_ids(base.meta, base.tokenizer)
    return forgetting.measure_forgetting(base.model, tuned.model, val, base.tokenizer)


@cache.per_prompt
def own_answers(bundle_id: str, base_id: str | None, kind: str, word: str) -> tuple:
    b = cache.bundle(bundle_id)
    item = [Instruction(kind, word)]
    room = instruct.answer_room(b.tokenizer, item[0])
    after = instruct.answer_all(b.model, b.tokenizer, item, room)[0]
    if base_id is None:
        return None, after
    n_new = b.tokenizer.vocab_size - cache.bundle(base_id).tokenizer.vocab_size
    return instruct.answer_all(before_model(base_id, n_new), b.tokenizer, item, room)[0], after


def _open_tuned_model() -> None:
    state.set_value("model", TUNED_MODEL)
    state.set_value("prompt", Instruction("reverse", "bard").text)  # Tokenization shows its tokens


def _needs_template(ctx: PageContext) -> None:
    st.info(
        f"“{ctx.name}” has no chat template in its vocabulary: this part needs a model whose "
        "tokenizer has the special tokens `<|user|>`, `<|assistant|>` and `<|end|>` (one id "
        "each) and that was tuned on the instruction format, with the model it was tuned from "
        "bundled beside it for the “before”."
    )
    if TUNED_MODEL in models.discover():
        st.button(
            f"Open the instruction-tuned model “{TUNED_MODEL}”",
            key="use_open_tuned_model",
            icon=":material/swap_horiz:",
            on_click=_open_tuned_model,
        )


def _template(bundle: Bundle) -> None:
    example = instructions(1, seed=7, held_out=True)[0]
    st.markdown(
        "One turn of the template, token by token as this model reads it (dashed: a special "
        "token, one id each; hover a chip for its id):"
    )
    tok = bundle.tokenizer
    st.html(
        token_chips_html(display_tokens(tok, example.text), tok.unk_id, special=tok.special_ids)
    )


def _answer_text(answer: instruct.Answer | None, said: bool = True) -> str:
    """An answer as shown: line breaks as ↵, then <|end|> or " …" (cut). `said` (in a sentence)
    names an empty answer "(nothing)"; a table or code block shows it raw."""
    if answer is None:
        return "—"
    shown = answer.text.replace("\n", "↵") or ("(nothing)" if said else "")
    return shown + (END if answer.ended else " …")


def _scores(before, after) -> None:
    kinds = after.kinds()
    n = len(after.of_kind(kinds[0]))
    acc_a = after.exact_by_kind()
    acc_b = before.exact_by_kind() if before else {k: 0.0 for k in kinds}
    bases = [instruct.baseline([a.instruction for a in after.of_kind(k)]) for k in kinds]
    present.plot(
        cache.figure(
            charts.instruct_bars,
            kinds,
            [acc_b[k] for k in kinds],
            [acc_a[k] for k in kinds],
            [instruct.wilson(acc_b[k], n) for k in kinds],
            [instruct.wilson(acc_a[k], n) for k in kinds],
            bases,
        ),
        key="use_instruct_bars",
    )
    st.caption(
        f"{n} held-out instructions of each kind, on words never seen in tuning; an answer is "
        "exact when it is the right text followed by `<|end|>`. Whiskers: the Wilson score "
        "interval (about 95%), which unlike ±2 standard errors does not shrink to nothing at 0% "
        "or 100%. Dashes: the no-skill baseline (echo the word back; for *first*, also guess one "
        "letter: 1 in 26). The sentences below compare before and after with a two-proportion "
        "test (pooled standard error, |z| > 2)."
    )
    if before is not None:
        for k in kinds:
            claim = instruct.kind_claim(k, before, after)
            (st.success if claim.made else st.info)(claim.text)
        claim = instruct.stop_claim(before, after)
        (st.success if claim.made else st.info)(claim.text)


def _side_by_side(before, after) -> None:
    rows = []
    for k, a in enumerate(after.answers[:N_SHOWN]):
        rows.append(
            {
                "instruction": f"{a.instruction.kind}: {a.instruction.word}",
                "right answer": a.instruction.answer,
                "before tuning": _answer_text(before.answers[k] if before else None, False),
                "after tuning": _answer_text(a, False),
            }
        )
    parts.numbers_table(
        "Some held-out instructions and both models' greedy answers (… : no `<|end|>` within "
        f"{instruct.MAX_ANSWER} tokens; ↵ a line break):",
        rows,
    )


def _own(ctx: PageContext, base_id: str | None) -> None:
    lengths = f"{min(WORD_LENGTHS)}–{max(WORD_LENGTHS)}"
    st.markdown("**Your own instruction**, as *kind: word*: " + ", ".join(
        f"*{k}* ({v})" for k, v in INSTRUCTION_HELP.items()
    ) + f". The model was tuned only on words of {lengths} lowercase letters, so a longer or "
        "shorter word, or capitals, test whether the behaviour generalises.")  # fmt: skip
    raw = state.bind(
        st.text_input,
        "u_in_own",
        state.url_str("u_in_own", DEFAULT_INSTRUCTION, 40),
        "Instruction",
        max_chars=40,
    )
    item = parse_instruction(raw)
    if isinstance(item, str):
        st.warning(item)
        return
    tok = ctx.tokenizer
    unknown = sorted({p.text for p in tok.pieces(item.word) if p.id == tok.unk_id})
    if unknown:
        shown = ", ".join(f"“{c}”" for c in unknown)
        st.warning(
            f"{md_escape(shown)} is not in this model's vocabulary (it would read `<unk>`): use "
            "letters the model knows, e.g. lowercase a to z."
        )
        return
    before, after = own_answers(ctx.bundle_id, base_id, item.kind, item.word)
    verdict = "exact" if after.exact else f"not exact: the right answer is “{item.answer}”"
    st.markdown(
        f"After tuning: **{md_escape(_answer_text(after))}** ({md_escape(verdict)}); before "
        f"tuning: {md_escape(_answer_text(before))}. The tuned model's whole text, prompt first"
        + (" (it answered nothing before `<|end|>`):" if not after.text else ":")
    )
    st.code(item.prompt + after.text + (END if after.ended else ""), language=None)


def _forgetting(ctx: PageContext, base: str, base_id: str) -> None:
    precision = models.split_precision(ctx.bundle_id)[1]
    st.markdown(
        f"**What tuning cost.** Tuning trains only on instructions, so the model may lose what it "
        f"knew: both models read the same windows of “{md_escape(base)}”'s own validation text "
        "(Shakespeare for the bundled pair)"
        + (f", both stored as {precision}." if precision else ".")
    )
    measured = forgetting_measured(ctx.bundle_id, base_id)
    if measured is None:
        st.info("The tuned vocabulary does not extend the base's id for id, so the two models "
                "cannot read the same text here.")  # fmt: skip
        return
    claim = forgetting.forgetting_claim(measured, base)
    (st.warning if claim.made else st.info)(claim.text)
    st.markdown(
        "Real instruction tuning mixes pretraining text into the tuning batches (and tunes far "
        "longer on far more varied instructions) to limit this *catastrophic forgetting*."
    )


def _precision_ids(ctx: PageContext, base_id: str | None) -> str | None:
    """The base at the precision the page shows the tuned model in, so both are measured alike."""
    precision = models.split_precision(ctx.bundle_id)[1]
    return models.with_precision(base_id, precision) if base_id and precision else base_id


def draw(ctx: PageContext) -> None:
    st.markdown(
        "A pretrained model continues text; an assistant answers. **Instruction tuning** is "
        "ordinary training on text written in a *chat template*: "
        "`<|user|>reverse: bard<|assistant|>drab<|end|>`. The **special tokens** mark who speaks "
        "and where an answer ends, each one id the base model never had (its embedding grows "
        "by one row per token, started at the mean row). Tuning teaches a format and a "
        "behaviour: answer the instruction, then write `<|end|>`, so the model learns to stop. "
        f"The bundled “{TUNED_MODEL}” is a Shakespeare character model tuned for a few CPU "
        "minutes on four instructions over random letters, and on nothing else (what that cost "
        "its Shakespeare is measured below)."
    )
    if not instruct.has_template(ctx.tokenizer):
        _needs_template(ctx)
        return
    _template(ctx.bundle)
    base = _base_name(ctx.bundle)
    base_id = _precision_ids(ctx, _bundle_id(base) if base else None)
    precision = models.split_precision(ctx.bundle_id)[1]
    if base is None:
        st.info(
            f"“{ctx.name}” does not name a bundled base model (meta “base”), so only the tuned "
            "model's answers are shown, with no “before”."
        )
    before, after = reports(ctx.bundle_id, base_id)
    if base is not None:
        st.markdown(
            f"**Before**: “{md_escape(base)}” with the new rows, the tune's step 0; "
            f"**after**: “{md_escape(ctx.name)}”"
            + (f"; both stored as **{precision}** (the sidebar's Precision)." if precision else ".")
            + " The held-out words were never in the tuning text."
        )
    _scores(before, after)
    _side_by_side(before, after)
    if base is not None and base_id is not None:
        _forgetting(ctx, base, base_id)
    _own(ctx, base_id)
    with parts.numbers_behind_it() as opened:
        if opened:  # built only while open
            _shares_table(before, after)


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{share:.0%}"


def _shares_table(before, after) -> None:
    n = len(after.of_kind(after.kinds()[0]))
    exact_b = before.exact_by_kind() if before else {}
    starts_b = before.starts_right_by_kind() if before else {}
    parts.numbers_table(
        f"Per kind, of {n} held-out instructions each: exact (the answer, then `<|end|>`), "
        "starts right (the answer at the start, stopped or not), and the no-skill baseline:",
        [
            {
                "kind": k,
                "exact: before → after": f"{_pct(exact_b.get(k))} → "
                f"{_pct(after.exact_by_kind()[k])}",
                "starts right: before → after": f"{_pct(starts_b.get(k))} → "
                f"{_pct(after.starts_right_by_kind()[k])}",
                "baseline": _pct(instruct.baseline([a.instruction for a in after.of_kind(k)])),
            }
            for k in after.kinds()
        ],
    )
