"""GPT-2 folders for tests and benchmarks, made here with `transformers` and random weights:
nothing is downloaded. The layout is what save_pretrained writes (config.json, model.safetensors,
tokenizer.json), with a byte-level BPE built like GPT-2's (<|endoftext|> as the last id)."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from viz_model.text.data import load_corpus

EOT = "<|endoftext|>"


def gpt2_tokenizer(vocab_size: int, chars: int = 200_000) -> Tokenizer:
    """A GPT-2-style byte-level BPE of exactly vocab_size tokens (the last is <|endoftext|>),
    trained on the bundled Shakespeare; when the text runs out of merges, <|extra_i|> pad it."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = load_corpus("shakespeare")[:chars]
    tok.train_from_iterator(text.splitlines(keepends=True), trainer)
    pad = vocab_size - 1 - tok.get_vocab_size()
    tok.add_special_tokens([f"<|extra_{i}|>" for i in range(pad)] + [EOT])
    assert tok.get_vocab_size() == vocab_size
    return tok


def save_gpt2_folder(
    out: Path,
    vocab_size: int = 300,
    n_layer: int = 2,
    n_head: int = 4,
    n_embd: int = 32,
    n_positions: int = 64,
    seed: int = 0,
    chars: int = 200_000,
    **config,
):
    """A random GPT2LMHeadModel saved with its tokenizer as a Hugging Face folder; returns the
    model (eval mode). Biases and LayerNorm gains get noise, so a swapped or untransposed weight
    shows. Extra keyword arguments go to GPT2Config (e.g. activation_function)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(
        vocab_size=vocab_size,
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=vocab_size - 1,
        eos_token_id=vocab_size - 1,
        **config,
    )
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln_" in name:
                p.add_(0.1 * torch.randn_like(p))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    gpt2_tokenizer(vocab_size, chars).save(str(out / "tokenizer.json"))
    return model
