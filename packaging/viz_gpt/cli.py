"""`viz-gpt`, the console command of an installed copy: the launcher of serving/launch.py, run
with the app's folder on sys.path (this package's __init__.py)."""

from serving.launch import main

__all__ = ["main"]
