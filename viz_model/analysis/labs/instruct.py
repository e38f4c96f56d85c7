"""Instruction tuning, before and after: held-out instructions answered greedily by two models.

Each instruction (text/instructions.py) is given as its template prompt,
"<|user|>reverse: bard<|assistant|>", and the model answers greedily until it writes <|end|> or
MAX_ANSWER tokens. An answer is exact when its text before <|end|> equals the instruction's answer;
it stopped by itself when it wrote <|end|>. The claims compare the tuned model with the model
before tuning (the base grown by extend_vocab: the fine-tune's step 0) on the same held-out items:
a difference is said only when a two-proportion test (pooled standard error) gives z > Z, and a
tuned accuracy only when its Wilson interval lies above a simple baseline (echoing the word back;
for "first", also guessing one letter, 1 in 26).

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
def _greedy(
    model: torch.nn.Module, prompts: list[list[int]], end_id: int, max_answer: int
) -> list[list[int]]:
    """Greedy continuations of equal-length prompts, each cut after end_id or max_answer tokens."""
    x = torch.tensor(prompts, dtype=torch.long, device=device_of(model))  # (B, T)
    done = torch.zeros(len(prompts), dtype=torch.bool, device=x.device)
    for _ in range(max_answer):
        nxt = model(x)[:, -1, :].argmax(-1)  # (B, T, V) -> (B,)
        x = torch.cat([x, nxt[:, None]], dim=1)
        done |= nxt == end_id
        if done.all():
            break
    out = []
    for row in x[:, len(prompts[0]) :].tolist():
        out.append(row[: row.index(end_id) + 1] if end_id in row else row)
    return out


def answer_all(
    model: torch.nn.Module, tokenizer, items: list[Instruction], max_answer: int = MAX_ANSWER
) -> list[Answer]:
    """Each instruction's greedy answer, batched by prompt length (one forward a token a batch),
    cut at max_answer tokens (an own instruction's long word needs more: `answer_room`)."""
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
            for k, ids in zip(
                ks, _greedy(model, [encoded[k] for k in ks], end_id, max_answer), strict=True
            ):
                ended = bool(ids) and ids[-1] == end_id
                text = tokenizer.decode(ids[:-1] if ended else ids)
                answers[k] = Answer(items[k], text, ended)
    finally:
        model.train(was_training)
    return answers  # type: ignore[return-value]


def answer_room(tokenizer, item: Instruction) -> int:
    """Tokens an answer to `item` may run: MAX_ANSWER, or the right answer's length plus two
    when that is longer ("twice" on 12 letters is 24), so a long word can still be exact."""
    return max(MAX_ANSWER, len(tokenizer.encode(item.answer)) + 2)


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


def wilson(p: float, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a share p on n items: unlike p ± z·stderr it is not zero wide
    at 0% or 100% (25 of 25 right still leaves room below), and stays within 0 and 1.

    >>> [round(x, 3) for x in wilson(1.0, 25)]
    [0.862, 1.0]
    """
    if not n:
        return 0.0, 1.0
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def two_proportion_z(a: float, n_a: int, b: float, n_b: int) -> tuple[float, float]:
    """(z, pooled standard error) of the difference a - b of two shares, the standard test: under
    "no difference" both come from one pooled share. z is 0 when the pooled share is 0 or 1."""
    pooled = (a * n_a + b * n_b) / (n_a + n_b) if n_a + n_b else 0.0
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b)) if n_a and n_b else 0.0
    return ((a - b) / se if se else 0.0), se


TEST = f"two-proportion test, pooled standard error, |z| > {Z:g}"


def kind_claim(kind: str, before: InstructReport, after: InstructReport) -> Claim:
    """Whether tuning made this kind of held-out instruction exact: the tuned share above the
    model before tuning by a two-proportion test (|z| > Z), and the tuned share's Wilson interval
    wholly above the baseline."""
    items = [a.instruction for a in after.of_kind(kind)]
    n, n_b = len(items), len(before.of_kind(kind))
    a, b = after.exact_by_kind().get(kind, 0.0), before.exact_by_kind().get(kind, 0.0)
    base = baseline(items)
    z, pooled_se = two_proportion_z(a, n, b, n_b)
    low = wilson(a, n)[0]
    numbers = {"after": a, "before": b, "n": n, "n_before": n_b, "baseline": base, "z": z,
               "pooled_se": pooled_se, "after_low": low}  # fmt: skip
    made = z > Z and low > base
    plural = KIND_PLURAL[kind]
    said = f"after tuning {a:.0%} of {n} held-out {plural} are exact, before {b:.0%}"
    if made:
        return Claim(
            f"Tuning taught {plural}: {said} (two-proportion z = {z:.1f} > {Z:g}; the Wilson "
            f"interval's low end {low:.0%} is above the baseline {base:.0%}).",
            True,
            numbers,
        )
    return Claim(
        f"No clear gain on {plural}: {said}; a gain needs z > {Z:g} (here {z:.1f}; {TEST}) and "
        f"the Wilson interval (low end {low:.0%}) above the baseline ({base:.0%}).",
        False,
        numbers,
    )


def stop_claim(before: InstructReport, after: InstructReport) -> Claim:
    """Whether the tuned model learned to stop: its share of answers ending in <|end|> above the
    model before tuning by a two-proportion test (|z| > Z)."""
    n, n_b = len(after.answers), len(before.answers)
    a, b = after.stop_share(), before.stop_share()
    z, pooled_se = two_proportion_z(a, n, b, n_b)
    numbers = {"after": a, "before": b, "n": n, "n_before": n_b, "z": z, "pooled_se": pooled_se}
    end = md_escape(END)
    said = f"{a:.0%} of the tuned model's {n} answers end in {end}, before tuning {b:.0%}"
    if z > Z:
        return Claim(
            f"The tuned model learned to stop by itself: {said} (two-proportion z = {z:.1f} > "
            f"{Z:g}).",
            True,
            numbers,
        )
    return Claim(
        f"No clear change in stopping: {said} (a change needs z > {Z:g}, here {z:.1f}; {TEST}).",
        False,
        numbers,
    )
