"""The parts of the Using a model page, one module each, every part a function of the page's
context that draws it: `title, draw = PARTS[name]; draw(ctx)`.

- forcing: teacher forcing (one pass, every loss) against free running (one pass a token), timed
- backtrack: force a token into a greedy continuation; the model never takes it back
- repetition: greedy, sampling and a repetition penalty, and how much each repeats
- beam: beam search with its beams at every step, against greedy
- scoring: candidate continuations ranked by total and per-token log-probability
- fewshot: accuracy against the number of examples in the prompt, on the few-shot task model
- noisy: spelling correction by the noisy channel, the model as the prior p(y)
- instruct: a chat template's special tokens, and held-out instructions before and after tuning
- hyperfit: a model trained to near-zero loss on a few pages against its base, greedy repetition

Not here: the page's intro and part radio (pages/19_using_a_model.py), the analyses
(viz_model.analysis.usage, scoring, fewshot, noisy_channel) and the charts (ui.charts.usage).
"""

from __future__ import annotations

from collections.abc import Callable

from ui.frame import PageContext
from ui.usage import (
    backtrack,
    beam,
    fewshot,
    forcing,
    hyperfit,
    instruct,
    noisy,
    repetition,
    scoring,
)

PARTS: dict[str, tuple[str, Callable[[PageContext], None]]] = {
    "forcing": ("Teacher forcing", forcing.draw),
    "backtrack": ("No backtracking", backtrack.draw),
    "repetition": ("Repetition", repetition.draw),
    "beam": ("Beam search", beam.draw),
    "scoring": ("Scoring answers", scoring.draw),
    "fewshot": ("Few-shot prompting", fewshot.draw),
    "noisy": ("Noisy channel", noisy.draw),
    "instruct": ("Instruction tuning", instruct.draw),
    "hyperfit": ("Hyperfitting", hyperfit.draw),
}
