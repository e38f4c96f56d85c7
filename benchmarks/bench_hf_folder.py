"""A GPT-2-small-shaped Hugging Face folder: load time, memory, and one full-cache forward.

    python -m benchmarks.bench_hf_folder [--folder /tmp/gpt2-small-random]

Builds the folder once with `transformers` and random weights (12 layers x 12 heads, d_model 768,
50,257 tokens, context 1024: GPT-2 small's shape) under /tmp, never in the repository, then times
load_bundle on it, a plain forward of 128 tokens and run_with_cache of every activation on them,
and reports what one such model costs a server process (resident memory before and after loading,
and the bytes of a full cache, which the pages' activation cache may hold several of).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from benchmarks.common import alternate, emit
from viz_model.bundles.load import load_bundle

GPT2_SMALL = dict(vocab_size=50_257, n_layer=12, n_head=12, n_embd=768, n_positions=1024)
TOKENS = 128


def rss_mb() -> float:
    """This process's resident memory in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def ensure_folder(folder: Path) -> float:
    """Make the folder unless it is there; seconds spent making it (0 when it was there)."""
    if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
        return 0.0
    from tests.hf_gpt2 import save_gpt2_folder  # transformers: a test-only dependency

    start = time.perf_counter()
    save_gpt2_folder(folder, chars=1_200_000, **GPT2_SMALL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=Path("/tmp/gpt2-small-random"))
    args = parser.parse_args()
    made = ensure_folder(args.folder)
    torch.set_num_threads(1)  # as a page run in the app
    before = rss_mb()
    start = time.perf_counter()
    bundle = load_bundle(args.folder)
    first_load = time.perf_counter() - start
    after = rss_mb()
    loads = [first_load]
    for _ in range(2):
        start = time.perf_counter()
        load_bundle(args.folder)
        loads.append(time.perf_counter() - start)
    model = bundle.model
    ids = torch.randint(0, bundle.config.vocab_size, (TOKENS,), generator=torch.manual_seed(0))

    def plain():
        with torch.no_grad():
            model(ids)

    secs = alternate({"forward": plain, "cache": lambda: model.run_with_cache(ids)}, 3, 2)
    _, cache = model.run_with_cache(ids)
    cache_bytes = sum(cache[n].numel() * cache[n].element_size() for n in cache)
    emit(
        "hf_folder",
        {
            "shape": GPT2_SMALL,
            "parameters": model.n_params(),
            "weights_file_mb": round((args.folder / "model.safetensors").stat().st_size / 2**20),
            "folder_made_s": round(made, 1),
            "load_s": [round(s, 2) for s in loads],
            "rss_before_load_mb": round(before),
            "rss_after_load_mb": round(after),
            "tokens": TOKENS,
            "forward_ms": round(secs["forward"] * 1000, 1),
            "full_cache_ms": round(secs["cache"] * 1000, 1),
            "full_cache_over_forward": round(secs["cache"] / secs["forward"], 2),
            "full_cache_mb": round(cache_bytes / 2**20, 1),
            "rss_end_mb": round(rss_mb()),
        },
    )


if __name__ == "__main__":
    main()
