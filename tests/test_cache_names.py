"""The golden list of activation names: the contract every page and lesson is written against."""

from __future__ import annotations

from tests.conftest import tiny_model

LN = ["hook_mean", "hook_scale", "hook_normalized"]
ATTN = ["hook_q", "hook_k", "hook_v", "hook_attn_scores", "hook_pattern", "hook_z", "hook_result"]


def golden(n_layer: int, pos: bool = True, attn_only: bool = False, pre: bool = True) -> list[str]:
    names = ["hook_embed"] + (["hook_pos_embed"] if pos else [])
    for i in range(n_layer):
        b = f"blocks.{i}"
        names += [f"{b}.hook_resid_pre", *(f"{b}.ln1.{h}" for h in LN)]
        names += [f"{b}.attn.{h}" for h in ATTN] + [f"{b}.hook_attn_out"]
        if not attn_only:
            names += [f"{b}.hook_resid_mid", *(f"{b}.ln2.{h}" for h in LN)]
            names += [f"{b}.mlp.hook_pre", f"{b}.mlp.hook_post", f"{b}.hook_mlp_out"]
        names.append(f"{b}.hook_resid_post")
    if pre:
        names += [f"ln_final.{h}" for h in LN]
    return names + ["unembed.hook_out"]


def test_golden_names_default(ids):
    model = tiny_model()
    _, cache = model.run_with_cache(ids)
    assert cache.names == golden(2)
    assert model.hook_names() == golden(2)


def test_golden_names_for_other_shapes():
    assert tiny_model(attn_only=True).hook_names() == golden(2, attn_only=True)
    assert tiny_model(pos="none").hook_names() == golden(2, pos=False)
    assert tiny_model(norm="post").hook_names() == golden(2, pre=False)
    assert tiny_model(n_layer=3).hook_names() == golden(3)


def test_every_name_is_the_attribute_path(ids):
    model = tiny_model()
    for name in model.hook_names():
        assert model.get_submodule(name).name == name


def test_cache_shapes_match_the_design_table(ids):
    model = tiny_model()
    cfg, T = model.cfg, len(ids)
    _, cache = model.run_with_cache(ids)
    D, H, E, M, V = cfg.d_model, cfg.n_head, cfg.d_head, cfg.d_mlp, cfg.vocab_size
    expected = {
        "hook_embed": (T, D),
        "hook_pos_embed": (T, D),
        "blocks.0.hook_resid_pre": (T, D),
        "blocks.0.ln1.hook_mean": (T, 1),
        "blocks.0.ln1.hook_scale": (T, 1),
        "blocks.0.ln1.hook_normalized": (T, D),
        "blocks.0.attn.hook_q": (T, H, E),
        "blocks.0.attn.hook_attn_scores": (H, T, T),
        "blocks.0.attn.hook_pattern": (H, T, T),
        "blocks.0.attn.hook_z": (T, H, E),
        "blocks.0.attn.hook_result": (T, H, D),
        "blocks.0.hook_attn_out": (T, D),
        "blocks.0.mlp.hook_pre": (T, M),
        "blocks.0.mlp.hook_post": (T, M),
        "unembed.hook_out": (T, V),
    }
    for name, shape in expected.items():
        assert tuple(cache[name].shape) == shape, name
