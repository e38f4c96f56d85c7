"""The Interventions page's experiments, one module each, every one a function of the page's
context that draws it (`draw(ctx)`), chosen by pages/11_interventions.py:

- ablation: knock heads, MLPs or neurons out; every head alone; damage, then retrain
- patching: copy one activation of a clean run into a corrupted one
- steering: add the direction between two sets of prompts while the model writes
- positions: remove or shuffle the position embeddings
- facts: the training text's facts, and which layers' knock-outs lose them
- common: the idea above them, the choice of experiment, and the picture of one effect

`EXPERIMENTS` names them in the order the radio shows them.

Not here: the cached computations, the damage-then-retrain form and the grid of pills
(ui/interventions.py), the analyses (viz_model/analysis/labs/interventions/,
viz_model/analysis/labs/facts.py), the chart builders (ui/charts/interventions.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ui.experiments import ablation, facts, patching, positions, steering
from ui.frame import PageContext

EXPERIMENTS: dict[str, Callable[[PageContext], None]] = {
    "Ablation": ablation.draw,
    "Patching": patching.draw,
    "Steering": steering.draw,
    "Positions": positions.draw,
    "Facts": facts.draw,
}
