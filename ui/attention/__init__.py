"""The Attention page's sections, one function each, drawn in order by pages/03_attention.py:

- head: the idea and the formula, the choices (layer, head, query, pattern or scores) and the one
  head's pattern heatmap beside its lines chart
- arithmetic: one row of the pattern worked out by hand, checked against the recorded hooks
- before_qkv: softmax(x·xᵀ/√d) on what the layer's attention reads, beside the head's pattern,
  compared in a sentence held against the untrained twin, and the query's top key under each
- overflow: the query's scores scaled up through the naive softmax in float32 and float16 (inf,
  NaN) beside the max-subtracted one
- roles: every head's pattern at once, what each head does (its roles against chance, on the
  prompt or a repeated random sequence), and the numbers behind the chosen head
- runs: the cached attention run, head scores and roles, x·x against the heads, the scaled
  softmax row, and the figures (cache.per_prompt)

Not here: the analyses (viz_model/analysis/attention.py, viz_model/analysis/head_roles.py,
viz_model/analysis/before_qkv.py, viz_model/analysis/softmax.py) and
the chart builders (ui/charts/attention.py).
"""
