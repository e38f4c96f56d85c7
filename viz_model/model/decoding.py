"""Decoding past one sampled token: next-token logits for a growing text, a repetition penalty,
decoding with it, and beam search.

Every function reads a model only through `model(ids)`, (B, T) -> (B, T, V), so it works for any
causal language model with that signature (a GPT, a recurrent model). A GPT may step with its KV
cache (`LogitStream`), an optional speed-up with a plain full-forward fallback: both give the same
logits up to float rounding.

    stream = LogitStream(model, prompt_ids)   # logits after the prompt, (V,)
    stream.logits; stream.push(token)          # one more token, its logits
    beams = beam_search(model, prompt_ids, width=3, n_steps=10)

Not here: temperature, top-k, top-p and plain generation (sampling.py); measurements of what
decoding does (viz_model/analysis/usage.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from viz_model.model.gpt import GPT, KVCache
from viz_model.model.sampling import SamplingSettings, next_token_distribution, pick

GREEDY = SamplingSettings(temperature=0.0)


def context_length(model: torch.nn.Module) -> int | None:
    """How many tokens the model reads at most (a GPT's n_ctx); None when it has no limit."""
    return getattr(getattr(model, "cfg", None), "n_ctx", None)


def is_causal(model: torch.nn.Module) -> bool:
    """Whether position t reads only tokens up to t, so one pass scores a whole text as it would
    be generated. A GPT says so in its config (the no-mask lesson model does not); a model without
    the setting (a recurrent one) is causal by construction."""
    return bool(getattr(getattr(model, "cfg", None), "causal", True))


def device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def crop(seq: list[int], n_ctx: int | None) -> list[int]:
    """The last n_ctx tokens (all of them without a limit): what the model reads."""
    return list(seq) if n_ctx is None else list(seq[-n_ctx:])


@torch.no_grad()
def last_logits(model: torch.nn.Module, seqs: list[list[int]]) -> torch.Tensor:
    """Logits after each sequence (B, V) from one batched full forward; the sequences must have
    one length (each cropped to the model's context)."""
    n_ctx = context_length(model)
    ids = torch.tensor([crop(s, n_ctx) for s in seqs], dtype=torch.long, device=device_of(model))
    return model(ids)[:, -1, :].float()  # (B, T, V) -> (B, V)


class LogitStream:
    """The logits after a text that grows one token at a time.

    A causal GPT keeps its KV cache between tokens (feeding only the newest), and starts it again
    from the last n_ctx tokens when the window is full, as sampling.generate_steps does; any other
    model (or use_kv_cache=False) runs a full forward over the window each time.
    """

    def __init__(self, model: torch.nn.Module, ids: list[int], use_kv_cache: bool = True):
        if not ids:
            raise ValueError("decoding needs at least one prompt token")
        self.model, self.seq = model, list(ids)
        self.n_ctx = context_length(model)
        cached = use_kv_cache and isinstance(model, GPT) and model.cfg.causal
        self.kv = KVCache(model.cfg.n_layer) if cached else None
        self.passes = 0  # forward passes so far: one per token, whichever way
        self.logits = self._forward(crop(self.seq, self.n_ctx))

    @torch.no_grad()
    def _forward(self, fresh: list[int]) -> torch.Tensor:
        self.passes += 1
        ids = torch.tensor(fresh, dtype=torch.long, device=device_of(self.model))
        if self.kv is None:
            return self.model(ids)[-1].float()  # (T,) -> (T, V) -> (V,)
        return self.model(ids, self.kv)[-1].float()

    def push(self, token: int) -> torch.Tensor:
        """Append a token and return the logits after it (V,)."""
        self.seq.append(int(token))
        if self.kv is None:
            fresh = crop(self.seq, self.n_ctx)
        elif self.kv.length + 1 > self.n_ctx:  # the window slid: positions changed, start again
            self.kv = KVCache(self.model.cfg.n_layer)
            fresh = crop(self.seq, self.n_ctx)
        else:
            fresh = [int(token)]
        self.logits = self._forward(fresh)
        return self.logits


def penalize_repeats(logits: torch.Tensor, seen: set[int], theta: float) -> torch.Tensor:
    """CTRL's repetition penalty (Keskar et al. 2019) as libraries apply it: each token already
    generated has its logit divided by theta when positive and multiplied by theta when negative
    (CTRL itself divided every such logit), so theta > 1 never raises its logit. Its probability
    usually falls, but can rise: the softmax renormalises, and when another penalised token's
    logit falls further, mass moves to the rest. theta = 1 changes nothing.

    >>> penalize_repeats(torch.tensor([2.0, -1.0, 3.0]), {0, 1}, 2.0).tolist()
    [1.0, -2.0, 3.0]
    """
    if theta <= 0:
        raise ValueError(f"the penalty theta must be > 0, got {theta}")
    out = logits.clone()
    if seen and theta != 1.0:
        idx = torch.tensor(sorted(seen), dtype=torch.long)
        z = out[idx]
        out[idx] = torch.where(z > 0, z / theta, z * theta)
    return out


def decode(
    model: torch.nn.Module,
    ids: list[int],
    n_new: int,
    settings: SamplingSettings = GREEDY,
    seed: int = 0,
    penalty: float = 1.0,
    use_kv_cache: bool = True,
) -> list[int]:
    """n_new tokens after ids: greedy at temperature 0, else sampled (seeded); the repetition
    penalty applies to the tokens generated so far, before temperature and the cuts."""
    stream = LogitStream(model, ids, use_kv_cache)
    generator = torch.Generator().manual_seed(int(seed))
    out: list[int] = []
    for _ in range(n_new):
        logits = penalize_repeats(stream.logits.cpu(), set(out), penalty)
        token = pick(next_token_distribution(logits, settings), generator)
        out.append(token)
        stream.push(token)
    return out


# ---- beam search ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Beam:
    """One hypothesis: the tokens after the prompt and log p(tokens | prompt), their sum."""

    tokens: tuple[int, ...]
    logprob: float


@torch.no_grad()
def beam_search(
    model: torch.nn.Module, ids: list[int], width: int, n_steps: int
) -> list[list[Beam]]:
    """Keep the `width` most likely continuations at each step: each beam is extended by every
    token of the vocabulary, and the `width` best of all (beam x token) by total log-probability
    survive. Returns the beams after each step, best first. width 1 is greedy decoding; a width of
    V^(n_steps - 1) or more keeps every prefix, so it finds the most likely continuation exactly.
    """
    if width < 1 or n_steps < 0:
        raise ValueError(f"beam width must be >= 1 and steps >= 0, got {width} and {n_steps}")
    if not ids:
        raise ValueError("beam search needs at least one prompt token")
    beams, steps = [Beam((), 0.0)], []
    for _ in range(n_steps):
        logits = last_logits(model, [list(ids) + list(b.tokens) for b in beams])  # (B, V)
        logp = torch.log_softmax(logits.double(), dim=-1)  # float64: sums compare exactly
        total = torch.tensor([b.logprob for b in beams], dtype=torch.float64)[:, None] + logp
        k = min(width, total.numel())
        # ties broken by (beam, token) order: a stable sort of the flattened scores
        order = torch.sort(total.flatten(), descending=True, stable=True).indices[:k]
        V = logp.shape[1]
        beams = [
            Beam(beams[int(i) // V].tokens + (int(i) % V,), float(total.flatten()[i]))
            for i in order
        ]
        steps.append(beams)
    return steps
