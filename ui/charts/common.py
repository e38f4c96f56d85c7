"""Shared look of every chart: colour scales, sizes, fonts, and token labels that stay distinct."""

from __future__ import annotations

import colorsys
import html
from collections.abc import Collection, Sequence

import plotly.graph_objects as go

from viz_model.analysis.claims import show_controls

# Sequential scale for probabilities/weights (0..1), diverging for signed values (centred on 0).
SEQUENTIAL = "Blues"
DIVERGING = "RdBu"
PROB_SCALE = "Viridis"
MASKED_COLOUR = "#e6e6e6"  # cells a causal mask hides
CUT_COLOUR = "#c8c8c8"  # tokens top-k/top-p removed
ACCENT = "#d62728"
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)
HEIGHT = 420
SMALL_HEIGHT = 260
MARGIN = dict(l=10, r=10, t=40, b=10)
UNK_OPEN, UNK_CLOSE = "«", "»"  # around a token the model read as <unk>, in labels
EVERY_TICK_MAX_T = 64  # token axes label every token up to this many (plotly thins them after)
# The smallest text a chart may draw: docs/ARCHITECTURE.md (Presenter mode and
# projectors) asks for 12 px at 1024x768 (16 px in
# presenter mode, ui/present.py). A label that cannot fit at this size is left out (plotly thins
# a category axis to one label per 1.2 font sizes) and stays in the hover, never drawn smaller.
TICK_FONT = 12
LABEL_PX = 15  # px along an axis that one TICK_FONT label needs
COLUMN_PLOT_PX = 540  # a full-width chart's plot area on a 1024 px projector, sidebar open
COLUMN_TICKS_MAX_T = COLUMN_PLOT_PX // LABEL_PX  # labels that fit across it: 36


def show_whitespace(piece: str) -> str:
    """Make a token's invisible characters visible: ' ' -> '␣', '\\n' -> '↵', '\\t' -> '⇥', and a
    control character as its code point ('\\u202e' -> '<202e>', claims.show_controls), so a
    right-to-left override typed in a prompt mirrors nothing drawn after it."""
    if piece == "":
        return "∅"
    return show_controls(piece).replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def token_labels(pieces: list[str], unknown: Collection[int] = ()) -> list[str]:
    """Labels for a token axis that stay distinct when a token repeats: position, colon, text.
    Positions in `unknown` (the model read them as `<unk>`) keep the typed text inside « »:
    short enough for an axis, in every font (Latin-1), and it still shows what was typed.

    >>> token_labels(["a", "b", "a"]), token_labels(["R", "o"], unknown={0})
    (['0:a', '1:b', '2:a'], ['0:«R»', '1:o'])
    """
    unknown = set(unknown)
    return [
        f"{i}:{UNK_OPEN}{show_whitespace(p)}{UNK_CLOSE}"
        if i in unknown
        else f"{i}:{show_whitespace(p)}"
        for i, p in enumerate(pieces)
    ]


def house_layout(title: str = "", height: int = HEIGHT, **extra) -> dict:
    """The house title, font, height and margin (plus `extra`) as one layout dict, for figures
    built in a single go.Figure(data, layout) call.

    No template is set: Streamlit's own chart theme styles every figure in the app, and assigning a
    plotly template costs 7-18 ms a figure (validating it), once the largest part of a rerun.
    """
    return {
        "title": dict(text=title, x=0, xanchor="left", font=dict(size=15)),
        "font": FONT,
        "height": height,
        "margin": MARGIN,
        **extra,
    }


def base_layout(fig: go.Figure, title: str = "", height: int = HEIGHT) -> go.Figure:
    """Apply the house layout to a plotly figure and return it.

    A property the figure has not set yet is assigned, which is what update_layout would do to
    it, at a tenth of the cost (update_layout's merge took ~2 ms a figure, on every chart); a
    property it already set part of is merged as before.
    """
    merge = {}
    for key, value in house_layout(title, height).items():
        current = fig.layout[key]
        if current is None or (hasattr(current, "to_plotly_json") and not current.to_plotly_json()):
            fig.layout[key] = value
        else:
            merge[key] = value
    if merge:
        fig.update_layout(**merge)
    return fig


def colorbar_below(title: str = "", **extra) -> dict:
    """A horizontal colour bar at the foot of the figure (plotly makes room for it). Beside the
    plot a colour bar takes ~80-100 px, a third of a half-column chart on a 1024 px page."""
    return dict(
        title=dict(text=title, side="right"),  # "top" drew it over the bar
        orientation="h",
        yref="container",
        y=0,
        yanchor="bottom",
        x=1,
        xanchor="right",
        lenmode="pixels",
        len=200,  # shorter, its tick labels turn sideways in a half column
        thickness=10,
        outlinewidth=0,
        **extra,
    )


def every_tick(labels: list[str], max_t: int = EVERY_TICK_MAX_T, size: int | None = None) -> dict:
    """Axis settings that write every label up to max_t labels (the most that fit on the axis at
    TICK_FONT px: an axis of rows that grow with the prompt fits EVERY_TICK_MAX_T, one across
    a page column COLUMN_TICKS_MAX_T); past that, plotly writes every n-th, as many as fit. The
    font is never under TICK_FONT px, even when a caller asks for less."""
    font = dict(tickfont=dict(size=max(size or TICK_FONT, TICK_FONT)))
    if len(labels) > max_t:
        return font
    return dict(tickmode="array", tickvals=list(labels), ticktext=list(labels), **font)


def axis_suffix(i: int) -> str:
    """Plotly's axis suffix of subplot i (0-based, row by row): "", "2", "3", ..."""
    return str(i + 1) if i else ""


def subplot_domains(
    rows: int, cols: int, h_space: float = 0.2, v_space: float = 0.3
) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) of each cell of a rows x cols grid, row by row from the top: what
    make_subplots gives, for figures built as plain dicts (its validating setters cost ~20 ms
    for a 4 x 4 grid)."""
    width, height = (1 - h_space * (cols - 1)) / cols, (1 - v_space * (rows - 1)) / rows
    cells = []
    for row in range(rows):
        for col in range(cols):
            x0, top = col * (width + h_space), 1 - row * (height + v_space)
            cells.append(([x0, min(x0 + width, 1.0)], [max(top - height, 0.0), top]))
    return cells


class FrozenFigure(go.Figure):
    """A finished figure drawn again and again: its plotly JSON dict is made once, here.

    st.plotly_chart turns a figure into a dict on every script run (`to_dict`: a deep copy that
    base64-encodes every numpy array again), then into JSON; for a figure a page caches, that
    dict is the same each time (the attention grid: ~5 ms a view for nothing). This figure
    keeps the dict it was made from and gives out a copy of its top levels, so the JSON is all
    that is left per run. It is shared read-only by the caches: never change one in place
    (derive another with `frozen(spec)`).
    """

    def __init__(self, spec: dict) -> None:
        super().__init__(spec, _validate=False)  # the objects, for code that reads fig.data
        self._spec = spec

    def to_dict(self) -> dict:
        # plotly.io.to_json pops each trace's "uid": the traces are copied, their arrays shared
        spec = self._spec
        return {**spec, "data": [dict(t) for t in spec["data"]], "layout": dict(spec["layout"])}


def frozen(fig: go.Figure | dict) -> FrozenFigure:
    """`fig` (a built figure, or the dict of one) as a FrozenFigure."""
    if isinstance(fig, FrozenFigure):
        return fig
    return FrozenFigure(fig.to_dict() if isinstance(fig, go.Figure) else fig)


def plotly_text(label: str) -> str:
    """Token text for plotly, whose labels, titles and hovers read a little HTML (<b>, <a href>):
    escape <, > and & only, so a student's "<b>" shows as typed and never as markup.

    Plotly turns &lt; &gt; &amp; back into characters but shows &quot; and &#x27; as written,
    so quotes stay as they are (unlike html.escape for st.html).

    >>> plotly_text('say "<b>" & go')
    'say "&lt;b&gt;" &amp; go'
    """
    return html.escape(label, quote=False)


def plotly_labels(labels) -> list[str]:
    """plotly_text of every token label; every chart that draws a student's tokens calls it."""
    return [plotly_text(str(label)) for label in labels]


# ---- series a room must tell apart: distinct hues, direct labels, a legend under everything ----

# Lines a student tells apart by colour, in the order charts take them. On a washed-out projector
# two colours survive only when their hues are far apart and both stay dark against the white
# page: every pair here is MIN_HUE_GAP degrees of hue apart or more, and each has CONTRAST_MIN
# (WCAG's 3:1 for graphics) against white. Blue, orange, green, purple, magenta, teal, olive.
SERIES_COLOURS = ("#1f5fbf", "#d55e00", "#1b7f3b", "#7040b0", "#c2187a", "#00807f", "#6b7d00")
CONTEXT_COLOUR = "#c4c4c4"  # lines behind the highlighted ones: grey, so no hue is spent on them
MIN_HUE_GAP = 30  # degrees of hue between two series' colours
CONTRAST_MIN = 3.0  # a series' colour against the white page
GREY_SATURATION = 0.15  # under this (HLS saturation) a colour reads as grey: it has no hue
FEW_SERIES = 4  # the most coloured series one chart asks a room to tell apart
LABEL_FONT = TICK_FONT + 1  # px: a direct label at a line's end (presenter mode scales it)
# Presenter mode (ui/present.py) draws a figure PRESENTER_SCALE times taller, never past
# PRESENTER_MAX_HEIGHT px: a 768-px projector holds the toolbar, the header line and the chart.
PRESENTER_SCALE = 1.3
PRESENTER_MAX_HEIGHT = 600


def presenter_shrink(height: float) -> float:
    """How much a figure `height` px tall is squeezed in presenter mode once capped: 1.0 when it
    fits. A builder spacing labels in a row's px divides the spacing by it, so they stay apart
    where the row is drawn smallest."""
    return min(1.0, PRESENTER_MAX_HEIGHT / (PRESENTER_SCALE * height))


LABEL_CHAR_PX = 11  # px of margin one label character needs at its presenter-mode size (17 px)


def _rgb(colour: str) -> tuple[float, float, float]:
    """'#rrggbb' as three 0..1 floats."""
    digits = colour.lstrip("#")
    return tuple(int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def hue_degrees(colour: str) -> float | None:
    """The hue of '#rrggbb' in degrees (HLS), or None for a grey, which has none to confuse.

    >>> round(hue_degrees("#d62728")), hue_degrees("#7f7f7f")
    (360, None)
    """
    hue, _, saturation = colorsys.rgb_to_hls(*_rgb(colour))
    return None if saturation < GREY_SATURATION else hue * 360


def hue_gap(a: str, b: str) -> float:
    """Degrees of hue between two colours around the wheel (360 when either is grey).

    >>> round(hue_gap("#d62728", "#1f5fbf"))
    144
    """
    ha, hb = hue_degrees(a), hue_degrees(b)
    if ha is None or hb is None:
        return 360.0
    gap = abs(ha - hb) % 360
    return min(gap, 360 - gap)


def contrast_on_white(colour: str) -> float:
    """WCAG contrast ratio of a colour against the white page (1 for white, 21 for black)."""

    def linear(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(v) for v in _rgb(colour))
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)


def series_colours(n: int, taken: Collection[str] = (), farthest: bool = False) -> list[str]:
    """The first n SERIES_COLOURS at least MIN_HUE_GAP from every colour in `taken` (colours the
    chart already spends, say a red mark); with `farthest`, those whose hue is farthest from
    the nearest taken one first (a line drawn over another of its kind). Raises ValueError when
    fewer than n are left: show fewer series rather than two in one hue.

    >>> series_colours(2), series_colours(2, taken=["#1f5fbf"])
    (['#1f5fbf', '#d55e00'], ['#d55e00', '#1b7f3b'])
    >>> series_colours(1, taken=["#1f5fbf", "#d55e00"], farthest=True)
    ['#1b7f3b']
    """
    free = [c for c in SERIES_COLOURS if all(hue_gap(c, t) >= MIN_HUE_GAP for t in taken)]
    if farthest:
        free.sort(key=lambda c: -min((hue_gap(c, t) for t in taken), default=360.0))
    if n > len(free):
        raise ValueError(f"{n} series, but only {len(free)} distinct colours are left")
    return free[:n]


def spread(
    values: Sequence[float], gap: float, bounds: tuple[float, float] | None = None
) -> list[float]:
    """Positions for labels at `values`, at least `gap` apart, each as near its value as the
    others allow (in the input's order), so labels of lines that end together do not overlap.
    With `bounds` (the axis range: plotly hides a label placed outside it) they are kept
    inside, the lower bound winning when they cannot all fit.

    >>> spread([0.5, 0.0, 0.02], 0.1), spread([0.5, 0.0, 0.02], 0.1, bounds=(0, 1))
    ([0.5, -0.04, 0.06], [0.5, 0.0, 0.1])
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    placed = [float(values[i]) for i in order]
    for i in range(1, len(placed)):  # push each up clear of the one below
        placed[i] = max(placed[i], placed[i - 1] + gap)
    # then slide each run of labels that were pushed down, centring it on what it labels
    start = 0
    while start < len(placed):
        end = start
        while end + 1 < len(placed) and placed[end + 1] - placed[end] <= gap + 1e-12:
            end += 1
        run = [float(values[order[i]]) for i in range(start, end + 1)]
        shift = sum(run) / len(run) - sum(placed[start : end + 1]) / len(run)
        if start > 0:  # never back into the run below
            shift = max(shift, placed[start - 1] + gap - placed[start])
        for i in range(start, end + 1):
            placed[i] += shift
        start = end + 1
    if bounds is not None and placed:
        lo, hi = float(bounds[0]), float(bounds[1])
        placed[-1] = min(placed[-1], hi)
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - gap)
        placed[0] = max(placed[0], lo)
        for i in range(1, len(placed)):
            placed[i] = max(placed[i], placed[i - 1] + gap)
    out = [0.0] * len(values)
    for rank, i in enumerate(order):
        out[i] = round(placed[rank], 12)
    return out


def end_labels(
    names: Sequence[str],
    x: float,
    ys: Sequence[float],
    colours: Sequence[str],
    gap: float,
    xref: str = "x",
    yref: str = "y",
    bounds: tuple[float, float] | None = None,
) -> list[dict]:
    """Direct labels: each name written in its line's colour just right of the line's end (x,
    y), spread `gap` apart in y (axis units: log10 of the value on a log axis) and kept inside
    the axis range `bounds`, instead of a legend the room has to match colours against. The
    figure's right margin must hold them (`label_margin`)."""
    return [
        dict(
            x=x,
            y=y,
            xref=xref,
            yref=yref,
            text=f"<b>{name}</b>",
            showarrow=False,
            xanchor="left",
            yanchor="middle",
            xshift=6,
            font=dict(color=colour, size=LABEL_FONT),
        )
        for name, y, colour in zip(names, spread(ys, gap, bounds), colours, strict=True)
    ]


def label_margin(names: Collection[str]) -> int:
    """The right margin (px) that direct labels need, at their presenter-mode size."""
    return 12 + LABEL_CHAR_PX * max((len(n) for n in names), default=0)


def legend_below(**extra) -> dict:
    """A horizontal legend in the figure's bottom edge (measured in the container, not the plot),
    so plotly reserves its rows under the x axis' tick labels and title. Placed at a fraction of
    the plot's height (y=-0.22), it rose into them whenever the plot got short: a narrow column,
    a legend that wrapped, presenter mode's larger text."""
    return dict(
        orientation="h",
        yref="container",
        y=0,
        yanchor="bottom",
        x=0,
        xanchor="left",
        font=dict(size=TICK_FONT),
        **extra,
    )
