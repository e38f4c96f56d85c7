"""The app's Streamlit layer: the page frame, cached loading, URL-carried state, navigation.

The only non-page code that imports streamlit, except ui/charts/ (figure builders, no Streamlit).
app.py sets up the process (`ui.boot`), routes (`ui.nav`) and draws the frame
(`ui.frame.frame`); every page starts with `ctx = ui.context()`.

Importing `ui` or one of its modules has no side effect on the process: `context` and
`PageContext` are looked up in ui/frame.py when first used.
"""

from __future__ import annotations

from typing import Any

_FROM_FRAME = ("PageContext", "context")


def __getattr__(name: str) -> Any:
    """`ui.context` and `ui.PageContext`, from ui/frame.py on first use (PEP 562), so importing a
    chart builder under `ui/` does not load Streamlit and the frame."""
    if name in _FROM_FRAME:
        from ui import frame

        return getattr(frame, name)
    raise AttributeError(f"module 'ui' has no attribute {name!r}")


__all__ = list(_FROM_FRAME)
