"""Home: what the app is for, the chosen model drawn from its config, its parameters, and where to
start. app.py serves it at / (the app's default page).

The page's sections are functions in ui/home.py (docs/ADD_A_PAGE.md): this script reads as the
page's table of contents."""

import ui
from ui import home

ctx = ui.context()

home.welcome()
home.the_model(ctx)
left, right = home.columns()  # the parameters beside where to start
home.where_the_parameters_are(ctx, left)
home.where_to_start(ctx, right)
