"""The app's Streamlit layer: the page frame, cached loading, URL-carried state, navigation.

The only non-page code that imports streamlit. Pages start with `ctx = ui.frame(title, icon)`.
"""

import os

import torch

from ui.frame import PageContext, frame

# Every browser session runs its script in its own thread. With torch's default of one intra-op
# thread per core, a class of sessions oversubscribes the CPU and each forward pass slows down
# several-fold; one thread per session keeps them independent. VIZ_TORCH_THREADS overrides it
# (e.g. a single user on a many-core laptop).
_threads = os.environ.get("VIZ_TORCH_THREADS", "1")
torch.set_num_threads(int(_threads) if _threads.isdigit() and int(_threads) > 0 else 1)

__all__ = ["PageContext", "frame"]
