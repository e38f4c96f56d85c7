"""Presenter mode, and the one way a page draws a plotly chart.

`?present=1` in the URL (or the sidebar's "Presenter mode" toggle) is for a projector: the
sidebar starts collapsed, prose is larger, the page uses the screen's width, charts that a page
sets side by side in columns stand one under another at full width, and every chart is drawn
with every font (axis titles, ticks, cell numbers, legend, hover text) at PRESENTER_FLOOR px or
more. No chart is taller than MAX_HEIGHT px, so each fits a 768-px screen under the header; an
axis that named every token names every n-th once its rows get too short for its labels. The
value is carried in the URL (ui/state.py), so it survives page changes and a link opens a class's
screen in presenter mode.

    ui.present.plot(fig, key="attn_heatmap")                 # instead of st.plotly_chart
    ui.present.plot(fig, container=left, width="stretch")    # in a column

The chart text floor outside presenter mode (FLOOR px at 1024x768) is kept by the chart
builders themselves (ui/charts/common.py); tests/test_browser_readability.py measures both.

In presenter mode the frame also draws `header(...)`: one line at the top of the page with the
model, its training step and the lesson stop, which the folded sidebar would otherwise hide.

Not here: the frame that calls `sidebar_state()`, `apply()` and `header()` and reads what the
header says (ui/frame.py); chart building.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ui import nav, state
from ui.charts.common import PRESENTER_MAX_HEIGHT, PRESENTER_SCALE, frozen
from viz_model.analysis.claims import md_escape

KEY = "present"
FLOOR = 12  # px: every chart's text at 1024x768 (docs/ARCHITECTURE.md, Presenter mode)
PRESENTER_FLOOR = 16  # px: every chart's text in presenter mode
SCALE = PRESENTER_SCALE  # fonts above the floor grow by this much too, so sizes stay ranked
DEFAULT_FONT_PX = 13  # what plotly draws where a figure sets no size (its hover labels' default)
# What Streamlit's chart theme draws where a figure sets no size (seen in Chromium, 1.67).
THEME_PX = {"tick": 12, "title": 14, "legend": 14}
AXIS = re.compile(r"^[xy]axis\d*$")
HEIGHT_SCALE = SCALE  # presenter mode: a chart grows as its text does, so rows of labels still fit
# ...but never past the screen: a 768-px projector holds Streamlit's toolbar (56 px), the header
# line (about 40 px) and a chart this tall, so a figure is seen whole without scrolling.
MAX_HEIGHT = PRESENTER_MAX_HEIGHT
ROW_PX = 20  # px one axis label needs at PRESENTER_FLOOR, with a gap: fewer rows, fewer labels
PLOT_WIDTH = 900  # px across a full-width chart at 1024 px (presenter mode stacks columns)
DEFAULT_MARGIN = 80  # plotly's margin where a figure sets none
HEADER_KEY = "present_header"  # the header line's container: .st-key-present_header
HEADER_NAME_CHARS = 32  # a longer model name is cut, so the step and stop stay on the line
FIGURE_BUTTON = "spotlight_fig_"  # a live class teacher's hidden buttons, one a figure (below)
FIGURE_BUTTONS_KEY = "spotlight_figures"  # their container, never shown

# Large prose, the full width of the screen, and columns holding a chart stacked one under
# another (the `:has` selector: only a row with a chart in it, so rows of controls stay rows).
PRESENTER_CSS = """<style>
[data-testid=stMain] [data-testid=stMarkdownContainer] p,
[data-testid=stMain] [data-testid=stMarkdownContainer] li,
[data-testid=stMain] [data-testid=stCaptionContainer] { font-size: 1.35rem; }
[data-testid=stMain] [data-testid=stWidgetLabel] p { font-size: 1.15rem; }
[data-testid=stMain] .katex { font-size: max(1.21em, 23px); }
[data-testid=stMain] [data-testid=stCode] code { font-size: 1.05rem; }
[data-testid=stMain] :is([data-testid=stHtml], [data-testid=stMarkdownContainer])
  :is(span, div, code, b, i, td, th, small):not(.katex, .katex *) {
  font-size: max(16px, 1em) !important; }
[data-testid=stMainBlockContainer] { max-width: 100%; padding-left: 2rem; padding-right: 2rem; }
[data-testid=stHorizontalBlock]:has([data-testid=stPlotlyChart]) { flex-direction: column; }
[data-testid=stHorizontalBlock]:has([data-testid=stPlotlyChart]) > [data-testid=stColumn] {
  width: 100% !important; flex: 1 1 100% !important; }
</style>"""
# The header line, right under Streamlit's toolbar (the page's top padding 3.5rem, not its 6rem):
# text 22 px on one line, anything too long cut with an ellipsis rather than wrapped.
HEADER_CSS = f"""<style>
[data-testid=stMainBlockContainer] {{ padding-top: 3.5rem; }}
.st-key-{FIGURE_BUTTONS_KEY},
[data-testid=stLayoutWrapper]:has(> .st-key-{FIGURE_BUTTONS_KEY}) {{ display: none !important; }}
.st-key-{HEADER_KEY} [data-testid=stMarkdownContainer] p {{ font-size: 1.4rem; line-height: 1.4;
  margin: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
</style>"""
# The header stays on screen while the page scrolls (sticky, under Streamlit's toolbar), so the
# model and step are always shown beside whichever figure is up.
STICKY_HEADER_CSS = f"""<style>
[data-testid=stLayoutWrapper]:has(> .st-key-{HEADER_KEY}) {{ position: sticky; top: 3.75rem;
  z-index: 990; background: var(--background-color, #fff); padding: 0.2rem 0; }}
</style>"""
# (No "<" before a letter or "/" in the script: Streamlit's HTML sanitiser, DOMPurify, drops a
# <script> whose text looks like markup, silently.)
# The spotlight: a page's figures one at a time, one click (or a clicker's Page Down / Page Up)
# apart, instead of scrolling; its buttons sit in Streamlit's toolbar, where they cover nothing.
# Each step puts the next (previous) chart's top right under the header line; presenter-mode
# charts are at most MAX_HEIGHT px, so a chart fits what is left of a 768-px screen. Installed
# once per browser tab and shown only while the header line exists (presenter mode), so turning
# the mode off hides it. It reads the page as drawn, so a figure a rerun adds or removes is
# counted on the next click.
# The figure in the spotlight is part of the view (issue 37: what the teacher shows, the class
# sees): each step clicks the hidden button FIGURE_BUTTON<n> a live class's teacher has
# (ui/classroom.py), which writes FIG_KEY = "<route>:<n>" into the address and the class's view.
# Wherever the script runs (a presenter's page, a following student's), a FIG_KEY that names
# this page and changed scrolls figure n to the top once it is drawn: a follower sees the
# teacher's figure, a reload comes back to it. Not while the student's class box holds an
# answer form (the question stays on screen; the figure comes after), nor for FOLLOW_QUIET_MS
# after this tab's own click (the address catches up a step behind a quick clicker). And on a
# student's page a new question's form scrolls the class box into view, once: a student who
# was scrolled down to a figure sees the question without looking for it (issue 37).
SPOTLIGHT_ID = "viz-spotlight"
FIG_KEY = "fig"  # the URL key of the spotlit figure: "<route>:<n>", n from 1
MAX_FIGURES = 12  # figures the spotlight can tell a class about (pages draw at most 8)
FOLLOW_QUIET_MS = 3000
STUDENT_BOX_KEY = "class_box"  # ui/classroom.BOX_KEY: a student's class box
SPOTLIGHT_JS = """<script>
(() => {
  const doc = window.parent && window.parent !== window ? window.parent.document : document;
  const win = doc.defaultView || window;
  if (doc.getElementById("__ID__")) return;
  const style = doc.createElement("style");
  style.textContent = `
#__ID__ { position: fixed; right: 64px; top: 8px; z-index: 1000010; display: none; gap: 6px;
  align-items: center; background: rgba(255,255,255,.96); border: 1px solid #aaa;
  border-radius: 8px; padding: 4px 8px; font: 18px sans-serif; color: #222; }
body:has(.st-key-__HEADER__) #__ID__ { display: flex; }
#__ID__ button { font-size: 18px; min-width: 44px; min-height: 36px; cursor: pointer;
  border: 1px solid #999; border-radius: 6px; background: #f4f4f4; color: #222; }
.st-key-__BUTTONS__,
[data-testid=stLayoutWrapper]:has(> .st-key-__BUTTONS__) { display: none !important; }`;
  doc.head.appendChild(style);
  const box = doc.createElement("div");
  box.id = "__ID__";
  box.setAttribute("role", "navigation");
  box.setAttribute("aria-label", "Figures on this page");
  const button = (step, name, key, arrow) => {
    const b = doc.createElement("button");
    b.type = "button";
    b.dataset.step = step;
    b.setAttribute("aria-label", name);
    b.title = `${name} (${key})`;
    b.textContent = arrow;
    return b;
  };
  const label = doc.createElement("span");
  label.setAttribute("aria-live", "polite");
  box.append(button(-1, "Previous figure", "Page Up", "\u25c0"), label,
    button(1, "Next figure", "Page Down", "\u25b6"));
  doc.body.appendChild(box);
  const on = () => doc.querySelector(".st-key-__HEADER__") !== null;
  const figures = () => [...doc.querySelectorAll(
    "[data-testid=stMain] :is([data-testid=stPlotlyChart], [data-testid=stImage])")]
    .filter((f) => f.offsetParent !== null && f.getBoundingClientRect().height > 20);
  const top = () => {
    const h = doc.querySelector(".st-key-__HEADER__");
    return Math.max(h ? h.getBoundingClientRect().bottom : 0, 60);
  };
  const current = (figs) => {
    let at = -1;
    figs.forEach((f, i) => { if (f.getBoundingClientRect().top <= top() + 40) at = i; });
    return at;
  };
  const scroller = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const y = getComputedStyle(p).overflowY;
      if ((y === "auto" || y === "scroll") && p.scrollHeight > p.clientHeight) return p;
    }
    return doc.scrollingElement;
  };
  const show = () => {
    if (!on()) return;
    const figs = figures();
    const at = current(figs);
    label.textContent = !figs.length ? "No figures"
      : at === -1 ? `${figs.length} figure${figs.length === 1 ? "" : "s"}`
      : `Figure ${at + 1} of ${figs.length}`;
  };
  const bring = (f) => {
    scroller(f).scrollBy({top: f.getBoundingClientRect().top - top() - 6, behavior: "instant"});
    show();
  };
  let told = 0;
  const tell = (n) => {
    const b = doc.querySelector(".st-key-__BUTTON__" + n + " button");
    if (b) { told = Date.now(); b.click(); }
  };
  const go = (step) => {
    const figs = figures();
    if (!figs.length) return false;
    const i = Math.min(figs.length - 1, Math.max(0, current(figs) + step));
    bring(figs[i]);
    tell(i + 1);
    return true;
  };
  box.addEventListener("click", (e) => {
    const b = e.target.closest("button");
    if (b) go(Number(b.dataset.step));
  });
  doc.addEventListener("keydown", (e) => {
    if (!on() || (e.key !== "PageDown" && e.key !== "PageUp")) return;
    if (e.target.closest && e.target.closest("input, textarea, select, [contenteditable]")) return;
    if (go(e.key === "PageDown" ? 1 : -1)) e.preventDefault();
  }, true);
  doc.addEventListener("scroll", show, true);
  setInterval(show, 1000);
  const wanted = () => {
    const raw = new URLSearchParams(win.location.search).get("__FIG__") || "";
    const cut = raw.lastIndexOf(":");
    const route = raw.slice(0, cut), n = Number(raw.slice(cut + 1));
    const here = decodeURIComponent(win.location.pathname.split("/").pop()) || "__HOME__";
    return {raw, n: cut > 0 && route === here && n >= 1 ? n : 0};
  };
  let applied = "", since = Date.now(), asked = "";
  const follow = () => {
    const form = doc.querySelector(".st-key-__STUDENT__ [data-testid=stForm]");
    const question = form ? form.innerText : "";
    if (question && question !== asked) {  // a new question: the box comes into view, once
      doc.querySelector(".st-key-__STUDENT__").scrollIntoView({block: "start"});
    }
    asked = question;
    const {raw, n} = wanted();
    if (raw !== applied && Date.now() - told < __QUIET__) applied = raw;
    if (raw === applied) { since = Date.now(); return; }
    if (doc.querySelector(".st-key-__STUDENT__ [data-testid=stForm]")) return;
    const figs = figures();
    if (!n) { applied = raw; return; }
    if (figs.length >= n) { bring(figs[n - 1]); applied = raw; }
    else if (Date.now() - since > 20000) applied = raw;
  };
  setInterval(follow, 400);
})();
</script>"""
for _name, _value in {
    "__ID__": SPOTLIGHT_ID,
    "__HEADER__": HEADER_KEY,
    "__BUTTONS__": FIGURE_BUTTONS_KEY,
    "__BUTTON__": FIGURE_BUTTON,
    "__FIG__": FIG_KEY,
    "__QUIET__": str(FOLLOW_QUIET_MS),
    "__STUDENT__": STUDENT_BOX_KEY,
    "__HOME__": nav.HOME.route,
}.items():
    SPOTLIGHT_JS = SPOTLIGHT_JS.replace(_name, _value)
# On a short screen (a 1024x768 projector) the navigation scrolls inside its own box, so the
# model picker and the prompt box under it are on screen without scrolling the sidebar. Its
# scrollbar is always drawn (an overlay one hides until used), so the pages below the fold show.
SIDEBAR_CSS = """<style>
@media (max-height: 900px) {
  [data-testid=stSidebarNav] { max-height: 34vh; overflow-y: auto;
    scrollbar-width: thin; scrollbar-color: #9a9a9a transparent; }
}
</style>"""


def is_on() -> bool:
    """Presenter mode: `present=1` in the URL, or the toggle, for this session."""
    return state.url_bool(KEY, False)


def sidebar_state() -> str:
    """What st.set_page_config's initial_sidebar_state should be: collapsed for a projector."""
    return "collapsed" if is_on() else "expanded"


def apply() -> None:
    """Draw the sidebar's toggle and the page's styles; the frame calls it once a run."""
    state.toggle(
        "Presenter mode",
        KEY,
        container=st.sidebar,
        help="For a projector: larger text in prose and charts, one chart across the screen, "
        "this sidebar folded away. The URL keeps it (present=1).",
    )
    # In the sidebar, not on the page: pages and their tests count their own html elements from
    # the first, and a <style> draws nothing wherever it is. No user text goes in it.
    st.sidebar.html(
        SIDEBAR_CSS + (PRESENTER_CSS + HEADER_CSS + STICKY_HEADER_CSS if is_on() else "")
    )


def header(model: str, step: str | None, stop: tuple[int, int] | None) -> None:
    """The presenter's header line, at the top of the main area: the model, its training step as
    the sidebar's slider writes it (none for a model without snapshots) and, in a lesson, the
    stop, so the room can tell a class run from a bundled model and step 0 from the last."""
    if len(model) > HEADER_NAME_CHARS:
        model = model[: HEADER_NAME_CHARS - 1] + "…"
    parts = [f"Model **{md_escape(model)}**"]
    if step is not None:
        parts.append(f"training step **{step}**")
    if stop is not None:
        parts.append(f"lesson **stop {stop[0]} of {stop[1]}**")
    box = st.container(key=HEADER_KEY)
    box.markdown(" · ".join(parts))
    # In the header, not the sidebar: a folded sidebar's elements are not drawn, nor run.
    box.html(SPOTLIGHT_JS, unsafe_allow_javascript=True)


def plot(fig: go.Figure, *, container: Any = st, **kwargs: Any) -> Any:
    """`container.plotly_chart(fig, **kwargs)`; in presenter mode, a copy with larger fonts."""
    shown = presenter_figure(fig) if is_on() else fig
    return container.plotly_chart(shown, **kwargs)


# ---- scaling a figure's fonts (pure) ----------------------------------------------------------


def presenter_figure(fig: go.Figure) -> go.Figure:
    """A copy of `fig` with every font at PRESENTER_FLOOR px or more. The figure passed in (often
    a cached FrozenFigure shared by every session) is never changed: the dicts on the way to
    each font are copied, and the data arrays are shared, not copied.

    Fonts a figure leaves unset are set too: Streamlit's chart theme draws those at its own
    sizes (THEME_PX), which no layout-wide font reaches."""
    spec = fig.to_dict()
    layout = scaled_fonts(spec.get("layout") or {})
    layout["font"] = {**layout.get("font", {}), "size": _bigger(_size_of(layout.get("font")))}
    for name in {"xaxis", "yaxis", *(k for k in layout if AXIS.match(k))}:
        layout[name] = _themed_axis(layout.get(name) or {})
    layout = _titled(layout)  # the chart's title
    layout["legend"] = _titled(_with_font(layout.get("legend") or {}, "font", THEME_PX["legend"]))
    layout["hoverlabel"] = _with_font(layout.get("hoverlabel") or {}, "font", DEFAULT_FONT_PX)
    for name in [k for k in layout if k.startswith("coloraxis")]:
        layout[name] = _with_colorbar(layout[name])
    if isinstance(layout.get("height"), numbers.Real):
        layout["height"] = min(int(layout["height"] * HEIGHT_SCALE), MAX_HEIGHT)
        for name in [k for k in layout if AXIS.match(k)]:
            layout[name] = fitting_ticks(layout[name], _axis_px(layout, name))
    data = [_with_colorbar(_scaled_trace(trace)) for trace in spec.get("data") or []]
    return frozen({**spec, "data": data, "layout": layout})


def _axis_px(layout: dict, name: str) -> float | None:
    """About how many px the axis `name` spans: a y axis its share of the plot's height; an x
    axis its share of a full-width chart's, when its labels stand on end (one ROW_PX each); None
    for an x axis of level labels (their widths are the words')."""
    axis, margin = layout[name], layout.get("margin") or {}
    low, high = axis.get("domain") or (0.0, 1.0)
    if name.startswith("y"):
        plot = layout["height"] - margin.get("t", DEFAULT_MARGIN) - margin.get("b", DEFAULT_MARGIN)
    elif abs(axis.get("tickangle") or 0) >= 45:
        plot = PLOT_WIDTH - margin.get("l", DEFAULT_MARGIN) - margin.get("r", DEFAULT_MARGIN)
    else:
        return None
    return max(plot, 0) * (high - low)


def fitting_ticks(axis: dict, px: float | None) -> dict:
    """An axis that names every label (tickvals) keeps them when they fit `px` at ROW_PX each;
    past that plotly writes every n-th, as many as fit (nticks), rather than labels drawn over
    one another once the chart is capped at the screen's height."""
    labels = axis.get("tickvals")
    if px is None or axis.get("tickmode") != "array" or labels is None:
        return axis
    if len(labels) * ROW_PX <= px:
        return axis
    thinned = {k: v for k, v in axis.items() if k not in ("tickmode", "tickvals", "ticktext")}
    return {**thinned, "nticks": max(2, int(px // ROW_PX))}


def _with_font(node: dict, key: str, theme_px: int) -> dict:
    """`node` with its font `key` sized as `_bigger` says (from theme_px when it has no size)."""
    font = node.get(key) or {}
    size = font.get("size") if isinstance(font, dict) else None
    return {**node, key: {**font, "size": _bigger(size if size is not None else theme_px)}}


def _titled(node: dict) -> dict:
    """`node` (an axis, a legend, a colour bar) with its title's font set, if it has a title."""
    title = node.get("title")
    if isinstance(title, str):  # figures built as plain dicts may carry a bare string
        title = {"text": title}
    if not isinstance(title, dict):
        return node
    return {**node, "title": _with_font(title, "font", THEME_PX["title"])}


def _themed_axis(axis: dict) -> dict:
    return _titled(_with_font(axis, "tickfont", THEME_PX["tick"]))


def _with_colorbar(node: dict) -> dict:
    """A trace or colour axis whose colour bar (drawn whenever it has a colour scale) is set."""
    if "colorbar" not in node and "colorscale" not in node and node.get("type") != "heatmap":
        return node
    bar = _titled(_with_font(node.get("colorbar") or {}, "tickfont", THEME_PX["tick"]))
    return {**node, "colorbar": bar}


def _bigger(size: Any) -> Any:
    """A font size for presenter mode: SCALE times larger, and at least PRESENTER_FLOOR."""
    if isinstance(size, numbers.Real) and not isinstance(size, bool):
        return max(PRESENTER_FLOOR, round(size * SCALE))
    if isinstance(size, list | tuple):  # one size per point
        return [_bigger(s) for s in size]
    return max(PRESENTER_FLOOR, round(DEFAULT_FONT_PX * SCALE))


def _size_of(font: Any) -> Any:
    return font.get("size") if isinstance(font, dict) else None


def _is_font_key(key: str) -> bool:
    """font, tickfont, textfont, insidetextfont, titlefont, ...: every plotly font attribute."""
    return key.endswith("font")


def scaled_fonts(node: dict) -> dict:
    """A copy of a layout or trace dict with every font's size made bigger (`_bigger`); the
    branches holding no font (data arrays, numbers) are shared with the original."""
    out = dict(node)
    for key, value in node.items():
        if key == "template":  # plotly's defaults for every trace type: nothing drawn as is
            continue
        if _is_font_key(key) and isinstance(value, dict):
            out[key] = {**value, "size": _bigger(value.get("size"))}
        elif key == "uniformtext" and isinstance(value, dict) and "minsize" in value:
            out[key] = {**value, "minsize": _bigger(value["minsize"])}
        elif isinstance(value, dict):
            out[key] = scaled_fonts(value)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, dict) for v in value):
            out[key] = [scaled_fonts(v) for v in value]  # annotations, shapes, sliders
    return out


def _scaled_trace(trace: dict) -> dict:
    """A trace's fonts made bigger; a trace that writes text (texttemplate, text on bars) and sets
    no text font gets one, since plotly may shrink such text to fit its cell."""
    out = scaled_fonts(trace)
    writes_text = trace.get("texttemplate") or (
        trace.get("text") is not None and "mode" not in trace
    )
    if writes_text and "textfont" not in trace:
        out["textfont"] = {"size": _bigger(None)}
    return out
