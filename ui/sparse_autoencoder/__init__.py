"""The Sparse autoencoder page's sections, one function each, drawn in order by
pages/23_sparse_autoencoder.py:

- dictionary: the idea and the formulas, whether this model can have an SAE here, which SAE is
  shown (a finished job's, or one trained in the page with its choices) and how good its
  dictionary is (variance explained, active and dead features, the loss with it spliced in, the
  training curve)
- features: one feature read (its top snippets, the tokens it promotes, its activation along the
  prompt), steering with it, its closest feature at another training step, and what the page is
  not
- runs: the SAE a Spec describes, trained or read once per server, and the cached measures on it
  (cache.per_model, cache.per_prompt)

The job panels (open a finished job, start one, watch it, delete one) stay in
ui/sae_job_panel.py, which dictionary calls.
Not here: the SAE, its training, measures, matching and claims (viz_model/analysis/labs/sae/), the
chart builders (ui/charts/sae.py, ui/charts/neurons.py).
"""
