"""Training and sampling off the CPU, checked on a CPU: the seeded-generator rule and bf16 autocast.

A machine without a GPU cannot run CUDA, so two stand-ins check what a GPU would refuse or change:
logits that call themselves CUDA tensors and refuse a CPU generator as CUDA does, and the CPU's
own bf16 autocast in place of the GPU's (the same mixed precision, the same code path).
"""

from __future__ import annotations

import pytest
import torch

from tests.conftest import tiny_config, tiny_model
from viz_model.model.config import TrainConfig
from viz_model.model.decoding import decode
from viz_model.model.gpt import GPT
from viz_model.model.sampling import SamplingSettings, generate, next_token_distribution
from viz_model.text.data import TokenData, load_corpus
from viz_model.text.tokenization import Tokenizer
from viz_model.training import accel
from viz_model.training.loop import sample_text, train

CUDA_REFUSAL = "Expected a 'cuda' device type for generator but found 'cpu'"


class ClaimsCuda(torch.Tensor):
    """A CPU tensor that behaves as a CUDA tensor where devices meet: torch.multinomial refuses
    a CPU generator (as on a GPU), and .cpu() gives a plain CPU tensor."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.multinomial, torch.Tensor.multinomial):
            generator = kwargs.get("generator")
            if generator is not None and generator.device.type == "cpu":
                raise RuntimeError(CUDA_REFUSAL)
        if func is torch.Tensor.cpu:
            with torch._C.DisableTorchFunctionSubclass():
                return args[0].clone()
        return super().__torch_function__(func, types, args, kwargs)


class GPTOnCuda(GPT):
    """The same GPT, its logits handed out as ClaimsCuda: what a model on a GPU returns."""

    def forward(self, *args, **kwargs):
        return super().forward(*args, **kwargs).as_subclass(ClaimsCuda)


def _on_cuda(model: GPT) -> GPTOnCuda:
    twin = GPTOnCuda(model.cfg)
    twin.load_state_dict(model.state_dict())
    return twin.eval()


def test_the_stand_in_refuses_a_cpu_generator_as_cuda_does():
    probs = torch.tensor([0.25, 0.75]).as_subclass(ClaimsCuda)
    with pytest.raises(RuntimeError, match="device type for generator"):
        torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("settings", [SamplingSettings(), SamplingSettings(0.8, top_k=5)])
def test_seeded_sampling_from_gpu_logits_gives_the_cpu_models_tokens(settings):
    model = tiny_model()
    prompt = [3, 7, 1]
    on_cpu = generate(model.eval(), prompt, 12, settings, seed=5)
    assert generate(_on_cuda(model), prompt, 12, settings, seed=5) == on_cpu
    assert decode(_on_cuda(model), prompt, 12, settings, seed=5) == on_cpu


def test_the_distribution_is_a_cpu_tensor_whatever_the_logits_device():
    logits = torch.randn(23, generator=torch.Generator().manual_seed(0)).as_subclass(ClaimsCuda)
    dist = next_token_distribution(logits, SamplingSettings(top_p=0.9))
    assert type(dist.probs) is torch.Tensor and dist.probs.device.type == "cpu"


def test_the_training_loops_sample_works_from_gpu_logits():
    tok = Tokenizer.train("abc def\nghi", "char")
    model = GPT(tiny_config(vocab_size=tok.vocab_size))
    assert sample_text(_on_cuda(model), tok, 8) == sample_text(model, tok, 8)


def test_only_a_cuda_gpu_gets_autocast_and_the_cpu_stays_float32():
    assert accel.autocast_dtype(torch.device("cpu")) is None
    assert accel.autocast_dtype(torch.device("mps")) is None
    with accel.mixed_precision(torch.device("cpu")):
        assert not torch.is_autocast_enabled("cpu")


def test_training_under_bf16_autocast_keeps_float32_weights_and_learns(monkeypatch, tmp_path):
    """The GPU's mixed precision, run on the CPU's autocast: every matmul of the forward pass in
    bfloat16, the weights and the loss in float32, and the loss still falls."""
    monkeypatch.setattr(accel, "autocast_dtype", lambda device: torch.bfloat16)
    text = load_corpus("shakespeare")[:20_000]
    tok = Tokenizer.train(text, "char")
    data = TokenData.from_text(text, tok)
    torch.manual_seed(0)
    model = GPT(tiny_config(vocab_size=tok.vocab_size, n_ctx=32))
    seen: set[tuple[bool, torch.dtype]] = set()  # (training?, the logits' dtype)
    model.unembed.register_forward_hook(lambda m, i, out: seen.add((m.training, out.dtype)))
    cfg = TrainConfig(
        max_steps=40,
        batch_size=16,
        lr=3e-3,
        warmup_steps=5,
        eval_every=20,
        eval_batches=2,
        sample_every=0,
        sample_tokens=8,
        n_snapshots=2,
    )
    records = list(train(model, data, cfg, tmp_path / "b", tok))
    # training steps and evaluations ran under autocast; the sample at the end in float32
    assert seen == {(True, torch.bfloat16), (False, torch.bfloat16), (False, torch.float32)}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    first = sum(r.train_loss for r in records[1:6]) / 5  # records[0]: step 0's sample only
    last = sum(r.train_loss for r in records[-5:]) / 5
    assert last < first - 0.3, (first, last)
    assert records[-1].val_loss is not None and records[-1].sample
