"""What an answer is: the model's own, and how a student's answer is checked against it.

An answer kind (kinds.py) measures the model on screen and returns a `Truth`: the value, how a
student answers (a choice, a number or a token), and the reveal, a sentence that says the truth and
why. When the observation a lesson expects does not hold on this model (no head copies beyond
chance, the loss did not fall), `holds` is False and the reveal says so instead of asserting it;
the student's answer is still checked against what the model does.

    truth = Truth("choice", "L1 H2", options=("L1 H0", "L1 H1", "L1 H2", "none"), why="...")
    truth.check("L1 H2")   # True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Form = Literal["choice", "number", "token"]
FORMS: tuple[Form, ...] = ("choice", "number", "token")
# How a student may type a token that is whitespace (a text box cannot show a bare space).
WHITESPACE_NAMES = {" ": ("space", "␣", " "), "\n": ("newline", "\\n", "↵", "⏎")}


@dataclass(frozen=True)
class Truth:
    """The model's answer to one question.

    form: how the student answers: pick one of `options`, type a number, or type a token.
    value: the model's answer (an option, a number, a token's text).
    why: the reveal in Markdown: the truth and what it was measured on (user text escaped).
    holds: False when the lesson's expected observation does not hold on this model; `why` then
        says what was measured instead.
    tolerance: for numbers, how far from `value` still counts as right (absolute).
    numbers: every number the reveal states or was decided on, so a test can recompute it.
    """

    form: Form
    value: str | float
    why: str
    options: tuple[str, ...] = ()
    holds: bool = True
    tolerance: float = 0.0
    unit: str = ""
    numbers: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, not {self.form!r}")
        if self.form == "choice" and self.value not in self.options:
            raise ValueError(f"the answer {self.value!r} is not among the options {self.options}")

    def check(self, answer: str | float | None) -> bool:
        """Whether a student's answer agrees with the model's."""
        if answer is None:
            return False
        if self.form == "number":
            try:
                number = float(answer)
            except (TypeError, ValueError):
                return False
            return math.isfinite(number) and abs(number - float(self.value)) <= self.tolerance
        if self.form == "token":
            return same_token(str(answer), str(self.value))
        return str(answer) == str(self.value)

    def shown(self) -> str:
        """The value as the reveal prints it."""
        if self.form == "number":
            text = f"{float(self.value):.4g}"
            return f"{text} {self.unit}".strip()
        if self.form == "token":
            return visible_token(str(self.value))
        return str(self.value)


def same_token(typed: str, token: str) -> bool:
    """A typed token against the model's: exact, with ␣ and ↵ standing for a space and a newline,
    or a whitespace token typed by its name ("space", "newline"). A leading space counts: ' the'
    and 'the' are different tokens, which is one of the lessons."""
    spelled = typed.replace("␣", " ").replace("↵", "\n")
    if spelled == token or typed == token:
        return True
    names = WHITESPACE_NAMES.get(token, ())
    return typed.strip().lower() in {n.strip().lower() for n in names if n.strip()}


def head_names(L: int, H: int) -> tuple[str, ...]:
    """'L0 H0', 'L0 H1', ... as the Attention page names heads: the options of a head question."""
    return tuple(f"L{a} H{b}" for a in range(L) for b in range(H))


def visible_token(token: str) -> str:
    """A token as a reveal prints it: a space as ␣, a newline as ↵, inside quotes."""
    return "'" + token.replace(" ", "␣").replace("\n", "↵") + "'"


MOST_DECIMALS = 6  # a reveal prints no number to more decimals than this


def apart(a: float, b: float, digits: int = 2) -> int:
    """The fewest decimals, `digits` or more, at which a and b print differently: a reveal that
    names a winner prints it apart from the runner-up ("0.26; the next at 0.26" names a tie).

    >>> apart(0.2712, 0.2587), apart(0.2612, 0.2587), apart(0.2612, 0.2587, 1)
    (2, 3, 3)
    """
    for d in range(digits, MOST_DECIMALS + 1):
        if f"{a:.{d}f}" != f"{b:.{d}f}":
            return d
    return MOST_DECIMALS


def nonzero(values, digits: int = 2) -> int:
    """The fewest decimals, `digits` or more, at which none of `values` that is not 0 prints as
    0 (random weights write logit changes of a thousandth: "+0.00" for each says nothing).

    >>> nonzero([0.0012, -0.0031]), nonzero([0.5, 0.0])
    (3, 2)
    """
    for d in range(digits, MOST_DECIMALS + 1):
        if all(v == 0 or float(f"{v:.{d}f}") != 0 for v in values):
            return d
    return MOST_DECIMALS
