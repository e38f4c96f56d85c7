"""The Embeddings page in AppTest: picking a token changes its neighbours; the swap exercise holds."""

from __future__ import annotations

import pytest

from tests.apptest_util import app_test
from ui.state import widget_key

PAGE = "pages/02_embeddings.py"
PROMPT = "the king and the queen"


@pytest.fixture(scope="module")
def at(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def neighbour_table(at):
    return at.dataframe[0].value


def test_picking_a_token_changes_the_neighbour_table(at):
    box = at.selectbox(key=widget_key("token"))
    first = box.value
    before = neighbour_table(at)
    assert len(before) == 10 and first not in list(before["id"])
    other = int(before["id"].iloc[0])  # jump to the nearest neighbour
    at.selectbox(key=widget_key("token")).set_value(other).run()
    assert not at.exception
    after = neighbour_table(at)
    assert other not in list(after["id"]) and first in list(after["id"])  # cosine is symmetric
    assert list(after["id"]) != list(before["id"])
    sims = list(after["similarity"])
    assert sims == sorted(sims, reverse=True)


def test_swapping_tokens_without_positions_leaves_the_last_output(at):
    values = {m.label: float(m.value) for m in at.metric}
    assert values["Positions zeroed"] < 1e-5
    assert values["Positions on"] > 1e-4
    at.selectbox(key=widget_key("swap_i")).set_value(2).run()
    at.selectbox(key=widget_key("swap_j")).set_value(5).run()
    values = {m.label: float(m.value) for m in at.metric}
    assert values["Positions zeroed"] < 1e-5
    assert values["Positions on"] > 1e-4


def test_the_page_draws_its_charts(at):
    assert len(at.get("plotly_chart")) >= 6


def test_a_sinusoidal_model_draws_its_positions_beside_the_formula(models_dir):
    # Its position figures equal the formula's: unkeyed, the two identical charts collided
    # (StreamlitDuplicateElementId) and the page broke on the bundled shakespeare-sinusoidal.
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"model": "shakespeare-sinusoidal"})
    assert not at.exception, [e.value for e in at.exception]
    assert "sinusoidal (the formula)" in " ".join(c.value for c in at.caption)
    assert len(at.get("plotly_chart")) >= 6
