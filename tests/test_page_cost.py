"""What a page view costs the server, pinned as structure (never as time): the classroom config,
and bounds on the payloads of the largest figures (benchmarks/bench_page_cost.py measures both)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_classroom_config_skips_the_full_gc_after_every_run():
    # Streamlit's default (true) walks every live object after each script run: ~45 ms of every
    # page view once Training's imports are in memory. The generational collector still runs.
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
