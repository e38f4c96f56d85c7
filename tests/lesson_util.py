"""Shared by the lesson answer tests (tests/test_lesson_answers_*.py): the bundled models, the
shipped lessons, and each stop's answer measured as the lesson panel measures it."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from serving import models
from ui import lesson as ui_lesson
from viz_model.bundles.checkpoint import Bundle
from viz_model.bundles.load import load_bundle
from viz_model.lessons import lesson_file
from viz_model.lessons.kinds import Subject, subject_for
from viz_model.lessons.lesson_file import Lesson, Stop, load_lessons
from viz_model.lessons.registry import ANSWERS
from viz_model.lessons.truth import Truth


@lru_cache(maxsize=16)
def bundle(name: str) -> Bundle:
    return load_bundle(models.discover()[name])


def snapshot(name: str, step: int) -> Bundle:
    """A bundle with the weights saved at `step`, as the training-step scrubber opens it."""
    final = bundle(name)
    return dataclasses.replace(final, model=final.load_snapshot(step), step=step)


@lru_cache(maxsize=8)
def lesson(lesson_id: str) -> Lesson:
    found, errors = load_lessons(lesson_file.LESSONS_DIR, ui_lesson.catalogue())
    assert not [e for e in errors if e.path.stem == lesson_id]
    return next(x for x in found if x.id == lesson_id)


def stops(lesson_id: str) -> list[tuple[int, Stop]]:
    return list(enumerate(lesson(lesson_id).stops, 1))


def subject(lesson_id: str, stop: Stop) -> Subject:
    """What the lesson panel measures on: the stop's model and prompt."""
    return subject_for(bundle(stop.model), ui_lesson.prompt_of(lesson(lesson_id), stop))


def measured(lesson_id: str, stop: Stop) -> tuple[Subject, Truth]:
    """The subject the lesson panel measures on and its answer."""
    s = subject(lesson_id, stop)
    return s, ANSWERS[stop.answer](s, stop.args)


def at_stop(lesson_id: str, n: int, kind: str) -> tuple[Stop, Subject, Truth]:
    """Stop n (1-based), checked to ask `kind`, its subject and the model's answer."""
    stop = lesson(lesson_id).stops[n - 1]
    assert stop.answer == kind
    s, truth = measured(lesson_id, stop)
    return stop, s, truth


def answer_on(name: str, prompt: str | None, kind: str, **args) -> Truth:
    """A kind's answer on another model (e.g. one where the observation does not hold)."""
    return ANSWERS[kind](subject_for(bundle(name), prompt or ""), args)
