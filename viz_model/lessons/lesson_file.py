"""Reading a lesson file (TOML, in assets/lessons/) and checking it against the app.

A lesson is a title, the model it is taught on, an optional prompt, and a list of stops:

    title = "Attention: who looks at whom"
    model = "induction-2l"
    prompt = "..."                     # optional; each stop may give its own

    [[stop]]
    page = "Attention"                 # the page's URL name, as in /Attention
    view = { layer = 1, head = 2 }     # the page's URL keys: the exact view a shared link carries
    instruction = "Find layer 1 in the grid of every head."
    question = "Which head of layer 1 is the induction head?"
    answer = "induction_head"          # an answer kind (kinds.py): the model on screen answers
    args = { layer = 1 }
    hide = true                        # mask the charts until the student answers (the default)
    figure = 1                         # the page's chart the exercise sheet shows (the default)

Answers are never typed into the file. A file with a mistake (TOML syntax, an unknown page, a
view key the page does not have, a model that is not installed, an unknown answer kind or a wrong
argument) gives LessonError messages that name the file and line; `load_lessons` loads the other
files all the same.

What a page's URL keys are and which models are installed are given by the caller (a `Catalogue`),
so this module knows nothing of Streamlit.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from viz_model import ASSETS_DIR
from viz_model.lessons.kinds import REGISTRY, AnswerKind

LESSONS_DIR = ASSETS_DIR / "lessons"
LESSONS_ENV = "VIZ_LESSONS_DIR"  # another folder of lessons (a teacher's own; tests)
STOP_TABLE = "stop"
MIN_STOPS, MAX_STOPS = 1, 20
# Keys every page has: the frame's (model, prompt) and the lesson's own.
FRAME_KEYS = frozenset({"model", "prompt"})
LESSON_KEYS = ("lesson", "step")
_LESSON_FIELDS = {"title", "model", "prompt", "summary", "lecture", STOP_TABLE}
_STOP_FIELDS = {
    "page",
    "view",
    "instruction",
    "question",
    "answer",
    "args",
    "hide",
    "prompt",
    "model",
    "title",
    "figure",
}


@dataclass(frozen=True)
class Catalogue:
    """What a lesson may name: pages (URL name -> its URL keys), installed models, answer kinds."""

    pages: Mapping[str, frozenset[str]]
    models: frozenset[str]
    kinds: Mapping[str, AnswerKind] = field(default_factory=lambda: REGISTRY)


@dataclass(frozen=True)
class Stop:
    page: str
    view: Mapping[str, Any]
    instruction: str
    question: str
    answer: str
    args: Mapping[str, Any]
    model: str
    prompt: str | None
    hide: bool = True
    title: str = ""
    line: int = 0  # where its [[stop]] starts in the file
    figure: int = 1  # which of the page's charts (1 = the first) the exercise sheet shows


@dataclass(frozen=True)
class Lesson:
    id: str  # the file's stem: "02_attention" -> ?lesson=02_attention
    title: str
    model: str
    stops: tuple[Stop, ...]
    summary: str = ""
    lecture: str = ""
    path: Path | None = None

    def stop(self, step: int) -> Stop:
        """Stop `step` (1-based, as in the URL), clamped to the lesson."""
        return self.stops[min(max(step, 1), len(self.stops)) - 1]


class LessonError(ValueError):
    """A mistake in a lesson file, naming the file and the line."""

    def __init__(self, path: Path | str, line: int | None, message: str):
        self.path, self.line, self.message = Path(path), line, message
        where = f"{Path(path).name}, line {line}" if line else Path(path).name
        super().__init__(f"{where}: {message}")


def lessons_dir() -> Path:
    """Where the app reads lessons: $VIZ_LESSONS_DIR, else assets/lessons/."""
    return Path(os.environ.get(LESSONS_ENV) or LESSONS_DIR)


def stop_pages(folder: Path) -> list[tuple[str, int, str]]:
    """(lesson id, step, page) of every stop of every lesson file that parses, unchecked: what a
    class following the lessons will open (serving/warm.py); load_lessons checks them."""
    found = []
    for path in sorted(folder.glob("*.toml")):
        try:
            stops = tomllib.loads(path.read_text(encoding="utf-8")).get(STOP_TABLE, [])
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # the Lessons page says what is wrong with it
        for step, stop in enumerate(stops if isinstance(stops, list) else [], 1):
            if isinstance(stop, dict) and isinstance(stop.get("page"), str):
                found.append((path.stem, step, stop["page"]))
    return found


def load_lessons(folder: Path, catalogue: Catalogue) -> tuple[list[Lesson], list[LessonError]]:
    """Every lesson in `folder` (*.toml, by name), and the errors of the files that failed."""
    lessons, errors = [], []
    for path in sorted(folder.glob("*.toml")):
        try:
            lessons.append(read_lesson(path, catalogue))
        except LessonError as error:
            errors.append(error)
    return lessons, errors


def read_lesson(path: Path, catalogue: Catalogue) -> Lesson:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LessonError(path, None, f"cannot be read ({error})") from None
    return parse_lesson(text, path, catalogue)


def parse_lesson(text: str, path: Path | str, catalogue: Catalogue) -> Lesson:
    """A lesson from its TOML text; LessonError (first mistake, with its line) when it is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"line (\d+)", str(error))
        raise LessonError(path, int(match.group(1)) if match else None, str(error)) from None
    lines = _Lines(text, path)
    _no_unknown(data, _LESSON_FIELDS, lines, 0, "the lesson")
    title = _text(data, "title", lines, 0)
    model = _text(data, "model", lines, 0)
    _installed(model, catalogue, lines, lines.key(0, "model"))
    stops_data = data.get(STOP_TABLE, [])
    if not isinstance(stops_data, list) or not MIN_STOPS <= len(stops_data) <= MAX_STOPS:
        raise lines.error(0, f"a lesson has {MIN_STOPS}-{MAX_STOPS} [[{STOP_TABLE}]] tables")
    prompt = data.get("prompt")
    stops = tuple(
        _stop(raw, i, lines, catalogue, model, prompt) for i, raw in enumerate(stops_data)
    )
    return Lesson(
        path.stem,
        title,
        model,
        stops,
        str(data.get("summary", "")),
        str(data.get("lecture", "")),
        path,
    )


def _stop(
    raw: dict, index: int, lines: _Lines, catalogue: Catalogue, model: str, prompt: Any
) -> Stop:
    n = index + 1
    _no_unknown(raw, _STOP_FIELDS, lines, n, f"stop {n}")
    page = _text(raw, "page", lines, n)
    if page not in catalogue.pages:
        known = ", ".join(sorted(catalogue.pages))
        raise lines.error(n, f"unknown page '{page}' (pages: {known})", "page")
    view = raw.get("view", {})
    if not isinstance(view, dict):
        raise lines.error(n, "view must be a table of URL keys, like { layer = 1 }", "view")
    allowed = catalogue.pages[page] | FRAME_KEYS
    for key in view:
        if key in LESSON_KEYS or key not in allowed:
            known = ", ".join(sorted(catalogue.pages[page])) or "none"
            raise lines.error(n, f"page '{page}' has no view key '{key}' (it has: {known})", key)
    stop_model = str(raw.get("model", model))
    _installed(stop_model, catalogue, lines, lines.key(n, "model"))
    kind_name = _text(raw, "answer", lines, n)
    kind = catalogue.kinds.get(kind_name)
    if kind is None:
        known = ", ".join(sorted(catalogue.kinds))
        raise lines.error(n, f"unknown answer kind '{kind_name}' (kinds: {known})", "answer")
    args = raw.get("args", {})
    if not isinstance(args, dict):
        raise lines.error(n, "args must be a table, like { layer = 1 }", "args")
    problems = kind.problems(args)
    if problems:
        raise lines.error(n, "; ".join(problems), "args")
    stop_prompt = raw.get("prompt", prompt)
    if stop_prompt is not None and not isinstance(stop_prompt, str):
        raise lines.error(n, "prompt must be text", "prompt")
    hide = raw.get("hide", True)
    if not isinstance(hide, bool):
        raise lines.error(n, "hide must be true or false", "hide")
    figure = raw.get("figure", 1)
    if not isinstance(figure, int) or isinstance(figure, bool) or figure < 1:
        raise lines.error(n, "figure must be a chart's number on the page: 1, 2, ...", "figure")
    return Stop(
        page,
        dict(view),
        _text(raw, "instruction", lines, n),
        _text(raw, "question", lines, n),
        kind_name,
        dict(args),
        stop_model,
        stop_prompt,
        hide,
        str(raw.get("title", "")),
        lines.stop(n),
        figure,
    )


def _text(data: dict, key: str, lines: _Lines, stop: int) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        where = "the lesson" if stop == 0 else f"stop {stop}"
        raise lines.error(stop, f'{where} needs {key} = "..." (text)', key)
    return value


def _installed(model: str, catalogue: Catalogue, lines: _Lines, line: int) -> None:
    if model not in catalogue.models:
        known = ", ".join(sorted(catalogue.models))
        raise LessonError(lines.path, line, f"model '{model}' is not installed (models: {known})")


def _no_unknown(data: dict, fields: set[str], lines: _Lines, stop: int, where: str) -> None:
    for key in data:
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise lines.error(stop, f"{where} has an unknown field '{key}' (fields: {known})", key)


class _Lines:
    """Line numbers in a lesson's text: tomllib gives none for values, so they are found by the
    [[stop]] headers (stop n is the n-th) and the `key =` lines between them."""

    def __init__(self, text: str, path: Path):
        self.path = path
        self.rows = text.splitlines()
        header = re.compile(rf"^\s*\[\[\s*{STOP_TABLE}\s*\]\]")
        self.starts = [i + 1 for i, row in enumerate(self.rows) if header.match(row)]

    def stop(self, n: int) -> int:
        """The line of stop n's header (n >= 1); 1 for the lesson itself (n = 0)."""
        return self.starts[n - 1] if 0 < n <= len(self.starts) else 1

    def key(self, n: int, key: str) -> int:
        """The line where `key` is set inside stop n (n = 0: the lesson, before the first stop);
        a key inside an inline table ({ layer = 1 }) is found on its line too."""
        first = self.stop(n) if n else 1
        last = self.starts[n] - 1 if n < len(self.starts) else len(self.rows)
        pattern = re.compile(rf"(^|[{{,]\s*)\"?{re.escape(key)}\"?\s*=")
        for line in range(first, last + 1):
            if pattern.search(self.rows[line - 1].split("#", 1)[0]):
                return line
        return first

    def error(self, n: int, message: str, key: str | None = None) -> LessonError:
        return LessonError(self.path, self.key(n, key) if key else self.stop(n), message)
