"""A run set up before its first step (`Run`: what `training/loop.train` takes; `Run.steps` runs
it), and the clock's
overrides of the training settings (`timed`). Below settings.py and finetune.py, which both build
runs, so neither needs the other at import time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from viz_model.model.config import STEPS_WHEN_TIMED, TrainConfig
from viz_model.model.families import LanguageModel
from viz_model.text.data import TokenData
from viz_model.text.tokenization import Tokenizer
from viz_model.training.loop import RunControls, RunStart, StepRecord, train


def timed(train: dict[str, Any], minutes: float | None, new: bool) -> dict[str, Any]:
    """Training overrides with the clock: time_limit in seconds, and on a new run with minutes but
    no max_steps, STEPS_WHEN_TIMED (the clock decides; the steps only place the snapshots)."""
    out = dict(train)
    if minutes is not None:
        out["time_limit"] = minutes * 60.0
        if new and minutes > 0 and "max_steps" not in train:
            out["max_steps"] = STEPS_WHEN_TIMED
    return out


@dataclass
class Run:
    """Everything set up before the first step: the arguments of train.train."""

    model: LanguageModel
    tokenizer: Tokenizer
    data: TokenData
    cfg: TrainConfig
    out: Path
    meta: dict[str, Any]
    history: list[dict[str, Any]]
    start_step: int
    old_data: TokenData | None = None  # a fine-tune: the base's own text (train's old_data)
    on_save: Any = None  # a LoRA fine-tune: keeps A and B after each save (RunControls.on_save)

    def steps(self, controls: RunControls | None = None) -> Iterator[StepRecord]:
        """The one loop over this run (loop.train, every field passed on), a record a step;
        `controls` are the live ones a job or the command line passes (stop, peak_lr, notes),
        with this run's on_save."""
        controls = controls or RunControls()
        if self.on_save is not None:
            controls = replace(controls, on_save=self.on_save)
        start = RunStart(self.start_step, self.history, self.meta)
        return train(
            self.model,
            self.data,
            self.cfg,
            self.out,
            self.tokenizer,
            start=start,
            old_data=self.old_data,
            controls=controls,
        )
