"""Inside a block: one token's vector through a block step by step (the lecture's t1..t5 and h),
attention as matrices for the whole prompt and each head's QK and OV circuits, a soft look-up and
why sqrt(d_head), contextual embeddings, linear probes by layer, one gradient step, and prompts
written from a template.

Each part is its own module under ui/inside_block/; this page draws the frame, the idea and the
radio that picks a part."""

import streamlit as st

import ui
from ui import parts
from ui.inside_block import PARTS

ctx = ui.context()

st.markdown(
    "Every block of the model does the same few things to each token's vector. Here they are "
    "taken apart with this model's real numbers: one token through one block; attention as "
    "matrices and circuits; attention as a soft dictionary look-up; how a token's vector becomes "
    "contextual layer by layer; what a straight line can read from it (probes); one step of "
    "training by gradient descent; and where prompts you write from a template land."
)
parts.chosen_part(PARTS, "part", "walk")(ctx)
