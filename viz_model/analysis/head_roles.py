"""What each attention head is for, as claims: a role is named only when its score beats chance.

A head's role (previous-token, induction, first-token sink, self, "looks k back", and "looks k
ahead" in a model without a causal mask) is a claim about the model on screen (docs/ARCHITECTURE.md,
Claims). `role_tests(scores, layer, head, induction)` lists the evidence for every role of one head:
its score, what the same head would score by chance (analysis/attention.py's `head_scores`:
even attention over the keys each query may read; for induction also the shuffled-token
control), and on how many query positions it was measured. A role is claimed when

    eligible >= MIN_ELIGIBLE and score >= ROLE_THRESHOLD and score - chance >= CHANCE_MARGIN

`head_role_claim` returns the Claim for one head: the role with the strongest score among those
that pass, or a neutral sentence ("no role beyond chance") that says what was measured, with
the head's spread (entropy against even attention's) instead. Induction is judged on the
repeated random sequence by default (pass its scores as `induction`); the prompt's own
induction score is kept beside it as a `RoleTest` measured "on your prompt".

    claim = head_role_claim(prompt_scores, 1, 2, induction=random_scores)
    claim.made, claim.text   # True, "**L1 H2 is an induction head**: on the repeated ..."

Not here: the scores themselves (analysis/attention.py), charts, anything streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from viz_model.analysis.attention import HeadScores
from viz_model.analysis.claims import Claim

ROLE_THRESHOLD = 0.4  # a role's score: at least this share of the head's attention
CHANCE_MARGIN = 0.2  # ... and at least this much above what the head would score by chance
MIN_ELIGIBLE = 5  # ... measured on at least this many query positions
# A head with no role is "mixed" when its entropy is over this share of even attention's (the
# entropy of attending equally to every key it may read), else "sharp, other".
SPREAD_FRACTION = 0.5
NAMED = ("previous-token", "induction", "first-token sink", "self")
ON_PROMPT = "your prompt"
ON_RANDOM = "the repeated random sequence"

# One sentence per role, for the page's list.
ROLE_EXPLANATIONS = {
    "previous-token": "Each token looks mostly at the token just before it (position t-1).",
    "induction": (
        "A token looks at whatever followed an earlier copy of itself, so the model can continue a "
        "pattern it has seen before ('A B ... A' -> look at B)."
    ),
    "first-token sink": (
        "Attention piles up on position 0, a resting place when the head has nothing useful to do."
    ),
    "self": "Each token looks mostly at itself.",
    "looks k back": (
        "Each token looks mostly at the token k positions before it (k = 2 or more): a fixed "
        "offset, whatever the tokens are. (k = 1 is previous-token, k = 0 is self.)"
    ),
    "looks k ahead": (
        "Only without a causal mask: each token looks mostly at the token k positions after it. "
        "At k = 1 that is the very token the model is asked to predict: it reads the answer."
    ),
    "sharp, other": (
        "No role beats chance, yet the attention is sharp (entropy under "
        f"{SPREAD_FRACTION:.0%} of even attention's): the head picks a few tokens by some rule "
        "not named here. Look at its pattern."
    ),
    "mixed": (
        "No role beats chance and the attention is spread (entropy at least "
        f"{SPREAD_FRACTION:.0%} of even attention's): the head blends many tokens."
    ),
}

# What a role's score measures, for sentences: "puts 0.93 of its attention on {where}".
_WHERE = {
    "previous-token": "the token just before",
    "first-token sink": "position 0",
    "self": "the token itself",
    "induction": "the token that followed an earlier copy of the current one",
}
_TITLE = {
    "previous-token": "is a previous-token head",
    "first-token sink": "is a first-token sink",
    "self": "looks at itself",
    "induction": "is an induction head",
}


@dataclass(frozen=True)
class RoleTest:
    """The evidence for one role of one head: score, its chance, and how many query positions.

    role: a NAMED role, "looks k back" or "looks k ahead" with k filled in; measured_on: ON_PROMPT
    or ON_RANDOM; chance: what the same head would score by chance (see analysis/attention.py's
    HeadScores.chance); eligible: query positions the score averages over.
    """

    role: str
    score: float
    chance: float
    eligible: int
    measured_on: str = ON_PROMPT

    @property
    def measured(self) -> bool:
        return not math.isnan(self.score) and not math.isnan(self.chance)

    @property
    def passed(self) -> bool:
        """The role may be claimed: enough positions, a large share, well above chance."""
        # decided on the two decimals the page prints, so "0.40" never reads as under 0.4
        score, chance = round(self.score, 2), round(self.chance, 2)
        return (
            self.measured
            and self.eligible >= MIN_ELIGIBLE
            and score >= ROLE_THRESHOLD
            and round(score - chance, 2) >= CHANCE_MARGIN
        )

    def why_not(self) -> str:
        """Why this role is not claimed, in words (for the neutral sentence)."""
        if not self.measured:
            return "not measurable"
        if self.eligible < MIN_ELIGIBLE:
            return f"measured on only {self.eligible} positions (at least {MIN_ELIGIBLE} needed)"
        if round(self.score, 2) < ROLE_THRESHOLD:
            return f"under {ROLE_THRESHOLD}"
        return f"not {CHANCE_MARGIN} above chance"


def _offset_test(scores: HeadScores, layer: int, head: int, ahead: bool) -> RoleTest | None:
    if ahead:
        k, score = scores.fixed_offset_ahead()
        chance, eligible = scores.looks_ahead_chance, scores.looks_ahead_eligible
    else:
        k, score = scores.fixed_offset()
        chance, eligible = scores.looks_back_chance, scores.looks_back_eligible
    k, score = int(k[layer, head]), float(score[layer, head])
    if math.isnan(score) or chance is None:
        return None
    word = "ahead" if ahead else "back"
    return RoleTest(f"looks {k} {word}", score, float(chance[k]), int(eligible[k]))


def role_tests(
    scores: HeadScores, layer: int, head: int, induction: HeadScores | None = None
) -> list[RoleTest]:
    """Every role's evidence for head (layer, head): the named roles on the prompt (induction on
    `induction`'s sequence when given, the repeated random one), then the best offset back (and
    ahead, without a causal mask). The prompt's own induction test comes last when `induction`
    is given, so it is shown but does not name the role."""
    source = scores if induction is None else induction
    where = ON_PROMPT if induction is None else ON_RANDOM
    tests = []
    for role, values in scores.by_role().items():
        s = source if role == "induction" else scores
        value = s.induction if role == "induction" else values
        tests.append(
            RoleTest(
                role,
                float(value[layer, head]),
                float(s.chance[role][layer, head]),
                int(s.eligible[role]),
                where if role == "induction" else ON_PROMPT,
            )
        )
    for ahead in (False, True):
        test = _offset_test(scores, layer, head, ahead)
        if test is not None:
            tests.append(test)
    if induction is not None:
        tests.append(prompt_induction_test(scores, layer, head))
    return tests


def prompt_induction_test(scores: HeadScores, layer: int, head: int) -> RoleTest:
    """The induction evidence on the prompt itself (shown beside the random sequence's)."""
    return RoleTest(
        "induction",
        float(scores.induction[layer, head]),
        float(scores.chance["induction"][layer, head]),
        int(scores.eligible["induction"]),
        ON_PROMPT,
    )


def deciding(tests: list[RoleTest], induction_given: bool) -> list[RoleTest]:
    """The tests that may name the role: all but the prompt's induction when a random sequence
    measured induction instead."""
    if not induction_given:
        return tests
    return [t for t in tests if not (t.role == "induction" and t.measured_on == ON_PROMPT)]


def _chosen(tests: list[RoleTest]) -> RoleTest | None:
    """The role to name: the highest-scoring passed named role, else the passed offset."""
    passed = [t for t in tests if t.passed]
    named = [t for t in passed if t.role in NAMED]
    pool = named or passed
    return max(pool, key=lambda t: t.score) if pool else None


def spread_label(entropy: float, even_entropy: float) -> str:
    """The label of a head with no role: mixed when its entropy is at least SPREAD_FRACTION of
    even attention's, else sharp, other."""
    if not even_entropy > 0 or math.isnan(entropy):
        return "mixed"
    return "mixed" if entropy / even_entropy >= SPREAD_FRACTION else "sharp, other"


def _role_sentence(name: str, t: RoleTest) -> str:
    """The sentence that names a passed role, with its score, its chance and its positions."""
    if t.role.startswith("looks"):
        _, k, word = t.role.split()
        plural = "" if k == "1" else "s"
        what = f"the token {k} position{plural} {'before' if word == 'back' else 'after'}"
        title = f"**{name} {t.role}**"
    else:
        what, title = _WHERE[t.role], f"**{name} {_TITLE[t.role]}**"
    if t.role == "induction":
        baseline = "chance (even attention, or the shuffled-token control if higher) is"
    else:
        baseline = "even attention over the tokens it may read would put"
    text = (
        f"{title}: on {t.measured_on} it puts {t.score:.2f} of its attention on {what}, where "
        f"{baseline} {t.chance:.2f} (over {t.eligible} query positions)."
    )
    if t.role.endswith("ahead"):
        text += " A causal mask would hide that token."
    return text


def head_role_claim(
    scores: HeadScores, layer: int, head: int, induction: HeadScores | None = None
) -> Claim:
    """The claim for one head: its role when one passes (see the module docstring), else a
    neutral sentence naming the strongest score and why it is not a role."""
    name = f"L{layer} H{head}"
    tests = role_tests(scores, layer, head, induction)
    decide = deciding(tests, induction is not None)
    chosen = _chosen(decide)
    entropy = float(scores.entropy[layer, head])
    numbers = {
        "threshold": ROLE_THRESHOLD,
        "margin": CHANCE_MARGIN,
        "min_eligible": MIN_ELIGIBLE,
        "entropy": entropy,
        "even_entropy": float(scores.even_entropy),
        "spread_fraction": SPREAD_FRACTION,
    }
    for t in tests:
        key = "looks back" if t.role.endswith("back") else t.role
        key = "looks ahead" if t.role.endswith("ahead") else key
        if t.role == "induction" and induction is not None:
            key = "induction" if t.measured_on == ON_RANDOM else "induction on prompt"
        numbers |= {f"{key} score": t.score, f"{key} chance": t.chance}
        numbers[f"{key} eligible"] = t.eligible
    if chosen is not None:
        return Claim(_role_sentence(name, chosen), True, numbers)
    measured = [t for t in decide if t.measured]
    spread = spread_label(entropy, scores.even_entropy)
    how = "spread" if spread == "mixed" else "sharp"
    tail = (
        f" Its attention is {how}: entropy {entropy:.2f} nats, against "
        f"{scores.even_entropy:.2f} for even attention."
        if math.isfinite(entropy) and math.isfinite(scores.even_entropy)
        else ""
    )
    if not measured:
        return Claim(
            f"**{name}: no role beyond chance** (nothing measurable).{tail}", False, numbers
        )
    best = max(measured, key=lambda t: t.score)
    shown = max((t for t in tests if t.measured), key=lambda t: t.score)  # the table's highest
    if round(shown.score, 2) > round(best.score, 2):  # the prompt's induction, which names none
        text = (
            f"**{name}: no role beyond chance.** Its highest score, {shown.role} "
            f"{shown.score:.2f} on {shown.measured_on} (chance {shown.chance:.2f}), names no "
            f"role: induction is judged on {ON_RANDOM}. Of the scores that do, the highest, "
            f"{best.role} {best.score:.2f} on {best.measured_on} (chance {best.chance:.2f}), is "
            f"{best.why_not()}.{tail}"
        )
        return Claim(text, False, numbers)
    text = (
        f"**{name}: no role beyond chance.** Its highest score, {best.role} {best.score:.2f} "
        f"on {best.measured_on} (chance {best.chance:.2f}), is {best.why_not()}.{tail}"
    )
    return Claim(text, False, numbers)


def head_roles(scores: HeadScores, induction: HeadScores | None = None) -> list[dict]:
    """One row per head for the page's table: its claim, the role it names (or "sharp, other" /
    "mixed" when none passes), and every test behind it."""
    L, H = scores.previous_token.shape
    rows = []
    for layer in range(L):
        for head in range(H):
            claim = head_role_claim(scores, layer, head, induction)
            tests = role_tests(scores, layer, head, induction)
            chosen = _chosen(deciding(tests, induction is not None))
            entropy = float(scores.entropy[layer, head])
            rows.append(
                {
                    "head": f"L{layer} H{head}",
                    "layer": layer,
                    "index": head,
                    "role": chosen.role if chosen else spread_label(entropy, scores.even_entropy),
                    "role score": chosen.score if chosen else math.nan,
                    "claim": claim,
                    "tests": tests,
                    "entropy (nats)": entropy,
                }
            )
    return rows
