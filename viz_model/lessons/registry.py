"""Every answer kind, registered by importing the module of each lesson's kinds.

from viz_model.lessons.registry import ANSWERS   # name -> AnswerKind
"""

from viz_model.lessons import (  # noqa: F401  (imported for their @answer_kind registrations)
    answers_attention,
    answers_beyond,
    answers_block,
    answers_output,
    answers_tokens,
    answers_training,
)
from viz_model.lessons.kinds import REGISTRY

ANSWERS = REGISTRY
