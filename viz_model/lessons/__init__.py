"""Lessons: a lecture as a path of stops through the app, each with a question whose answer the
model on screen gives (docs/ARCHITECTURE.md, Lessons).

truth.py (what an answer is and how a student's is checked), kinds.py (the registry of answer
kinds and what they are measured on), answers_*.py (the kinds, one module a lesson), registry.py
(all kinds), lesson_file.py (reading and checking the TOML files in assets/lessons/), sheets.py
(exercise sheets).
"""
