"""What the Quantization page costs, once per model: quantising every scheme and measuring it.

    python -m benchmarks.bench_quantization [--threads 1] [--models shakespeare-char shakespeare-bpe]

For each bundled model: the seconds to read its validation text, to quantise it once per scheme
(all 17), and the page's whole measurement (analysis/labs/quantization.measure over WINDOWS windows,
every scheme), with the model's float32 bytes. The page caches the measurement per model, so a
class pays it once per server process; each later run of the page draws from the cache.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from benchmarks.common import emit
from viz_model.analysis.labs import quantization as qa
from viz_model.bundles.load import load_bundle
from viz_model.model.quantize import all_specs, float32_size, quantize_model

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "models"


def seconds(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--models", nargs="+", default=["shakespeare-tiny", "shakespeare-char", "shakespeare-bpe"]
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {}
    for name in args.models:
        b = load_bundle(ASSETS / name)
        read_s, (val, _) = seconds(lambda b=b: qa.validation_ids(b.meta, b.tokenizer))
        quant_s, _ = seconds(lambda b=b: [quantize_model(b.model, s) for s in all_specs()])
        measure_s, m = seconds(
            lambda b=b, val=val: qa.measure(b.model, val, b.tokenizer, all_specs())
        )
        results[name] = {
            "float32_bytes": float32_size(b.model).total,
            "read_validation_s": round(read_s, 2),
            "quantise_all_s": round(quant_s, 2),
            "measure_all_s": round(measure_s, 2),
            "windows": m.n_windows,
            "tokens_a_window": m.length,
            "schemes": len(m.rows) - 1,
        }
    emit("quantization", results)


if __name__ == "__main__":
    main()
