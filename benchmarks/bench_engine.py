"""Engine speed: training step vs a plain GPT, run_with_cache vs forward, KV-cache generation.

    python -m benchmarks.bench_engine

Targets (docs/ARCHITECTURE.md, Budgets and the engine issue): train-step ratio >= 0.95; full cache < 1.5x a
plain forward; greedy 50 tokens after a 10-token prompt with the KV cache under 60 ms.
"""

from __future__ import annotations

import torch

from benchmarks.common import alternate, emit
from benchmarks.reference_gpt import PlainGPT
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT
from viz_model.model.sampling import SamplingSettings, generate

CFG = GPTConfig(vocab_size=65, n_ctx=64, d_model=128, n_layer=4, n_head=4, bias=True)
BATCH = 12


def train_step_fn(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)

    def step():
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def bench_training() -> dict:
    torch.manual_seed(0)
    x = torch.randint(0, CFG.vocab_size, (BATCH, CFG.n_ctx))
    y = torch.randint(0, CFG.vocab_size, (BATCH, CFG.n_ctx))
    ours, plain = GPT(CFG).train(), PlainGPT(CFG).train()
    secs = alternate(
        {"ours": train_step_fn(ours, x, y), "plain": train_step_fn(plain, x, y)},
        rounds=5,
        repeats=10,
    )
    tokens = BATCH * CFG.n_ctx
    return {
        "train_tokens_per_s_ours": round(tokens / secs["ours"]),
        "train_tokens_per_s_plain": round(tokens / secs["plain"]),
        "train_speed_ratio": round(secs["plain"] / secs["ours"], 3),
        "target_ratio": 0.95,
        "params_ours": ours.n_params(),
        "params_plain": sum(p.numel() for p in plain.parameters()),
    }


@torch.no_grad()
def bench_cache() -> dict:
    torch.manual_seed(0)
    model = GPT(CFG).eval()
    out = {}
    for batch in (1, 12):
        ids = torch.randint(0, CFG.vocab_size, (batch, CFG.n_ctx))
        secs = alternate(
            {
                "forward": lambda ids=ids: model(ids),
                "cache": lambda ids=ids: model.run_with_cache(ids),
            },
            rounds=5,
            repeats=20,
        )
        out[f"forward_ms_{batch}x64"] = round(secs["forward"] * 1e3, 3)
        out[f"run_with_cache_ms_{batch}x64"] = round(secs["cache"] * 1e3, 3)
        out[f"cache_ratio_{batch}x64"] = round(secs["cache"] / secs["forward"], 3)
    out["cache_target_ratio"] = 1.5
    return out


def bench_generation() -> dict:
    torch.manual_seed(0)
    model = GPT(CFG).eval()
    prompt = list(range(10))
    greedy = SamplingSettings(temperature=0)
    secs = alternate(
        {
            "kv": lambda: generate(model, prompt, 50, greedy, use_kv_cache=True),
            "plain": lambda: generate(model, prompt, 50, greedy, use_kv_cache=False),
        },
        rounds=5,
        repeats=3,
    )
    same = generate(model, prompt, 50, greedy) == generate(
        model, prompt, 50, greedy, use_kv_cache=False
    )
    return {
        "generate_50_kv_ms": round(secs["kv"] * 1e3, 2),
        "generate_50_uncached_ms": round(secs["plain"] * 1e3, 2),
        "generate_target_ms": 60,
        "kv_tokens_equal_uncached": same,
    }


def main() -> None:
    emit("engine", {**bench_training(), **bench_cache(), **bench_generation()})


if __name__ == "__main__":
    main()
