"""Exercise sheets for a lesson: `python -m scripts.lesson_sheets 2_attention [--out DIR]`
(`python -m viz_gpt.scripts.lesson_sheets ...` in an installed copy).

Writes student.md, teacher.md, student.html and teacher.html (viz_model/lessons/sheets.py) into
sheets/<lesson>/ of the runs folder (VIZ_RUNS_DIR, else runs/ of the checkout, or of the current
folder in an installed copy: serving/paths.py), or DIR. Each
stop's figure is the chart a student sees: the app is run headless (Streamlit's AppTest) at the
stop's link, and the stop's chart (its `figure`, the first by default) is taken from what the
page drew. Each answer is measured on the stop's model, as the lesson panel measures it. The
Lessons page runs this in a child process (serving/sheets.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import plotly.offline
from streamlit.testing.v1 import AppTest

from serving import models, sheets
from ui import lesson as ui_lesson
from viz_model.bundles.load import load_bundle
from viz_model.lessons.kinds import subject_for
from viz_model.lessons.lesson_file import Lesson, Stop
from viz_model.lessons.registry import ANSWERS
from viz_model.lessons.sheets import SheetStop, html_sheet, markdown_sheet
from viz_model.lessons.truth import Truth

ROOT = Path(__file__).resolve().parent.parent
FILES = ("student.md", "teacher.md", "student.html", "teacher.html")


def stop_figure(lesson: Lesson, step: int, timeout: float = 120) -> str | None:
    """The plotly JSON of the stop's chart as the page draws it, or None when it draws fewer."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.query_params[ui_lesson.LESSON] = lesson.id
    at.query_params[ui_lesson.STEP] = str(step)
    at.run()
    charts = at.get("plotly_chart")
    k = lesson.stop(step).figure
    return charts[k - 1].proto.spec if len(charts) >= k else None


def stop_truth(lesson: Lesson, stop: Stop) -> Truth | None:
    found = models.discover()
    bundle = load_bundle(found[stop.model])
    try:
        return ANSWERS[stop.answer](
            subject_for(bundle, ui_lesson.prompt_of(lesson, stop)), stop.args
        )
    except Exception as error:  # noqa: BLE001 (a sheet says what failed rather than no sheet)
        print(f"stop {stop.line}: the answer could not be measured: {error}", file=sys.stderr)
        return None


def sheet_items(lesson: Lesson) -> list[SheetStop]:
    items = []
    for step, stop in enumerate(lesson.stops, 1):
        page = ui_lesson.page_of(stop)
        link = ui_lesson.link(lesson, step)
        items.append(
            SheetStop(stop, page.label, link, stop_truth(lesson, stop), stop_figure(lesson, step))
        )
        print(f"stop {step}/{len(lesson.stops)}: {page.label}", file=sys.stderr, flush=True)
    return items


def write_sheets(lesson: Lesson, out: Path) -> list[Path]:
    """The four sheets of a lesson in `out`, each written whole (a reader never sees half)."""
    items = sheet_items(lesson)
    js = plotly.offline.get_plotlyjs()
    texts = {
        "student.md": markdown_sheet(lesson, items, teacher=False),
        "teacher.md": markdown_sheet(lesson, items, teacher=True),
        "student.html": html_sheet(lesson, items, teacher=False, plotly_js=js),
        "teacher.html": html_sheet(lesson, items, teacher=True, plotly_js=js),
    }
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in texts.items():
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out / name)
        paths.append(out / name)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.lesson_sheets", description=__doc__)
    parser.add_argument(
        "lesson", help="a lesson's id: its file name in assets/lessons/ without .toml"
    )
    parser.add_argument(
        "--out", type=Path, help="where to write (default sheets/<lesson>/ in the runs folder)"
    )
    args = parser.parse_args(argv)
    found, errors = ui_lesson.lessons()
    chosen = next((x for x in found if x.id == args.lesson), None)
    if chosen is None:
        known = ", ".join(x.id for x in found)
        why = next((str(e) for e in errors if e.path.stem == args.lesson), f"lessons: {known}")
        print(f"No lesson '{args.lesson}' ({why})", file=sys.stderr)
        return 2
    try:
        out = args.out or sheets.folder(chosen.id)
    except sheets.JobError as error:  # a lesson file's name that is no folder name
        print(error, file=sys.stderr)
        return 2
    for path in write_sheets(chosen, out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
