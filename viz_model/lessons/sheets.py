"""Exercise sheets: a lesson on paper, for students (answers left blank) and for the teacher (the
answers the model gives, and why), as Markdown and as a print-ready HTML page.

The HTML page is self-contained and offline: plotly.js is inlined once, each stop's figure is
drawn from its plotly JSON and then replaced by an SVG image of itself (`Plotly.toImage`), so
the browser's Print (or "Save as PDF") gives a sheet with the figures as images, one stop per
block, never split across pages. No static-export engine is needed: kaleido would have to find or
download a Chrome, and every teacher who opens the sheet already has a browser.

    items = [SheetStop(stop, "Attention", link, truth, figure_json), ...]
    markdown_sheet(lesson, items, teacher=False)
    html_sheet(lesson, items, teacher=True, plotly_js=plotly.offline.get_plotlyjs())
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

from viz_model.lessons.lesson_file import Lesson, Stop
from viz_model.lessons.truth import Truth

BLANK = "_" * 24
FIGURE_WIDTH = 720  # px: the width of a printed A4/Letter page's text, where labels stay readable


@dataclass(frozen=True)
class SheetStop:
    stop: Stop
    page: str  # the page's label
    link: str  # a relative link that opens the stop in the app
    truth: Truth | None  # None: the answer could not be measured (said on the teacher's sheet)
    figure: str | None = None  # the stop's chart as plotly JSON ({"data": ..., "layout": ...})


def markdown_sheet(lesson: Lesson, items: list[SheetStop], teacher: bool) -> str:
    """The sheet as Markdown: figures are named by the stop's link (the HTML sheet has them)."""
    lines = [f"# {lesson.title}", ""]
    lines += _heading_facts(lesson, teacher)
    for n, item in enumerate(items, 1):
        lines += [f"## {n}. {item.stop.title or item.page}", ""]
        lines += [f"*Page: {item.page}, in the app at `{item.link}`*", ""]
        lines += [item.stop.instruction, "", f"**{item.stop.question}**", ""]
        lines += _answer_lines(item, teacher)
    return "\n".join(lines).rstrip() + "\n"


def _heading_facts(lesson: Lesson, teacher: bool) -> list[str]:
    facts = [f"Model: {lesson.model}", f"{len(lesson.stops)} questions"]
    if lesson.lecture:
        facts.insert(0, lesson.lecture)
    kind = "Teacher's sheet: the answers are the model's own" if teacher else "Student's sheet"
    out = [f"*{kind}. {' · '.join(facts)}.*", ""]
    return out + ([lesson.summary, ""] if lesson.summary else [])


def _answer_lines(item: SheetStop, teacher: bool) -> list[str]:
    if not teacher:
        if not item.stop.hide:  # an observation: read off the page
            return [f"Your answer: {BLANK}", ""]
        return [f"Your prediction: {BLANK}", "", f"What the app shows: {BLANK}", ""]
    t = item.truth
    if t is None:
        return ["*The answer could not be measured on this model.*", ""]
    lines = [f"**Answer: {t.shown()}**", ""]
    if t.form == "choice":
        lines += [f"Options: {', '.join(t.options)}", ""]
    if not t.holds:
        lines += ["*On this model the lesson's expected observation does not hold:*", ""]
    return lines + [t.why, ""]


# ---- HTML -------------------------------------------------------------------------------------

_STYLE = """
body { font-family: Inter, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 780px;
       margin: 2em auto; color: #222; line-height: 1.45; font-size: 15px; }
h1 { font-size: 26px; } h2 { font-size: 19px; margin-top: 0; }
.stop { border-top: 1px solid #bbb; padding: 1em 0; break-inside: avoid; page-break-inside: avoid; }
.where { color: #666; font-size: 13px; }
.question { font-weight: 600; }
.blank { margin: 0.8em 0; }
.answer { background: #f2f6ff; padding: 0.6em 0.8em; border-radius: 4px; }
.fig img { max-width: 100%; }
@media print { body { margin: 0; } a { color: inherit; text-decoration: none; } }
"""

# Each .fig holds its figure's JSON; once drawn, it becomes an <img> of itself (SVG), so printing
# or saving the page keeps the figure as an image and nothing interactive is left.
_SCRIPT = """
document.querySelectorAll('.fig').forEach(async (box) => {
  const spec = JSON.parse(box.querySelector('script').textContent);
  const div = document.createElement('div');
  box.appendChild(div);
  await Plotly.newPlot(div, spec.data, spec.layout, {staticPlot: true});
  const url = await Plotly.toImage(div, {format: 'svg', width: spec.layout.width,
                                         height: spec.layout.height});
  const img = document.createElement('img');
  img.src = url; img.alt = box.dataset.alt;
  box.replaceChild(img, div);
});
"""


def html_sheet(lesson: Lesson, items: list[SheetStop], teacher: bool, plotly_js: str) -> str:
    """The sheet as one self-contained HTML page (plotly.js inlined; no network)."""
    kind = "Teacher's sheet" if teacher else "Student's sheet"
    body = [f"<h1>{_esc(lesson.title)}</h1>"]
    facts = " · ".join(f for f in (lesson.lecture, f"model {lesson.model}", kind) if f)
    body.append(f'<p class="where">{_esc(facts)}</p>')
    if lesson.summary:
        body.append(f"<p>{_inline(lesson.summary)}</p>")
    for n, item in enumerate(items, 1):
        body.append(_html_stop(n, item, teacher))
    scripts = f"<script>{plotly_js}</script><script>{_SCRIPT}</script>" if _figures(items) else ""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_esc(lesson.title)} · {kind}</title><style>{_STYLE}</style></head>"
        f"<body>{''.join(body)}{scripts}</body></html>"
    )


def _figures(items: list[SheetStop]) -> int:
    return sum(item.figure is not None for item in items)


def _html_stop(n: int, item: SheetStop, teacher: bool) -> str:
    """One stop. On the student's sheet a predict-then-reveal stop (hide = true) asks for the
    prediction before the figure, which may show the answer, as the app blurs it until then."""
    parts = [
        f'<section class="stop"><h2>{n}. {_esc(item.stop.title or item.page)}</h2>',
        f'<p class="where">Page: {_esc(item.page)} · in the app: {_esc(item.link)}</p>',
        f"<p>{_inline(item.stop.instruction)}</p>",
        f'<p class="question">{_inline(item.stop.question)}</p>',
    ]
    figure = (
        _html_figure(item.figure, f"The figure of stop {n}: {item.page}")
        if item.figure is not None
        else ""
    )
    if teacher:
        parts.append(figure + '<div class="answer">')
        parts += [f"<p>{_inline(line)}</p>" for line in _answer_lines(item, True) if line]
        parts.append("</div>")
    elif item.stop.hide:
        parts.append(f'<p class="blank">Your prediction: {BLANK}</p>')
        if figure:
            parts.append('<p class="where">Then check it against the figure:</p>' + figure)
        parts.append(f'<p class="blank">What the app shows: {BLANK}</p>')
    else:
        parts.append(figure + f'<p class="blank">Your answer: {BLANK}</p>')
    return "".join(parts) + "</section>"


def _html_figure(figure: str, alt: str) -> str:
    spec = json.loads(figure)
    layout = dict(spec.get("layout") or {})
    layout["width"] = FIGURE_WIDTH
    layout.setdefault("height", 420)
    for name, axis in layout.items():  # the app's theme made room for tick labels; plotly must
        if re.fullmatch(r"[xy]axis\d*", name) and isinstance(axis, dict):
            layout[name] = {**axis, "automargin": True}
    data = json.dumps({"data": spec.get("data", []), "layout": layout})
    safe = data.replace("</", "<\\/")  # JSON inside <script> must not close it
    return (
        f'<div class="fig" data-alt="{_esc(alt)}">'
        f'<script type="application/json">{safe}</script></div>'
    )


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _inline(markdown: str) -> str:
    """The little Markdown a lesson and a reveal use, as HTML: backslash escapes (a literal "*"
    stays one), **bold**, *italic* and `code`; everything else is escaped text."""
    held = re.sub(r"\\(.)", lambda m: f"\x00{ord(m.group(1))}\x00", markdown)
    text = _esc(held)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", text)
    text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
    return re.sub("\x00(\\d+)\x00", lambda m: _esc(chr(int(m.group(1)))), text)
