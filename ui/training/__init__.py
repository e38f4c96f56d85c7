"""The Training page's sections, drawn in order by pages/09_training.py, a module for each part:

page.py           the page's sections, one function each: intro, the teacher's password, the
                  set-up form, the runs on this server, how the model on screen trained, its
                  gradient's health, the samples it wrote
setup/            "Set up a new run": the form, one module per heading (data, model, training,
                  costs, start); form.py's draw_setup is the one call the page makes
finetune.py       the set-up form's fine-tune part: the base model, full or LoRA, the new text,
                  the steps
live.py           the runs on this server, the chosen one followed as it trains (a fragment)
run_history.py    a run's history drawn: loss curves against the counting baselines, the learning
                  rate, the gradient's health, the update rule, the samples; shared by the finished
                  and the live run, and by Training dynamics (ui/training_dynamics.py)
finetune_view.py  "What fine-tuning did", for a model that is a fine-tune: forgetting, samples
                  before and after, the singular values of the change; Compare models reads its
                  text_key

    from ui.training import page as training
    training.set_up(auth)   # the set-up form; the run it started on this rerun, if any
"""
