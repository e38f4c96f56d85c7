"""Live class: the teacher starts a class and gets a join code; students join and follow the
teacher's screen, answer the teacher's questions, and train runs for the class's leaderboard."""

import streamlit as st

import ui
from ui import class_page, classroom

ctx = ui.context()
st.markdown(
    "A **live class** ties the students' screens to the teacher's. The teacher starts a class "
    "and shows its join code; each student joins from the link and then **follows**: when the "
    "teacher moves to another page, model, prompt, head or lesson stop, every following screen "
    "moves there too, within a few seconds. The teacher can **ask the room** a question (a "
    "lesson stop's own, answered by the model on screen, or one of their own) and watch the "
    "answers come in before revealing the truth; and the class's training runs meet on one "
    "**leaderboard**, ranked by validation bits per character."
)

me = classroom.membership()
if me is None:
    class_page.outside(ctx)
elif me.teacher:
    class_page.teaching(ctx, me)
else:
    class_page.learning(me)
