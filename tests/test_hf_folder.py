"""viz_model/bundles/gpt2_folder.py: a GPT-2 folder made here with `transformers` (random weights, nothing
downloaded) loads into our GPT and computes what transformers computes, layer by layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer as HFTokenizer

from tests.hf_gpt2 import EOT, save_gpt2_folder
from viz_model.bundles.checkpoint import save_bundle
from viz_model.bundles.files import CheckpointError
from viz_model.bundles.gpt2_folder import is_hf_folder
from viz_model.bundles.load import load_bundle
from viz_model.model.config import GPTConfig
from viz_model.model.gpt import GPT
from viz_model.model.sampling import SamplingSettings, generate

pytest.importorskip("transformers")

TEXT = "To be, or not to be: that is the question. Whether 'tis nobler in the mind"
VARIANTS = {
    "gpt2": {},
    "untied_exact_gelu_n_inner": dict(
        tie_word_embeddings=False, activation_function="gelu", n_inner=48
    ),
}


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def pair(request, tmp_path_factory):
    """(transformers' model, our bundle of the same folder)."""
    out = tmp_path_factory.mktemp("hf") / request.param
    hf = save_gpt2_folder(out, chars=50_000, **VARIANTS[request.param])
    hf.set_attn_implementation("eager")  # so it returns attention patterns
    return hf, load_bundle(out)


def test_logits_hidden_states_and_patterns_equal_transformers(pair):
    hf, bundle = pair
    ids = torch.tensor(bundle.tokenizer.encode(TEXT))
    with torch.no_grad():
        ref = hf(ids[None], output_hidden_states=True, output_attentions=True)
    logits, cache = bundle.model.run_with_cache(ids)
    n = bundle.config.n_layer
    assert torch.allclose(logits, ref.logits[0], atol=1e-5)
    # hidden_states[0] is the embedding sum, [l] block l-1's output; the last has ln_f applied.
    assert torch.allclose(cache["blocks.0.hook_resid_pre"], ref.hidden_states[0][0], atol=1e-6)
    for layer in range(n - 1):
        got = cache[f"blocks.{layer}.hook_resid_post"]
        assert torch.allclose(got, ref.hidden_states[layer + 1][0], atol=1e-5)
    final = bundle.model.final_norm(cache[f"blocks.{n - 1}.hook_resid_post"])
    assert torch.allclose(final, ref.hidden_states[n][0], atol=1e-5)
    for layer in range(n):
        got = cache[f"blocks.{layer}.attn.hook_pattern"]
        assert torch.allclose(got, ref.attentions[layer][0], atol=1e-6)


def test_greedy_generation_gives_transformers_tokens(pair):
    hf, bundle = pair
    prompt = bundle.tokenizer.encode("ROMEO:")
    eot = bundle.tokenizer.vocab_size - 1
    with torch.no_grad():
        ref = hf.generate(
            torch.tensor([prompt]), max_new_tokens=30, do_sample=False, pad_token_id=eot
        )[0, len(prompt) :].tolist()
    greedy = SamplingSettings(temperature=0)
    assert generate(bundle.model, prompt, len(ref), greedy) == ref
    assert generate(bundle.model, prompt, len(ref), greedy, use_kv_cache=False) == ref
    assert len(ref) == 30  # eos never stopped it early, so all 30 tokens were compared


def test_config_reads_gpt2_fields(pair):
    hf, bundle = pair
    c = hf.config
    cfg = bundle.config
    assert (cfg.vocab_size, cfg.n_ctx, cfg.d_model) == (c.vocab_size, c.n_positions, c.n_embd)
    assert (cfg.n_layer, cfg.n_head) == (c.n_layer, c.n_head)
    assert cfg.d_mlp == (c.n_inner or 4 * c.n_embd)
    assert cfg.tie_embeddings == c.tie_word_embeddings
    assert cfg.act == {"gelu_new": "gelu_tanh", "gelu": "gelu"}[c.activation_function]
    assert bundle.history == [] and bundle.train_config is None


def test_tokenizer_json_encodes_like_the_library(pair):
    _, bundle = pair
    ref = HFTokenizer.from_file(str(bundle.path / "tokenizer.json"))
    text = TEXT + " naïve café 東京 🙂\n\n  end"
    assert bundle.tokenizer.encode(text) == ref.encode(text).ids
    assert bundle.tokenizer.decode(bundle.tokenizer.encode(text)) == text
    assert bundle.tokenizer.kind == "json"
    assert bundle.tokenizer.token_to_id(EOT) == bundle.config.vocab_size - 1


def test_gelu_tanh_is_gpt2s_gelu_not_the_exact_one():
    """Why act="gelu_tanh" exists: GPT-2's GELU is the tanh approximation (up to 3e-4 away)."""
    model = GPT(GPTConfig(vocab_size=50, n_layer=1, d_model=32, n_head=4, act="gelu_tanh"))
    x = torch.linspace(-4, 4, 801)
    got = model.blocks[0].mlp.act(x)
    assert torch.allclose(got, F.gelu(x, approximate="tanh"))
    assert (got - F.gelu(x)).abs().max() > 1e-4


def test_saved_as_our_bundle_keeps_gelu_tanh(pair, tmp_path):
    _, bundle = pair
    saved = load_bundle(save_bundle(tmp_path / "copy", bundle.model, bundle.tokenizer))
    assert saved.config == bundle.config
    assert json.loads((tmp_path / "copy" / "config.json").read_text())["model"]["act"] == (
        bundle.config.act
    )
    ids = torch.tensor(bundle.tokenizer.encode(TEXT))
    assert torch.equal(saved.model(ids), bundle.model(ids))


def test_float16_weights_load_as_float32(tmp_path):
    hf = save_gpt2_folder(tmp_path / "half", chars=20_000)
    hf.half().save_pretrained(tmp_path / "half")
    bundle = load_bundle(tmp_path / "half")
    assert bundle.model.embed.weight.dtype == torch.float32
    assert torch.equal(bundle.model.embed.weight, hf.transformer.wte.weight.float())


# ---- folders we refuse ---------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path) -> Path:
    out = tmp_path / "tiny-gpt2"
    save_gpt2_folder(out, chars=20_000)
    return out


class _Trap:
    """Unpickling this creates a file: the proof that something unpickled it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_pickled_weights_only_are_refused_unread(folder, tmp_path):
    marker = tmp_path / "unpickled"
    (folder / "model.safetensors").unlink()
    torch.save(_Trap(marker), folder / "pytorch_model.bin")  # a pickle, as transformers writes
    with pytest.raises(CheckpointError, match="pytorch_model.bin") as err:
        load_bundle(folder)
    assert "save_pretrained" in str(err.value) and "safe_serialization=True" in str(err.value)
    assert not marker.exists()


def _edit_config(folder: Path, **changes) -> None:
    data = json.loads((folder / "config.json").read_text())
    data.update(changes)
    (folder / "config.json").write_text(json.dumps(data))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"model_type": "llama"}, "model_type 'llama'"),
        ({"activation_function": "quick_gelu"}, "activation_function 'quick_gelu'"),
        ({"layer_norm_epsilon": 1e-6}, "layer_norm_epsilon"),
        ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
        ({"n_embd": 30}, "divisible by n_head"),
        ({"n_layer": 3}, r"missing \['h.2.attn.c_attn.bias'"),
        ({"vocab_size": 301}, "tokenizer.json has 300 tokens but the model embeds 301"),
    ],
)
def test_a_folder_that_does_not_fit_is_refused_by_name(folder, changes, message):
    _edit_config(folder, **changes)
    with pytest.raises(CheckpointError, match=message):
        load_bundle(folder)


def test_missing_tokenizer_and_sharded_weights_are_named(folder):
    (folder / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match="no tokenizer.json"):
        load_bundle(folder)
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    with pytest.raises(CheckpointError, match="several model-"):
        load_bundle(folder)


def test_our_bundles_are_not_taken_for_hf_folders(folder, models_dir):
    assert is_hf_folder(folder)
    assert not any(is_hf_folder(p) for p in Path(models_dir).iterdir())


def test_the_hubs_older_layout_loads_too(folder):
    """gpt2's own file on the Hub names its tensors without "transformer." and stores each
    layer's causal mask as h.{l}.attn.bias: the same model."""
    from safetensors.torch import load_file, save_file

    before = load_bundle(folder)
    tensors = {
        k.removeprefix("transformer."): v
        for k, v in load_file(folder / "model.safetensors").items()
    }
    for layer in range(before.config.n_layer):
        tensors[f"h.{layer}.attn.bias"] = torch.ones(1, 1, 64, 64).tril()
    save_file(tensors, folder / "model.safetensors")
    after = load_bundle(folder)
    ids = torch.tensor(before.tokenizer.encode(TEXT))
    assert torch.equal(after.model(ids), before.model(ids))
