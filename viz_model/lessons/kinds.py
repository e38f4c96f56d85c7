"""The registry of answer kinds: how a lesson's question is answered by the model on screen.

A lesson file names a kind and its arguments (`answer = "top_next_token"`, `args = {...}`); the
kind is a function of the model and the prompt on screen (a `Subject`) that measures and returns a
`Truth` (truth.py). Kinds are registered with a decorator, in one module a lesson (answers_*.py),
and registry.py imports them all:

    @answer_kind("choice")
    def induction_head(subject: Subject, layer: int = 1) -> Truth:
        '''Which head of `layer` is the induction head, confirmed by ablating it.'''

The function's name is the kind's name; its parameters after `subject` are the arguments a lesson
may give (their annotations are checked when a lesson is read); its docstring's first line is
what the lesson format's reference says of it. A kind never raises for a model that lacks what the
lesson expects: it returns a Truth with holds=False that says so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from viz_model.bundles.checkpoint import Bundle
from viz_model.lessons.truth import Form, Truth
from viz_model.model.scale import view_tokens

TYPES = {"int": int, "float": float, "str": str, "bool": bool}


@dataclass(frozen=True)
class Subject:
    """What an answer is measured on: the model on screen and the prompt as the page reads it."""

    bundle: Bundle
    ids: tuple[int, ...]  # the prompt's tokens, the last n_ctx (what every page reads)
    prompt: str = ""


def subject_for(bundle: Bundle, prompt: str) -> Subject:
    """The subject a page shows for `prompt`: its tokens, the last view_tokens(config) of them,
    as the frame crops them (ui/frame.py)."""
    ids = [p.id for p in bundle.tokenizer.pieces(prompt)]
    n_view = view_tokens(bundle.config)
    return Subject(bundle, tuple(ids[max(0, len(ids) - n_view) :]), prompt)


@dataclass(frozen=True)
class Param:
    name: str
    kind: type
    default: Any = inspect.Parameter.empty

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True)
class AnswerKind:
    name: str
    form: Form
    measure: Callable[..., Truth]
    params: tuple[Param, ...]
    summary: str

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def problems(self, args: Mapping[str, Any]) -> list[str]:
        """What is wrong with a lesson's arguments for this kind (empty when nothing is)."""
        out = []
        for name, value in args.items():
            param = self.param(name)
            if param is None:
                known = ", ".join(p.name for p in self.params) or "none"
                out.append(f"'{self.name}' takes no argument '{name}' (it takes: {known})")
            elif not _fits(value, param.kind):
                out.append(f"'{name}' must be {param.kind.__name__}, not {value!r}")
        for param in self.params:
            if param.required and param.name not in args:
                out.append(f"'{self.name}' needs the argument '{param.name}'")
        return out

    def __call__(self, subject: Subject, args: Mapping[str, Any]) -> Truth:
        truth = self.measure(subject, **args)
        if truth.form != self.form:
            raise TypeError(f"{self.name} returned a {truth.form} answer, registered {self.form}")
        return truth


def _fits(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


REGISTRY: dict[str, AnswerKind] = {}


def answer_kind(form: Form) -> Callable[[Callable[..., Truth]], Callable[..., Truth]]:
    """Register a function as the answer kind of its own name (see the module docstring)."""

    def register(fn: Callable[..., Truth]) -> Callable[..., Truth]:
        params = []
        for p in list(inspect.signature(fn).parameters.values())[1:]:
            kind = TYPES.get(
                p.annotation if isinstance(p.annotation, str) else p.annotation.__name__
            )
            if kind is None:
                raise TypeError(f"{fn.__name__}: argument {p.name} must be int, float, str or bool")
            params.append(Param(p.name, kind, p.default))
        summary = (inspect.getdoc(fn) or "").split("\n", 1)[0]
        if fn.__name__ in REGISTRY:
            raise ValueError(f"two answer kinds are named {fn.__name__}")
        REGISTRY[fn.__name__] = AnswerKind(fn.__name__, form, fn, tuple(params), summary)
        return fn

    return register
