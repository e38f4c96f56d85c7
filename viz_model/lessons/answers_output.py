"""Answer kinds for the output lesson: the next-token distribution of the model on screen."""

from __future__ import annotations

import torch

from viz_model.analysis.claims import md_escape
from viz_model.analysis.tokens import token_text
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, visible_token


def _last_probs(subject: Subject) -> torch.Tensor:
    """(V,) the next-token probabilities after the prompt."""
    with torch.no_grad():
        logits = subject.bundle.model(torch.tensor(list(subject.ids), dtype=torch.long))
    return torch.softmax(logits[-1].double(), -1)


@answer_kind("token")
def top_next_token(subject: Subject) -> Truth:
    """The most likely next token after the prompt (temperature 1, nothing cut)."""
    probs = _last_probs(subject)
    top2 = torch.topk(probs, 2)
    tok = subject.bundle.tokenizer
    first, second = (token_text(tok, int(i)) for i in top2.indices)
    p1, p2 = (float(p) for p in top2.values)
    why = (
        f"The model gives {md_escape(visible_token(first))} probability **{p1:.2f}**; the "
        f"runner-up {md_escape(visible_token(second))} gets {p2:.2f}."
    )
    return Truth("token", first, why, numbers={"p_top": p1, "p_second": p2})
