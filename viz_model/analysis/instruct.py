"""Instruction tuning, before and after: held-out instructions answered greedily by two models.

Each instruction (text/instructions.py) is given as its template prompt,
"<|user|>reverse: bard<|assistant|>", and the model answers greedily until it writes <|end|> or
MAX_ANSWER tokens. An answer is exact when its text before <|end|> equals the instruction's answer;
it stopped by itself when it wrote <|end|>. The claims compare the tuned model with the model
before tuning (the base grown by extend_vocab: the fine-tune's step 0) on the same held-out items:
a difference is said only beyond Z binomial standard errors of the difference, and a tuned
accuracy only above a simple baseline (echoing the word back; for "first", also guessing one
letter, 1 in 26).

Not here: the template and the words (text/instructions.py), the page (ui/usage/instruct.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import torch

from viz_model.analysis.claims import Claim, md_escape
from viz_model.model.decoding import device_of
from viz_model.text.instructions import (
    END,
    INSTRUCTIONS,
    LETTERS,
    SPECIAL_TOKENS,
    Instruction,
)

MAX_ANSWER = 16  # tokens: the longest answer ("twice" on 5 letters) is 10, then <|end|>
N_HELD_OUT = 100  # held-out instructions the page asks, 25 of each kind
Z = 2.0  # a difference counts when it is more than two standard errors
KIND_PLURAL = {"reverse": "reversals", "upper": "capitalisations", "twice": "doublings",
               "first": "first letters"}  # fmt: skip


def has_template(tokenizer) -> bool:
    """Whether every special token of the template is one token of this tokenizer."""
    return all(tokenizer.token_to_id(t) is not None for t in SPECIAL_TOKENS)


@dataclass(frozen=True)
class Answer:
    """A model's greedy answer to one instruction: its text before <|end|>, whether it ended."""

    instruction: Instruction
    text: str
    ended: bool

    @property
    def exact(self) -> bool:
        """The right answer, then <|end|>: what the tuned format asks for."""
        return self.ended and self.text == self.instruction.answer

    @property
    def starts_right(self) -> bool:
        """The right answer at the start, stopped or not (a model that never learned to stop)."""
        return self.text.startswith(self.instruction.answer)


@torch.no_grad()
def _greedy(model: torch.nn.Module, prompts: list[list[int]], end_id: int) -> list[list[int]]:
    """Greedy continuations of equal-length prompts, each cut after end_id or MAX_ANSWER tokens."""
    x = torch.tensor(prompts, dtype=torch.long, device=device_of(model))  # (B, T)
    done = torch.zeros(len(prompts), dtype=torch.bool, device=x.device)
    for _ in range(MAX_ANSWER):
        nxt = model(x)[:, -1, :].argmax(-1)  # (B, T, V) -> (B,)
        x = torch.cat([x, nxt[:, None]], dim=1)
        done |= nxt == end_id
        if done.all():
            break
    out = []
    for row in x[:, len(prompts[0]) :].tolist():
        out.append(row[: row.index(end_id) + 1] if end_id in row else row)
    return out


def answer_all(model: torch.nn.Module, tokenizer, items: list[Instruction]) -> list[Answer]:
    """Each instruction's greedy answer, batched by prompt length (one forward a token a batch)."""
    if not has_template(tokenizer):
        raise ValueError("this tokenizer has no template tokens: <|user|>, <|assistant|>, <|end|>")
    was_training = model.training
    model.eval()  # no dropout while answering
    end_id = tokenizer.token_to_id(END)
    encoded = [tokenizer.encode(i.prompt) for i in items]
    by_len: dict[int, list[int]] = defaultdict(list)
    for k, ids in enumerate(encoded):
        by_len[len(ids)].append(k)
    answers: list[Answer | None] = [None] * len(items)
    try:
        for ks in by_len.values():
            for k, ids in zip(ks, _greedy(model, [encoded[k] for k in ks], end_id), strict=True):
                ended = bool(ids) and ids[-1] == end_id
                text = tokenizer.decode(ids[:-1] if ended else ids)
                answers[k] = Answer(items[k], text, ended)
    finally:
        model.train(was_training)
    return answers  # type: ignore[return-value]


@dataclass(frozen=True)
class InstructReport:
    """The answers of one model to a list of instructions, and what they add up to."""

    answers: list[Answer]

    def kinds(self) -> list[str]:
        return [k for k in INSTRUCTIONS if any(a.instruction.kind == k for a in self.answers)]

    def of_kind(self, kind: str) -> list[Answer]:
        return [a for a in self.answers if a.instruction.kind == kind]

    def exact_by_kind(self) -> dict[str, float]:
        return {k: _share([a.exact for a in self.of_kind(k)]) for k in self.kinds()}

    def starts_right_by_kind(self) -> dict[str, float]:
        return {k: _share([a.starts_right for a in self.of_kind(k)]) for k in self.kinds()}

    def stop_share(self) -> float:
        """The share of answers that ended with <|end|> within MAX_ANSWER tokens."""
        return _share([a.ended for a in self.answers])


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def evaluate_instructions(
    model: torch.nn.Module, tokenizer, items: list[Instruction]
) -> InstructReport:
    return InstructReport(answer_all(model, tokenizer, items))


def baseline(items: list[Instruction]) -> float:
    """What a model does with no skill: echo the word back (exact when the answer is the word),
    or, for "first", guess one letter (1 in 26) when that scores more."""
    echo = _share([i.answer == i.word for i in items])
    guess = 1 / len(LETTERS) if items and items[0].kind == "first" else 0.0
    return max(echo, guess)


def stderr(p: float, n: int) -> float:
    """The binomial standard error of a share p measured on n items."""
    return math.sqrt(p * (1 - p) / n) if n else 0.0


def kind_claim(kind: str, before: InstructReport, after: InstructReport) -> Claim:
    """Whether tuning made this kind of held-out instruction exact: the tuned share above the
    model before tuning by more than Z standard errors of the difference, and above the baseline
    by more than Z of its own."""
    items = [a.instruction for a in after.of_kind(kind)]
    n = len(items)
    a, b = after.exact_by_kind().get(kind, 0.0), before.exact_by_kind().get(kind, 0.0)
    base = baseline(items)
    diff_se = math.hypot(stderr(a, n), stderr(b, n))
    numbers = {"after": a, "before": b, "n": n, "baseline": base, "diff_se": diff_se,
               "after_se": stderr(a, n)}  # fmt: skip
    made = a - b > Z * diff_se and a > base + Z * stderr(a, n)
    plural = KIND_PLURAL[kind]
    said = f"after tuning {a:.0%} of {n} held-out {plural} are exact, before {b:.0%}"
    if made:
        return Claim(f"Tuning taught this one: {said} (baseline {base:.0%}).", True, numbers)
    return Claim(
        f"No clear gain on {plural}: {said}; a gain needs more than {Z:g} standard errors "
        f"(here {diff_se:.0%}) and beating the baseline ({base:.0%}).",
        False,
        numbers,
    )


def stop_claim(before: InstructReport, after: InstructReport) -> Claim:
    """Whether the tuned model learned to stop: its share of answers ending in <|end|> above the
    model before tuning by more than Z standard errors of the difference."""
    n = len(after.answers)
    a, b = after.stop_share(), before.stop_share()
    diff_se = math.hypot(stderr(a, n), stderr(b, len(before.answers)))
    numbers = {"after": a, "before": b, "n": n, "diff_se": diff_se}
    end = md_escape(END)
    said = f"{a:.0%} of the tuned model's {n} answers end in {end}, before tuning {b:.0%}"
    if a - b > Z * diff_se:
        return Claim(f"The tuned model learned to stop by itself: {said}.", True, numbers)
    return Claim(
        f"No clear change in stopping: {said} (a change needs more than {Z:g} standard errors, "
        f"here {diff_se:.0%}).",
        False,
        numbers,
    )
