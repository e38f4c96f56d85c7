"""Few-shot prompting on a task the model was trained on: accuracy against the number of examples.

The "fewshot" task (viz_model/text/data.py) writes lines of input>output pairs that all follow
one rule, chosen at random per line (copy, reverse, shift each letter). Nothing but the examples
says which rule a line follows, so a model that answers a query better after more examples has
learned to infer the rule from its prompt: in-context learning in miniature.

For k = 0, 1, ... examples, `fewshot_curve` writes many seeded prompts ("\\n" + k pairs + the
query word and ">"), reads the model's next three characters by teacher forcing (the argmax at
each position given the true ones before it: the same as greedy decoding while it is right),
and counts a prompt correct when all three are. Chance is what a model that knows the format
but not the rule can do: pick the likeliest output over the rules (`rule_blind_accuracy`).

Not here: the task's generator (text/data.py), the figures (ui/charts/usage.py).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from itertools import product

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.model.decoding import device_of, is_causal
from viz_model.text.data import (
    FEWSHOT_LETTERS,
    FEWSHOT_RULES,
    FEWSHOT_WORD_LEN,
    fewshot_pair,
    fewshot_pairs,
    fewshot_word,
)

TASK = "fewshot"
N_PROMPTS = 200
Z = 2.0  # a rise counts when it is more than two standard errors


def task_len_of(meta: dict) -> int | None:
    """The line length a bundle was trained on when it was trained on the few-shot task."""
    data = (meta or {}).get("data") or {}
    return int(data.get("task_len", 32)) if data.get("task") == TASK else None


def max_examples(task_len: int) -> int:
    """The most examples before a query that a training line held (its pairs minus the query)."""
    return fewshot_pairs(task_len) - 1


def make_prompts(k: int, n: int, seed: int) -> list[tuple[str, str]]:
    """n (prompt, answer) pairs with k examples each, a rule drawn per prompt; same seed, same
    prompts. fewshot prompt: "\\nabc>cba hed>deh fgb>" answer "bgf"."""
    rng = random.Random(f"fewshot:{seed}:{k}")
    out = []
    for _ in range(n):
        rule = rng.choice(list(FEWSHOT_RULES))
        pairs = [fewshot_pair(rule, fewshot_word(rng)) for _ in range(k)]
        query = fewshot_word(rng)
        out.append(("\n" + " ".join(pairs + [query + ">"]), FEWSHOT_RULES[rule](query)))
    return out


def rule_blind_accuracy() -> float:
    """The best accuracy without knowing the rule: for each query word, the output most rules
    agree on (copy and reverse agree on a palindrome), averaged over every word.

    >>> round(rule_blind_accuracy(), 3)  # 7/8 of words: 1/3; palindromes: 2/3
    0.375
    """
    words = ["".join(w) for w in product(FEWSHOT_LETTERS, repeat=FEWSHOT_WORD_LEN)]
    rules = list(FEWSHOT_RULES.values())
    best = [max(Counter(f(w) for f in rules).values()) / len(rules) for w in words]
    return float(np.mean(best))


@dataclass(frozen=True)
class FewShotCurve:
    ks: list[int]
    accuracy: np.ndarray  # (len(ks),) share of prompts whose whole answer was right
    loss: np.ndarray  # (len(ks),) mean -log p of an answer character, nats
    n_prompts: int
    chance: float

    def stderr(self, i: int) -> float:
        p = float(self.accuracy[i])
        return math.sqrt(max(p * (1 - p), 1e-12) / self.n_prompts)


@torch.no_grad()
def answer_scores(
    model: torch.nn.Module, encode, prompts: list[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt: whether every answer character was the argmax, and the mean -log p of them.
    The prompts of one call must have one length (a batched forward, (B, T) -> (B, T, V))."""
    if not is_causal(model):
        raise ValueError("few-shot answers are read in one pass: the model must be causal")
    seqs = [encode(p + a) for p, a in prompts]
    n_answer = len(prompts[0][1])
    x = torch.tensor(seqs, dtype=torch.long, device=device_of(model))
    logp = torch.log_softmax(model(x)[:, -n_answer - 1 : -1, :].double(), -1)  # (B, n, V)
    target = x[:, -n_answer:]  # (B, n)
    right = (logp.argmax(-1) == target).all(-1).cpu().numpy()
    nll = -logp.gather(-1, target[..., None])[..., 0].mean(-1).cpu().numpy()
    return right, nll


def fewshot_curve(
    model: torch.nn.Module, encode, k_max: int, n_prompts: int = N_PROMPTS, seed: int = 0
) -> FewShotCurve:
    """Accuracy and loss of the query's answer for 0..k_max examples, n_prompts each."""
    ks = list(range(k_max + 1))
    acc, loss = [], []
    for k in ks:
        right, nll = answer_scores(model, encode, make_prompts(k, n_prompts, seed))
        acc.append(right.mean())
        loss.append(nll.mean())
    return FewShotCurve(ks, np.array(acc), np.array(loss), n_prompts, rule_blind_accuracy())


def fewshot_claim(curve: FewShotCurve) -> Claim:
    """Whether accuracy rose with examples (last against none, beyond Z standard errors) to above
    the rule-blind chance (beyond Z standard errors too)."""
    first, last = float(curve.accuracy[0]), float(curve.accuracy[-1])
    k = curve.ks[-1]
    rise_se = math.hypot(curve.stderr(0), curve.stderr(len(curve.ks) - 1))
    numbers = {
        "accuracy_0": first,
        "accuracy_last": last,
        "examples": k,
        "chance": curve.chance,
        "rise_se": rise_se,
        "last_se": curve.stderr(len(curve.ks) - 1),
        "prompts": curve.n_prompts,
    }
    rose = last - first > Z * rise_se
    above = last > curve.chance + Z * numbers["last_se"]
    chance = (
        f"chance, for a model that knows the format but must guess the rule, is {curve.chance:.1%}"
    )
    said = f"{first:.0%} with no example, {last:.0%} with {k}"
    if rose and above:
        return Claim(
            f"Accuracy rises with the examples in the prompt: {said} (of {curve.n_prompts} "
            f"prompts each), above chance by more than {Z:g} standard errors ({chance}): the "
            "examples in its prompt help it find the rule.",
            True,
            numbers,
        )
    return Claim(
        f"Accuracy does not rise clearly beyond chance: {said} ({chance}; a rise needs more than "
        f"{Z:g} standard errors, here {rise_se:.0%}).",
        False,
        numbers,
    )
