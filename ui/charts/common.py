"""Shared look of every chart: colour scales, sizes, fonts, and token labels that stay distinct."""

from __future__ import annotations

import html
from collections.abc import Collection

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
# The smallest text a chart may draw: DESIGN.md section 6 asks for 12 px at 1024x768 (16 px in
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
