"""Attention: every head's pattern on a prompt, what each head is for, and one row's arithmetic.

- `attention_run(model, ids)` runs the model once and keeps, as numpy, what the attention page
  draws: patterns, scores, per-head q/k/v/z and each head's write into the residual.
- `head_scores(patterns, ids)` measures every head's role on that prompt: previous-token,
  first-token sink, self, induction, "looks k back" (any fixed offset), and the pattern's entropy;
  `head_roles` names each head, and calls a head with no role "mixed" only when it is spread.
- `query_arithmetic(q, k, v, W_O, query)` redoes one query row by hand, step by step:
  pattern = softmax(q k^T / sqrt(d_head) + mask), z = pattern @ v, result = z @ W_O.
- `induction_test(tokenizer, meta, n_ctx)` says which tokens the standard induction test draws
  from (ordinary text, never <unk>, line breaks or special tokens) and how long a copy the model
  was trained on; `repeated_random_tokens(token_ids, length, seed)` draws that input.

Not here: charts (charts/attention.py) and anything streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.data import repeat_copy_lengths
from viz_model.model import GPT
from viz_model.tokenization import Tokenizer

ROLES = ("previous-token", "induction", "first-token sink", "self")
ROLE_THRESHOLD = 0.4
# A head with no role is "mixed" when its entropy is over this share of even attention's (the
# entropy of attending equally to every visible token), else "sharp, other".
SPREAD_FRACTION = 0.5
DEFAULT_COPY_LENGTH = 40  # tokens per copy in the induction test when training says nothing

# One sentence per role, for the page's table.
ROLE_EXPLANATIONS = {
    "previous-token": "Each token looks mostly at the token just before it (position t-1).",
    "induction": (
        "A token looks at whatever followed an earlier copy of itself, so the model can continue a "
        "pattern it has seen before ('A B ... A' -> look at B)."
    ),
    "first-token sink": (
        "Attention piles up on position 0, a resting place when the head has nothing useful to do."
    ),
    "self": "Each token looks mostly at itself.",
    "looks k back": (
        "Each token looks mostly at the token k positions before it (k = 2 or more): a fixed "
        "offset, whatever the tokens are. (k = 1 is previous-token, k = 0 is self.)"
    ),
    "sharp, other": (
        f"No role or offset scores above {ROLE_THRESHOLD}, yet the attention is sharp (entropy "
        f"under {SPREAD_FRACTION:.0%} of even attention's): the head picks a few tokens by some "
        "rule not named here. Look at its pattern."
    ),
    "mixed": (
        f"No role or offset scores above {ROLE_THRESHOLD} and the attention is spread (entropy at "
        f"least {SPREAD_FRACTION:.0%} of even attention's): the head blends many tokens."
    ),
}


# ---- one forward pass, kept as numpy --------------------------------------------------------


@dataclass(frozen=True)
class AttentionRun:
    """What one forward pass recorded in every attention layer (L layers, H heads, T tokens).

    pattern, scores: (L, H, T, T), queries down and keys across; masked scores are -inf.
    q, k, v, z: (L, T, H, E); result: (L, T, H, D), each head's write into the residual;
    W_O: (L, H, E, D), each head's slice of the output matrix.
    """

    pattern: np.ndarray
    scores: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    z: np.ndarray
    result: np.ndarray
    W_O: np.ndarray


def head_W_O(model: GPT, layer: int) -> torch.Tensor:
    """(H, E, D): head h writes z_h @ W_O[h] into the residual (the output bias is shared)."""
    cfg = model.cfg
    w = model.blocks[layer].attn.out.weight  # (D, H*E), out = z_flat @ w.T
    return w.view(cfg.d_model, cfg.n_head, cfg.d_head).permute(1, 2, 0)


def attention_run(model: GPT, ids: list[int] | torch.Tensor) -> AttentionRun:
    """Run the model once on one sequence and keep every attention layer's internals as numpy."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    L = model.cfg.n_layer
    parts = ("hook_pattern", "hook_attn_scores", "hook_q", "hook_k", "hook_v", "hook_z")
    parts += ("hook_result",)
    names = [f"blocks.{layer}.attn.{p}" for layer in range(L) for p in parts]
    _, cache = model.run_with_cache(ids, names=names)

    def stack(part: str) -> np.ndarray:
        return np.stack([cache.numpy(f"blocks.{layer}.attn.{part}") for layer in range(L)])

    with torch.no_grad():
        W_O = np.stack([head_W_O(model, layer).float().cpu().numpy() for layer in range(L)])
    return AttentionRun(
        pattern=stack("hook_pattern"),
        scores=stack("hook_attn_scores"),
        q=stack("hook_q"),
        k=stack("hook_k"),
        v=stack("hook_v"),
        z=stack("hook_z"),
        result=stack("hook_result"),
        W_O=W_O,
    )


# ---- head roles ---------------------------------------------------------------------------


def induction_targets(ids: list[int] | np.ndarray) -> np.ndarray:
    """(T, T) bool: target[t, s + 1] is True when token s (s < t) is an earlier copy of token t.

    An induction head at query t attends to the token that followed an earlier occurrence of
    the current token. Example: ids = [5, 6, 5] -> target[2, 1] (the 6 after the first 5).
    """
    ids = np.asarray(ids)
    earlier_copy = np.tril(ids[:, None] == ids[None, :], k=-1)  # [t, s]: s < t, same token
    target = np.zeros((len(ids), len(ids)), dtype=bool)
    target[:, 1:] = earlier_copy[:, :-1]  # key s + 1 for each earlier copy s (s + 1 <= t)
    return target


@dataclass(frozen=True)
class HeadScores:
    """Each score is (L, H). Scores are means over query rows 1..T-1 (row 0 can only see itself).

    previous_token: attention to position t-1; first_token: attention to position 0;
    self_: attention to the diagonal; induction: attention to induction targets, averaged over
    the queries that have an earlier copy (NaN when no token repeats); entropy: nats per row;
    looks_back: (L, H, T), looks_back[..., k] is the attention to position t-k (see
    `looks_back_scores`); even_entropy: the entropy of attending equally to every visible key.
    """

    previous_token: np.ndarray
    first_token: np.ndarray
    self_: np.ndarray
    induction: np.ndarray
    entropy: np.ndarray
    n_induction_queries: int
    looks_back: np.ndarray
    even_entropy: float

    def by_role(self) -> dict[str, np.ndarray]:
        return {
            "previous-token": self.previous_token,
            "induction": self.induction,
            "first-token sink": self.first_token,
            "self": self.self_,
        }

    def fixed_offset(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, score), each (L, H): the offset k >= 2 each head looks back most, and its score.

        k is 0 and the score NaN where the prompt is too short to look 2 back.
        """
        far = self.looks_back[..., 2:]  # (L, H, T-2)
        if far.shape[-1] == 0 or np.isnan(far).all():
            return np.zeros(far.shape[:2], dtype=int), np.full(far.shape[:2], np.nan)
        filled = np.where(np.isnan(far), -np.inf, far)
        k = filled.argmax(-1)
        return k + 2, np.take_along_axis(far, k[..., None], -1)[..., 0]


def pattern_entropy(pattern: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of a pattern (..., T, T): -sum p log p, with 0 log 0 = 0."""
    p = np.asarray(pattern, dtype=np.float64)
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(-1)


def looks_back_scores(patterns: np.ndarray) -> np.ndarray:
    """(..., T): score[..., k] = mean attention from query t to key t-k, over queries t >= max(k, 1).

    k = 0 is "self" and k = 1 "previous-token". Offsets that fewer than half of the queries
    1..T-1 can reach are NaN (k > (T+1)//2): one lucky row would otherwise score 1.
    Example: a head that always looks 2 back scores 1 at k = 2 and 0 elsewhere.
    """
    T = patterns.shape[-1]
    out = np.full(patterns.shape[:-1], np.nan)
    for k in range(min(T, (T + 1) // 2 + 1)):
        diagonal = np.diagonal(patterns, offset=-k, axis1=-2, axis2=-1)  # (..., T-k), t = k..T-1
        out[..., k] = diagonal[..., 1:].mean(-1) if k == 0 else diagonal.mean(-1)
    return out


def head_scores(patterns: np.ndarray, ids: list[int] | np.ndarray) -> HeadScores:
    """Role scores for every head from a pattern stack (L, H, T, T) on the prompt ids (T,)."""
    patterns = np.asarray(patterns, dtype=np.float64)
    T = patterns.shape[-1]
    if T < 2:
        nan = np.full(patterns.shape[:2], np.nan)
        return HeadScores(nan, nan, nan, nan, nan, 0, np.full((*nan.shape, T), np.nan), math.nan)
    back = looks_back_scores(patterns)  # (L, H, T)
    first = patterns[..., 1:, 0].mean(-1)
    entropy = pattern_entropy(patterns)[..., 1:].mean(-1)
    even = float(np.log(np.arange(2, T + 1)).mean())  # row t spread over t+1 keys: ln(t+1)
    target = induction_targets(ids)
    has_copy = target.any(-1)
    if has_copy.any():
        on_target = (patterns * target).sum(-1)  # (L, H, T)
        induction = on_target[..., has_copy].mean(-1)
    else:
        induction = np.full(patterns.shape[:2], np.nan)
    n_copies = int(has_copy.sum())
    return HeadScores(back[..., 1], first, back[..., 0], induction, entropy, n_copies, back, even)


def head_role(
    named: dict[str, float], offset: tuple[int, float], spread: float, threshold: float
) -> tuple[str, float]:
    """(role, its score) for one head: a named role, else a fixed offset, else sharp or mixed.

    Named roles come first: on a repeated prompt an induction head also looks a fixed distance
    back (to the copy), and "induction" is the better explanation. The price: the first k rows
    of a looks-k-back head must rest somewhere, often on position 0, so on a prompt not much
    longer than 2k it can score as a first-token sink. spread is entropy / even attention's
    entropy; "sharp, other" and "mixed" have no score (NaN).
    """
    finite = {r: s for r, s in named.items() if not math.isnan(s)}
    best = max(finite, key=finite.get) if finite else None
    if best is not None and finite[best] > threshold:
        return best, finite[best]
    k, score = offset
    if not math.isnan(score) and score > threshold:
        return f"looks {k} back", score
    if spread < SPREAD_FRACTION:
        return "sharp, other", math.nan
    return "mixed", math.nan


def head_roles(scores: HeadScores, threshold: float = ROLE_THRESHOLD) -> list[dict]:
    """One row per head: its role (see `head_role`), every role score and the best offset k >= 2."""
    by_role = scores.by_role()
    offset_k, offset = scores.fixed_offset()
    L, H = scores.previous_token.shape
    rows = []
    for layer in range(L):
        for head in range(H):
            values = {role: float(by_role[role][layer, head]) for role in ROLES}
            far = (int(offset_k[layer, head]), float(offset[layer, head]))
            entropy = float(scores.entropy[layer, head])
            spread = entropy / scores.even_entropy if scores.even_entropy > 0 else math.nan
            role, score = head_role(values, far, spread, threshold)
            rows.append(
                {
                    "head": f"L{layer} H{head}",
                    "layer": layer,
                    "index": head,
                    "role": role,
                    "role score": score,
                    **values,
                    "k back": far[0],
                    "k-back score": far[1],
                    "entropy (nats)": entropy,
                }
            )
    return rows


# ---- the induction test: repeated random tokens ----------------------------------------------


@dataclass(frozen=True)
class InductionTest:
    """What the repeated-random induction test draws from, and how long its copies may be.

    token_ids (N,): the ordinary tokens a block is drawn from; drawn_from: which, in words;
    trained_copy: (shortest, longest) copy the model was trained on, or None when its training
    text says nothing (a corpus); default_length, max_length: tokens in each copy.
    """

    token_ids: np.ndarray
    drawn_from: str
    trained_copy: tuple[int, int] | None
    default_length: int
    max_length: int


def _has_line_break(text: str) -> bool:
    return text.splitlines() != [text]


def _char_kinds(chars) -> str:
    """What a set of characters holds, in words: "a-z" when that is all, else the kinds present."""
    chars = "".join(sorted(chars))
    if chars == "abcdefghijklmnopqrstuvwxyz":
        return "the letters a-z"
    kinds = {
        "letters": any(c.isalpha() for c in chars),
        "digits": any(c.isdigit() for c in chars),
        "punctuation": any(not c.isalnum() and c != " " for c in chars),
        "the space": " " in chars,
    }
    return ", ".join(k for k, present in kinds.items() if present)


def ordinary_tokens(tokenizer: Tokenizer) -> tuple[np.ndarray, str]:
    """(ids, description): tokens the model reads as ordinary text, for random test input.

    Never <unk>, special tokens or line breaks (the break separates training examples, so a
    model may reset at one). char: the printable characters of the vocabulary, which are the
    characters of its training text; bpe and json: whole words, a space then letters (" the");
    word: words made of letters. Falls back to every non-special token when none qualify.
    """
    special = tokenizer.special_ids
    shown = {i: tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size) if i not in special}
    if tokenizer.kind == "char":
        ok = [i for i, s in shown.items() if len(s) == 1 and s.isprintable()]
        what = f"{len(ok)} characters of its training text ({_char_kinds(shown[i] for i in ok)})"
    elif tokenizer.kind == "word":
        ok = [i for i, s in shown.items() if s.isalpha()]
        what = f"{len(ok)} words of letters, e.g. " + ", ".join(shown[i] for i in ok[:5])
    else:
        ok = [i for i, s in shown.items() if s[:1] == " " and s[1:].isalpha()]
        examples = ", ".join(f"'{shown[i]}'" for i in ok[:5])
        what = f"{len(ok)} whole-word tokens (a space, then letters), e.g. {examples}"
    if len(ok) < 2:
        ok = [i for i, s in shown.items() if not _has_line_break(s)] or list(shown)
        what = f"all {len(ok)} tokens but <unk>, special tokens and line breaks"
    return np.array(ok, dtype=np.int64), what


def trained_copy_lengths(meta: dict) -> tuple[int, int] | None:
    """(shortest, longest) copy in the training text of a "repeat"-task bundle, else None."""
    data = meta.get("data") or {}
    if data.get("task") != "repeat" or not isinstance(data.get("task_len"), int):
        return None
    return repeat_copy_lengths(data["task_len"])


def induction_test(tokenizer: Tokenizer, meta: dict, n_ctx: int, repeats: int = 2) -> InductionTest:
    """The induction test for one bundle: ordinary tokens, copies as long as in training.

    A repeat-task model saw copies of a known range of lengths; the default is the longest, so
    the test asks what it was trained for (longer copies test generalisation). Any model sees at
    most n_ctx tokens, so a copy is at most n_ctx // repeats long.
    """
    ids, what = ordinary_tokens(tokenizer)
    longest = max(2, n_ctx // repeats)
    trained = trained_copy_lengths(meta)
    default = trained[1] if trained else DEFAULT_COPY_LENGTH
    return InductionTest(ids, what, trained, max(2, min(default, longest)), longest)


def repeated_random_tokens(
    token_ids: np.ndarray | list[int], length: int, seed: int = 0, repeats: int = 2
) -> np.ndarray:
    """`length` tokens drawn uniformly (with replacement) from token_ids, then the block repeated.

    The standard test for induction heads: in the second copy every token has an earlier copy
    whose successor is known, so a head that copies patterns lights up on the offset diagonal.
    Returns (length * repeats,) int64.
    """
    rng = np.random.default_rng(seed)
    block = rng.choice(np.asarray(token_ids, dtype=np.int64), size=length)
    return np.tile(block, repeats).astype(np.int64)


# ---- one query row, by hand -----------------------------------------------------------------


@dataclass(frozen=True)
class QueryArithmetic:
    """Every step of one head's attention for one query token, as arrays (T keys, E = d_head).

    q (E,), k (T, E), v (T, E); dots = k @ q (T,); scaled = dots / sqrt(E); visible (T,) bool,
    True for keys at or before the query; masked = scaled with -inf where hidden;
    pattern = softmax(masked) (T,); weighted_v = pattern[:, None] * v (T, E);
    z = weighted_v.sum(0) (E,); W_O (E, D); result = z @ W_O (D,).
    """

    query: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dots: np.ndarray
    scaled: np.ndarray
    visible: np.ndarray
    masked: np.ndarray
    pattern: np.ndarray
    weighted_v: np.ndarray
    z: np.ndarray
    W_O: np.ndarray
    result: np.ndarray

    @property
    def d_head(self) -> int:
        return self.q.shape[-1]


def query_arithmetic(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, W_O: np.ndarray, query: int
) -> QueryArithmetic:
    """Recompute one head's attention for one query from its q, k, v (T, E each) and W_O (E, D).

    Done in float64 with plain numpy, so a student can compare it with what the model recorded.
    """
    q64, k64, v64, w64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v, W_O))
    T, E = k64.shape
    if not 0 <= query < T:
        raise IndexError(f"query {query} is outside 0..{T - 1}")
    q_row = q64[query]
    dots = k64 @ q_row
    scaled = dots / math.sqrt(E)
    visible = np.arange(T) <= query
    masked = np.where(visible, scaled, -np.inf)
    shifted = np.exp(masked - masked[visible].max())
    pattern = shifted / shifted.sum()
    weighted_v = pattern[:, None] * v64
    z = weighted_v.sum(0)
    return QueryArithmetic(
        query=query,
        q=q_row,
        k=k64,
        v=v64,
        dots=dots,
        scaled=scaled,
        visible=visible,
        masked=masked,
        pattern=pattern,
        weighted_v=weighted_v,
        z=z,
        W_O=w64,
        result=z @ w64,
    )


def run_query_arithmetic(run: AttentionRun, layer: int, head: int, query: int) -> QueryArithmetic:
    """query_arithmetic for one head of an AttentionRun."""
    return query_arithmetic(
        run.q[layer, :, head],
        run.k[layer, :, head],
        run.v[layer, :, head],
        run.W_O[layer, head],
        query,
    )


def recorded_differences(
    arith: QueryArithmetic, run: AttentionRun, layer: int, head: int
) -> dict[str, float]:
    """Largest absolute difference between each recomputed step and what the model recorded."""
    t = arith.query
    visible = arith.visible
    return {
        "hook_attn_scores": float(
            np.abs(arith.scaled[visible] - run.scores[layer, head, t][visible]).max()
        ),
        "hook_pattern": float(np.abs(arith.pattern - run.pattern[layer, head, t]).max()),
        "hook_z": float(np.abs(arith.z - run.z[layer, t, head]).max()),
        "hook_result": float(np.abs(arith.result - run.result[layer, t, head]).max()),
    }
