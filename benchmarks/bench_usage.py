"""Using a model: what each part of the page computes with its default settings, on the bundled
models (one torch thread, as one page run). The page caches each result per prompt, so this is
the cost of a first look at a part, not of a rerun.

    python -m benchmarks.bench_usage

Target (issue 26): the default part (teacher forcing) computes in about half a second or less.
"""

from __future__ import annotations

import torch

from benchmarks.common import alternate, emit
from viz_model.analysis import noisy_channel as nc
from viz_model.analysis import scoring, usage
from viz_model.analysis.labs import fewshot
from viz_model.bundles.load import load_bundle
from viz_model.model.decoding import beam_search
from viz_model.text.data import ASSETS_DIR, load_corpus

MODELS = ("shakespeare-char", "shakespeare-tiny", "shakespeare-bpe")
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"


def bench_model(name: str) -> dict:
    bundle = load_bundle(ASSETS_DIR / "models" / name)
    model, tok = bundle.model.eval(), bundle.tokenizer
    ids = tok.encode(PROMPT)[-model.cfg.n_ctx :]
    words = nc.vocabulary(load_corpus("shakespeare"))
    alts, _ = usage.alternatives(model, ids, 10)
    cands = [(c, tok.encode(c)) for c in (" hate", " death", " war", " a thing of nothing")]
    secs = alternate(
        {
            "forcing": lambda: usage.forcing_race(model, ids),
            "backtrack": lambda: usage.force_token(model, ids, 40, 0, alts[-1]),
            "repetition": lambda: usage.compare_decoders(model, ids, 120, 1.0, 0, 1.3),
            "beam": lambda: beam_search(model, ids, 3, 12),
            "scoring": lambda: scoring.score_candidates(
                model, tok.encode("The opposite of love is"), cands
            ),
            "noisy": lambda: nc.correct(
                model, tok.encode, "ROMEO:\nBut soft, what ", "lihgt", " ", words, 0.01
            ),
        },
        rounds=2,
        repeats=1,
    )
    return {"prompt_tokens": len(ids), **{f"{k}_ms": round(v * 1000) for k, v in secs.items()}}


def bench_fewshot() -> dict:
    bundle = load_bundle(ASSETS_DIR / "models" / "fewshot-tiny")
    k_max = fewshot.max_examples(fewshot.task_len_of(bundle.meta))
    secs = alternate(
        {"fewshot": lambda: fewshot.fewshot_curve(bundle.model, bundle.tokenizer.encode, k_max)},
        rounds=2,
        repeats=1,
    )
    return {"fewshot_ms": round(secs["fewshot"] * 1000)}


def main() -> None:
    torch.set_num_threads(1)  # as one page run in the app
    with torch.no_grad():
        emit("usage", {**{n: bench_model(n) for n in MODELS}, "fewshot-tiny": bench_fewshot()})


if __name__ == "__main__":
    main()
