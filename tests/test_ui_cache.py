"""ui/cache.py: figures are keyed by every argument of their builder, per-model results are
read-only and refuse prompts, and the keys tell apart values a hand-written key would confuse."""

from __future__ import annotations

import functools

import numpy as np
import plotly.graph_objects as go
import pytest

from ui import cache, shared_cache
from ui.shared_cache import SharedCache, call_key, key_of


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.setattr(shared_cache, "CACHE", SharedCache(budget_bytes=10**7, ttl_s=60))


BUILT: list[tuple] = []


def bars(
    values: np.ndarray, labels: list[str], scale: float = 1.0, *, title: str = ""
) -> go.Figure:
    """A stand-in chart builder that records each time it builds."""
    BUILT.append((values.tolist(), list(labels), scale, title))
    return go.Figure(go.Bar(x=labels, y=values * scale), layout={"title": title})


BASE = (np.array([1.0, 2.0]), ["a", "b"], 1.0, "Prompt A")


def figure_of(values, labels, scale, title) -> go.Figure:
    return cache.figure(bars, values, labels, scale, title=title)


@pytest.mark.parametrize(
    "changed",
    [
        (np.array([1.0, 3.0]), *BASE[1:]),  # the data
        (BASE[0], ["a", "c"], *BASE[2:]),  # the labels
        (*BASE[:2], 2.0, BASE[3]),  # a number
        (*BASE[:3], "Prompt B"),  # the title: what a hand-written key of the data would forget
    ],
)
def test_the_figure_changes_with_every_argument_of_its_builder(changed):
    BUILT.clear()
    base, other = figure_of(*BASE), figure_of(*changed)
    assert len(BUILT) == 2 and BUILT[0] != BUILT[1]
    assert base.to_dict() != other.to_dict()
    assert figure_of(*changed) is other and figure_of(*BASE) is base  # each built once
    assert len(BUILT) == 2


def test_the_same_arguments_passed_differently_share_one_figure():
    BUILT.clear()
    values = np.array([1.0, 2.0])
    first = cache.figure(bars, values, ["a", "b"], title="t")
    again = cache.figure(bars, values.copy(), labels=["a", "b"], scale=1.0, title="t")
    assert again is first and len(BUILT) == 1


def test_two_builders_with_the_same_arguments_are_two_figures():
    def lines(values, labels, scale=1.0, *, title=""):
        return go.Figure(go.Scatter(x=labels, y=values), layout={"title": title})

    assert cache.figure(bars, *BASE[:3], title=BASE[3]) is not cache.figure(
        lines, *BASE[:3], title=BASE[3]
    )
    assert call_key(bars, BASE[:3], {})[1] == "bars"


def test_a_hand_written_key_or_a_builder_with_hidden_inputs_is_refused():
    with pytest.raises(TypeError, match="chart function"):
        cache.figure(("bars", "model"), lambda: bars(*BASE[:3]))
    values = BASE[0]
    with pytest.raises(TypeError, match="pass them as arguments"):
        cache.figure(lambda labels: bars(values, labels), ["a", "b"])
    with pytest.raises(TypeError, match="pass them as arguments"):
        cache.figure(functools.partial(bars, values), ["a", "b"])


def test_a_decorated_builder_is_keyed_as_its_own_function():
    """A wrapper made with functools.wraps (a timing probe) keeps the builder's name and key."""

    def timed(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)

        return wrapper

    assert cache.figure(timed(bars), *BASE[:3]) is cache.figure(bars, *BASE[:3])


@pytest.mark.parametrize(
    "a, b",
    [
        (1, 1.0),
        (1, True),
        ((1, 2), [1, 2]),
        (np.zeros(2, np.float32), np.zeros(2, np.float64)),  # same values, other dtype
        (np.zeros((2, 3)), np.zeros((3, 2))),  # same bytes, other shape
        (np.array([1.0, 2.0]), np.array([1.0, 2.000001])),
        ({"x": 1}, {"x": 2}),
    ],
)
def test_keys_tell_apart_values_that_compare_or_hash_alike(a, b):
    assert key_of(a) != key_of(b)


def test_arrays_are_keyed_by_their_contents_not_their_identity():
    assert key_of(np.arange(4.0)) == key_of(np.arange(4.0))
    assert hash(key_of({"a": [np.arange(3), (1, "x")]})) == hash(
        key_of({"a": [np.arange(3), (1, "x")]})
    )


def test_a_value_without_a_frozen_form_is_refused():
    class Opaque:  # hashed by identity: a key of it would never match again
        pass

    with pytest.raises(TypeError, match="cannot key"):
        key_of(Opaque())
    with pytest.raises(TypeError, match="cannot key"):
        key_of([1, object()])


def test_per_model_results_are_shared_and_read_only():
    calls = []

    @cache.per_model
    def table(bundle_id: str) -> np.ndarray:
        calls.append(bundle_id)
        return np.arange(3.0)

    first = table("m")
    assert table("m") is first and calls == ["m"]
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 5


def test_per_model_refuses_a_prompt():
    with pytest.raises(TypeError, match="per_prompt"):

        @cache.per_model
        def lens(bundle_id: str, ids: tuple[int, ...]) -> int:
            return len(ids)
