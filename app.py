"""The app's entry point and router: `streamlit run app.py`.

First, once a process, its settings (ui/boot.py: torch's threads, libraries, the garbage
collector).

Every page, Home included, is a script in pages/ declared in ui/nav.py. Each run, st.navigation
picks the page the URL names (drawing the sections in the sidebar); a lesson's stop, when the URL
names one, sets its view (ui/lesson.py); the frame draws the shared sidebar (model, training step,
prompt, model card) and the page's title once; in a live class, the teacher's class box goes in
the sidebar and a student's at the top of the page (ui/classroom.py), where a question is seen;
the lesson's question goes above the page; then the page runs with
`ctx = ui.context()`, and a teacher's view, as the page settled, is published for the class to
follow.
"""

import streamlit as st

from ui import boot, classroom, lesson, nav, state
from ui.frame import frame

# torch's threads, the first figure's libraries, the GC frozen with all of the above imported: once
boot.configure_process()

page = nav.navigation()
here = nav.find(page.url_path)
run = classroom.enter(here)
stop = lesson.enter(here)  # (stop, stops) in a lesson: presenter mode's header names it
teacher_box = st.sidebar.container()  # a live class's teacher box: above the model and prompt
student_box = st.container()  # a student's class box and question: the top of the main area
ctx = frame(here, stop)
classroom.boxes(here, teacher_box, student_box)
lesson.panel(ctx, here, room=classroom.stop_asked, lead=classroom.lead_stop)
try:
    page.run()
    state.say_address(run)  # what the screen shows, in the address bar, once more
finally:
    classroom.after_run(here, run)
