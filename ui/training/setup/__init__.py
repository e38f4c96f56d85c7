"""The Training page's "Set up a new run": data, tokenizer, model, training, what the run will cost
(measured on this machine), a name, and Start, a module for each part of the form:

form.py      the form in order, from "Start from" to Start: draw_setup, the one call the page makes
data.py      what to train on (the corpus, a task, the user's text) and the tokenizer
model.py     the model: family, preset, and its shape and block's parts when customised
training.py  the budget (minutes or steps), optimiser, learning rate, batch and seed
costs.py     what the run will cost: parameters, speed measured here, time, memory, the caps
start.py     the run's name and Start

    from ui.training.setup.form import draw_setup
    started = draw_setup(auth)   # the run started on this rerun; auth: ui.teacher

Every choice is carried in the URL under a "t_" key, so a teacher shares one link and every
laptop sets up the same run; pasted and uploaded text are not (a link cannot carry a file).
Whatever would make Start fail (a shape the model refuses, text that fails its checks, a server
cap, a taken name) is said where it arises, and Start stays disabled until it is fixed.
"""
