"""Training: train a model on this server and watch it learn, then see how any model trained.

Runs are training jobs (serving.jobs): child processes whose state lives in runs/, so the page
only reads files. The chosen model's own training follows: its loss against the counting
baselines, its learning-rate schedule and the samples it wrote (bundled models included).

The page's sections are functions in ui/training/page.py, the set-up form's parts in
ui/training/setup/ and the live runs in ui/training/live.py (docs/ADD_A_PAGE.md): this script
reads as the page's table of contents."""

import ui
from ui.training import page as training

ctx = ui.context()

training.intro()
auth = training.password()  # the teacher's password: Start and the run controls need it
started = training.set_up(auth)  # the set-up form; the run it started on this rerun, if any
training.runs(auth, started)  # the runs on this server, the chosen one followed live
training.how_it_trained(ctx)  # summary, curves, update rule; stops when there is no history
training.gradient_health(ctx)
training.samples(ctx)
