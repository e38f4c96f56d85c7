"""MLP neurons: which fire on a prompt, which corpus snippets excite one most, what it writes.

An MLP is out = W_out act(W_in x + b_in) + b_out; neuron n is one coordinate of act(...) (the hook
`blocks.{l}.mlp.hook_post`). Read as a key-value memory (Geva et al. 2021): row n of W_in is a key
that the residual is matched against, and column n of W_out is the value added to the residual when
the neuron fires. Through the unembedding, W_out[:, n] @ W_U says which next tokens that value
promotes and which it suppresses.

- `top_neurons`: the neurons most active anywhere in a prompt.
- `corpus_windows` + `neuron_maxima` + `top_examples`: the max-activating snippets of a corpus.
- `output_direction_logits` + `promoted_tokens`: the value vector read through W_U.
- `rank_neurons`: which neuron to open on (strong, not position-driven) and which are dead.

Not here: charts and snippet HTML (charts/neurons.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model.analysis.claims import Claim
from viz_model.model.gpt import GPT
from viz_model.text.tokenization import Tokenizer


def has_mlp(model: GPT) -> bool:
    return not model.cfg.attn_only


def post_name(layer: int) -> str:
    return f"blocks.{layer}.mlp.hook_post"


def top_neurons(post: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n neurons with the largest activation anywhere in the prompt, largest first.

    post: (T, M) activations after the nonlinearity.
    """
    peak = post.max(axis=0)
    order = np.argsort(-peak, kind="stable")
    return order[: min(n, post.shape[1])]


# ---- the corpus search -------------------------------------------------------------------------


@dataclass
class Windows:
    """Token windows cut from a corpus. ids: (N, W); texts[i][j]: the text token j of window i shows,
    including the whitespace before it (so joining a row gives back the snippet)."""

    ids: np.ndarray
    texts: list[list[str]]


def corpus_windows(
    text: str, tokenizer: Tokenizer, n_windows: int = 200, length: int = 64
) -> Windows:
    """`n_windows` windows of `length` tokens, starting at line starts spread evenly over `text`."""
    if not text:
        raise ValueError("the corpus is empty")
    chars = max(length * 16, 256)  # enough characters for `length` tokens of any tokenizer here
    ids, texts = [], []
    step = max(1, (len(text) - chars) // n_windows)
    for k in range(n_windows):
        start = k * step
        nl = text.find("\n", start, start + 200)
        start = nl + 1 if nl >= 0 else start
        chunk = text[start : start + chars]
        pieces = tokenizer.pieces(chunk)[:length]
        if len(pieces) < length:
            continue
        done, shown = 0, []
        for p in pieces:
            shown.append(chunk[done : p.end])
            done = max(done, p.end)
        ids.append([p.id for p in pieces])
        texts.append(shown)
    if not ids:
        raise ValueError(f"the corpus is too short for windows of {length} tokens")
    return Windows(ids=np.asarray(ids, dtype=np.int64), texts=texts)


def neuron_maxima(
    model: GPT, ids: np.ndarray, batch_size: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """Each neuron's largest activation in each window, and where: two (n_layer, N, M) arrays
    (values float32, positions int64)."""
    maxima, argmax, _, _ = _scan(model, ids, batch_size, keep=0)
    return maxima, argmax


def _scan(
    model: GPT, ids: np.ndarray, batch_size: int, keep: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the windows: maxima and argmax (n_layer, N, M) as in `neuron_maxima`, and for
    each neuron the `keep` windows where it peaks highest with its activation at every token:
    top_windows (n_layer, M, keep) and top_acts (n_layer, M, keep, W), merged batch by batch."""
    n_layer = model.cfg.n_layer
    names = [post_name(i) for i in range(n_layer)]
    maxes, where = [], []
    best_vals = best_win = best_acts = None
    device = model.W_E.device
    for b in range(0, len(ids), batch_size):
        batch = torch.as_tensor(ids[b : b + batch_size], device=device)
        _, cache = model.run_with_cache(batch, names=names)
        posts = [cache[n] for n in names]  # each (B, W, M): a 2-D batch keeps its batch axis
        peaks = [p.max(dim=1) for p in posts]  # the max over W: values and indices (B, M)
        vals = torch.stack([p.values for p in peaks]).float().cpu()  # (L, B, M)
        maxes.append(vals)
        where.append(torch.stack([p.indices for p in peaks]).cpu())
        if keep:
            acts = torch.stack(posts).float().cpu()  # (L, B, W, M)
            win = torch.arange(b, b + len(batch)).view(1, -1, 1).expand_as(vals)
            if best_vals is not None:
                vals = torch.cat([best_vals, vals], 1)
                win = torch.cat([best_win, win], 1)
                acts = torch.cat([best_acts, acts], 1)
            # A stable sort breaks ties towards the earlier window, as `top_examples` does.
            top = torch.sort(vals, dim=1, descending=True, stable=True).indices[:, :keep]
            best_vals, best_win = vals.gather(1, top), win.gather(1, top)
            best_acts = acts.gather(1, top[:, :, None, :].expand(-1, -1, acts.shape[2], -1))
    maxima, argmax = torch.cat(maxes, 1).numpy(), torch.cat(where, 1).numpy()
    if not keep:
        return maxima, argmax, np.zeros((0,)), np.zeros((0,))
    # (L, k, M) -> (L, M, k); (L, k, W, M) -> (L, M, k, W)
    return maxima, argmax, best_win.permute(0, 2, 1).numpy(), best_acts.permute(0, 3, 1, 2).numpy()


@dataclass
class Example:
    window: int
    position: int
    value: float


def top_examples(
    maxima: np.ndarray, argmax: np.ndarray, layer: int, neuron: int, k: int = 8
) -> list[Example]:
    """The k windows where `neuron` of `layer` fires hardest, hardest first."""
    values = maxima[layer, :, neuron]
    order = np.argsort(-values, kind="stable")[:k]
    return [Example(int(w), int(argmax[layer, w, neuron]), float(values[w])) for w in order]


# ---- which neuron to show first ------------------------------------------------------------------

SCAN_BYTES = 64 * 2**20  # the corpus scan's neurons per batch, float32
DEAD_BELOW = 0.1  # a neuron whose activation never exceeds this on the corpus sample is "dead"...
DEAD_SHARE = 0.1  # ...and never reaches a tenth of its layer's median peak (a random model's
# neurons all peak near 0.05: weak, not dead; "dead" means silent while its layer-mates fire)
POSITION_SHARE = 0.5  # half of a neuron's best snippets peak at one position: a position effect


def dead_threshold(peaks: np.ndarray) -> float:
    """Below what peak a neuron of this layer counts as dead: min(DEAD_BELOW, DEAD_SHARE x the
    layer's median peak). peaks: (M,) each neuron's largest activation on the sample.

    >>> dead_threshold(np.array([3.0, 2.0, 0.01])), round(dead_threshold(np.full(4, 0.05)), 4)
    (0.1, 0.005)
    """
    return float(min(DEAD_BELOW, DEAD_SHARE * np.median(peaks)))


@dataclass
class NeuronRanking:
    """Every neuron of every layer, judged on the corpus sample. All arrays are (n_layer, M).

    strength: the mean of its k best window peaks (what the snippets show, not one outlier);
    position_share: the fraction of those k peaks at the same position of their window (1.0 when
    it fires on, say, the first token of every snippet: the position drives it, not the text);
    score = strength * (1 - position_share); peak: its largest activation anywhere in the sample.
    """

    strength: np.ndarray
    position_share: np.ndarray
    score: np.ndarray
    peak: np.ndarray

    @property
    def dead(self) -> np.ndarray:
        """(n_layer, M) bool: never fires above its layer's `dead_threshold` on the sample."""
        limits = np.array([dead_threshold(p) for p in self.peak])  # (n_layer,)
        return self.peak < limits[:, None]

    def best(self, layer: int) -> int:
        """The layer's neuron to open on: the highest score among the living."""
        score = np.where(self.dead[layer], -np.inf, self.score[layer])
        return int(np.argmax(score))


def rank_neurons(maxima: np.ndarray, argmax: np.ndarray, k: int = 8) -> NeuronRanking:
    """Score each neuron from its window peaks: maxima and argmax are (n_layer, N, M).

    Uses the same k windows `top_examples` shows. Worked example: a neuron peaking at 4.0 at
    positions [3, 9, 17, ...] (all different) scores 4.0 * (1 - 1/8) = 3.5; one peaking at 5.0
    at position 0 in all 8 windows scores 5.0 * (1 - 8/8) = 0.
    """
    k = min(k, maxima.shape[1])
    order = np.argsort(-maxima, axis=1, kind="stable")[:, :k]  # (L, k, M), as in top_examples
    top = np.take_along_axis(maxima, order, 1)  # (L, k, M)
    pos = np.take_along_axis(argmax, order, 1)  # (L, k, M)
    # How many of the k peaks share their position with each other peak; the largest is the mode.
    same = (pos[:, :, None, :] == pos[:, None, :, :]).sum(axis=2)  # (L, k, M)
    share = same.max(axis=1) / k  # (L, M)
    strength = top.mean(axis=1)
    return NeuronRanking(strength, share, strength * (1 - share), maxima.max(axis=1))


def neuron_activations(model: GPT, ids: np.ndarray, layer: int, neuron: int) -> np.ndarray:
    """One neuron's activation at every token of some windows: (N, W)."""
    batch = torch.as_tensor(np.atleast_2d(ids), device=model.W_E.device)
    _, cache = model.run_with_cache(batch, names=[post_name(layer)])
    post = cache[post_name(layer)]  # (N, W, M): a 2-D batch keeps its batch axis
    return post[..., neuron].float().cpu().numpy()


# ---- the value vector through the unembedding --------------------------------------------------


def output_direction_logits(model: GPT, layer: int, neuron: int) -> np.ndarray:
    """W_out[:, neuron] @ W_U: how the neuron's output direction moves each token's logit, (V,).

    Direct path only (no final LayerNorm): the lecture's key-value reading of an MLP neuron.
    """
    with torch.no_grad():
        w_out = model.blocks[layer].mlp.fc_out.weight[:, neuron]  # (D,)
        return (w_out @ model.W_U).float().cpu().numpy()


def promoted_tokens(logits: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """The k token ids the direction pushes up most (largest first) and down most (most negative first)."""
    order = np.argsort(-logits, kind="stable")
    k = min(k, len(logits))
    return order[:k], order[::-1][:k]


@dataclass
class CorpusSearch:
    """Every neuron's peak in each corpus window: maxima/argmax are (n_layer, N, M)."""

    windows: Windows
    maxima: np.ndarray
    argmax: np.ndarray
    top_windows: np.ndarray | None = None  # (n_layer, M, k): each neuron's best windows
    top_acts: np.ndarray | None = None  # (n_layer, M, k, W): its activation on them, every token

    def stored_activations(self, layer: int, neuron: int, windows: list[int]) -> np.ndarray | None:
        """The neuron's activations (len(windows), W) on these windows if the scan kept them all."""
        if self.top_windows is None:
            return None
        kept = {int(w): k for k, w in enumerate(self.top_windows[layer, neuron])}
        if not all(w in kept for w in windows):
            return None
        return self.top_acts[layer, neuron, [kept[w] for w in windows]]


def corpus_search(
    model: GPT,
    tokenizer: Tokenizer,
    text: str,
    n_windows: int = 200,
    batch_size: int = 32,
    keep: int = 8,
) -> CorpusSearch:
    """Cut `n_windows` windows of min(n_ctx, 64) tokens from `text` and record each neuron's peaks,
    keeping each neuron's activations on its `keep` best windows (so showing them needs no pass)."""
    cfg = model.cfg
    windows = corpus_windows(text, tokenizer, n_windows, min(cfg.n_ctx, 64))
    # A batch's neurons (L, B, W, M) stay under SCAN_BYTES: GPT-2 small (9.4 MB a window) scans 6
    # windows at a time, not 32, or the scan's peak stays in the server's memory as ~0.7 GB more.
    per_window = 4 * cfg.n_layer * windows.ids.shape[1] * cfg.d_mlp
    batch_size = max(1, min(batch_size, SCAN_BYTES // per_window))
    maxima, argmax, top_windows, top_acts = _scan(model, windows.ids, batch_size, keep)
    if not keep:
        return CorpusSearch(windows, maxima, argmax)
    return CorpusSearch(windows, maxima, argmax, top_windows, top_acts)


# ---- claims (docs/ARCHITECTURE.md, Claims) ------------------------------------------------------------------


def dead_neurons_claim(peaks: np.ndarray, n_windows: int, gated: bool = False) -> Claim:
    """How many of a layer's neurons are dead: their peak over the corpus sample (M,) stays below
    `dead_threshold` (0.1, and a tenth of the layer's median peak). In a gated MLP an activation
    is a product that may be as strongly negative as positive, so no neuron is called dead."""
    limit, median = dead_threshold(peaks), float(np.median(peaks))
    if gated:
        text = (
            "In a gated MLP a neuron's activation can be as strongly negative as positive, so a "
            "low positive peak does not make a neuron dead: none is called dead here."
        )
        return Claim(text, False, {"threshold": limit, "median_peak": median, "gated": 1.0})
    dead, m = int((peaks < limit).sum()), int(peaks.size)
    numbers = {"dead": dead, "neurons": m, "threshold": limit, "median_peak": median}
    numbers |= {"windows": n_windows}
    text = (
        f"**{dead} of {m}** neurons in this layer are dead: they never fire above {limit:.2g} on "
        f"the {n_windows} snippets (the layer's median neuron peaks at {median:.2f})."
    )
    return Claim(text, dead > 0, numbers)


def chance_position_share(width: int, k: int, share: float = POSITION_SHARE) -> float:
    """An upper bound on the chance that `share` of k peaks land on one of `width` positions when
    each lands anywhere at random: width x P(Binomial(k, 1/width) >= ceil(share k)).

    >>> round(chance_position_share(64, 8), 5)
    0.00025
    """
    from math import ceil, comb

    need, p = ceil(share * k), 1.0 / width
    tail = sum(comb(k, j) * p**j * (1 - p) ** (k - j) for j in range(need, k + 1))
    return min(1.0, width * tail)


def position_claim(
    positions: list[int], tokens: list[str], width: int, neuron: int, share: float = POSITION_SHARE
) -> Claim:
    """Does a neuron react to where a token sits? positions/tokens: where its k best snippets
    peak, and the token there. Claimed when at least `share` of the peaks sit at one position,
    which random positions would do with probability `chance` (< 1%), and the tokens there differ
    (the same token every time could be what drives it)."""
    k = len(positions)
    mode = max(set(positions), key=positions.count) if positions else 0
    at_mode = [t for p, t in zip(positions, tokens, strict=True) if p == mode]
    top_share = len(at_mode) / k if k else 0.0
    chance = chance_position_share(width, k, share) if k else 1.0
    distinct = len(set(at_mode))
    numbers = {"share": top_share, "position": mode, "chance": chance, "distinct_tokens": distinct}
    numbers |= {"threshold": share, "k": k, "width": width}
    if top_share < share or chance >= 0.01:
        return Claim("", False, numbers)
    lead = f"{top_share:.0%} of neuron {neuron}'s best snippets peak at the same position ({mode})"
    odds = f"(random positions would do that with probability under {max(chance, 1e-6):.0e})"
    if distinct >= 2:
        text = (
            f"{lead}, on {distinct} different tokens {odds}: it mostly reacts to where a token "
            "sits, not to what it is."
        )
        return Claim(text, True, numbers)
    text = (
        f"{lead}, always on the same token `{at_mode[0]}`: these snippets cannot tell whether "
        "the position or the token drives it."
    )
    return Claim(text, False, numbers)
