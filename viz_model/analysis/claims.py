"""Claims: a sentence about the model on screen, computed from its numbers (docs/ARCHITECTURE.md, Claims).

A page never writes a finding as fixed prose ("this head is an induction head", "copying is half
learned by step N"): it calls a claim function, which measures, decides whether the finding may be
said, and returns a `Claim` holding the sentence and the numbers it came from. When the condition
does not hold the function still returns a Claim, with `made=False` and a neutral sentence that says
what was measured instead ("this model never learned to copy: ...").

    claim = copying_claim(curve)            # a function of measured numbers
    st.markdown(claim.text)                 # the page prints it
    assert claim.made == (claim.numbers["drop"] > claim.numbers["chance"])   # a test checks it

Not here: the measurements themselves (each analysis module), the words of teaching prose that do
not depend on the model.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Claim:
    """A sentence the app prints about the model on screen.

    text: the sentence as printed (Markdown; user text in it already escaped).
    made: True when the finding was stated; False when the neutral sentence was printed instead.
    numbers: every number the sentence states or was decided on (thresholds and chance baselines
        included), so a test can recompute the decision and compare the sentence with them.
    """

    text: str
    made: bool
    numbers: Mapping[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


# ":" too: Streamlit reads ":smile:" and ":material/home:" in Markdown and labels as icons
MARKDOWN_SPECIAL = "\\`*_{}[]()#+-.!|<>~$:"


# Characters that draw nothing but reorder the text drawn after them: a right-to-left override
# (U+202E) in a prompt mirrors the rest of the line, the app's own words included.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def show_controls(text: str) -> str:
    """Invisible control characters made visible as their code point in hex, so none acts on the
    page: the bidirectional controls, the C0 and C1 controls (newline and tab stay, for the
    caller to draw) and the line and paragraph separators. What user or token text passes
    through before it is drawn, in Markdown (`md_escape`), chips and labels (`show_whitespace`).

    >>> show_controls("ab\\u202ecd\\x07\\n")
    'ab<202e>cd<07>\\n'
    """
    return "".join(f"<{ord(c):02x}>" if _is_control(c) else c for c in text)


def _is_control(c: str) -> bool:
    return c in BIDI_CONTROLS or (unicodedata.category(c) in ("Cc", "Zl", "Zp") and c not in "\n\t")


def md_escape(text: str) -> str:
    """User or token text made safe inside a claim's Markdown: every character Markdown could
    read as syntax is backslash-escaped ("*" prints as itself), and every control character
    shows as its code point (`show_controls`). The one escaper the app uses."""
    return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in show_controls(text))


def times(x: float) -> str:
    """A factor in words a student can read: 14, 2,300, 4.1 million, 4.1 billion."""
    for size, word in ((1e9, "billion"), (1e6, "million")):
        if x >= size:
            return f"{x / size:,.1f} {word}"
    return f"{x:,.0f}"


def as_printed(x: float, digits: int = 2) -> float:
    """`x` as a sentence prints it to `digits` decimals. A difference or ratio a sentence states
    beside the numbers it prints is computed from these, so a reader who checks it finds the same
    (-6.46 against -7.82 is 1.36, not the 1.37 of the unrounded values)."""
    return float(f"{x:.{digits}f}")
