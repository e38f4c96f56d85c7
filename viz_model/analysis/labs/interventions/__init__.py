"""Interventions: change one part of the model while it runs, and measure what breaks.

A module for each part:

forward.py              the hook names written to, and the rest of a forward pass from one block
ablation.py             ablation (zero or mean) of attention heads, whole MLP layers and single
                        neurons: the next-token distribution and the validation loss before and
                        after, with the noise of the change, and the sweep that ablates each head
activation_patching.py  patching from a clean prompt into a corrupted one (the residual stream
                        at each layer and position, and each head's output), scored by the
                        normalised logit difference
suggest.py              which token to change, and where to cut the prompt, for a patching
                        experiment that flips the prediction
steering.py             steering by a direction (the difference of two mean residual streams)
                        added while generating, and its push against random directions
positions.py            removing or shuffling the position embeddings
damage.py               baking a zero or mean ablation into a copy's weights, so a damaged model
                        can be trained again
texts.py                the texts the page starts from: held-out text, typed tokens, the default
                        steering sets
claims.py               the sentences printed about the numbers, made only beyond noise or chance

Every public name of those modules is importable from here (`from
viz_model.analysis.labs.interventions import Ablation`, `iv.head_sweep_claim`), as when they were
one module. Every change goes through hooks (model.intervene / run_with_cache(hooks=...)): per call
and per thread, so the shared model is never modified. Shapes: L layers, H heads, E d_head, D
d_model, M d_mlp, V vocab, T tokens, N validation windows.
Not here: the figures (charts/interventions.py), the training job (jobs.start_damaged).
"""

from __future__ import annotations

# the Interventions page escapes what a student typed with it, as iv.md_escape
from viz_model.analysis.claims import md_escape
from viz_model.analysis.labs.interventions.ablation import (
    HOW,
    MIN_CHUNK,
    N_CHUNKS,
    NOISE_SE,
    Ablation,
    Effect,
    HeadSweep,
    ablation_hooks,
    chunk_se,
    effect,
    effect_from,
    format_heads,
    format_neurons,
    head_sweep,
    head_sweep_stats,
    heads_to_url,
    last_probs,
    loss,
    parse_heads,
    parse_ints,
    parse_neurons,
    reference_means,
    token_losses,
    top_heads,
    validation_windows,
)
from viz_model.analysis.labs.interventions.activation_patching import (
    Patching,
    corrupt,
    logit_diff,
    patching,
    pick_answers,
)
from viz_model.analysis.labs.interventions.claims import (
    HALF,
    head_sweep_claim,
    loss_change_claim,
    patching_claim,
    route_claim,
    row_name,
    steering_claim,
)
from viz_model.analysis.labs.interventions.damage import (
    damaged_copy,
)
from viz_model.analysis.labs.interventions.forward import (
    mlp_out_name,
    post_name,
    resid_names,
    resid_pre_name,
    run_from,
    z_name,
)
from viz_model.analysis.labs.interventions.positions import (
    POSITION_MODES,
    position_hooks,
    shuffled_positions,
    surprisals,
)
from viz_model.analysis.labs.interventions.steering import (
    N_RANDOM,
    STEER_ALPHAS,
    DirectionReport,
    SteeringPush,
    direction_logits,
    direction_report,
    mean_resid,
    random_directions,
    steered_generation,
    steering_hooks,
    steering_push,
    steering_vector,
)
from viz_model.analysis.labs.interventions.suggest import (
    MIN_SPAN,
    SUGGEST_ENDS,
    SUGGEST_POSITIONS,
    Suggestion,
    suggest_corruption,
    suggest_experiment,
)
from viz_model.analysis.labs.interventions.texts import (
    REPLACEMENTS,
    STEER_DEFAULT_ALPHA,
    VAL_CHARS,
    candidate_tokens,
    speech_lines,
    steering_defaults,
    steering_texts,
    typed_text,
    validation_text,
)

__all__ = [
    "Ablation",
    "DirectionReport",
    "Effect",
    "HALF",
    "HOW",
    "HeadSweep",
    "MIN_CHUNK",
    "MIN_SPAN",
    "NOISE_SE",
    "N_CHUNKS",
    "N_RANDOM",
    "POSITION_MODES",
    "Patching",
    "REPLACEMENTS",
    "STEER_ALPHAS",
    "STEER_DEFAULT_ALPHA",
    "SUGGEST_ENDS",
    "SUGGEST_POSITIONS",
    "SteeringPush",
    "Suggestion",
    "VAL_CHARS",
    "ablation_hooks",
    "candidate_tokens",
    "chunk_se",
    "corrupt",
    "damaged_copy",
    "direction_logits",
    "direction_report",
    "effect",
    "effect_from",
    "format_heads",
    "format_neurons",
    "head_sweep",
    "head_sweep_claim",
    "head_sweep_stats",
    "heads_to_url",
    "last_probs",
    "logit_diff",
    "loss",
    "loss_change_claim",
    "md_escape",
    "mean_resid",
    "mlp_out_name",
    "parse_heads",
    "parse_ints",
    "parse_neurons",
    "patching",
    "patching_claim",
    "pick_answers",
    "position_hooks",
    "post_name",
    "random_directions",
    "reference_means",
    "resid_names",
    "resid_pre_name",
    "route_claim",
    "row_name",
    "run_from",
    "shuffled_positions",
    "speech_lines",
    "steered_generation",
    "steering_claim",
    "steering_defaults",
    "steering_hooks",
    "steering_push",
    "steering_texts",
    "steering_vector",
    "suggest_corruption",
    "suggest_experiment",
    "surprisals",
    "token_losses",
    "top_heads",
    "typed_text",
    "validation_text",
    "validation_windows",
    "z_name",
]
