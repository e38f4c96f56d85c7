"""Sparse autoencoders (dictionary learning) on one hook of the model, a module for each part:

model.py        the SAE itself: encode, decode, its unit decoder columns and fixed scale
activations.py  which hook it reads and reading the activations there (random windows of the text)
training.py     training on those activations, L1 or top-k, with dead features resampled
metrics.py      measuring it on held-out text: variance explained, L0, the loss with it spliced in
features.py     reading features: their top snippets, the tokens they promote, steering with one
lab.py          the lab: all of the above in one call, what the page and a job show
matching.py     two SAEs' features matched by how their activations correlate (across training)
claims.py       the sentences the page prints, each decided on the numbers it states

Not here: the page and its charts; saving and loading a trained lab (`sae_files.py`); the job
that trains one in the background (`serving/sae_jobs.py`, `serving/sae_worker.py`).
"""
