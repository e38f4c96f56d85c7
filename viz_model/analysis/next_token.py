"""The next-token page's numbers: the distribution after a prompt, its top tokens, entropy,
and how surprised the model is by each token of a text (surprisal) and by the whole (perplexity).

surprisal of token t = -log p(x_t | x_<t)  (nats; the first token has none: nothing came before it)
perplexity          = exp(mean surprisal)  (the "effective number of choices" per token)
cross-entropy       = mean surprisal       (the training loss, measured on this text: `loss_numbers`)
accuracy            = share of positions whose most likely token is the one that came next

Not here: how temperature / top-k / top-p reshape logits (viz_model.model.sampling), figures (charts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.model.gpt import GPT
from viz_model.model.sampling import Distribution, SamplingSettings, next_token_distribution

LN2 = math.log(2.0)


def crop_to_context(ids: list[int], n_ctx: int) -> tuple[list[int], int]:
    """The last n_ctx ids and how many were cut from the left.

    >>> crop_to_context([1, 2, 3, 4], 3)
    ([2, 3, 4], 1)
    """
    cut = max(0, len(ids) - n_ctx)
    return list(ids[cut:]), cut


@torch.no_grad()
def prompt_logits(model: GPT, ids: list[int]) -> np.ndarray:
    """Logits (T, V) at every position of ids, which must fit the model's context."""
    return (
        model(torch.tensor(ids, dtype=torch.long, device=model.embed.weight.device))
        .float()
        .cpu()
        .numpy()
    )


def surprisal(logits: np.ndarray, ids: list[int]) -> np.ndarray:
    """Surprisal in nats of each token given the ones before it, (T,); NaN for the first token.

    logits[t] predicts ids[t + 1], so surprisal[t + 1] = -log softmax(logits[t])[ids[t + 1]].
    """
    logits = torch.tensor(np.asarray(logits), dtype=torch.float64)  # a copy: may be shared
    out = np.full(len(ids), np.nan)
    if len(ids) > 1:
        logp = torch.log_softmax(logits[:-1], dim=-1)  # (T-1, V)
        nxt = torch.as_tensor(list(ids[1:]), dtype=torch.long)
        out[1:] = (-logp[torch.arange(len(nxt)), nxt]).numpy()
    return out


def top_is_next(logits: np.ndarray, ids: list[int]) -> np.ndarray:
    """1.0 where the model's most likely token (ties: the lowest id, as argmax) is the token that
    actually came next, else 0.0, (T,); NaN for the first token, which nothing predicted."""
    out = np.full(len(ids), np.nan)
    if len(ids) > 1:
        top = np.asarray(logits)[:-1].argmax(axis=-1)
        out[1:] = (top == np.asarray(ids[1:])).astype(float)
    return out


@dataclass(frozen=True)
class LossNumbers:
    """The cross-entropy of a text under a model: -ln p(next) at each predicted position, its
    mean (the loss), the 0/1 score beside it (accuracy) and the blind guess's ln V."""

    nll: np.ndarray  # (n,) -ln p(next), the n positions that have a prediction
    hits: np.ndarray  # (n,) 1.0 where the top token was the next token, else 0.0
    loss: float  # mean nll: the cross-entropy (NaN when n = 0)
    accuracy: float  # mean hits
    blind: float  # ln V: every token equally likely

    @property
    def perplexity(self) -> float:
        return math.exp(self.loss)


def loss_numbers(surprisals: np.ndarray, hits: np.ndarray, vocab: int) -> LossNumbers:
    """The loss, accuracy and blind guess from each token's surprisal and top-1 agreement (both
    NaN at the first token: `surprisal`, `top_is_next`)."""
    s, h = np.asarray(surprisals, dtype=float), np.asarray(hits, dtype=float)
    keep = ~np.isnan(s)
    nll, hits = s[keep], h[keep]
    loss = float(nll.mean()) if nll.size else float("nan")
    acc = float(hits.mean()) if hits.size else float("nan")
    return LossNumbers(nll, hits, loss, acc, math.log(vocab))


def mean_loss(surprisals: np.ndarray) -> float:
    """The mean surprisal over the tokens that have one (the cross-entropy); NaN when none does."""
    s = np.asarray(surprisals, dtype=float)
    s = s[~np.isnan(s)]
    return float(s.mean()) if s.size else float("nan")


def perplexity(surprisals: np.ndarray) -> float:
    """exp(mean surprisal) over the tokens that have one; NaN when none does."""
    s = np.asarray(surprisals, dtype=float)
    s = s[~np.isnan(s)]
    return float(np.exp(s.mean())) if s.size else float("nan")


def distribution(last_logits: np.ndarray, settings: SamplingSettings) -> Distribution:
    """The next-token distribution from one position's logits (V,), reshaped by the settings."""
    return next_token_distribution(torch.tensor(np.asarray(last_logits)), settings)


@dataclass(frozen=True)
class CutCounts:
    """How many tokens each cut leaves: top-k alone, top-p alone, and both (top-k first)."""

    top_k: int
    top_p: int
    both: int


def cut_counts(last_logits: np.ndarray, settings: SamplingSettings) -> CutCounts:
    """Tokens left by top-k alone, top-p alone, and both in the sampler's order: top-p then
    keeps the fewest of top-k's survivors whose mass, renormalised over them, reaches p, so it
    can keep fewer than top-p alone would."""
    t = settings.temperature

    def n_kept(k: int, p: float) -> int:
        s = SamplingSettings(temperature=t, top_k=k, top_p=p)
        return int(distribution(last_logits, s).kept.sum())

    return CutCounts(
        n_kept(settings.top_k, 1.0),
        n_kept(0, settings.top_p),
        n_kept(settings.top_k, settings.top_p),
    )


def entropy_bits(nats: float) -> float:
    """Entropy in bits (log base 2) from nats."""
    return nats / LN2


@dataclass(frozen=True)
class TopTokens:
    """The k most likely tokens (by logit, so the order is the same at every temperature)."""

    ids: np.ndarray  # (k,) int
    labels: list[str]  # readable token text, as the tokenizer shows it
    logits: np.ndarray  # (k,)
    base_probs: np.ndarray  # softmax(logits), temperature 1
    scaled_probs: np.ndarray  # softmax(logits / T), before the cut
    probs: np.ndarray  # after top-k / top-p, renormalised (0 for cut tokens)
    kept: np.ndarray  # (k,) bool

    def rows(self) -> list[dict]:
        """One dict per token, for a table."""
        return [
            {
                "rank": r + 1,
                "id": int(self.ids[r]),
                "token": self.labels[r],
                "logit": float(self.logits[r]),
                "p (T=1)": float(self.base_probs[r]),
                "p (this T)": float(self.scaled_probs[r]),
                "p (after cut)": float(self.probs[r]),
                "kept": bool(self.kept[r]),
            }
            for r in range(len(self.ids))
        ]


def top_tokens(dist: Distribution, k: int, id_to_token) -> TopTokens:
    """The k highest-logit tokens of a distribution, with every probability the page shows."""
    k = max(1, min(int(k), dist.logits.numel()))
    # stable order: by logit, ties broken by id
    order = np.lexsort((np.arange(dist.logits.numel()), -dist.logits.numpy()))[:k]
    idx = torch.as_tensor(order)
    return TopTokens(
        ids=order.astype(int),
        labels=[id_to_token(int(i)) for i in order],
        logits=dist.logits[idx].numpy(),
        base_probs=dist.base_probs[idx].numpy(),
        scaled_probs=dist.scaled_probs[idx].numpy(),
        probs=dist.probs[idx].numpy(),
        kept=dist.kept[idx].numpy().astype(bool),
    )


# ---- claims (docs/ARCHITECTURE.md, Claims) ------------------------------------------------------------------


BLIND_MARGIN = 0.1  # within 10% of the vocabulary size, a perplexity is a blind guess's


def perplexity_claim(ppl: float, vocab: int, causal: bool) -> Claim:
    """What the prompt's perplexity says about the model. A model without the causal mask also
    sees the token it is scored on, so its perplexity measures copying, not prediction; above the
    vocabulary size (a blind guess) it gave some tokens less than a blind guess would."""
    numbers = {"perplexity": ppl, "blind_guess": float(vocab), "perfect": 1.0}
    numbers |= {"causal": float(causal)}
    if not causal:
        text = (
            f"Perplexity {ppl:.1f}, but this model has no causal mask: at every position it "
            "also sees the token it is scored on (and everything after it), so this number "
            "measures how well it copies, not how well it predicts. A causal model could not "
            "look ahead."
        )
        return Claim(text, False, numbers)
    text = (
        f"On average the model was as unsure as if it had to pick fairly among **{ppl:.1f}** "
        f"tokens at each step. A blind guess (every token equally likely) would score {vocab}; "
        "a model that predicted the text perfectly would score 1."
    )
    low, high = (1 - BLIND_MARGIN) * vocab, (1 + BLIND_MARGIN) * vocab
    numbers |= {"low": low, "high": high}
    if ppl > high:
        text += (
            " Here it scores worse than a blind guess: it gave some of these tokens much less "
            "probability than a blind guess would (1/V), expecting something else."
        )
    elif ppl >= low:
        text += (
            " Here it scores about what a blind guess scores: on this text it does no better "
            "than giving every token the same chance."
        )
    return Claim(text, True, numbers)


def lookahead_claim(causal: bool) -> Claim:
    """For a model without the causal mask: its p(x_t | ...) also saw x_t, so products of them are
    not the probability of a text (made: the warning applies)."""
    text = (
        "This model has no causal mask: the probability it gives each token was computed while "
        "it could see that token (and every later one), so these numbers are not p(x_t | x_<t) "
        "and their product is not the probability of the text."
    )
    return Claim(text if not causal else "", not causal, {"causal": float(causal)})


def loss_lookahead_claim(causal: bool) -> Claim:
    """Under a model card: a model without the causal mask saw each token it was scored on, so
    its validation loss is not a prediction loss (made: the warning applies)."""
    text = (
        "This model has no causal mask: it saw each token it was scored on, so its loss measures "
        "copying, not prediction, and cannot be compared with a causal model's."
    )
    return Claim(text if not causal else "", not causal, {"causal": float(causal)})


# Within this share of ln V a loss is "about chance"; a model "beats chance" when its loss is below
# both ln V and its random weights' loss on the same text by more than this share of ln V.
CHANCE_MARGIN = 0.1


def cross_entropy_claim(loss: float, twin_loss: float, vocab: int, causal: bool) -> Claim:
    """What the prompt's cross-entropy says: beats chance (made) only when the loss is below both
    the blind guess ln V and the untrained twin's loss on the same text by CHANCE_MARGIN × ln V;
    about chance within that margin of ln V; else worse than a blind guess, or no better than
    random weights."""
    blind = math.log(vocab)
    margin = CHANCE_MARGIN * blind
    numbers = {"loss": loss, "twin_loss": twin_loss, "blind": blind, "margin": margin}
    numbers |= {"causal": float(causal)}
    if not causal:
        return Claim(
            f"Cross-entropy {loss:.2f} nats, but this model has no causal mask: it saw each "
            "token it was scored on, so this measures copying, not prediction.",
            False,
            numbers,
        )
    twin = f"the same model with random weights scores {twin_loss:.2f}"
    if loss < blind - margin and loss < twin_loss - margin:
        text = (
            f"On this text the model **beats chance**: {loss:.2f} nats per token, "
            f"{blind - loss:.2f} below the blind guess ln {vocab:,} = {blind:.2f}; {twin}. "
            f"(Beating chance: lower than both by more than {margin:.2f} nats, a tenth of ln V.)"
        )
        return Claim(text, True, numbers)
    if abs(loss - blind) <= margin:
        text = (
            f"On this text the model scores **about chance**: {loss:.2f} nats per token, about "
            f"the blind guess ln {vocab:,} = {blind:.2f} (within {margin:.2f}, a tenth of ln V), "
            f"what a model that learned nothing scores; {twin}."
        )
    elif loss > blind:
        text = (
            f"On this text the model scores **worse than a blind guess**: {loss:.2f} nats per "
            f"token against ln {vocab:,} = {blind:.2f}; it gave some of these tokens much less "
            f"than 1/V, expecting something else; {twin}."
        )
    else:
        text = (
            f"On this text the model scores {loss:.2f} nats per token, below the blind guess "
            f"ln {vocab:,} = {blind:.2f}, but not clearly below its random weights: {twin}."
        )
    return Claim(text, False, numbers)


def accuracy_text(numbers: LossNumbers) -> str:
    """The 0/1 score in words, with the counts it comes from."""
    n, k = numbers.hits.size, int(numbers.hits.sum())
    return (
        f"At {k} of {n} positions the model's most likely token was the one that came next: "
        f"**accuracy {numbers.accuracy:.0%}**."
    )
