"""What instruction tuning cost the base model's own text: catastrophic forgetting, measured.

- `measure_forgetting(base, tuned, val_ids, tokenizer)`: both models' bits per character on the
  same WINDOWS windows of the base's validation text (the tuned vocabulary extends the base's, so
  both read the same ids), per window and overall.
- `forgetting_claim(f, base_name)`: "tuning made this text X times less likely" only beyond
  NOISE_SE paired standard errors of the per-window differences, else a neutral sentence.

Not here: reading the validation text (analysis/labs/quantization.validation_ids), the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_model.analysis.claims import Claim
from viz_model.analysis.labs.quantization import LN2, paired_noise, window_chars
from viz_model.analysis.variants import windows
from viz_model.model.gpt import GPT

WINDOWS = 32  # windows of the base's validation text (the standard error is over these)
MAX_LENGTH = 128  # tokens a window (the context, when shorter)
NOISE_SE = 2.0  # as quantization.NOISE_SE: paired_noise uses it


@dataclass(frozen=True)
class Forgetting:
    """Bits per character of the base and the tuned model; window_*: (n,) per window."""

    base_bpc: float
    tuned_bpc: float
    window_base: np.ndarray
    window_tuned: np.ndarray
    length: int

    @property
    def n_windows(self) -> int:
        return len(self.window_base)


@torch.no_grad()
def _window_nll(model: GPT, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """(n,) summed loss in nats of each window's next tokens."""
    was_training = model.training
    model.eval()
    try:
        logp = F.log_softmax(model(x).float(), -1)  # (n, T, V)
    finally:
        model.train(was_training)
    return -logp.gather(-1, y[..., None])[..., 0].sum(1).double().numpy()


def measure_forgetting(
    base: GPT, tuned: GPT, val_ids: torch.Tensor, tokenizer, n_windows: int = WINDOWS
) -> Forgetting:
    """Both models on the same windows of val_ids (encoded by the base's tokenizer, whose ids the
    tuned tokenizer keeps: extend_vocab only appends rows)."""
    length = min(base.cfg.n_ctx, tuned.cfg.n_ctx, MAX_LENGTH)
    batch = windows(val_ids, length, n_windows)  # (n, length + 1)
    x, y = batch[:, :-1], batch[:, 1:]
    chars = window_chars(tokenizer, y)  # (n,)
    nll_b, nll_t = _window_nll(base, x, y), _window_nll(tuned, x, y)
    return Forgetting(
        float(nll_b.sum() / LN2 / chars.sum()),
        float(nll_t.sum() / LN2 / chars.sum()),
        nll_b / LN2 / chars,
        nll_t / LN2 / chars,
        length,
    )


def forgetting_claim(f: Forgetting, base_name: str) -> Claim:
    """Whether tuning made the base's own text less likely: the rise in bits per character beyond
    NOISE_SE paired standard errors over the windows. 2**rise is how many times less likely each
    character is on average (a geometric mean)."""
    rise = f.tuned_bpc - f.base_bpc
    noise = paired_noise(f.window_tuned, f.window_base)
    times = 2.0**rise
    numbers = {"base_bpc": f.base_bpc, "tuned_bpc": f.tuned_bpc, "rise": rise, "noise": noise,
               "times": times, "n": f.n_windows}  # fmt: skip
    where = (
        f"{f.n_windows} windows of {f.length} tokens of “{base_name}”'s validation text; "
        f"threshold {noise:.3f} bits: twice the paired standard error over the windows"
    )
    if rise > noise:
        text = (
            f"Tuning made this text {_times(times)} less likely per character: the loss rose "
            f"from {f.base_bpc:.2f} to {f.tuned_bpc:.2f} bits per character ({where})."
        )
        return Claim(text, True, numbers)
    text = (
        f"No clear forgetting: {f.base_bpc:.2f} bits per character before tuning, "
        f"{f.tuned_bpc:.2f} after (difference {rise:+.3f}; {where})."
    )
    return Claim(text, False, numbers)


def _times(x: float) -> str:
    return f"{x:,.0f} times" if x >= 10 else f"{x:.1f} times"


def same_ids(base_tokenizer, tuned_tokenizer) -> bool:
    """Whether the tuned vocabulary starts with the base's, id for id (what extend_vocab makes)."""
    n = base_tokenizer.vocab_size
    return tuned_tokenizer.vocab_size >= n and all(
        base_tokenizer.id_to_token(i) == tuned_tokenizer.id_to_token(i) for i in range(n)
    )
