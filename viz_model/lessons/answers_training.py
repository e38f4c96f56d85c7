"""Answer kinds for the training lesson (assets/lessons/): each measures the model on screen."""

from __future__ import annotations
