"""Issue 37: every collapsed section a teacher opens is part of the view the class follows.
`open=Route:key` (the teacher's address) opens section `key` on that page and no other; the
sections below were plain expanders that stayed shut on every student's screen."""

from __future__ import annotations

import pytest

from tests.apptest_util import app_test
from ui.parts import numbers_key

# (page script, its route, the section's key, the URL that shows the section)
SECTIONS = [
    ("pages/09_training.py", "Training", "hist_lr", {}),
    ("pages/09_training.py", "Training", "rule", {}),
    ("pages/16_scaling.py", "Scaling", "points", {}),
    ("pages/15_architecture_contrasts.py", "Architecture_contrasts", "commands", {}),
    ("pages/03_attention.py", "Attention", "arithmetic", {}),
    ("pages/03_attention.py", "Attention", "heads_in_words", {}),
]


@pytest.mark.parametrize(("page", "route", "key", "query"), SECTIONS)
def test_a_section_the_teacher_opened_is_open_on_its_page_only(models_dir, page, route, key, query):
    shown = app_test(models_dir, page, query={**query, "open": f"{route}:{key}"})
    assert not shown.exception
    assert shown.session_state[numbers_key(key)] is True
    other = "Scaling" if route == "Attention" else "Attention"
    elsewhere = app_test(models_dir, page, query={**query, "open": f"{other}:{key}"})
    assert elsewhere.session_state[numbers_key(key)] is False
    closed = app_test(models_dir, page, query=query)
    assert closed.session_state[numbers_key(key)] is False


def test_the_tab_the_teacher_chose_is_chosen_on_its_page_only(models_dir):
    """The Training page's gradient-health tabs: `hist_health=1` chooses the second tab."""
    query = {"model": "shakespeare-llama"}  # a bundled run that recorded its gradients' health
    chosen = app_test(
        models_dir, "pages/09_training.py", query={**query, "open": "Training:hist_health=1"}
    )
    assert not chosen.exception
    assert chosen.session_state[numbers_key("hist_health")] == "Update sizes"
    first = app_test(
        models_dir, "pages/09_training.py", query={**query, "open": "Scaling:hist_health=1"}
    )
    assert first.session_state[numbers_key("hist_health")] == "Gradient norms"
