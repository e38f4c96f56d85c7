"""Answer kinds for the text-to-tokens lesson: what the tokenizer of the model on screen does."""

from __future__ import annotations

from viz_model.analysis.claims import md_escape
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth


@answer_kind("number")
def token_count(subject: Subject, text: str = "") -> Truth:
    """How many tokens the tokenizer makes of `text` (the prompt on screen when empty)."""
    tokenizer = subject.bundle.tokenizer
    ids = tokenizer.encode(text) if text else list(subject.ids)
    what = f"“{md_escape(text)}”" if text else "the prompt"
    n_chars = len(text) if text else len(subject.prompt)
    why = (
        f"This model's {tokenizer.kind} tokenizer cuts {what} ({n_chars} characters) into "
        f"**{len(ids)} tokens**"
        + (f", {n_chars / len(ids):.2f} characters a token." if ids else ".")
    )
    return Truth("number", len(ids), why, numbers={"tokens": len(ids), "chars": n_chars})
