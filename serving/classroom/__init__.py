"""Class state: a live class shared by every server process through one database (no Streamlit).

- store.py: the database (SQLite in the runs folder, or VIZ_CLASS_DB), the tables, transactions,
  and the two exceptions a page catches: ClassRefused (a user's mistake or a refusal: show its
  message) and ClassStateError (the database is locked, full or unreachable: say so, keep going).
- classes.py: start, find, end and delete a class; join by code (rate-limited); the teacher's
  view that students follow (set_view, view) and where each student is (heartbeat).
- questions.py: ask the room (typed, or a lesson stop's question), answer once, the
  distribution, close and reveal.
- board.py: the class's budget, runs registered by their students, the leaderboard by validation
  bits per character, and the teacher's dashboard.

docs/ARCHITECTURE.md, "Class state", has the tables and who may do what.
"""
