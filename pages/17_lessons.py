"""Lessons: every lecture path in assets/lessons/, to start, present, print, or copy and edit.

The page's sections are functions in ui/lessons_page.py (docs/ADD_A_PAGE.md), a lesson's sheets
in ui/sheets_view.py: this script reads as the page's table of contents."""

import ui
from ui import lessons_page

ctx = ui.context()

lessons_page.intro()
lessons_page.catalogue()  # a card a lesson file: Start, Present, its stops, its sheets
lessons_page.write_your_own()
