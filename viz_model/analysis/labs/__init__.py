"""What the app's labs measure: the Experiments pages and the fine-tuning, instruction-tuning and
few-shot parts of Training and Using a model. A module for each lab or part of one:

interventions/   the Interventions page: ablation, activation patching, steering, positions,
                 damaged copies, and their claims (a package, one module a part)
facts.py         the Interventions page's facts experiment: which layers hold the facts a model
                 learned, by ablating each layer in turn
adversarial.py   the Adversarial suffix page: greedy coordinate gradient for a suffix that makes
                 the model predict a chosen token
sae/             the Sparse autoencoder page: the SAE, its activations, training, metrics,
                 features, matching across training, claims (a package)
sae_files.py     a trained SAE lab saved to and read back from a job's folder
compare.py       Compare models: two models on one prompt, per-character surprise and
                 continuations (also Architecture contrasts' pairs)
sweeps.py        Architecture contrasts' sweeps: bundled results (curves, losses, gradient
                 health) and their claims
scaling.py       Scaling: parameter counts, loss against size and compute, the fits and claims
block.py         Inside a block: one transformer block redone by hand in the lecture's notation
lookup.py        Inside a block: attention as a dictionary look-up, and why sqrt(d_head)
gradient.py      Inside a block: one gradient step on one prompt, and the chain rule for a weight
contextual.py    Inside a block: one token's residual vector in many contexts, layer by layer
probes.py        Inside a block: linear probes reading a token's property from the residual
quantization.py  Quantization: what quantising the weights changes on validation text
finetune.py      Training's fine-tune view: the singular values of a fine-tune's weight change
instruct.py      Using a model's instruction tuning: held-out instructions answered before and after
forgetting.py    Using a model's instruction tuning: what the tuning cost the base model's own text
fewshot.py       Using a model's few-shot part: accuracy against the number of examples

Labs import the walk-through's modules and the shared ones one level up (claims.py, tokens.py,
training.py, ...); nothing there imports a lab (an import-linter contract in pyproject.toml).
Not here: the walk-through's measures (viz_model/analysis/), the pages and their charts (ui/).
"""
