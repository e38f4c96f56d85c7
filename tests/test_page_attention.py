"""The Attention page, driven through AppTest inside the app frame on the small test bundle."""

from __future__ import annotations

import numpy as np

from tests.apptest_util import app_test, open_numbers, plotly_array, plotly_figures
from ui.attention.arithmetic import ARITHMETIC_KEY
from ui.attention.before_qkv import XX_TITLE
from ui.attention.overflow import FACTOR_KEY
from ui.parts import numbers_key
from ui.state import widget_key

PAGE = "pages/03_attention.py"


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
    assert not at.success and not at.dataframe  # arithmetic and numbers closed: no table built
    at.session_state[numbers_key()] = True
    _open_arithmetic(at)
    charts = plotly_figures(at)
    assert len(charts) == 6  # heatmap, lines, one query's weights, x·x and the head, all heads
    assert sum(t["type"] == "heatmap" for t in charts[5]["data"]) == 2 * 4  # 2 layers x 4 heads
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


def test_induction_is_judged_on_the_repeated_random_sequence_by_default(models_dir):
    at = app_test(models_dir, PAGE, prompt="abc")
    assert at.toggle(key=widget_key("rrt")).value is True
    roles = _roles(at)
    assert "induction (random)" in roles.columns and "induction on your prompt" in roles.columns
    assert (roles["induction on your prompt"] == "–").all()  # nothing repeats in "abc"
    assert not any("cannot be told from chance" in i.value for i in at.info)


def test_a_prompt_without_repeats_offers_the_repeated_random_test(models_dir):
    at = app_test(models_dir, PAGE, prompt="abc", query={"rrt": "0"})
    assert any("cannot be told from chance" in i.value for i in at.info)
    roles = _roles(at)
    assert (roles["induction"] == "–").all()
    at.button[0].click().run()
    assert not at.exception
    assert at.toggle(key=widget_key("rrt")).value is True
    roles = _roles(at)
    assert all(0 <= float(x.split(" ")[0]) <= 1 for x in roles["induction (random)"])
    assert not any("cannot be told from chance" in i.value for i in at.info)


def test_the_induction_toggle_on_induction_2l_finds_its_induction_head(models_dir):
    """Default prompt and length: L1 H2 is induction, on letters a-z at a trained copy length."""
    at = open_numbers(app_test(models_dir, PAGE, query={"model": "induction-2l"}))
    assert not at.exception and at.toggle(key=widget_key("rrt")).value is True  # the default
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
    score, chance = (float(x) for x in score.strip(")").split(" ("))
    assert k == "2" and score > 0.9 and chance < 0.1 and float(roles.loc["L0 H2", "entropy"]) < 0.1
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


def test_the_no_mask_model_draws_its_future_weights_and_its_arithmetic_matches(models_dir):
    """shakespeare-nomask: later cells were drawn grey as 'masked' and the hand arithmetic hid
    them, so it 'differed from the recording more than expected'."""
    at = _open_arithmetic(
        app_test(models_dir, PAGE, prompt="to be or not", query={"model": "shakespeare-nomask"})
    )
    assert not at.exception and not at.warning[1:]  # only the no-mask note
    assert "no causal mask" in at.warning[0].value
    intro = at.markdown[0].value  # issue 36: it said "the future is masked" on this model too
    assert "the future is **masked**" not in intro and "this model does not" in intro
    assert "every token's key, later ones included" in intro
    assert "matches what the model recorded" in at.success[0].value
    fig = plotly_figures(at)[0]
    mask, values = fig["data"][0], fig["data"][1]
    assert np.isnan(plotly_array(mask["z"])).all()  # no grey cell
    z = plotly_array(values["z"])
    assert np.isfinite(z).all() and z[np.triu_indices(len(z), 1)].sum() > 0.5
    assert not any("masked" in str(t.get("name", "")) for t in fig["data"][2:])
    assert len(at.dataframe[1].value) == len(z)  # step 2: every key, not only the earlier ones


def test_induction_2l_layer_0_heads_are_not_induction_on_a_short_english_prompt(models_dir):
    """Issue 20: all four layer-0 heads were 'induction' (0.42-0.52) on this prompt, on
    repeated <unk>s; on the prompt or on the random sequence, none is."""
    for rrt in ("0", "1"):
        at = app_test(
            models_dir,
            PAGE,
            prompt="ROMEO: But soft, what light",
            query={"model": "induction-2l", "rrt": rrt},
        )
        assert not at.exception
        roles = _roles(at)
        assert not (roles.loc[[f"L0 H{h}" for h in range(4)], "role"] == "induction").any()
    assert roles.loc["L1 H2", "role"] == "induction"  # on the random sequence, its real one


def test_a_one_token_prompt_names_no_role(models_dir):
    at = app_test(models_dir, PAGE, prompt="a", query={"rrt": "0"})
    assert not at.exception
    assert set(_roles(at)["role"]) <= {"mixed", "sharp, other"}


def test_the_numbers_a_view_opened_are_open_on_its_page_only(models_dir):
    """Issue 37: what the teacher opens is part of the view. `open=Attention:numbers` (the
    teacher's address, which the class follows) opens the numbers behind the picture on
    Attention; the same value names another page's sections on Embeddings' address, so it opens
    nothing here; and a reader who opens it themselves (the widget) is not overruled by an
    address that did not change."""
    shown = app_test(models_dir, PAGE, query={"open": "Attention:numbers"})
    assert not shown.exception and shown.session_state[numbers_key()] is True
    assert len(shown.dataframe) > 0  # its tables were built
    elsewhere = app_test(models_dir, PAGE, query={"open": "Embeddings:numbers"})
    assert elsewhere.session_state[numbers_key()] is False and len(elsewhere.dataframe) == 0
    mine = open_numbers(app_test(models_dir, PAGE))
    assert mine.session_state[numbers_key()] is True and len(mine.dataframe) > 0


def _titled(at, title: str) -> dict:
    """The chart whose title is `title`."""
    return next(f for f in plotly_figures(at) if f["layout"]["title"]["text"] == title)


def _overflow_table(at):
    """The softmax table: the static table whose first column is the scaled score."""
    return next(t.value for t in at.table if str(t.value.columns[0]).startswith("score ×"))


def _said(at, start: str) -> str:
    return next(m.value for m in at.markdown if m.value.startswith(start))


def test_x_dot_x_is_drawn_beside_the_head_with_a_sentence_from_the_same_patterns(models_dir):
    """Issue 42: softmax(x·xᵀ/√d) on what the layer reads, beside the chosen head's pattern."""
    at = app_test(models_dir, PAGE, prompt="to be or not", query={"layer": "1", "head": "2"})
    assert not at.exception and not at.error
    assert [h.value for h in at.subheader][-4:-2] == [
        "Attention before Q, K and V",
        "Softmax that overflows",
    ]
    xx = plotly_array(_titled(at, XX_TITLE)["data"][1]["z"])
    head = plotly_array(_titled(at, "L1 H2: softmax(q·kᵀ/√d_head)")["data"][1]["z"])
    assert np.allclose(np.nansum(xx, axis=1), 1, atol=1e-2)  # rows of weights (2 decimals drawn)
    assert np.isnan(xx[0, 1]) and not np.allclose(xx, head, equal_nan=True)
    said = _said(at, "softmax(x·xᵀ/√d) puts its largest weight")
    rows = len(xx) - 1  # row 0 reads only itself
    self_xx = int(np.sum(np.nanargmax(xx[1:], axis=1) == np.arange(1, len(xx))))
    assert f"in **{self_xx} of {rows}** query rows" in said and "L1 H2 in **" in said
    assert "random weights" in said
    view = _said(at, "For the query **")
    assert view.startswith("For the query **11\\:t**")  # the default query: the last token
    assert f"({np.nanmax(xx[-1]):.2f} of its weight)" in view
    assert f"q·k at **{np.nanargmax(head[-1])}\\:" in view


def test_the_scale_slider_changes_the_overflow_table_and_rides_in_the_url(models_dir):
    at = app_test(models_dir, PAGE, prompt="abcdefg")
    assert not at.exception
    table = _overflow_table(at)
    assert table.columns[0] == "score ×1" and len(table) == 7  # every key the last token reads
    assert "NaN" not in table.to_numpy()
    at.select_slider(key=widget_key(FACTOR_KEY)).set_value(1000).run()
    assert not at.exception
    assert str(at.query_params[FACTOR_KEY]).strip("[]'") == "1000"
    big = _overflow_table(at)
    assert big.columns[0] == "score ×1000"
    small = table.loc[big.index].iloc[:, 0].astype(float)  # printed to 2 decimals
    assert np.allclose(big.iloc[:, 0].astype(float), 1000 * small, atol=1000 * 0.005 + 0.005)
    nan16 = int((big["naive, float16"] == "NaN").sum())
    overflowed = int((big["exp, float16"] == "inf").sum())
    assert nan16 == overflowed > 0
    said = _said(at, "At ×1000, ")
    assert f"naive float16 gives **NaN for {nan16} of the 7 weights**" in said
    assert "NaN" not in big["max-subtracted, float16"].to_numpy()
    assert np.allclose(
        big["max-subtracted, float16"].astype(float), big["float64"].astype(float), atol=2e-3
    )
    reopened = app_test(models_dir, PAGE, prompt="abcdefg", query={FACTOR_KEY: "1000"})
    assert reopened.select_slider(key=widget_key(FACTOR_KEY)).value == 1000
    assert _overflow_table(reopened).equals(big)
