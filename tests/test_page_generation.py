"""The Generation stepper in AppTest: step, force, undo, reset, seeds, run-N, KV-cache comparison."""

from __future__ import annotations

from tests.apptest_util import app_test
from ui.parts import numbers_key
from ui.state import widget_key

PAGE = "pages/08_generation.py"
PROMPT = "ROMEO: But soft"
STATE = "gen_stepper"


def _steps(at):
    return at.session_state[STATE]["steps"]


def _history_html(at) -> str:
    return at.get("html")[0].proto.body


def _click(at, key: str):
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def test_next_step_appends_the_proposed_token_and_draws_it(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    assert not at.exception
    assert _history_html(at).count('class="chip"') == len(PROMPT)
    proposal = at.session_state[STATE]["proposal"]
    _click(at, "take")
    steps = _steps(at)
    assert len(steps) == 1 and steps[0].token == proposal and not steps[0].forced
    assert _history_html(at).count('class="chip"') == len(PROMPT) + 1
    # the step's bars, the newest token's attention, the generated text's probability
    assert [c.key for c in at.get("plotly_chart")] == [
        "step_bars",
        "newest_attention",
        "tt_running_probability",
    ]


def test_a_forced_token_appears_in_the_history_and_undo_removes_it(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    proposal = at.session_state[STATE]["proposal"]
    candidates = [b.key for b in at.button if b.key and b.key.startswith("candidate_")]
    assert len(candidates) == 10
    other = next(k for k in candidates if k != f"candidate_{proposal}")
    forced_id = int(other.removeprefix("candidate_"))
    at.session_state[numbers_key()] = True  # the history's table is built only while open
    _click(at, other)
    steps = _steps(at)
    assert [s.token for s in steps] == [forced_id] and steps[0].forced
    assert "forced by you" in _history_html(at) and "*</sup>" in _history_html(at)
    assert at.dataframe[0].value["how"].tolist() == ["forced"]
    _click(at, "undo")
    assert _steps(at) == [] and "*</sup>" not in _history_html(at)


def test_the_same_seed_gives_the_same_step_and_undo_redo_too(models_dir):
    runs = []
    for _ in range(2):
        at = app_test(models_dir, PAGE, prompt=PROMPT, query={"seed": "7", "temperature": "1.5"})
        _click(at, "take")
        _click(at, "take")
        runs.append([s.token for s in _steps(at)])
    assert runs[0] == runs[1]
    _click(at, "undo")
    _click(at, "take")
    assert [s.token for s in _steps(at)] == runs[0]
    # another seed draws other tokens somewhere in 20 hot steps
    texts = []
    for seed in ("1", "2"):
        at = app_test(models_dir, PAGE, prompt=PROMPT, query={"seed": seed, "temperature": "2"})
        at.number_input(key="n_run").set_value(20).run()
        _click(at, "run")
        texts.append([s.token for s in _steps(at)])
    assert len(texts[0]) == 20 and texts[0] != texts[1]


def test_changing_the_seed_replays_and_keeps_forced_tokens(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"temperature": "2"})
    proposal = at.session_state[STATE]["proposal"]
    keys = [b.key for b in at.button if b.key and b.key.startswith("candidate_")]
    other = next(k for k in keys if k != f"candidate_{proposal}")
    _click(at, other)
    at.number_input(key="n_run").set_value(10).run()
    _click(at, "run")
    before = [s.token for s in _steps(at)]
    at.number_input(key=widget_key("seed")).set_value(99).run()
    after = _steps(at)
    assert len(after) == 11 and after[0].token == before[0] and after[0].forced


def test_reset_and_a_new_prompt_clear_the_history(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    _click(at, "take")
    _click(at, "reset")
    assert _steps(at) == []
    _click(at, "take")
    at.session_state["prompt"] = "JULIET: O"
    at.run()
    assert _steps(at) == []


def test_kv_cache_comparison_matches(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    at.number_input(key="n_kv").set_value(30).run()
    _click(at, "kv_go")
    assert any("match" in s.value for s in at.success)
    assert {m.label for m in at.metric} >= {"With the KV cache", "Without it"}


def test_force_any_token_from_the_list(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT)
    box = at.selectbox(key="force_any")
    rarest = box.options[-1]  # the least likely token listed; its label quotes the token
    assert rarest.startswith("“") and "p = " in rarest
    box.select_index(len(box.options) - 1).run()
    token = at.selectbox(key="force_any").value
    _click(at, "force_any_go")
    steps = _steps(at)
    assert [s.token for s in steps] == [int(token)] and steps[0].forced
    assert "forced by you" in _history_html(at)


def test_a_link_reopens_the_same_generated_text_and_forced_tokens(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"seed": "5", "temperature": "1.5"})
    _click(at, "take")
    proposal = at.session_state[STATE]["proposal"]
    keys = [b.key for b in at.button if b.key and b.key.startswith("candidate_")]
    _click(at, next(k for k in keys if k != f"candidate_{proposal}"))
    at.number_input(key="n_run").set_value(8).run()
    _click(at, "run")
    at.slider(key=widget_key("temperature")).set_value(0.0).run()  # greedy from here on
    _click(at, "take")
    steps = _steps(at)
    assert [s.forced for s in steps] == [False, True] + [False] * 9
    link = dict(at.query_params)
    items = link["gen"].split("_")  # 11 tokens, and the settings of each run (T=1.5, then 0)
    assert len(items) == 13 and [i for i in items if i[0] == "t"] == ["t1.5k0p1", "t0k0p1"]
    # a new browser (a new session) opening that URL
    fresh = app_test(models_dir, PAGE, query=link)
    assert not fresh.exception and not fresh.warning
    assert _steps(fresh) == steps  # same tokens, forced marks, probabilities, settings
    assert _history_html(fresh) == _history_html(at)
    assert fresh.session_state[STATE]["proposal"] == at.session_state[STATE]["proposal"]


def test_a_link_that_does_not_fit_keeps_what_fits_and_says_why(models_dir):
    at = app_test(models_dir, PAGE, prompt=PROMPT, query={"gen": "f3_f9_99999_4"})
    assert not at.exception
    assert [(s.token, s.forced) for s in _steps(at)] == [(3, True), (9, True)]
    assert "outside this model's vocabulary" in at.warning[0].value
    assert at.query_params["gen"] == "f3_f9"  # the URL now names what the page shows
    _click(at, "reset")
    assert not at.warning and "gen" not in at.query_params
