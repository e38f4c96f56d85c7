"""The app's entry point and router: `streamlit run app.py`.

Every page, Home included, is a script in pages/ declared in ui/nav.py. Each run, st.navigation
picks the page the URL names (drawing the sections in the sidebar); a lesson's stop, when the URL
names one, sets its view (ui/lesson.py); the frame draws the shared sidebar (model, training step,
prompt, model card) and the page's title once; the lesson's question goes above the page; and
then the page runs with `ctx = ui.context()`.
"""

import ui
from ui import lesson, nav

page = nav.navigation()
here = nav.find(page.url_path)
lesson.enter(here)
lesson.panel(ui.frame(here), here)
page.run()
