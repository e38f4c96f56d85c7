"""Attention: every head's pattern on a prompt, what each head is for, and one row's arithmetic.

- `attention_run(model, ids)` runs the model once and keeps, as numpy, what the attention page
  draws: patterns, scores, per-head q/k/v/z and each head's write into the residual.
- `head_scores(patterns, ids, causal)` measures every head's role on that prompt: previous-token,
  first-token sink, self, induction, "looks k back" (any fixed offset; "k ahead" too without a
  causal mask), the pattern's entropy, and what each score would be by chance (even attention;
  for induction also a shuffled-token control). analysis/head_roles.py turns them into claims.
- `query_arithmetic(q, k, v, W_O, query, causal)` redoes one query row by hand, step by step:
  pattern = softmax(q k^T / sqrt(d_head) + mask), z = pattern @ v, result = z @ W_O, with the
  model's mask (viz_model/model/mask.py).
- `induction_test(tokenizer, meta, n_ctx)` says which tokens the standard induction test draws
  from (ordinary text, never <unk>, line breaks or special tokens) and how long a copy the model
  was trained on; `repeated_random_tokens(token_ids, length, seed)` draws that input.

Not here: charts (charts/attention.py) and anything streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import torch

from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT
from viz_model.model.mask import attention_mask, is_causal
from viz_model.model.positions import alibi_bias
from viz_model.text.data import repeat_copy_lengths
from viz_model.text.tokenization import Tokenizer

ROLES = ("previous-token", "induction", "first-token sink", "self")
DEFAULT_COPY_LENGTH = 40  # tokens per copy in the induction test when training says nothing


# ---- one forward pass, kept as numpy --------------------------------------------------------


@dataclass(frozen=True)
class AttentionRun:
    """What one forward pass recorded in every attention layer (L layers, H heads, T tokens).

    pattern, scores: (L, H, T, T), queries down and keys across; masked scores are -inf.
    q, k, v, z: (L, T, H, E), per query head: q and k as they meet in the dot product (after
    RoPE's rotation when the model has it: `rotated`), k and v of a head's key-value head under
    grouped-query attention; result: (L, T, H, D), each head's write into the residual;
    W_O: (L, H, E, D), each head's slice of the output matrix; causal: the model's mask;
    position_bias: (H, T, T), what ALiBi adds to each head's scores (None without ALiBi).
    """

    pattern: np.ndarray
    scores: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    z: np.ndarray
    result: np.ndarray
    W_O: np.ndarray
    causal: bool = True
    rotated: bool = False
    position_bias: np.ndarray | None = None


def head_W_O(model: GPT, layer: int) -> torch.Tensor:
    """(H, E, D): head h writes z_h @ W_O[h] into the residual (the output bias is shared)."""
    cfg = model.cfg
    w = model.blocks[layer].attn.out.weight  # (D, H*E), out = z_flat @ w.T
    return w.view(cfg.d_model, cfg.n_head, cfg.d_head).permute(1, 2, 0)


def attention_run(model: GPT, ids: list[int] | torch.Tensor) -> AttentionRun:
    """Run the model once on one sequence and keep every attention layer's internals as numpy."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    cfg = model.cfg
    L, rotated = cfg.n_layer, cfg.pos == "rope"
    q_name, k_name = ("hook_rot_q", "hook_rot_k") if rotated else ("hook_q", "hook_k")
    parts = ("hook_pattern", "hook_attn_scores", q_name, k_name, "hook_v", "hook_z")
    parts += ("hook_result",)
    names = [f"blocks.{layer}.attn.{p}" for layer in range(L) for p in parts]
    _, cache = model.run_with_cache(ids, names=names)

    def stack(part: str) -> np.ndarray:
        return np.stack([cache.numpy(f"blocks.{layer}.attn.{part}") for layer in range(L)])

    def per_head(part: str) -> np.ndarray:  # (L, T, H_kv, E) -> (L, T, H, E)
        return np.repeat(stack(part), cfg.n_head // cfg.n_kv_heads, axis=2)

    with torch.no_grad():
        W_O = np.stack([head_W_O(model, layer).float().cpu().numpy() for layer in range(L)])
    bias = None
    if cfg.pos == "alibi":
        bias = alibi_bias(cfg.n_head, len(ids), 0, cfg.causal).numpy()
    return AttentionRun(
        pattern=stack("hook_pattern"),
        scores=stack("hook_attn_scores"),
        q=stack(q_name),
        k=per_head(k_name),
        v=per_head("hook_v"),
        z=stack("hook_z"),
        result=stack("hook_result"),
        W_O=W_O,
        causal=cfg.causal,
        rotated=rotated,
        position_bias=bias,
    )


# ---- head roles: scores and what each would be by chance ---------------------------------------


def induction_targets(
    ids: list[int] | np.ndarray, ignore: Iterable[int] = (), trivial: bool = True
) -> np.ndarray:
    """(T, T) bool: target[t, s + 1] is True when token s (s < t) is an earlier copy of token t.

    An induction head at query t attends to the token that followed an earlier occurrence of
    the current token. Example: ids = [5, 6, 5] -> target[2, 1] (the 6 after the first 5).
    ignore: tokens that stand for no text (<unk>, special tokens) are never queries.
    trivial=False drops the targets a simpler head hits anyway: t itself (a token repeated at
    once, "ll") and t-1 (a copy two back, "O.O"), which a self or previous-token head scores.
    ids may be a batch (..., T); the result is then (..., T, T).
    """
    ids = np.asarray(ids)
    T = ids.shape[-1]
    earlier_copy = (ids[..., :, None] == ids[..., None, :]) & np.tri(T, T, -1, dtype=bool)
    target = np.zeros(earlier_copy.shape, dtype=bool)  # [t, s]: s < t, same token
    target[..., :, 1:] = earlier_copy[..., :, :-1]  # key s + 1 for each earlier copy s
    target &= ~np.isin(ids, list(ignore))[..., :, None]
    if not trivial:
        target &= np.tri(T, T, -2, dtype=bool)  # keys s + 1 <= t - 2 only
    return target


@dataclass(frozen=True)
class HeadScores:
    """Each score is (L, H). Scores are means over query rows 1..T-1 (row 0 can only see itself).

    previous_token: attention to position t-1; first_token: attention to position 0;
    self_: attention to the diagonal; induction: attention to induction targets (see
    `induction_targets`, trivial ones dropped), averaged over the queries that have one (NaN when
    none); entropy: nats per row; looks_back: (L, H, T), looks_back[..., k] is the attention to
    position t-k (see `looks_back_scores`); even_entropy: the entropy of attending equally to
    every visible key.

    What each score would be by chance, for the claims (analysis/head_roles.py):
    chance: role -> (L, H). For previous-token, first-token sink and self, even attention: each
    query spreads its weight equally over the keys it may read. For induction, the higher of
    even attention and the shuffled-token control: the same head's attention scored against
    the targets of the prompt's tokens in a shuffled order (mean of N_SHUFFLES), so a head that
    attends by position, or to frequent tokens, gets the same score there.
    eligible: role -> how many query positions the score averages over.
    looks_back_chance, looks_back_eligible (T,): the same for each offset k back;
    looks_ahead, looks_ahead_chance, looks_ahead_eligible: k after (k >= 1), only for a model
    without a causal mask (None otherwise). causal: the model's mask.
    """

    previous_token: np.ndarray
    first_token: np.ndarray
    self_: np.ndarray
    induction: np.ndarray
    entropy: np.ndarray
    n_induction_queries: int
    looks_back: np.ndarray
    even_entropy: float
    chance: dict[str, np.ndarray] = field(default_factory=dict)
    eligible: dict[str, int] = field(default_factory=dict)
    looks_back_chance: np.ndarray | None = None
    looks_back_eligible: np.ndarray | None = None
    looks_ahead: np.ndarray | None = None
    looks_ahead_chance: np.ndarray | None = None
    looks_ahead_eligible: np.ndarray | None = None
    causal: bool = True

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
        return _best_offset(self.looks_back, first=2)

    def fixed_offset_ahead(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, score), each (L, H): the offset k >= 1 each head looks ahead most (no causal mask
        only: k is 0 and the score NaN for a causal model, which cannot look ahead)."""
        if self.looks_ahead is None:
            nan = np.full(self.previous_token.shape, np.nan)
            return np.zeros(nan.shape, dtype=int), nan
        return _best_offset(self.looks_ahead, first=1)


def _best_offset(by_offset: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    far = by_offset[..., first:]  # (L, H, T - first)
    if far.shape[-1] == 0 or np.isnan(far).all():
        return np.zeros(far.shape[:2], dtype=int), np.full(far.shape[:2], np.nan)
    filled = np.where(np.isnan(far), -np.inf, far)
    k = filled.argmax(-1)
    return k + first, np.take_along_axis(far, k[..., None], -1)[..., 0]


def pattern_entropy(pattern: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of a pattern (..., T, T): -sum p log p, with 0 log 0 = 0."""
    p = np.asarray(pattern, dtype=np.float64)
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(-1)


def _offset_rows(T: int, k: int) -> np.ndarray:
    """Query rows t >= 1 that have a key k back (k < 0: -k ahead), as indices."""
    t = np.arange(1, T)
    return t[(t - k >= 0) & (t - k < T)]


def looks_back_scores(patterns: np.ndarray, ahead: bool = False) -> np.ndarray:
    """(..., T): score[..., k] = mean attention from query t to key t-k, over queries t >= max(k, 1).

    k = 0 is "self" and k = 1 "previous-token". Offsets that fewer than half of the queries
    1..T-1 can reach are NaN (k > (T+1)//2): one lucky row would otherwise score 1.
    ahead=True measures key t+k instead (k >= 1; a model without a causal mask), over the
    queries 1..T-1-k. Example: a head that always looks 2 back scores 1 at k = 2, 0 elsewhere.
    """
    T = patterns.shape[-1]
    out = np.full(patterns.shape[:-1], np.nan)
    for k in range(1 if ahead else 0, min(T, (T + 1) // 2 + 1)):
        rows = _offset_rows(T, -k if ahead else k)
        if len(rows):
            out[..., k] = patterns[..., rows, rows + (k if ahead else -k)].mean(-1)
    return out


def _offset_chance(visible: np.ndarray, ahead: bool) -> tuple[np.ndarray, np.ndarray]:
    """(chance, eligible), each (T,): even attention's score at each offset, and its rows."""
    T = len(visible)
    per_row = 1.0 / visible.sum(-1)
    chance, eligible = np.full(T, np.nan), np.zeros(T, dtype=int)
    for k in range(1 if ahead else 0, T):
        rows = _offset_rows(T, -k if ahead else k)
        if len(rows):
            chance[k], eligible[k] = per_row[rows].mean(), len(rows)
    return chance, eligible


def _on_targets(patterns: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, int]:
    """Mean attention on target keys over the queries that have one, and how many do."""
    rows = target.any(-1)
    if not rows.any():
        return np.full(patterns.shape[:2], np.nan), 0
    on = np.einsum("lhts,ts->lht", patterns[..., rows, :], target[rows].astype(patterns.dtype))
    return on.mean(-1), int(rows.sum())


N_SHUFFLES = 20  # shuffled-token controls for the induction score's chance


def induction_chance(
    patterns: np.ndarray,
    ids: np.ndarray,
    visible: np.ndarray,
    ignore: Iterable[int] = (),
    shuffles: int = N_SHUFFLES,
    seed: int = 0,
) -> np.ndarray:
    """(L, H): what each head's induction score would be by chance: the higher of even attention
    on the same targets and the shuffled-token control (the same attention scored against the
    targets of the same tokens in a shuffled order, mean over `shuffles` seeded shuffles)."""
    target = induction_targets(ids, ignore, trivial=False)
    rows = target.any(-1)
    if not rows.any():
        return np.full(patterns.shape[:2], np.nan)
    even = float((target.sum(-1) / visible.sum(-1))[rows].mean())
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(ids) for _ in range(shuffles)]) if shuffles else None
    shuffled = np.zeros(patterns.shape[:2])
    if orders is not None:
        targets = induction_targets(orders, ignore, trivial=False)  # (S, T, T)
        rows = targets.any(-1)  # (S, T): the queries with a target in each shuffle
        on = np.einsum("lhts,nts->nlht", patterns, targets.astype(patterns.dtype))
        counts = rows.sum(-1)
        scored = counts > 0
        if scored.any():
            mean = (on * rows[:, None, None, :]).sum(-1) / np.maximum(counts, 1)[:, None, None]
            shuffled = mean[scored].mean(0)
    return np.maximum(shuffled, even)


def head_scores(
    patterns: np.ndarray,
    ids: list[int] | np.ndarray,
    causal: GPTConfig | bool = True,
    ignore: Iterable[int] = (),
    shuffles: int = N_SHUFFLES,
) -> HeadScores:
    """Role scores for every head from a pattern stack (L, H, T, T) on the prompt ids (T,), and
    what each would be by chance. causal: the model's config (or its `causal` flag); ignore:
    tokens that stand for no text (<unk>, special tokens), never counted as induction queries."""
    patterns = np.asarray(patterns, dtype=np.float64)
    ids = np.asarray(ids)
    T = patterns.shape[-1]
    causal = is_causal(causal)
    if T < 2:
        nan = np.full(patterns.shape[:2], np.nan)
        back = np.full((*nan.shape, T), np.nan)
        chance = {role: nan for role in ROLES}
        return HeadScores(
            nan,
            nan,
            nan,
            nan,
            nan,
            0,
            back,
            math.nan,
            chance,
            dict.fromkeys(ROLES, 0),
            causal=causal,
        )
    visible = attention_mask(causal, T)
    per_row = 1.0 / visible.sum(-1)  # even attention's weight on any one visible key
    back = looks_back_scores(patterns)  # (L, H, T)
    first = patterns[..., 1:, 0].mean(-1)
    entropy = pattern_entropy(patterns)[..., 1:].mean(-1)
    even = float(np.log(visible.sum(-1)[1:]).mean())  # row t spread over its n keys: ln n
    induction, n_copies = _on_targets(patterns, induction_targets(ids, ignore, trivial=False))
    back_chance, back_eligible = _offset_chance(visible, ahead=False)
    row_chance = float(per_row[1:].mean())
    shape = patterns.shape[:2]
    chance = {
        "previous-token": np.full(shape, back_chance[1]),
        "first-token sink": np.full(shape, row_chance),
        "self": np.full(shape, back_chance[0]),
        "induction": induction_chance(patterns, ids, visible, ignore, shuffles),
    }
    eligible = {"previous-token": T - 1, "first-token sink": T - 1, "self": T - 1}
    eligible["induction"] = n_copies
    ahead = ahead_chance = ahead_eligible = None
    if not causal:
        ahead = looks_back_scores(patterns, ahead=True)
        ahead_chance, ahead_eligible = _offset_chance(visible, ahead=True)
    return HeadScores(
        previous_token=back[..., 1],
        first_token=first,
        self_=back[..., 0],
        induction=induction,
        entropy=entropy,
        n_induction_queries=n_copies,
        looks_back=back,
        even_entropy=even,
        chance=chance,
        eligible=eligible,
        looks_back_chance=back_chance,
        looks_back_eligible=back_eligible,
        looks_ahead=ahead,
        looks_ahead_chance=ahead_chance,
        looks_ahead_eligible=ahead_eligible,
        causal=causal,
    )


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
    characters its tokenizer was trained on (a fine-tune's: its base's text, not its own); bpe and json: whole words, a space then letters (" the");
    word: words made of letters. Falls back to every non-special token when none qualify.
    """
    special = tokenizer.special_ids
    shown = {i: tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size) if i not in special}
    if tokenizer.kind == "char":
        ok = [i for i, s in shown.items() if len(s) == 1 and s.isprintable()]
        what = f"{len(ok)} characters of its vocabulary ({_char_kinds(shown[i] for i in ok)})"
    elif tokenizer.kind == "word":
        ok = [i for i, s in shown.items() if s.isalpha()]
        what = f"{len(ok)} words of letters, e.g. " + ", ".join(shown[i] for i in ok[:5])
    else:
        ok = [i for i, s in shown.items() if s[:1] == " " and s[1:].isalpha()]
        examples = ", ".join(
            f"“␣{shown[i][1:]}”" for i in ok[:5]
        )  # a space as ␣, as labels show it
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

    q (E,), k (T, E), v (T, E); dots = k @ q (T,); scaled = dots / sqrt(E) (+ bias, ALiBi's
    penalty for each key, when the model has it); visible (T,) bool,
    True for the keys the query may read (at or before it in a causal model, all without the
    mask); masked = scaled with -inf where hidden;
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
    bias: np.ndarray | None = None

    @property
    def d_head(self) -> int:
        return self.q.shape[-1]


def query_arithmetic(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    W_O: np.ndarray,
    query: int,
    causal: GPTConfig | bool,
    bias: np.ndarray | None = None,
) -> QueryArithmetic:
    """Recompute one head's attention for one query from its q, k, v (T, E each) and W_O (E, D),
    under the model's mask (`causal`: its config or its flag; without a mask every key counts);
    `bias` (T,): what the model adds to this query's scores (ALiBi), None for nothing.

    Done in float64 with plain numpy, so a student can compare it with what the model recorded.
    """
    q64, k64, v64, w64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v, W_O))
    T, E = k64.shape
    if not 0 <= query < T:
        raise IndexError(f"query {query} is outside 0..{T - 1}")
    q_row = q64[query]
    dots = k64 @ q_row
    scaled = dots / math.sqrt(E) + (0.0 if bias is None else np.asarray(bias, dtype=np.float64))
    visible = attention_mask(causal, T)[query]
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
        bias=None if bias is None else np.asarray(bias, dtype=np.float64),
    )


def run_query_arithmetic(run: AttentionRun, layer: int, head: int, query: int) -> QueryArithmetic:
    """query_arithmetic for one head of an AttentionRun."""
    return query_arithmetic(
        run.q[layer, :, head],
        run.k[layer, :, head],
        run.v[layer, :, head],
        run.W_O[layer, head],
        query,
        run.causal,
        None if run.position_bias is None else run.position_bias[head, query],
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
