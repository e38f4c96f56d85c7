"""viz_model: an instrumented GPT you can see inside. Plain Python + PyTorch; never imports streamlit."""

from viz_model.config import GPTConfig, TrainConfig
from viz_model.model import GPT

__all__ = ["GPT", "GPTConfig", "TrainConfig"]
