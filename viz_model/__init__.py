"""viz_model: an instrumented GPT you can see inside. Plain Python + PyTorch; never imports streamlit."""

from viz_model.checkpoint import Bundle, CheckpointError, load_bundle, save_bundle
from viz_model.config import GPTConfig, TrainConfig
from viz_model.model import GPT
from viz_model.tokenization import Tokenizer

__all__ = [
    "GPT",
    "Bundle",
    "CheckpointError",
    "GPTConfig",
    "Tokenizer",
    "TrainConfig",
    "load_bundle",
    "save_bundle",
]
