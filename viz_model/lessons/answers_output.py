"""Answer kinds for the output lesson (assets/lessons/4_output.toml): the next-token distribution
of the model on screen, reshaped as the Next token page reshapes it (temperature, top-k, top-p),
the prompt's surprisal and perplexity, what greedy decoding writes on the Generation page, and
what the KV cache holds.

Each kind measures with the functions the pages call (analysis/next_token.py,
analysis/generation.py, model/sampling.py), so a lesson and its page never disagree.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from viz_model.analysis import generation as gen
from viz_model.analysis import next_token as nt
from viz_model.analysis.claims import md_escape
from viz_model.analysis.tokens import token_text
from viz_model.lessons.kinds import Subject, answer_kind
from viz_model.lessons.truth import Truth, apart, visible_token
from viz_model.model.gpt import KVCache
from viz_model.model.sampling import SamplingSettings

# A probability change smaller than this is not called a rise or a fall: the page's numbers show
# two decimals, so a smaller change cannot be seen there.
VISIBLE_CHANGE = 0.005
TEMPERATURE_OPTIONS = ("rises", "falls", "stays about the same")
# Top-p "keeps a small nucleus" when it keeps at most this share of the vocabulary.
NUCLEUS_SHARE = 0.5
PERPLEXITY_TOLERANCE = 0.2  # a predicted perplexity within 20% of the model's counts


def _last_probs(subject: Subject) -> torch.Tensor:
    """(V,) the next-token probabilities after the prompt."""
    with torch.no_grad():
        logits = subject.bundle.model(torch.tensor(list(subject.ids), dtype=torch.long))
    return torch.softmax(logits[-1].double(), -1)


def _shown(subject: Subject, token_id: int) -> str:
    """A token as a reveal prints it: quoted, whitespace visible, Markdown escaped."""
    return md_escape(visible_token(token_text(subject.bundle.tokenizer, int(token_id))))


@answer_kind("token")
def top_next_token(subject: Subject) -> Truth:
    """The most likely next token after the prompt (temperature 1, nothing cut)."""
    probs = _last_probs(subject)
    top2 = torch.topk(probs, 2)
    tok = subject.bundle.tokenizer
    first, second = (token_text(tok, int(i)) for i in top2.indices)
    p1, p2 = (float(p) for p in top2.values)
    d = apart(p1, p2, 3)  # as the Next token page's bars print them, and the two apart
    why = (
        f"The model gives {md_escape(visible_token(first))} probability **{p1:.{d}f}**; the "
        f"runner-up {md_escape(visible_token(second))} gets {p2:.{d}f}."
    )
    return Truth("token", first, why, numbers={"p_top": p1, "p_second": p2})


def _page_logits(subject: Subject) -> np.ndarray:
    """(T, V) the logits the Next token page reads (nt.prompt_logits on the cropped prompt)."""
    return nt.prompt_logits(subject.bundle.model, list(subject.ids))


@answer_kind("choice")
def top_prob_at_temperature(subject: Subject, temperature: float = 0.5) -> Truth:
    """Whether the most likely token's probability rises, falls or stays at `temperature`."""
    last = _page_logits(subject)[-1]
    at_one = nt.distribution(last, SamplingSettings(temperature=1.0))
    at_t = nt.distribution(last, SamplingSettings(temperature=max(0.0, temperature)))
    top = int(np.argmax(last))
    p1, pt = float(at_one.scaled_probs[top]), float(at_t.scaled_probs[top])
    change = pt - p1
    if change > VISIBLE_CHANGE:
        value = "rises"
    elif change < -VISIBLE_CHANGE:
        value = "falls"
    else:
        value = "stays about the same"
    expected = "rises" if temperature < 1 else "falls" if temperature > 1 else value
    numbers = {"p_t1": p1, "p_t": pt, "temperature": temperature, "visible": VISIBLE_CHANGE}
    what = f"The most likely token, {_shown(subject, top)}, has p = {p1:.3f} at T = 1"
    if value == "stays about the same":
        why = (
            f"{what} and {pt:.3f} at T = {temperature:g}: a change of less than "
            f"{VISIBLE_CHANGE} that the bars cannot show"
            + (
                " (it is already nearly certain)."
                if p1 > 0.99
                else " (this temperature is close to 1)."
                if abs(temperature - 1) < 0.1
                else " (the logits are nearly equal)."
            )
        )
    else:
        why = (
            f"{what} and **{pt:.3f}** at T = {temperature:g}: dividing the logits by "
            f"{temperature:g} {'stretches' if temperature < 1 else 'squeezes'} the gaps between "
            f"them, so the leader's share {value}."
        )
    return Truth(
        "choice", value, why, TEMPERATURE_OPTIONS, holds=value == expected, numbers=numbers
    )


@answer_kind("number")
def top_p_kept(
    subject: Subject, top_p: float = 0.9, top_k: int = 0, temperature: float = 1.0
) -> Truth:
    """How many tokens the sampler may still pick after top-k (first) and top-p."""
    last = _page_logits(subject)[-1]
    settings = SamplingSettings(temperature=temperature, top_k=top_k, top_p=top_p)
    dist = nt.distribution(last, settings)
    kept = int(dist.kept.sum())
    V = int(last.shape[0])
    mass = float(dist.scaled_probs[dist.kept].sum())
    numbers = {"kept": kept, "vocab": V, "mass": mass, "top_p": top_p, "top_k": top_k}
    if top_k and top_p < 1:
        rule = (
            f"top-k keeps the {top_k} most likely, and top-p the fewest of those whose "
            f"probabilities, renormalised over the {top_k}, add up to at least {top_p:g}"
        )
    elif top_k:
        rule = f"top-k keeps the {top_k} most likely"
    else:
        rule = f"the fewest most likely ones whose probabilities add up to at least {top_p:g}"
    why = (
        f"At T = {temperature:g}, **{kept} of {V} tokens** can still be picked: {rule} (the "
        f"kept tokens hold {mass:.3f} of the probability before renormalising)."
    )
    small = kept <= NUCLEUS_SHARE * V
    if not small:
        why += (
            " Here the distribution is so flat that the nucleus is most of the vocabulary: "
            "the model has no clear favourite after this prompt."
        )
    return Truth("number", kept, why, holds=small, unit="tokens", numbers=numbers)


@answer_kind("token")
def most_surprising_token(subject: Subject) -> Truth:
    """The prompt token the model found least likely given the tokens before it."""
    ids = list(subject.ids)
    surprisal = nt.surprisal(_page_logits(subject), ids)
    if len(ids) < 2:
        text = token_text(subject.bundle.tokenizer, ids[0]) if ids else ""
        why = "The prompt has one token: nothing came before it, so it has no surprisal."
        return Truth("token", text, why, holds=False, numbers={"tokens": len(ids)})
    at = int(np.nanargmax(surprisal))
    s = float(surprisal[at])
    token = token_text(subject.bundle.tokenizer, ids[at])
    numbers = {"position": at, "surprisal": s, "p": math.exp(-s)}
    why = (
        f"Token {at}, {_shown(subject, ids[at])}, surprised the model most: it gave it "
        f"p = {math.exp(-s):.4f}, a surprisal of **{s:.2f} nats**."
    )
    causal = subject.bundle.config.causal
    if not causal:
        why += " " + nt.lookahead_claim(causal).text
    return Truth("token", token, why, holds=causal, numbers=numbers)


@answer_kind("number")
def prompt_perplexity(subject: Subject) -> Truth:
    """The prompt's perplexity: e to the mean surprisal of its tokens."""
    ids = list(subject.ids)
    V = subject.bundle.tokenizer.vocab_size
    ppl = nt.perplexity(nt.surprisal(_page_logits(subject), ids))
    if math.isnan(ppl):
        why = "The prompt has one token: perplexity needs at least two."
        return Truth("number", 0.0, why, holds=False, numbers={"tokens": len(ids)})
    claim = nt.perplexity_claim(ppl, V, subject.bundle.config.causal)
    beats_blind = claim.made and ppl < claim.numbers["low"]
    tolerance = PERPLEXITY_TOLERANCE * ppl
    why = (
        f"Perplexity **{ppl:.2f}** over the prompt's {len(ids)} tokens (answers within "
        f"{PERPLEXITY_TOLERANCE:.0%}, ±{tolerance:.2f}, count). {claim.text}"
    )
    numbers = {"perplexity": ppl, "vocab": V, "tolerance": tolerance}
    return Truth("number", ppl, why, holds=beats_blind, tolerance=tolerance, numbers=numbers)


@answer_kind("token")
def greedy_continuation(subject: Subject, n: int = 3) -> Truth:
    """The text greedy decoding (temperature 0) writes in the next `n` tokens after the prompt."""
    actions = [gen.Action(SamplingSettings(temperature=0.0))] * max(1, n)
    # replay is the Generation page's own stepper: the same forward pass, so a near tie falls
    # the same way as on screen
    steps = gen.replay(subject.bundle.model, list(subject.ids), actions, seed=0)
    tok = subject.bundle.tokenizer
    text = "".join(token_text(tok, s.token) for s in steps)
    listed = ", ".join(_shown(subject, s.token) for s in steps)
    why = (
        f"At temperature 0 the sampler takes the most likely token every step: {listed}, "
        f"which reads **{md_escape(visible_token(text))}**."
    )
    numbers = {"tokens": len(steps), **{f"token_{i}": float(s.token) for i, s in enumerate(steps)}}
    return Truth("token", text, why, numbers=numbers)


@torch.no_grad()
def _cached_keys(subject: Subject) -> int:
    """Key vectors in a KV cache filled by one forward pass over the prompt: one per token,
    head and layer (each layer keeps a (B, T, H, E) tensor)."""
    model = subject.bundle.model
    cache = KVCache(model.cfg.n_layer)
    model(torch.tensor(list(subject.ids), dtype=torch.long), cache)
    return sum(int(k.shape[1] * k.shape[2]) for k in cache.k if k is not None)


@answer_kind("number")
def kv_cache_keys(subject: Subject) -> Truth:
    """How many key vectors the KV cache holds once the prompt has been read."""
    cfg = subject.bundle.config
    T = len(subject.ids)
    numbers = {"tokens": T, "layers": cfg.n_layer, "heads": cfg.n_head}
    if not cfg.causal:
        why = (
            f"{gen.kv_cache_idea(False)} Generation on this model keeps **no** cache: it re-reads "
            f"all {T} tokens at every step."
        )
        return Truth("number", 0, why, holds=False, unit="keys", numbers=numbers)
    keys = _cached_keys(subject)
    why = (
        f"One key vector per token, per head, per layer: {T} tokens × {cfg.n_head} heads × "
        f"{cfg.n_layer} layers = **{keys:,}** keys (and as many values), each of "
        f"{cfg.d_model // cfg.n_head} numbers. The next step adds {cfg.n_head * cfg.n_layer} "
        "more and recomputes none of these."
    )
    return Truth("number", keys, why, unit="keys", numbers=numbers | {"keys": keys})
