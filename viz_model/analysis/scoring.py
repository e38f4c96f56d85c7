"""Tasks as next-word prediction: score candidate continuations of a prompt by their probability.

By the chain rule, log p(c_1..c_n | prompt) = sum_i log p(c_i | prompt, c_<i): one forward pass
over prompt + candidate gives every term. Ranked by that total, a longer candidate pays for every
extra token; ranked per token (the total over n, length-normalised) it does not. When the two
rankings put different candidates first, the choice of score decided the answer.

Not here: the forward pass itself (the model), the page's text boxes (ui/usage/scoring.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim, md_escape
from viz_model.analysis.usage import logits_of
from viz_model.model.decoding import context_length, is_causal

MAX_CANDIDATES = 12


@dataclass(frozen=True)
class Score:
    """One candidate's log-probabilities given the prompt (natural log)."""

    text: str
    token_logps: np.ndarray  # (n,) log p(c_i | prompt, c_<i)

    @property
    def n_tokens(self) -> int:
        return len(self.token_logps)

    @property
    def total(self) -> float:
        return float(self.token_logps.sum())

    @property
    def per_token(self) -> float:
        return self.total / self.n_tokens


def candidate_logps(model: torch.nn.Module, prompt: list[int], candidate: list[int]) -> np.ndarray:
    """log p of each candidate token given the prompt and the candidate tokens before it, (n,),
    from one forward pass (one a token for a model that reads ahead, which one pass would let see
    the answer); the prompt is cut on the left when both do not fit the context."""
    if not prompt or not candidate:
        raise ValueError("scoring needs a prompt and a candidate of at least one token each")
    n_ctx = context_length(model)
    if n_ctx is not None and len(candidate) >= n_ctx:
        raise ValueError(
            f"a candidate of {len(candidate)} tokens does not fit the context ({n_ctx})"
        )
    seq = list(prompt) + list(candidate)
    if n_ctx is not None:
        seq = seq[-n_ctx:]
    n = len(candidate)
    if not is_causal(model):  # it would read each answer token: one pass per prefix instead
        rows = [logits_of(model, seq[:t])[-1] for t in range(len(seq) - n, len(seq))]
        logp = torch.log_softmax(torch.tensor(np.stack(rows), dtype=torch.float64), -1)
        return logp[torch.arange(n), torch.tensor(seq[-n:])].numpy()
    logp = torch.log_softmax(torch.tensor(logits_of(model, seq), dtype=torch.float64), -1)
    rows = torch.arange(len(seq) - n - 1, len(seq) - 1)  # the positions that predict c_1..c_n
    return logp[rows, torch.tensor(seq[-n:])].numpy()


def score_candidates(
    model: torch.nn.Module, prompt: list[int], candidates: list[tuple[str, list[int]]]
) -> list[Score]:
    """Each (text, ids) candidate's Score, in the order given."""
    return [Score(text, candidate_logps(model, prompt, ids)) for text, ids in candidates]


def rankings(scores: list[Score]) -> tuple[list[int], list[int]]:
    """Indices of the candidates best first: by total log-probability, and per token."""
    by_total = sorted(range(len(scores)), key=lambda i: -scores[i].total)
    by_token = sorted(range(len(scores)), key=lambda i: -scores[i].per_token)
    return by_total, by_token


def ranking_claim(scores: list[Score]) -> Claim:
    """Whether total and per-token log-probability put different candidates first."""
    if len(scores) < 2:
        return Claim("Give at least two candidates to compare their rankings.", False, {})
    by_total, by_token = rankings(scores)
    a, b = scores[by_total[0]], scores[by_token[0]]
    numbers = {
        "total_best": a.total,
        "per_token_best": b.per_token,
        "total_best_tokens": a.n_tokens,
        "per_token_best_tokens": b.n_tokens,
    }
    if by_total[0] == by_token[0]:
        head = f"Both scores put “{md_escape(a.text.strip())}” first ({a.total:.2f} in total, " + (
            f"{a.per_token:.2f} per token)"
        )
        if by_total == by_token:
            return Claim(head + ", and they agree on the whole order.", False, numbers)
        # the candidate the total pushes furthest down, against its place per token
        moved = max(range(len(scores)), key=lambda i: by_total.index(i) - by_token.index(i))
        m = scores[moved]
        return Claim(
            head + f", but they order the rest differently: “{md_escape(m.text.strip())}” "
            f"({m.n_tokens} token{'s' * (m.n_tokens != 1)}) is number {by_token.index(moved) + 1} per token and number "
            f"{by_total.index(moved) + 1} by total.",
            True,
            numbers,
        )
    return Claim(
        f"The two scores disagree. By total log-probability “{md_escape(a.text.strip())}” wins "
        f"({a.total:.2f} over {a.n_tokens} tokens); per token “{md_escape(b.text.strip())}” wins "
        f"({b.per_token:.2f} a token over {b.n_tokens})."
        + (
            " The total charges every extra token, so the shorter candidate came first by it."
            if a.n_tokens < b.n_tokens
            else ""
        ),
        True,
        numbers,
    )
