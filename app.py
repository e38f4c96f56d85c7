"""The app's entry point and router: `streamlit run app.py`.

Every page, Home included, is a script in pages/ declared in ui/nav.py. Each run, st.navigation
picks the page the URL names (drawing the sections in the sidebar), the frame draws the shared
sidebar (model, training step, prompt, model card) and the page's title once, and then the page
runs with `ctx = ui.context()`.
"""

import ui
from ui import nav

page = nav.navigation()
ui.frame(nav.find(page.url_path))
page.run()
