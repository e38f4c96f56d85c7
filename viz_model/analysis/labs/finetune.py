"""What a fine-tune changed: the singular values of its weight change, and what may be said.

    spectra = full_change_spectra(base_state, tuned_state, names)   # {matrix: singular values}
    spectra = lora_spectra(tensors, scale)                          # (alpha / r) B A of a LoRA run
    claim = low_rank_claim("blocks.0.attn.qkv", spectra["blocks.0.attn.qkv"], rank=8)
    claim = loss_change_claim("old text (shakespeare)", 1.86, 2.31, sd=0.04, n=20)

A weight change Delta W (out x in) has min(out, in) singular values s_1 >= s_2 >= ...; its energy
is sum s_i^2 (the squared Frobenius norm), and the share in its top r is what the best rank-r
matrix keeps of it (Eckart-Young). A LoRA update (alpha / r) B A has rank at most r, so at most r
nonzero values; a full fine-tune's Delta W = W_after - W_base may use all of them. So the share
of a full fine-tune's change in its top r directions says how much of it LoRA of rank r could
have expressed at best.

Noise, for a loss measured before and after: the loop measures a loss as the mean over the same
`n` fixed windows each time (loop.evaluate); sd is the spread of the base's loss across those
windows, so sd / sqrt(n) is the standard error of one such mean, and the difference of two
(independent) means has standard error sqrt(2) sd / sqrt(n). A change is told only past twice
that: smaller changes could come from which windows were drawn.
Not here: training (training/finetune.py), charts (ui/charts/finetune.py).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import torch

from viz_model.analysis.claims import Claim, as_printed
from viz_model.bundles.load import load_bundle
from viz_model.model.lora import TARGETS
from viz_model.training.finetune import read_lora

SHARE_MOST = 0.5  # "most of it": more than half the change's energy in the top r directions
# ...and this far above what a random change puts there: a random 64 x 64 matrix already has 38%
# of its energy in its top 8 directions and 63% in its top 16 (chance_share)
CHANCE_MARGIN = 0.2
CHANCE_TRIALS = 8
NOISE_SIGMAS = 2.0


def singular_values(delta: torch.Tensor) -> list[float]:
    """The singular values of a matrix, largest first (float64 for small ones)."""
    return [float(v) for v in torch.linalg.svdvals(delta.double())]


def full_change_spectra(
    base: dict[str, torch.Tensor], tuned: dict[str, torch.Tensor], names: list[str]
) -> dict[str, list[float]]:
    """{matrix: singular values of W_tuned - W_base} for the named Linear modules."""
    return {n: singular_values(tuned[f"{n}.weight"] - base[f"{n}.weight"]) for n in names}


def lora_spectra(tensors: dict[str, torch.Tensor], scale: float) -> dict[str, list[float]]:
    """{matrix: singular values of (alpha / r) B A} from lora.safetensors' tensors."""
    names = sorted({k.rsplit(".lora_", 1)[0] for k in tensors if ".lora_" in k})
    return {
        n: singular_values(scale * (tensors[f"{n}.lora_B"] @ tensors[f"{n}.lora_A"])) for n in names
    }


def matrix_names(state: dict[str, torch.Tensor], targets: list[str] | None = None) -> list[str]:
    """The LoRA-able matrices of a GPT state dict ("blocks.0.attn.qkv", ...), of `targets` only
    when given (default: all of lora.TARGETS)."""
    suffixes = tuple(s for t in (targets or list(TARGETS)) for s in TARGETS[t])
    names = [k[: -len(".weight")] for k in state if k.endswith(".weight")]
    return [n for n in names if n.startswith("blocks.") and n.endswith(suffixes)]


def top_share(values: list[float], r: int) -> float:
    """The share of sum s_i^2 in the r largest values (1.0 for a zero change)."""
    total = sum(v * v for v in values)
    return 1.0 if total == 0 else sum(v * v for v in values[:r]) / total


@functools.cache
def chance_share(n: int, r: int) -> float:
    """The share of a random change's energy in its top r of n directions: the mean top_share
    of CHANCE_TRIALS seeded n x n Gaussian matrices. Square is the most concentrated shape with
    n singular values (a taller m x n matrix spreads them more evenly), so this is the strictest
    baseline for any matrix whose change has n singular values."""
    gen = torch.Generator().manual_seed(0)
    shares = [
        top_share(singular_values(torch.randn(n, n, generator=gen)), r)
        for _ in range(CHANCE_TRIALS)
    ]
    return sum(shares) / len(shares)


def low_rank_claim(name: str, values: list[float], rank: int) -> Claim:
    """Whether a full fine-tune's change to one matrix is mostly low-rank: more than half its
    energy in the top `rank` directions, and CHANCE_MARGIN above a random change's share."""
    share = top_share(values, rank)
    chance = chance_share(len(values), rank)
    numbers = {"share": share, "rank": rank, "threshold": SHARE_MOST, "n_values": len(values)}
    numbers |= {"chance": chance, "margin": CHANCE_MARGIN}
    head = (
        f"A full fine-tune's change to `{name}` puts {share:.0%} of its energy in its top {rank} "
        f"of {len(values)} directions; a random change with as many directions puts {chance:.0%} "
        "there"
    )
    # decided on the percentages as printed, so the reader's own subtraction agrees
    shown, by_chance = as_printed(100 * share, 0), as_printed(100 * chance, 0)
    margin = as_printed(100 * CHANCE_MARGIN, 0)
    most = share > SHARE_MOST and shown > 100 * SHARE_MOST
    if most and shown >= by_chance + margin:
        text = f"{head}. So this change is low-rank: LoRA with r = {rank} could have expressed most of it."
        return Claim(text, True, numbers)
    if most:
        why = (
            f"at r = {rank} even a random change is mostly in its top directions"
            if chance > SHARE_MOST
            else f"{shown:.0f}% is only {shown - by_chance:.0f} points above a random change's "
            f"{by_chance:.0f}%"
        )
        text = (
            f"{head}: not {margin:.0f} percentage points above chance, too little to call the "
            f"change low-rank; {why}."
        )
        return Claim(text, False, numbers)
    text = f"{head}: the change is spread out, and a rank-{rank} update could hold at most {share:.0%} of it."
    return Claim(text, False, numbers)


def noise(sd: float, n: int) -> float:
    """The change two n-window losses must differ by to be told: 2 sqrt(2) sd / sqrt(n)."""
    return NOISE_SIGMAS * math.sqrt(2.0) * sd / math.sqrt(max(n, 1))


def loss_change_claim(
    what: str, before: float, after: float, sd: float, n: int, blind: float | None = None
) -> Claim:
    """ "The loss on the old text rose from 1.86 to 2.31 nats" when past the noise; neutral
    otherwise. `what` is already Markdown-safe. `blind`: a blind guess's loss (ln V), said when
    a loss that rose ends above it."""
    limit = noise(sd, n)
    change = after - before
    numbers = {"before": before, "after": after, "change": change, "noise": limit, "sd": sd}
    numbers["n"] = n
    # the change the sentence states is that of the two losses it prints (1.857 to 2.364 reads
    # 1.86 to 2.36: a change of 0.50, not the 0.51 of the unrounded losses)
    shown = round(as_printed(after) - as_printed(before), 2)
    if abs(change) > limit and abs(shown) > as_printed(limit):
        change = shown
        verb = "rose" if change > 0 else "fell"
        text = (
            f"The loss on the {what} {verb} from {before:.2f} to {after:.2f} nats per token "
            f"(a change of {abs(change):.2f}; noise here is about {limit:.2f})."
        )
        if blind is not None and change > 0 and as_printed(after) > as_printed(blind):
            numbers["blind"] = blind
            text += (
                f" That is worse than a blind guess over the vocabulary ({blind:.2f}): the model "
                "now predicts this text worse than if it knew nothing."
            )
        return Claim(text, True, numbers)
    text = (
        f"The loss on the {what} went from {before:.2f} to {after:.2f} nats per token: within "
        f"the noise of the measurement ({limit:.2f} nats, from its spread over {n} windows)."
    )
    return Claim(text, False, numbers)


# ---- a fine-tune's bundle on disk ------------------------------------------------------------


def base_folder(info: dict, known: dict[str, Path] | None = None) -> Path | None:
    """The base bundle a fine-tune started from: its recorded folder, else the server's model of
    that name (a path recorded relative to another working directory), else None."""
    recorded = Path(info.get("base", ""))
    if recorded.is_dir():
        return recorded
    return (known or {}).get(info.get("base_name", ""))


def change_spectra(
    folder: Path, info: dict, known: dict[str, Path] | None = None
) -> dict[str, list[float]]:
    """{matrix: singular values} of what the fine-tune in `folder` changed: (alpha / r) B A from
    lora.safetensors for LoRA, W_tuned - W_base for full fine-tuning ({} when its base is gone)."""
    if info.get("mode") == "lora":
        saved = read_lora(folder)
        if saved is None:
            return {}
        tensors, rank, alpha = saved
        return lora_spectra(tensors, alpha / rank)
    base = base_folder(info, known)
    if base is None:
        return {}
    tuned = load_bundle(folder).model.state_dict()
    return full_change_spectra(load_bundle(base).model.state_dict(), tuned, matrix_names(tuned))
