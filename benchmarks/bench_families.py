"""Training speed of the RNN, LSTM, GRU and causal CNN (issue 26) against the GPT, each at the
`tiny` preset's shape for its family (about the same number of weights), and what generating one
more token costs each as the text grows.

    python -m benchmarks.bench_families [--threads 1]

Training: one step (forward, backward, AdamW) on batch 16 x context 128 (shakespeare-tiny's
recipe), timed in alternation (benchmarks/common.alternate) so machine noise falls on all alike;
tokens/s = 16 x 128 / step time. Generation: seconds per new token with the carried state (the
GPT: its KV cache) after prompts of 32 and 512 tokens; the GPT's window is its context, so it
is timed at 32 and 128.
"""

from __future__ import annotations

import argparse
import time

import torch

from benchmarks.bench_engine import train_step_fn
from benchmarks.common import alternate, emit
from viz_model.model.config import preset
from viz_model.model.families import build_model
from viz_model.model.recurrent import macs_per_token, state_floats
from viz_model.model.recurrent_config import OTHER_FAMILIES, recurrent_preset
from viz_model.model.sampling import SamplingSettings, generate

VOCAB, N_CTX, BATCH = 77, 128, 16
NEW_TOKENS = 64


def configs() -> dict:
    out = {"gpt": preset("tiny", VOCAB, n_ctx=N_CTX)}
    out |= {f: recurrent_preset(f, "tiny", VOCAB, n_ctx=N_CTX) for f in OTHER_FAMILIES}
    return out


def per_token_seconds(model, prompt_len: int) -> float:
    """Seconds per generated token after a prompt of prompt_len, greedy, with the cache."""
    prompt = torch.randint(0, VOCAB, (prompt_len,)).tolist()
    t0 = time.perf_counter()
    generate(model, prompt, NEW_TOKENS, SamplingSettings(temperature=0), use_kv_cache=True)
    return (time.perf_counter() - t0) / NEW_TOKENS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.randint(0, VOCAB, (BATCH, N_CTX))
    y = torch.randint(0, VOCAB, (BATCH, N_CTX))
    cfgs = configs()
    models = {name: build_model(cfg).train() for name, cfg in cfgs.items()}
    steps = {name: train_step_fn(model, x, y) for name, model in models.items()}
    seconds = alternate(steps, rounds=args.rounds, repeats=3)
    generation = {}
    with torch.no_grad():
        for name, model in models.items():
            model.eval()
            lengths = (32, N_CTX - NEW_TOKENS) if name == "gpt" else (32, 512)
            generation[name] = {n: round(per_token_seconds(model, n) * 1e3, 3) for n in lengths}
    emit(
        "families",
        {
            "batch": BATCH,
            "n_ctx": N_CTX,
            "params": {k: m.n_params() for k, m in models.items()},
            "step_ms": {k: round(v * 1e3, 2) for k, v in seconds.items()},
            "train_tokens_per_s": {k: round(BATCH * N_CTX / v) for k, v in seconds.items()},
            "ratio_to_gpt": {k: round(v / seconds["gpt"], 3) for k, v in seconds.items()},
            "generate_ms_per_token_after": generation,
            "state_floats": {f: state_floats(cfgs[f]) for f in OTHER_FAMILIES},
            "macs_per_token": {f: macs_per_token(cfgs[f]) for f in OTHER_FAMILIES},
        },
    )


if __name__ == "__main__":
    main()
