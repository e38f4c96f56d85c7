"""Quantization figures: every legend sits under the x axis' tick labels and title, whatever the
plot's height, instead of rising into them (issue 38: a projector at 1024x768)."""

from __future__ import annotations

import numpy as np
import pytest

from ui.charts.quantization import (
    SCHEME_STYLE,
    drift_figure,
    grid_histogram,
    row_error_figure,
    size_figure,
)


def _size():
    schemes, names, nbytes, bpc = [], [], [], []
    for i, scheme in enumerate(SCHEME_STYLE):
        widths = ("float32", "float16") if scheme == "float" else ("int8", "int4", "int3", "int2")
        for j, width in enumerate(widths):
            schemes.append(scheme)
            names.append(f"{width}-{i}")
            nbytes.append(480_000 / 2 ** (j + 1) * (1 + i / 20))
            bpc.append(2.7 + j * (i + 1) / 5)
    return size_figure(names, schemes, nbytes, bpc, "stored 18 ways")


FIGURES = {
    "size": _size,
    "grid": lambda: grid_histogram(
        np.linspace(-0.2, 0.2, 200), np.linspace(-0.2, 0.2, 15), np.array([0.19]), "grid"
    ),
    "row error": lambda: row_error_figure(
        {f"int4, {scheme}": np.full(8, 0.01 * (i + 1)) for i, scheme in enumerate(SCHEME_STYLE)},
        "rows",
    ),
    "drift": lambda: drift_figure(
        {"int8 per row": np.array([0.01, 0.02]), "int4 per row": np.array([0.1, 0.3])},
        ["embeddings", "after block 0"],
        "drift",
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_the_legend_is_laid_out_under_the_x_axis_title_and_never_over_it(name):
    """A legend placed at a share of the plot's height below it (paper y=-0.22) sits as far
    under the axis as the plot is tall: on a short plot (presenter mode's larger text, a legend
    wrapped to five rows, a narrow column) that share is less than the tick labels and the
    title need, and the legend covers them. Measured in the container and anchored by its
    bottom at the figure's foot, the legend gets margin of its own, below the axis' automargin."""
    fig = FIGURES[name]()
    legend = fig.layout.legend
    assert fig.layout.xaxis.title.text  # there is a title to keep clear
    assert legend.orientation == "h"
    assert legend.yref == "container", "a paper y moves with the plot's height"
    assert legend.y == 0 and legend.yanchor == "bottom"  # its rows grow up from the foot
    assert legend.font.size >= 12  # the 12 px floor outside presenter mode
