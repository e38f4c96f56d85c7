"""`python -m viz_gpt`: the same as the `viz-gpt` command (cli.py)."""

import sys

from viz_gpt.cli import main

sys.exit(main())
