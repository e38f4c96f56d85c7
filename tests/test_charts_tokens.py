"""Token chips (escaped, one per token, id on hover) and the vocabulary curve."""

from __future__ import annotations

import re

from ui.charts.tokens import token_chips_html, vocab_curve_chart


def test_one_chip_per_token_with_id_and_visible_whitespace_on_hover():
    out = token_chips_html([(5, "Hi"), (9, " there"), (2, "\n"), (5, "Hi")])
    assert out.count("<span") == 4
    assert 'title="id 9: &#x27;␣there&#x27;"' in out
    assert ">␣there</span>" in out and ">↵</span><br>" in out
    # Neighbours always get different colours.
    colours = re.findall(r"background:(#[0-9a-f]+)", out)
    assert all(a != b for a, b in zip(colours, colours[1:], strict=False))


def test_user_text_is_escaped():
    out = token_chips_html([(1, "<script>alert('x')</script>"), (2, '" onmouseover="x')])
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert 'onmouseover="x' not in out


def test_unknown_tokens_are_outlined_and_empty_input_says_so():
    out = token_chips_html([(0, "日"), (3, "a")], unk_id=0)
    assert out.count("outline:") == 1
    assert "no tokens" in token_chips_html([])


def test_vocab_curve_marks_the_chosen_size():
    fig = vocab_curve_chart([256, 512, 1024], [1000, 700, 600], 1000, current=512)
    assert list(fig.data[0].y) == [1000, 700, 600]
    assert list(fig.data[0].customdata) == [1.0, 1000 / 700, 1000 / 600]
    assert list(fig.data[1].x) == [512] and list(fig.data[1].y) == [700]
    assert len(vocab_curve_chart([256], [10], 10, current=300).data) == 1


def test_marked_chips_get_a_thick_outline():
    from ui.charts.tokens import token_chips_html

    html_ = token_chips_html([(1, "a"), (2, "b"), (3, "c")], marked={0, 2})
    spans = html_.split("<span")[1:]
    assert ["3px solid" in s for s in spans] == [True, False, True]


def test_special_tokens_get_a_dashed_outline_and_say_so_on_hover_but_unk_stays_red():
    chips = token_chips_html([(5, "<|user|>"), (1, "a"), (0, "?")], unk_id=0, special={0, 5})
    spans = re.findall(r"<span [^>]*>[^<]*</span>", chips)
    assert "dashed" in spans[0] and 'title="id 5: &#x27;&lt;|user|&gt;&#x27;, special"' in spans[0]
    assert "&lt;|user|&gt;</span>" in spans[0]
    assert "dashed" not in spans[1] and "dashed" not in spans[2]  # <unk> keeps its red outline
