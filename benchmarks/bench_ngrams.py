"""N-gram counts and the corpus index on the bundled corpus, for each bundled tokenizer.

    python -m benchmarks.bench_ngrams

Targets (the N-grams issue): counting n <= 6 (and the index) over the 1 MB corpus under 2 s once
per corpus and tokenizer; a look-up under 10 ms; memory stated. Encoding the text with the
tokenizer is measured apart: it is the tokenizer's cost, paid by training too.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc

import numpy as np

from benchmarks.common import emit
from viz_model.analysis import ngrams as ng
from viz_model.bundles.load import load_bundle
from viz_model.text.data import ASSETS_DIR, load_corpus

MODELS = ("shakespeare-char", "shakespeare-bpe")
CONTEXTS = ("my lord", "the ", "ROMEO", "To be, or not", "zqzqzq", "\n\nHam.\n")
ROUNDS = 3


def _ms(fn, repeats: int = 20) -> float:
    """Median milliseconds of one call over `repeats` calls."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def bench(name: str, text: str) -> dict:
    tok = load_bundle(ASSETS_DIR / "models" / name).tokenizer
    builds = [ng.token_models(text, tok) for _ in range(ROUNDS)]
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    models = ng.token_models(text, tok)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    lookups = {}
    for context in CONTEXTS:
        ids = tok.encode(context)
        lookups[repr(context)] = {
            "tokens": len(ids),
            "count_table_ms": round(_ms(lambda ids=ids: ng.count_table(models, ids[-4:])), 3),
            "kneser_ney_ms": round(_ms(lambda ids=ids: models.kn_distribution(ids[-4:], 5)), 3),
            "snippets_ms": round(_ms(lambda ids=ids: ng.snippets(models, tok, ids[-4:])), 3),
        }
    rng = np.random.default_rng(0)
    start = int(rng.integers(models.index.n_train - 300))
    copied = models.index.tokens[start : start + 200].tolist()  # a generated text that copies
    generated = [*copied[:100], *rng.integers(0, tok.vocab_size, 100).tolist()]
    return {
        "tokens": int(models.index.tokens.size),
        "encode_s": round(min(b.seconds["encode"] for b in builds), 3),
        "count_and_index_s": round(min(b.seconds["count"] for b in builds), 3),
        "memory_kept_mb": round(models.nbytes / 1e6, 1),
        "memory_peak_while_building_mb": round(peak / 1e6, 1),
        "lookups": lookups,
        "memorisation_200_tokens_ms": round(
            _ms(lambda: ng.memorised_spans(models.index, generated, 5), repeats=5), 1
        ),
        "kneser_ney_bits_per_char": [
            round(x / ng.LN2 / models.chars_per_token, 3) for x in models.scores.kneser_ney
        ],
        "add_k_bits_per_char": [
            round(x / ng.LN2 / models.chars_per_token, 3) for x in models.scores.add_k
        ],
        "unseen_contexts_1_to_8": [round(x, 4) for x in models.unseen],
    }


def main() -> None:
    text = load_corpus("shakespeare")
    letters = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        ng.symbol_index(text, "letters"), ng.symbol_index(text, "words")
        letters.append(time.perf_counter() - t)
    emit(
        "ngrams",
        {
            "corpus_chars": len(text),
            "rounds": ROUNDS,
            "models": {name: bench(name, text) for name in MODELS},
            "letters_and_words_index_s": round(min(letters), 3),
        },
    )


if __name__ == "__main__":
    main()
