"""`python -m viz_model.training ...`: train a model from the command line (see cli.py)."""

import sys

from viz_model.training.cli import main

sys.exit(main())
