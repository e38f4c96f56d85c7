"""A tiny instruction format: a chat template with special tokens over four word instructions.

    <|user|>reverse: bard<|assistant|>drab<|end|>

Instruction tuning teaches a format and a behaviour: `<|user|>` and `<|assistant|>` mark who
speaks, and `<|end|>` marks where an answer ends, so a tuned model learns to stop by emitting it.
The words are random lowercase letters (WORD_LENGTHS long), not Shakespeare's words, so an answer
can only come from doing the instruction, never from remembering a word. Every word is either a
training word or a held-out word, fixed by a hash of the word (`is_held_out`): the held-out
instructions are never trained on, whatever the seed, so accuracy on them measures the behaviour.

Not here: the tokenizer's special tokens (tokenization.py), the fine-tune (scripts/
instruction_tune.py), the evaluation (analysis/labs/instruct.py).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass

USER, ASSISTANT, END = "<|user|>", "<|assistant|>", "<|end|>"
SPECIAL_TOKENS = (USER, ASSISTANT, END)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORD_LENGTHS = (3, 4, 5)
HELD_OUT_SHARE = 5  # one word in five (by hash) is held out

INSTRUCTIONS: dict[str, Callable[[str], str]] = {
    "reverse": lambda word: word[::-1],
    "upper": str.upper,
    "twice": lambda word: word + word,
    "first": lambda word: word[0],
}
INSTRUCTION_HELP: dict[str, str] = {
    "reverse": "the word backwards",
    "upper": "the word in capital letters",
    "twice": "the word written twice",
    "first": "the word's first letter",
}


@dataclass(frozen=True)
class Instruction:
    """One instruction of `kind` on `word`; `prompt` ends where the model's answer starts."""

    kind: str
    word: str

    @property
    def prompt(self) -> str:
        return f"{USER}{self.kind}: {self.word}{ASSISTANT}"

    @property
    def answer(self) -> str:
        return INSTRUCTIONS[self.kind](self.word)

    @property
    def text(self) -> str:
        """The whole turn: prompt, answer, <|end|>; e.g. "<|user|>first: cab<|assistant|>c<|end|>"."""
        return f"{self.prompt}{self.answer}{END}"


def template_tokens_in(text: str) -> list[str]:
    """The template's special tokens that `text` contains, in template order.

    >>> template_tokens_in("<|user|>reverse: bard<|assistant|>"), template_tokens_in("ROMEO:")
    (['<|user|>', '<|assistant|>'], [])
    """
    return [t for t in SPECIAL_TOKENS if t in text]


def is_held_out(word: str) -> bool:
    """Whether `word` belongs to the held-out split: a fixed hash, the same for every seed."""
    return zlib.crc32(word.encode("utf-8")) % HELD_OUT_SHARE == 0


def _word(rng: random.Random, held_out: bool) -> str:
    while True:  # about 5 draws for a held-out word, 1.25 for a training word
        word = "".join(rng.choices(LETTERS, k=rng.choice(WORD_LENGTHS)))
        if is_held_out(word) == held_out:
            return word


def instructions(n: int, seed: int = 0, held_out: bool = False) -> list[Instruction]:
    """n instructions, kinds in turn (so each kind gets n / 4), on random words of one split."""
    rng = random.Random(f"instruct:{seed}:{'held' if held_out else 'train'}")
    kinds = list(INSTRUCTIONS)
    return [Instruction(kinds[i % len(kinds)], _word(rng, held_out)) for i in range(n)]


def instruct_text(n_examples: int, seed: int = 0) -> str:
    """The training text: n_examples training-split turns, one a line; same seed, same text."""
    rng = random.Random(f"instruct-text:{seed}")
    kinds = list(INSTRUCTIONS)
    return "".join(
        Instruction(rng.choice(kinds), _word(rng, False)).text + "\n" for _ in range(n_examples)
    )


def parse_instruction(text: str) -> Instruction | str:
    """A student's "reverse: bard" as an Instruction, or a message saying what is wrong with it."""
    kind, sep, word = text.strip().partition(":")
    kind, word = kind.strip().lower(), word.strip()
    if not sep or kind not in INSTRUCTIONS:
        return f"Write an instruction as kind: word, with kind one of {', '.join(INSTRUCTIONS)}."
    if not word:
        return "Give a word after the colon, e.g. reverse: bard."
    if any(t in word for t in SPECIAL_TOKENS) or any(t in kind for t in SPECIAL_TOKENS):
        shown = ", ".join(f"`{t}`" for t in SPECIAL_TOKENS if t in text)
        return (
            f"The word may not contain a special token ({shown}): chat systems strip them from "
            "what a user types, or a user could end the turn or speak as the assistant (prompt "
            "injection)."
        )
    if len(word) > 12:
        return "Keep the word to 12 letters or fewer: the model was tuned on words of 3 to 5."
    return Instruction(kind, word)
