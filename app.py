"""Home: what the app is for, and the chosen model at a glance. Run with `streamlit run app.py`."""

import streamlit as st

import ui
from ui import nav

ctx = ui.frame("Inside a GPT", "🔬", needs_prompt=False)

st.markdown(
    "This app opens up a small GPT, the kind of model behind ChatGPT, so you can watch what it "
    "does with your text, step by step. Type a prompt in the sidebar, then follow the pages in "
    "order: from text to tokens, through attention and the layers, to the next-token prediction."
)

st.subheader("Where to start")
for page in nav.available_pages():
    st.page_link(page.file, label=f"{page.label}: {page.description}", icon=page.icon)
