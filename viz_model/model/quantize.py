"""Weight quantisation: a GPT's matrices stored in fewer bits, and what that costs in bytes.

Round-to-nearest, symmetric: each weight matrix W (rows, cols) is stored as small integers q and a
scale s, and read back as q * s:

    s = max|w| / (2^(b-1) - 1)      one scale per row ("channel") or one for the whole matrix ("tensor")
    q = round(w / s)                an integer in [-(2^(b-1) - 1), 2^(b-1) - 1]; |w - q s| <= s / 2

What is quantised: every 2-D weight, the Linear and Embedding matrices (token and position
embeddings, attention's qkv and out, the MLP's, the unembedding). LayerNorm gains and biases, which
are a small share of the parameters, stay in float32 in every scheme and are counted at 4 bytes.

Outlier handling (`QuantSpec.outliers`), the dense-and-sparse split of SpQR (Dettmers et al. 2023)
and SqueezeLLM (Kim et al. 2023): the largest OUTLIER_FRACTION of |w| in each matrix are kept aside
in float16 with their position, and the scale is chosen from the remaining weights, so a few large
weights no longer stretch the grid every other weight is rounded to.

Bytes are counted as they would be stored: the codes packed at b bits, the scales in float16
(rounded up, so no code is clipped), each outlier as a float16 value and an int32 index, and the
float32 parts at 4 bytes. `quantized_copy` returns a new model whose float32 weights equal the
dequantised values, so every page and analysis runs on it unchanged; the model given is not touched.

Not here: measuring what quantisation changes (analysis/labs/quantization.py), pages and charts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from viz_model.model.gpt import GPT

OUTLIER_FRACTION = 0.005  # the share of each matrix's weights kept aside in float16
SCALE_BYTES = 2  # each scale is a float16
OUTLIER_BYTES = 2 + 4  # a float16 value and an int32 index into the matrix
FLOAT32 = "float32"
FLOAT16 = "float16"
INT_BITS = (8, 4, 3, 2)


@dataclass(frozen=True)
class QuantSpec:
    """How the matrices are stored: bits 32 or 16 (floats) or 2..8 (integer codes), one scale per
    row ("channel") or per matrix ("tensor"), and whether outliers are kept aside."""

    bits: int
    per: str = "channel"
    outliers: bool = False

    @property
    def is_int(self) -> bool:
        return self.bits <= 8

    @property
    def name(self) -> str:
        """The URL's and the bundle id's name: "int4", "int4-tensor-outliers", "float16".

        >>> QuantSpec(4, "tensor", True).name, QuantSpec(8).name, QuantSpec(16).name
        ('int4-tensor-outliers', 'int8', 'float16')
        """
        if not self.is_int:
            return FLOAT32 if self.bits == 32 else FLOAT16
        return (
            f"int{self.bits}"
            + ("-tensor" if self.per == "tensor" else "")
            + ("-outliers" if self.outliers else "")
        )

    @property
    def short(self) -> str:
        """For a narrow select: "int4 per row + outliers", "int8 per matrix", "float16"."""
        if not self.is_int:
            return self.name
        per = "per row" if self.per == "channel" else "per matrix"
        return f"int{self.bits} {per}" + (" + outliers" if self.outliers else "")

    @property
    def scheme(self) -> str:
        """The label without the width: "one scale per row", ...; "float" for float32/16."""
        return self.label.split(", ", 1)[1] if self.is_int else "float"

    @property
    def label(self) -> str:
        """In words: "int4, one scale per row, outliers in float16"."""
        if not self.is_int:
            return self.name
        per = "one scale per row" if self.per == "channel" else "one scale per matrix"
        return f"int{self.bits}, {per}" + (", outliers in float16" if self.outliers else "")


def parse_spec(name: str) -> QuantSpec:
    """The spec a name gives (inverse of QuantSpec.name); ValueError for any other text.

    >>> parse_spec("int4-outliers")
    QuantSpec(bits=4, per='channel', outliers=True)
    """
    text = str(name).strip().lower()
    if text in (FLOAT32, FLOAT16):
        return QuantSpec(32 if text == FLOAT32 else 16)
    spec = next((s for s in all_specs() if s.name == text), None)
    if spec is None:
        raise ValueError(f"unknown precision {str(name)[:40]!r}")
    return spec


def all_specs() -> list[QuantSpec]:
    """float16, then each integer width, per row before per matrix, without outliers before with."""
    specs = [QuantSpec(16)]
    for bits in INT_BITS:
        for per in ("channel", "tensor"):
            specs += [QuantSpec(bits, per, False), QuantSpec(bits, per, True)]
    return specs


def matrices(model: GPT) -> dict[str, torch.Tensor]:
    """The 2-D weights that get quantised, by parameter name (a tied embedding appears once)."""
    return {n: p for n, p in model.named_parameters() if p.dim() == 2}


# ---- one matrix -------------------------------------------------------------------------------


@dataclass
class QuantizedMatrix:
    """A matrix after quantisation. values: the dequantised weights (rows, cols) in float32;
    codes: the integers (rows, cols), 0 where an outlier is kept aside; scales: (rows,) or (1,);
    outliers: (rows, cols) bool, True where the float16 value is kept."""

    values: torch.Tensor
    codes: torch.Tensor
    scales: torch.Tensor
    outliers: torch.Tensor
    bits: int

    @property
    def code_bytes(self) -> int:
        """The codes packed at `bits` bits each."""
        return math.ceil(self.codes.numel() * self.bits / 8)

    @property
    def scale_bytes(self) -> int:
        return SCALE_BYTES * self.scales.numel()

    @property
    def outlier_bytes(self) -> int:
        """Each outlier's float16 value and int32 index."""
        return OUTLIER_BYTES * int(self.outliers.sum())

    @property
    def nbytes(self) -> int:
        return self.code_bytes + self.scale_bytes + self.outlier_bytes


def qmax(bits: int) -> int:
    """The largest code of a symmetric b-bit grid: 127 for int8, 7 for int4, 1 for int2."""
    return 2 ** (bits - 1) - 1


def outlier_mask(w: torch.Tensor, fraction: float = OUTLIER_FRACTION) -> torch.Tensor:
    """(rows, cols) bool: the round(fraction * size) weights of largest |w| (at least one)."""
    k = max(1, round(fraction * w.numel()))
    flat = torch.zeros(w.numel(), dtype=torch.bool)
    flat[torch.topk(w.abs().flatten(), k).indices] = True
    return flat.view_as(w)


def float16_at_least(x: torch.Tensor) -> torch.Tensor:
    """x rounded up to a float16 value (as float32), so a scale stored in float16 never shrinks
    and max|w| / s never exceeds the largest code."""
    h = x.half()
    below = h.float() < x
    h[below] = torch.nextafter(h[below], torch.full_like(h[below], math.inf))
    return h.float()


def scales_for(w: torch.Tensor, bits: int, per: str) -> torch.Tensor:
    """(rows,) for per="channel", (1,) for "tensor": max|w| / qmax, in float16 rounded up; 1 for
    an all-zero row (any scale codes it exactly)."""
    top = w.abs().amax(dim=1) if per == "channel" else w.abs().max().reshape(1)
    top = torch.where(top > 0, top, torch.full_like(top, float(qmax(bits))))
    return float16_at_least(top / qmax(bits))


def quantize_matrix(w: torch.Tensor, spec: QuantSpec) -> QuantizedMatrix:
    """Round-to-nearest symmetric quantisation of one (rows, cols) matrix."""
    w = w.detach().float()
    keep = outlier_mask(w) if spec.outliers else torch.zeros_like(w, dtype=torch.bool)
    dense = torch.where(keep, torch.zeros_like(w), w)  # outliers leave the grid's range
    scales = scales_for(dense, spec.bits, spec.per)
    row_scale = scales[:, None] if spec.per == "channel" else scales  # broadcasts over (rows, cols)
    top = qmax(spec.bits)
    codes = torch.clamp(torch.round(dense / row_scale), -top, top)
    values = torch.where(keep, w.half().float(), codes * row_scale)
    return QuantizedMatrix(values, codes.to(torch.int8), scales, keep, spec.bits)


# ---- a whole model ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeCount:
    """Bytes of a model stored one way, by part."""

    matrices: int  # codes (or float16/float32 values) of the 2-D weights
    scales: int
    outliers: int
    float32_parts: int  # LayerNorm gains and biases, left in float32

    @property
    def total(self) -> int:
        return self.matrices + self.scales + self.outliers + self.float32_parts


def float32_part_bytes(model: GPT) -> int:
    return 4 * sum(p.numel() for p in model.parameters() if p.dim() != 2)


def float32_size(model: GPT) -> SizeCount:
    """The model as trained: every parameter 4 bytes."""
    n = sum(w.numel() for w in matrices(model).values())
    return SizeCount(4 * n, 0, 0, float32_part_bytes(model))


def size_of(model: GPT, spec: QuantSpec) -> SizeCount:
    """The model's bytes stored as `spec` says (float32: 4 bytes a parameter)."""
    return quantize_model(model, spec)[1]


def quantize_model(model: GPT, spec: QuantSpec) -> tuple[GPT, SizeCount]:
    """(a new GPT computing with the dequantised weights, the bytes `spec` stores them in). The
    copy's matrices equal the stored values in float32; `model` itself is never changed (it is
    shared by every session)."""
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    counts = [0, 0, 0]  # matrices, scales, outliers
    for name, w in matrices(model).items():
        if spec.is_int:
            q = quantize_matrix(w, spec)
            state[name] = q.values
            counts[0] += q.code_bytes
            counts[1] += q.scale_bytes
            counts[2] += q.outlier_bytes
        else:
            state[name] = dequantized(w, spec)
            counts[0] += w.numel() * spec.bits // 8
    copy = GPT(model.cfg)
    copy.load_state_dict(state)
    return copy.eval(), SizeCount(*counts, float32_part_bytes(model))


def dequantized(w: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """The float32 matrix a model stored as `spec` computes with."""
    if spec.bits == 32:
        return w.detach().float().clone()
    if spec.bits == 16:
        return w.detach().half().float()
    return quantize_matrix(w, spec).values


def quantized_copy(model: GPT, spec: QuantSpec) -> GPT:
    """A new GPT (eval mode) computing with the `spec` values of model's matrices."""
    return quantize_model(model, spec)[0]
