"""The app's Streamlit layer: the page frame, cached loading, URL-carried state, navigation.

The only non-page code that imports streamlit. Pages start with `ctx = ui.frame(title, icon)`.
"""

from ui.frame import PageContext, frame

__all__ = ["PageContext", "frame"]
