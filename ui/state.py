"""Values that live in the URL: prompt, model and each page's main choices.

A value lives under a plain session-state key (it survives page changes, unlike a widget's own
state) and is mirrored into `st.query_params` under the same name, so a link reopens the view.
Widgets get a separate key (`widget_key(key)`), are set from the plain key before they are drawn,
and copy back on change. A bad URL value (text for a number, out of range, unknown option) never
crashes: it is clamped or replaced by the default.

    layer = ui.state.slider("Layer", "layer", 0, cfg.n_layer - 1, default=0)
    head = ui.state.selectbox("Head", "head", list(range(cfg.n_head)), default=0)
    temperature = ui.state.slider("Temperature", "temp", 0.05, 3.0, default=1.0, step=0.05)

The `parse_*` functions are pure (tested alone); `url_*` read the current value; the widget
wrappers draw and bind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")
WIDGET_PREFIX = "_w_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


# ---- parsing (pure) ---------------------------------------------------------------------------


def parse_int(raw: Any, default: int, lo: int, hi: int) -> int:
    """An int from a URL value, clamped to [lo, hi]; the default when unreadable.

    >>> parse_int("7", 0, 0, 3), parse_int("x", 2, 0, 3), parse_int("-5", 2, 0, 3)
    (3, 2, 0)
    """
    try:
        value = int(float(str(raw).strip()))
    except (TypeError, ValueError, OverflowError):
        value = default
    return int(min(max(value, lo), hi))


def parse_float(raw: Any, default: float, lo: float, hi: float) -> float:
    """A float from a URL value, clamped to [lo, hi]; the default when unreadable or NaN."""
    try:
        value = float(str(raw).strip())
    except (TypeError, ValueError):
        value = default
    if math.isnan(value):
        value = default
    return float(min(max(value, lo), hi))


def parse_choice(raw: Any, default: T, options: Sequence[T]) -> T:
    """The option whose text is `raw` (options may be ints or floats, written as `to_url` writes
    them: 3.0 -> "3"); the default when none matches."""
    if raw is not None:
        for option in options:
            if option == raw or str(option) == str(raw) or to_url(option) == str(raw):
                return option
    return default if default in options or not options else options[0]


def parse_bool(raw: Any, default: bool) -> bool:
    text = str(raw).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else default


def parse_str(raw: Any, default: str, max_chars: int) -> str:
    return default if raw is None else str(raw)[:max_chars]


def to_url(value: Any) -> str:
    """How a value is written in the URL: 0.5 -> '0.5', True -> '1'."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


# ---- session state + URL ----------------------------------------------------------------------


def widget_key(key: str) -> str:
    """The widget key bound to a URL key (for AppTest: `at.slider(key=widget_key("layer"))`)."""
    return WIDGET_PREFIX + key


def mirror(key: str, value: Any, *, drop_empty: bool = False) -> None:
    """Write a value into the URL, only when it differs (each write is a message to the browser).
    With drop_empty, an empty value removes the key instead (a URL without it means the same)."""
    text = to_url(value)
    if drop_empty and not text:
        if key in st.query_params:
            del st.query_params[key]
        _said_moves(key, None)
    elif st.query_params.get(key) != text:
        st.query_params[key] = text
        _said_moves(key, text)


ROUTE = "_route"  # the route of the page this run draws (set by the frame, before the page)
_SAID = "_address_said"  # (the run's number, the address it ended on): what the screen shows


def say_address(run: int) -> None:
    """The whole address once more, at the end of run number `run` that drew its page (app.py),
    and kept as what the screen shows. `mirror` writes only what differs from the server's copy
    of the address, and a write can be lost on the way: a new run clears the messages the run
    before it had not sent (rapid clicks, a followed move), and the next run starts from the
    browser's address, which then lags what the screen shows (a reload or a shared link would
    open another view). One message a run; `keep_address` mends what still lags."""
    address = st.query_params.to_dict()
    st.query_params.from_dict(address)
    st.session_state[_SAID] = (run, address)


def keep_address(run: int) -> None:
    """In a fragment's timed run (a class box's): the address the browser gave it, put back to
    what the newest full run ended on, when it differs and no newer full run began (`run`: the
    session's newest). After a burst of clicks a teacher's address bar could stay a stop behind
    the screen (issue 37): Streamlit folds a fragment's timed rerun into a pending full rerun
    with the fragment's address, which the browser sent before the full run's changes came
    back."""
    said = st.session_state.get(_SAID)
    if said is not None and said[0] == run and st.query_params.to_dict() != said[1]:
        st.query_params.from_dict(said[1])


def _said_moves(key: str, text: str | None) -> None:
    """A fragment's own change of the address (a position, a neuron) is what the screen shows
    from now on: `keep_address` must not put it back."""
    said = st.session_state.get(_SAID)
    if said is None or not _in_fragment_run():
        return
    address = {k: v for k, v in said[1].items() if k != key}
    if text is not None:
        address[key] = text
    st.session_state[_SAID] = (said[0], address)


def _in_fragment_run() -> bool:
    from ui.streamlit_internals import in_fragment_rerun

    return in_fragment_rerun()


def _current(key: str, parse: Callable[[Any], T]) -> T:
    """This session's value if it has one, else the URL's, else the default (parse decides)."""
    ss = st.session_state
    raw = ss[key] if key in ss else st.query_params.get(key)
    value = parse(raw)
    ss[key] = value
    mirror(key, value)
    return value


def url_int(key: str, default: int, lo: int, hi: int) -> int:
    return _current(key, lambda raw: parse_int(raw, default, lo, hi))


def url_float(key: str, default: float, lo: float, hi: float) -> float:
    return _current(key, lambda raw: parse_float(raw, default, lo, hi))


def url_choice(key: str, default: T, options: Sequence[T]) -> T:
    return _current(key, lambda raw: parse_choice(raw, default, options))


def url_bool(key: str, default: bool) -> bool:
    return _current(key, lambda raw: parse_bool(raw, default))


def url_str(key: str, default: str, max_chars: int = 5000) -> str:
    return _current(key, lambda raw: parse_str(raw, default, max_chars))


def set_value(key: str, value: Any) -> None:
    """Change a URL-carried value from code (e.g. a button), before its widget is drawn."""
    st.session_state[key] = value
    mirror(key, value)


def reset_on_change(key: str, owner: Any, seen_key: str) -> None:
    """Drop the choice under `key` (session and URL) when `owner` (what its options belong to)
    differs from the last run's, kept under `seen_key`; the first run keeps a link's choice."""
    ss = st.session_state
    if seen_key in ss and ss[seen_key] != owner:
        forget(key)
    ss[seen_key] = owner


def forget(key: str) -> None:
    """Drop a URL-carried value everywhere it lives (session, its widget, the URL), so the next
    read takes its default."""
    st.session_state.pop(key, None)
    st.session_state.pop(widget_key(key), None)
    if key in st.query_params:
        del st.query_params[key]
    _said_moves(key, None)


def _copy_back(key: str) -> None:
    """A widget's change into its URL key. A view applied from elsewhere (a lesson stop, the
    teacher's move) may have dropped the widget's key before the browser's change arrived:
    then the applied view stands."""
    wkey = widget_key(key)
    if wkey in st.session_state:
        set_value(key, st.session_state[wkey])


def bind(widget: Callable[..., Any], key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Draw `widget(*args, **kwargs)` showing `value`, writing changes back to key and the URL."""
    wkey = widget_key(key)
    st.session_state[wkey] = value
    widget(*args, key=wkey, on_change=_copy_back, args=(key,), **kwargs)
    return st.session_state[key]


# ---- widgets bound to URL keys ----------------------------------------------------------------


def _url_number(key: str, lo: float, hi: float, default: float, step: float | None):
    """The URL value of a numeric widget, clamped, with its bounds and step in one type:
    int when lo, hi, default (and step) are ints, else float."""
    if all(isinstance(v, int) for v in (lo, hi, default)) and (
        step is None or isinstance(step, int)
    ):
        return url_int(key, default, lo, hi), lo, hi, step
    lo, hi = float(lo), float(hi)
    step = float(step) if step is not None else None
    return url_float(key, float(default), lo, hi), lo, hi, step


def slider(
    label: str,
    key: str,
    lo: float,
    hi: float,
    default: float,
    *,
    step: float | None = None,
    container: Any = st,
    **kwargs: Any,
) -> Any:
    """st.slider bound to a URL key; int when lo, hi, default are ints, else float."""
    value, lo, hi, step = _url_number(key, lo, hi, default, step)
    if lo == hi:  # st.slider refuses an empty range (e.g. a 1-layer model): nothing to choose
        return value
    return bind(
        container.slider, key, value, label, min_value=lo, max_value=hi, step=step, **kwargs
    )


def number_input(
    label: str,
    key: str,
    lo: float,
    hi: float,
    default: float,
    *,
    step: float | None = None,
    container: Any = st,
    **kwargs: Any,
) -> Any:
    """st.number_input bound to a URL key; int when lo, hi, default are ints, else float."""
    value, lo, hi, step = _url_number(key, lo, hi, default, step)
    return bind(
        container.number_input, key, value, label, min_value=lo, max_value=hi, step=step, **kwargs
    )


def selectbox(
    label: str, key: str, options: Sequence[T], default: T, *, container: Any = st, **kwargs: Any
) -> T:
    value = url_choice(key, default, list(options))
    return bind(container.selectbox, key, value, label, list(options), **kwargs)


def radio(
    label: str, key: str, options: Sequence[T], default: T, *, container: Any = st, **kwargs: Any
) -> T:
    value = url_choice(key, default, list(options))
    return bind(container.radio, key, value, label, list(options), **kwargs)


def select_slider(
    label: str, key: str, options: Sequence[T], default: T, *, container: Any = st, **kwargs: Any
) -> T:
    value = url_choice(key, default, list(options))
    return bind(container.select_slider, key, value, label, options=list(options), **kwargs)


def toggle(
    label: str, key: str, default: bool = False, *, container: Any = st, **kwargs: Any
) -> bool:
    return bind(container.toggle, key, url_bool(key, default), label, **kwargs)


def checkbox(
    label: str, key: str, default: bool = False, *, container: Any = st, **kwargs: Any
) -> bool:
    return bind(container.checkbox, key, url_bool(key, default), label, **kwargs)
