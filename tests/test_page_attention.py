"""The Attention page, driven through AppTest inside the app frame on the small test bundle."""

from __future__ import annotations

import numpy as np

from tests.apptest_util import app_test, plotly_array, plotly_figures
from ui.state import widget_key

PAGE = "pages/3_Attention.py"
ARITHMETIC_KEY = "attn_arithmetic"


def _roles(at):
    """The head-roles table (a static table with a 'role' column), with plain spaces and hyphens."""
    table = next(t.value for t in at.table if "role" in t.value.columns)
    plain = {0xA0: " ", 0x2011: "-"}  # the page keeps names whole with no-break characters
    table.index = [h.translate(plain) for h in table.index]
    table["role"] = [r.translate(plain) for r in table["role"]]
    return table


def _open_arithmetic(at):
    """Open the hand-arithmetic expander (its tables are only computed while it is open)."""
    at.session_state[ARITHMETIC_KEY] = True
    return at.run()


def _heatmap_values(at) -> list:
    """The values trace of the big pattern heatmap (the first chart; trace 0 is the mask)."""
    return plotly_figures(at)[0]["data"][1]["z"]


def test_page_draws_every_chart_and_the_head_slider_changes_the_heatmap(models_dir):
    at = app_test(models_dir, PAGE, prompt="to be or not to be")
    assert not at.exception and not at.error
    assert not at.success and len(at.dataframe) == 1  # arithmetic closed: only the numbers
    _open_arithmetic(at)
    charts = plotly_figures(at)
    assert len(charts) == 4  # heatmap, lines, one query's weights, all heads
    assert sum(t["type"] == "heatmap" for t in charts[3]["data"]) == 2 * 4  # 2 layers x 4 heads
    assert "matches what the model recorded" in at.success[0].value
    assert len(at.dataframe) >= 6  # q, k, scale/mask/softmax, weighted v, z, result, numbers

    # moving the head slider changes the heatmap's data and the URL
    before = _heatmap_values(at)
    at.slider(key=widget_key("head")).set_value(2).run()
    assert not at.exception
    assert _heatmap_values(at) != before
    assert at.query_params["head"] == ["2"] or at.query_params["head"] == "2"
    at.slider(key=widget_key("layer")).set_value(1).run()
    assert str(at.query_params["layer"]).strip("[]'") == "1"


def test_the_url_opens_the_chosen_layer_and_head(models_dir):
    at = app_test(models_dir, PAGE, prompt="to be or not", query={"layer": "1", "head": "3"})
    assert at.slider(key=widget_key("layer")).value == 1
    assert at.slider(key=widget_key("head")).value == 3
    assert "L1 H3" in at.subheader[0].value


def test_choosing_another_query_token_changes_the_arithmetic(models_dir):
    at = _open_arithmetic(app_test(models_dir, PAGE, prompt="to be or not"))
    q_last = at.dataframe[0].value
    keys_last = at.dataframe[1].value
    at.selectbox(key=widget_key("query")).set_value(3).run()
    _open_arithmetic(at)  # AppTest does not carry an expander's open state across runs
    assert not at.exception
    q_new, keys_new = at.dataframe[0].value, at.dataframe[1].value
    assert list(q_new.index) == ["3:b"] and list(q_last.index) != list(q_new.index)
    assert not q_new.equals(q_last)
    assert len(keys_new) == 4 < len(keys_last)  # the query sees only keys 0..3


def test_the_scores_view_shows_scores_with_the_mask_kept_out_of_the_scale(models_dir):
    at = app_test(models_dir, PAGE, prompt="abcabc", query={"view": "scores"})
    assert not at.exception
    values = plotly_figures(at)[0]["data"][1]
    assert values.get("zmid") == 0
    z = plotly_array(values["z"])
    assert np.isnan(z[0, 1]) and np.isfinite(z[1, 0])  # masked cell: no value (not -inf, not 0)
    assert np.isfinite(z[np.tril_indices(6)]).all()


def test_a_prompt_without_repeats_offers_the_repeated_random_test(models_dir):
    at = app_test(models_dir, PAGE, prompt="abc")
    assert any("cannot be measured" in i.value for i in at.info)
    roles = _roles(at)
    assert (roles["induction"] == "–").all()
    at.button[0].click().run()
    assert not at.exception
    assert at.toggle(key=widget_key("rrt")).value is True
    roles = _roles(at)
    assert all(0 <= float(x) <= 1 for x in roles["induction"])
    assert not any("cannot be measured" in i.value for i in at.info)


def test_the_induction_toggle_on_induction_2l_finds_its_induction_head(models_dir):
    """Default prompt and length: L1 H2 is induction, on letters a-z at a trained copy length."""
    at = app_test(models_dir, PAGE, query={"model": "induction-2l"})
    at.toggle(key=widget_key("rrt")).set_value(True).run()
    assert not at.exception
    assert at.number_input(key=widget_key("rrt_len")).value == 16  # the longest trained copy
    assert _roles(at).loc["L1 H2", "role"] == "induction"
    caption = next(c.value for c in at.caption if "random tokens" in c.value)
    assert "letters a-z" in caption and "copies of 4 to 16 tokens" in caption
    drawn = [label.split(":", 1)[1] for label in at.code[0].value.split()]  # "0:w" -> "w"
    assert len(drawn) == 32 and all(len(c) == 1 and c.islower() for c in drawn)

    at.number_input(key=widget_key("rrt_len")).set_value(24).run()
    caption = next(c.value for c in at.caption if "random tokens" in c.value)
    assert "generalises beyond" in caption


def test_a_head_that_looks_two_back_is_named_so_on_shakespeare_char(models_dir):
    at = app_test(models_dir, PAGE, query={"model": "shakespeare-char"})
    roles = _roles(at)
    assert roles.loc["L0 H2", "role"] == "looks 2 back"
    k, score = roles.loc["L0 H2", "k back"].split(": ")
    assert k == "2" and float(score) > 0.9 and float(roles.loc["L0 H2", "entropy"]) < 0.1
    assert (roles["role"] == "mixed").any()  # the spread heads of later layers


def _heatmap_in_a_column(at) -> bool:
    """Whether the big pattern heatmap (the chart keyed "attn_heatmap") sits inside st.columns."""
    return any("attn_heatmap" in c.proto.id for col in at.columns for c in col.get("plotly_chart"))


def test_a_long_prompt_gives_the_heatmap_the_whole_column(models_dir):
    short = app_test(models_dir, PAGE, prompt="to be or")
    assert len(plotly_array(_heatmap_values(short))) <= 12 and _heatmap_in_a_column(short)
    long = app_test(models_dir, PAGE, prompt="to be or not to be, that is")
    assert len(plotly_array(_heatmap_values(long))) > 12  # tokens
    assert not _heatmap_in_a_column(long)  # beside the lines chart it would be a few px a cell
