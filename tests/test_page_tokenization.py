"""The Tokenization page in AppTest: the vocabulary slider and the merge stepper drive what is shown."""

from __future__ import annotations

import re
import unicodedata

import pytest

from tests.apptest_util import app_test, open_numbers, plotly_array, plotly_figures
from ui.state import widget_key

PAGE = "pages/01_tokenization.py"
PROMPT = "But soft, <b>what</b> light through yonder window breaks?"
DRAWN = ("title", "markdown", "caption", "info", "warning", "error")  # where text is drawn


def bpe_row(at) -> tuple[str, str, str]:
    """(title, counts line, chips html) of the BPE row of "Your prompt, cut four ways"."""
    texts = [m.value for m in at.markdown]
    i = next(k for k, t in enumerate(texts) if t.startswith("**BPE, vocabulary"))
    return texts[i], texts[i + 1], at.get("html")[1].proto.body


def step_line(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Step "))


@pytest.fixture(scope="module")
def at(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_page_shows_four_tokenizers_with_counts(at):
    texts = [m.value for m in at.markdown]
    counts = [t for t in texts if "characters per token" in t]
    assert len(counts) == 4
    assert all(t.startswith(f"{len(PROMPT)} characters") for t in counts)
    chips = at.get("html")[0].proto.body  # character-level chips: escaped, ids on hover
    assert "<b>" not in chips and "&lt;" in chips and 'title="id ' in chips


def test_changing_the_vocab_slider_changes_the_bpe_chips_and_counts(at):
    title, counts, chips = bpe_row(at)
    assert title.startswith("**BPE, vocabulary 512**")
    at.select_slider(key=widget_key("vocab")).set_value(4096).run()
    assert not at.exception
    title2, counts2, chips2 = bpe_row(at)
    assert title2.startswith("**BPE, vocabulary 4096**")
    n_before = int(counts.split("**")[1].split()[0])
    n_after = int(counts2.split("**")[1].split()[0])
    assert n_after < n_before  # a bigger vocabulary needs fewer tokens for the same text
    assert chips2 != chips and chips2.count("<span") == n_after
    assert at.query_params["vocab"] in ("4096", ["4096"])


def test_the_merge_step_slider_changes_the_merged_pair(at):
    slider = at.select_slider(key=widget_key("merge"))
    options = [int(o) for o in slider.options]
    assert options[0] == 0 and len(options) > 3
    assert step_line(at).startswith("**Step 0**")
    shown = []
    for step in options[1:3]:
        at.select_slider(key=widget_key("merge")).set_value(step).run()
        assert not at.exception
        line = step_line(at)
        assert line.startswith(f"**Step {step} of ")
        shown.append(line.split("merge ")[1].split(" (new token")[0])
    assert shown[0] != shown[1]
    # Without the filter the slider walks every merge, one rank at a time.
    at.toggle(key=widget_key("only_changes")).set_value(False).run()
    at.slider(key=widget_key("merge")).set_value(1).run()
    assert step_line(at).startswith("**Step 1 of 3840**")
    assert "times" in step_line(at)


def test_the_numbers_pitfall_is_true_of_the_tokenizers_shown(at, models_dir):
    from viz_model.bundles.load import load_bundle

    note = next(m.value for m in at.markdown if m.value.startswith("**Numbers.**"))
    # The old claim ("digits are grouped by frequency") was false beside chips of single digits.
    assert "This model's tokenizer (test-char) cuts every digit into its own token" in note
    tok = load_bundle(models_dir / "test-char").tokenizer
    listed = re.search(r"has no token for ([0-9, or]+):", note).group(1)
    missing = set(re.findall(r"\d", listed))
    assert missing == {d for d in "0123456789" if tok.unk_id in tok.encode(d)} != set()
    # Each number's chips, this model's then the BPE's: the note says "groups" iff a chip does.
    chips = [re.findall(r'title="[^"]*">([^<]*)</span>', h.proto.body) for h in at.get("html")]
    for k, name in enumerate(["This model's tokenizer (test-char)", "The BPE of vocabulary"]):
        shown = [c for example in ("1234567", "3.14159", "2024") for c in _rows(chips, example)[k]]
        grouped = any(sum(ch.isdigit() for ch in c) >= 2 for c in shown)
        said = note.split(name)[1][:40]  # what the note says right after naming the tokenizer
        assert ("groups digits" in said) == grouped and ("cuts every digit" in said) != grouped


def _rows(chips: list[list[str]], text: str) -> list[list[str]]:
    """The chip rows that spell `text` (a pitfall example), in page order."""
    rows = [c for c in chips if "".join(c) == text]
    assert len(rows) == 2, text
    return rows


# Every character that draws nothing but reorders what is drawn after it: the embeddings,
# overrides and isolates, their pop, and the marks (Unicode's bidirectional algorithm, UAX 9).
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def _acting(text: str) -> list[str]:
    """The code points in text that would act on the page instead of showing: bidi controls,
    C0 and C1 controls other than newline and tab, line and paragraph separators."""
    return [
        f"U+{ord(c):04X}"
        for c in text
        if c in BIDI or (unicodedata.category(c) in ("Cc", "Zl", "Zp") and c not in "\n\t")
    ]


def test_bidi_and_control_characters_in_a_prompt_show_as_code_points_and_reorder_nothing(
    models_dir,
):
    # A right-to-left override typed into a prompt mirrored the rest of the <unk> sentence
    # (the app's own words) on Tokenization: issue 39, item 10.
    at = open_numbers(
        app_test(models_dir, PAGE, prompt="ROMEO \u202eevil\u2066 x\u200f\x07\u2028!")
    )
    assert not at.exception, [e.value for e in at.exception]
    drawn = {
        **{f"{kind} {n}": str(e.value) for kind in DRAWN for n, e in enumerate(at.get(kind))},
        **{f"html {n}": e.proto.body for n, e in enumerate(at.get("html"))},
        **{f"table {n}": e.value.to_csv() for n, e in enumerate(at.dataframe)},
    }
    assert "table 0" in drawn  # the numbers' tables too: the prompt's pieces, one a row
    assert {where: _acting(text) for where, text in drawn.items() if _acting(text)} == {}
    unknown = next(i.value for i in at.info if "became `<unk>`" in i.value)
    for code in ("202e", "2066", "200f", "07", "2028"):  # each shows, as Markdown prints it
        assert f"“\\<{code}\\>”" in unknown
    assert unknown.endswith(". Labels mark them «like this».")  # the app's own words follow
    chips = at.get("html")[0].proto.body  # the character-level row: each control a chip of its own
    assert ">&lt;202e&gt;</span>" in chips and ">&lt;2066&gt;</span>" in chips


def test_the_vocabulary_curve_marks_the_size_the_slider_picks(models_dir):
    def chosen(at) -> list[list[int]]:
        (curve,) = [f for f in plotly_figures(at) if "fewer tokens" in str(f["layout"]["title"])]
        return [plotly_array(t["x"]).tolist() for t in curve["data"] if t["name"] == "chosen size"]

    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception, [e.value for e in at.exception]
    assert chosen(at) == [[512]]
    at.select_slider(key=widget_key("vocab")).set_value(300).run()  # a size the curve lacks
    assert not at.exception
    assert chosen(at) == []
