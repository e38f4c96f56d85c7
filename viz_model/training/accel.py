"""What a GPU adds to training: bfloat16 autocast and TF32 matmuls. On a CPU, nothing changes.

Under bf16 autocast the matmuls and attention run in bfloat16 while the weights, the optimiser's
moments and the loss stay float32 (mixed precision with float32 master weights). bfloat16 keeps
float32's exponent range, so unlike float16 it needs no loss scaling. TF32 lets the float32
matmuls that remain use the tensor cores. nanoGPT trains the same way on an A100.

    with mixed_precision(device):
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())

Not here: choosing the device (settings.pick_device), moving batches to it (loop.py).
"""

from __future__ import annotations

import contextlib

import torch


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """bfloat16 on a CUDA GPU that supports it; None (plain float32) everywhere else: the CPU,
    Apple's MPS, and older GPUs."""
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def mixed_precision(device: torch.device) -> contextlib.AbstractContextManager:
    """The autocast context for a forward pass on `device` (does nothing where autocast_dtype is
    None)."""
    dtype = autocast_dtype(device)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def allow_fast_matmuls(device: torch.device) -> None:
    """TF32 for float32 matmuls on a CUDA GPU (a process-wide setting: the training process's
    own). The CPU keeps full float32, so a CPU run's numbers do not move."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
