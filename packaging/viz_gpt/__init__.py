"""The app of an installed copy (`pip install .`): app.py, pages/, .streamlit/ and the packages
ui, serving and scripts, which import one another by those names.

Importing this package puts its folder on sys.path, so those names resolve inside the app's own
processes: the `viz-gpt` command (cli.py), `python -m viz_gpt.scripts.lesson_sheets`, and the
Streamlit server, which adds app.py's folder itself. Any other program of the environment sees
only `viz_gpt` and the engine, `viz_model`. In a checkout this folder is not used: the
repository's root is the app's folder. Not here: the wheel's layout (pyproject.toml).
"""

import sys
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent

if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))
