"""Using a model: teacher forcing against free running, no backtracking, repetition, beam
search, scoring candidates, few-shot prompting, the noisy channel, instruction tuning
and hyperfitting.

Each part is its own module under ui/usage/; this page draws the idea and the radio that picks a
part (one part computes per run, so a page run stays cheap)."""

import streamlit as st

import ui
from ui import parts
from ui.usage import PARTS

ctx = ui.context()

st.markdown(
    "A language model does one thing: given a text, it gives every token a probability of coming "
    "next. Everything else is how that one move is **used**: in training it reads the true text "
    "(*teacher forcing*); writing, it feeds its own output back and can never take a token back; "
    "a decoder (greedy, sampling, beam search) turns the probabilities into text; a task becomes "
    "a question of which continuation is likeliest; and a prior over words helps correct typos."
)
parts.chosen_part(PARTS, "use_part", "forcing")(ctx)
