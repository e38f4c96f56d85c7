"""analysis/labs/sae/: the SAE's shapes and constraints, that training finds planted sparse
directions, that resampling revives a dead feature, that a perfect reconstruction spliced in gives
the clean loss, that the shared model is never changed, the readouts against brute force, and the
claims."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import tiny_model
from viz_model.analysis.labs.sae.activations import collect, hook_name, random_windows
from viz_model.analysis.labs.sae.claims import (
    dead_claim,
    feature_match_claim,
    match_claim,
    resampling_note,
    splice_claim,
    steering_claim,
)
from viz_model.analysis.labs.sae.features import (
    MIN_LEFT,
    FeatureTable,
    activations_along,
    alive_by_frequency,
    default_feature,
    feature_in_windows,
    feature_table,
    is_dense,
    promoted_tokens,
    readout_path,
    steered,
    top_snippets,
)
from viz_model.analysis.labs.sae.lab import EVAL_TOKENS
from viz_model.analysis.labs.sae.lab import lab as train_lab
from viz_model.analysis.labs.sae.matching import Matches, best_matches, chance_matches, match_labs
from viz_model.analysis.labs.sae.metrics import (
    SAEMetrics,
    evaluate,
    fve,
    mean_ablation_hooks,
    next_token_loss,
    splice_hooks,
)
from viz_model.analysis.labs.sae.model import SparseAutoencoder, reconstruct
from viz_model.analysis.labs.sae.training import SAEConfig, resample_dead, train_sae
from viz_model.model.hooks import active_context

NAME = "blocks.0.hook_resid_post"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small matrices: a second thread only waits on the first (and on a busy machine, a lot)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=5)


@pytest.fixture(scope="module")
def windows(model):
    gen = torch.Generator().manual_seed(0)
    return torch.randint(0, model.cfg.vocab_size, (24, model.cfg.n_ctx + 1), generator=gen)


def planted(n: int = 12_000, d: int = 16, k: int = 8, seed: int = 0):
    """n inputs, each a positive sum of 1 or 2 of k planted unit directions in d dimensions."""
    gen = torch.Generator().manual_seed(seed)
    dirs = torch.randn(k, d, generator=gen)
    dirs = dirs / dirs.norm(dim=-1, keepdim=True)
    codes = torch.zeros(n, k)
    for j in range(2):
        which = torch.randint(0, k, (n,), generator=gen)
        on = torch.rand(n, generator=gen) < (1.0 if j == 0 else 0.3)
        codes[torch.arange(n)[on], which[on]] = 0.5 + torch.rand(int(on.sum()), generator=gen)
    return codes @ dirs, dirs


def perfect_sae(d: int) -> SparseAutoencoder:
    """2d features, +e_i and -e_i: f = (ReLU(x), ReLU(-x)) and x_hat = x exactly."""
    sae = SparseAutoencoder(d, 2 * d)
    eye = torch.eye(d)
    with torch.no_grad():
        sae.W_dec.copy_(torch.cat([eye, -eye], 1))
        sae.W_enc.copy_(torch.cat([eye, -eye], 1).T)
    return sae.eval()


def test_shapes_and_unit_decoder_columns_after_training():
    x, _ = planted(n=2048)
    sae, log = train_sae(x, SAEConfig(n_features=24, k=3, batch_size=256, epochs=2))
    x_hat, f = sae(x[:10])
    assert x_hat.shape == (10, 16) and f.shape == (10, 24)
    assert torch.allclose(sae.W_dec.norm(dim=0), torch.ones(24), atol=1e-5)
    assert len(log.mse) == 2 * (2048 // 256) and log.dead.shape == (24,)


def test_top_k_keeps_at_most_k_and_exactly_k_when_the_top_k_are_positive():
    sae = SparseAutoencoder(16, 64, k=5, seed=1)
    x = torch.randn(50, 16)
    assert ((sae.encode(x) > 0).sum(-1) <= 5).all()
    with torch.no_grad():
        sae.b_enc.fill_(100.0)  # every pre-activation positive
    f = sae.encode(x)
    assert ((f > 0).sum(-1) == 5).all()
    # the kept ones are the 5 largest pre-activations
    assert torch.equal(
        (f > 0),
        torch.zeros_like(f, dtype=torch.bool).scatter(-1, sae.pre(x).topk(5, -1).indices, True),
    )


def test_l1_training_lowers_the_loss_and_finds_each_planted_direction():
    x, dirs = planted()
    cfg = SAEConfig(n_features=16, k=0, l1_coeff=0.03, lr=1e-2, batch_size=256, epochs=4)
    sae, log = train_sae(x, cfg)
    assert log.mse[-20:].mean() < 0.3 * log.mse[:5].mean()
    cos = dirs @ sae.W_dec.detach()  # (8, 16): each planted direction against each column
    assert (cos.max(1).values > 0.9).all(), cos.max(1).values


def test_resampling_revives_a_dead_feature():
    x, _ = planted(n=4096)
    sae = SparseAutoencoder(16, 8, seed=2)
    sae.fit_input(x)
    with torch.no_grad():
        sae.b_enc[3] = -1e4  # feature 3 can never fire
    assert (sae.encode(x)[:, 3] == 0).all()
    dead = torch.zeros(8, dtype=torch.bool)
    dead[3] = True
    before = sae.W_dec[:, 0].detach().clone()
    resample_dead(sae, x, dead, gen=torch.Generator().manual_seed(0))
    assert (sae.encode(x)[:, 3] > 0).any()
    assert float(sae.b_enc[3].detach()) == 0.0
    assert torch.isclose(sae.W_dec[:, 3].norm(), torch.tensor(1.0), atol=1e-5)
    # its new direction is one input minus the decoder bias, scaled to unit length
    v = x - sae.b_dec.detach()
    cos = (v / v.norm(dim=-1, keepdim=True)) @ sae.W_dec[:, 3].detach()
    assert cos.max() > 1 - 1e-5
    assert torch.equal(sae.W_dec[:, 0].detach(), before)  # alive features untouched


def test_training_resamples_features_that_never_fire():
    x, _ = planted(n=4096)
    cfg = SAEConfig(n_features=64, k=1, batch_size=128, resample_every=8)
    _, log = train_sae(x, cfg)
    assert log.resampled and all(n > 0 for _, n in log.resampled)
    assert log.checks >= len(log.resampled) and resampling_note(log).startswith("Resampled: ")


def test_the_resampling_note_says_when_it_never_ran():
    x, _ = planted(n=1024)
    _, log = train_sae(x, SAEConfig(n_features=16, k=2, batch_size=128, resample_every=50))
    assert log.checks == 0 and "never ran" in resampling_note(log)
    assert "this run had 8" in resampling_note(log)


def test_a_perfect_reconstruction_spliced_in_gives_exactly_the_clean_loss(model, windows):
    sae = perfect_sae(model.cfg.d_model)
    acts = collect(model, windows[:, :-1], NAME)
    assert torch.allclose(reconstruct(sae, acts), acts, atol=1e-6)
    clean = next_token_loss(model, windows)
    spliced = next_token_loss(model, windows, splice_hooks(sae, NAME))
    assert spliced == pytest.approx(clean, abs=1e-6)


def test_collect_equals_the_recorded_activation(model, windows):
    acts = collect(model, windows[:3, :-1], NAME, batch_size=2)
    _, cache = model.run_with_cache(windows[:3, :-1], names=[NAME])
    assert torch.allclose(acts, cache[NAME].reshape(-1, model.cfg.d_model))


def test_mean_ablation_puts_the_mean_at_every_position(model, windows):
    mean = torch.randn(model.cfg.d_model)
    _, cache = model.run_with_cache(
        windows[:2, :-1], names=[NAME], hooks=mean_ablation_hooks(NAME, mean)
    )
    assert torch.allclose(cache[NAME], mean.expand_as(cache[NAME]))


def test_the_shared_model_is_unchanged_and_no_hook_is_left(model, windows):
    before = {k: v.clone() for k, v in model.state_dict().items()}
    acts = collect(model, windows[:, :-1], NAME)
    sae, log = train_sae(acts, SAEConfig(n_features=64, k=4, batch_size=64))
    evaluate(model, sae, NAME, windows, acts.mean(0), log.dead)
    steered(model, [1, 2, 3], NAME, sae.direction(0) * 5, 4, seed=0)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(p.grad is None for p in model.parameters())
    assert active_context() is None


def test_fve_on_a_hand_example():
    x = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    x_hat = torch.tensor([[0.5, 0.0], [-0.5, 0.0], [0.0, 2.0], [0.0, -1.0]])
    # residual 0.25 + 0.25 + 0 + 1 = 1.5; variance about the mean (0, 0): 1 + 1 + 4 + 4 = 10
    assert fve(x, x_hat) == pytest.approx(1 - 1.5 / 10)
    assert fve(x, x) == 1.0
    assert fve(x, x.mean(0).expand_as(x)) == pytest.approx(0.0)


def test_the_feature_table_matches_brute_force(model, windows):
    ids = windows[:20, :-1]
    sae = SparseAutoencoder(model.cfg.d_model, 48, k=6, seed=3)
    sae.fit_input(collect(model, ids, NAME))
    table = feature_table(model, sae, NAME, ids, k=4)
    f = sae.encode(collect(model, ids, NAME)).detach().numpy()  # (N * T, F)
    T = ids.shape[1]
    np.testing.assert_allclose(table.freq, (f > 0).mean(0), atol=1e-6)
    T = ids.shape[1]
    early = np.arange(f.shape[0]) % T < MIN_LEFT
    assert all((table.top_position[table.top_values > 0] >= MIN_LEFT).ravel())
    f = np.where(early[:, None], 0.0, f)  # the top activations skip each window's start
    np.testing.assert_allclose(table.max_act, f.max(0), atol=1e-5)
    for feat in range(48):
        top = (table.top_values[feat], table.top_window[feat], table.top_position[feat])
        for v, w, p in zip(*top, strict=True):
            assert f[w * T + p, feat] == pytest.approx(v, abs=1e-5)
        np.testing.assert_allclose(table.top_values[feat], np.sort(f[:, feat])[::-1][:4], atol=1e-5)
    for feat in range(48):
        snips = top_snippets(table, feat, 3)
        assert len({w for w, _ in snips}) == len(snips) <= 3
        if table.top_values[feat][0] > 0:
            assert snips[0] == (table.top_window[feat][0], table.top_position[feat][0])
    alive = alive_by_frequency(table)
    assert all(table.freq[i] > 0 for i in alive)
    assert [table.freq[i] for i in alive] == sorted((table.freq[i] for i in alive), reverse=True)


def test_promoted_tokens_are_the_direction_through_the_final_norms_gain_and_w_u(model):
    sae = SparseAutoencoder(model.cfg.d_model, 8, seed=4)
    raised, lowered = promoted_tokens(model, sae, 2, k=3)
    d = sae.direction(2)
    logits = ((d - d.mean()) * model.ln_final.weight) @ model.W_U
    assert raised[0][0] == int(logits.argmax()) and lowered[0][0] == int(logits.argmin())
    assert raised[0][1] == pytest.approx(float(logits.max().detach()), abs=1e-5)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [({}, "LayerNorm"), ({"norm": "post"}, "no final norm"), ({"norm_kind": "rmsnorm"}, "RMSNorm")],
)
def test_the_readout_path_names_the_models_final_norm(overrides, words):
    model = tiny_model(**overrides)
    assert words in readout_path(model)
    sae = SparseAutoencoder(model.cfg.d_model, 8, seed=4)
    raised, _ = promoted_tokens(model, sae, 1, k=1)
    d = sae.direction(1)
    if model.ln_final is not None:
        d = (d - d.mean() if "LayerNorm" in words else d) * model.ln_final.weight
    assert raised[0][0] == int((d @ model.W_U).argmax())


def test_activations_along_a_prompt_are_the_encoded_activations(model):
    sae = SparseAutoencoder(model.cfg.d_model, 16, seed=5)
    along = activations_along(model, sae, NAME, [1, 2, 3, 4])
    _, cache = model.run_with_cache(torch.tensor([1, 2, 3, 4]), names=[NAME])
    np.testing.assert_allclose(along, sae.encode(cache[NAME]).detach().numpy(), atol=1e-6)


def test_steering_by_nothing_changes_nothing_and_steering_hard_changes_the_text(model):
    sae = SparseAutoencoder(model.cfg.d_model, 16, seed=6)
    plain, same = steered(model, [1, 2, 3], NAME, torch.zeros(model.cfg.d_model), 8, seed=1)
    assert plain == same
    _, pushed = steered(model, [1, 2, 3], NAME, 200 * sae.direction(0), 8, seed=1)
    assert pushed != plain


def _metrics(clean, spliced, ablated, dead=0):
    return SAEMetrics(0.9, 16.0, dead, 256, clean, spliced, ablated, 1000)


@pytest.mark.parametrize(
    ("spliced", "ablated", "made"),
    [(1.5, 3.0, True), (2.0, 3.0, False), (1.5, 1.4, False), (1.21, 1.4, True)],
)
def test_the_splice_claim_says_what_the_numbers_say(spliced, ablated, made):
    m = _metrics(1.2, spliced, ablated)
    claim = splice_claim(m)
    assert claim.made == made
    assert claim.made == (ablated > 1.2 and (ablated - spliced) / (ablated - 1.2) >= 0.8)
    assert f"{spliced:.3f}" in claim.text and f"{ablated:.3f}" in claim.text
    if ablated <= 1.2:
        assert "nothing" in claim.text
    elif made:
        assert f"{m.loss_recovered:.0%}" in claim.text


def test_the_dead_claim_counts_the_dead():
    assert not dead_claim(_metrics(1, 1, 2, dead=0), 5000).made
    claim = dead_claim(_metrics(1, 1, 2, dead=40), 5000)
    assert claim.made and "40 of 256" in claim.text and "216 directions" in claim.text


def test_hook_name_checks_the_site():
    assert hook_name(2, "mlp_out") == "blocks.2.hook_mlp_out"
    with pytest.raises(ValueError):
        hook_name(0, "attn")


def test_the_lab_trains_measures_and_tabulates_on_a_text():
    from viz_model.text.tokenization import Tokenizer

    text = "".join(f"line {i}: the cat sat on the mat, and the dog ran off.\n" for i in range(300))
    tok = Tokenizer.train(text, "char")
    model = tiny_model(seed=7, vocab_size=tok.vocab_size)
    cfg = SAEConfig(n_features=48, k=4, batch_size=128, resample_every=5)
    lab = train_lab(model, tok, text, NAME, cfg, n_tokens=3000)
    m = lab.metrics
    assert m.tokens >= 1000 and 0 < m.l0 <= 4 and m.n_features == 48
    assert m.fve == pytest.approx(fve(*_held_out(model, lab, tok, text)), abs=1e-9)
    assert lab.browse.ids.shape == (len(lab.browse.texts), 16)
    assert lab.table.freq.shape == (48,)
    f = alive_by_frequency(lab.table)[0]
    rows = torch.as_tensor(lab.browse.ids[[w for w, _ in top_snippets(lab.table, f, 2)]])
    along = feature_in_windows(model, lab.sae, NAME, rows, f)
    assert along.shape == (2, 16)
    assert along[0, lab.table.top_position[f][0]] == pytest.approx(lab.table.top_values[f][0])


def _held_out(model, lab, tok, text):
    """The held-out activations and their reconstruction, rebuilt as `lab` cuts them."""
    from viz_model.text.data import TokenData

    data = TokenData.from_text(text, tok)
    held = random_windows(data.val, EVAL_TOKENS, model.cfg.n_ctx, 1)
    acts = collect(model, held[:, :-1], NAME)
    return acts, reconstruct(lab.sae, acts)


def test_the_steering_claim_finds_the_first_difference():
    same = steering_claim([1, 2, 3], [1, 2, 3], 2.0)
    assert not same.made and "same" in same.text
    parted = steering_claim([1, 2, 3], [1, 5, 3], 2.0)
    assert parted.made and parted.numbers["first_difference"] == 1
    assert "first 1 generated token and" in parted.text
    assert "differ from the first generated token" in steering_claim([1], [2], 1.0).text


def test_best_matches_find_a_shuffled_and_rescaled_dictionary():
    gen = torch.Generator().manual_seed(0)
    # 12 features over 2000 tokens, in float64: a correlation summed over 2000 float32 products
    # is 1 only to about 1e-5 (the width of this assertion), in float64 to about 1e-13
    a = torch.relu(torch.randn(2000, 12, generator=gen, dtype=torch.float64))
    perm = torch.randperm(12, generator=gen)
    b = a[:, perm] * 3.0  # B's feature j is A's feature perm[j], three times as large
    idx, r = best_matches(a, b)
    np.testing.assert_allclose(r, 1.0, rtol=0, atol=2000 * torch.finfo(torch.float64).eps)
    assert [int(perm[j]) for j in idx] == list(range(12))
    chance = chance_matches(a, b)
    assert (chance < 0.2).all()
    alive = np.ones(12, bool)
    claim = match_claim(r, chance, alive, step=500, untrained=chance)
    assert claim.made and "12 of the 12" in claim.text and "step 500" in claim.text


def test_the_match_claim_is_neutral_at_chance():
    r, chance = np.array([0.9, 0.8, 0.1]), np.array([0.9, 0.75, 0.0])
    none = np.zeros(3)
    claim = match_claim(r, chance, np.ones(3, bool), step=10, untrained=none)
    assert not claim.made and claim.numbers["matched"] == claim.numbers["chance"] == 2
    assert not match_claim(none, none, np.ones(3, bool), 10, untrained=none).made
    # only alive features count
    alive = np.array([False, True, True])
    assert match_claim(r, none, alive, 10, untrained=none).numbers["alive"] == 2
    # it says which tokens "fire here" counts on (not the SAE's own alive count)
    said = match_claim(r, chance, r > 0, 10, 2048, untrained=none).text
    assert "features that fire on these 2,048 tokens" in said


def test_features_a_model_that_learned_nothing_also_has_were_not_already_there():
    """Issue 36: 25 features matched step 39 against 0 with shuffled tokens, but an SAE on the
    random-weight step-0 snapshot matched 28: token identity is in any embedding."""
    r = np.array([0.9] * 25 + [0.1] * 15)
    shuffled = np.zeros(40)
    blank = np.array([0.9] * 28 + [0.1] * 12)
    claim = match_claim(r, shuffled, np.ones(40, bool), step=39, untrained=blank)
    assert not claim.made and "already there" not in claim.text
    assert claim.numbers["untrained"] == 28
    assert "random weights, a model that learned nothing, 28 do" in claim.text
    assert "no more than random weights give" in claim.text
    fewer = match_claim(r, shuffled, np.ones(40, bool), 39, untrained=np.zeros(40))
    assert fewer.made and "those 25 were already there at step 39, 25 more than" in fewer.text


def _table(freq) -> FeatureTable:
    n = len(freq)
    z = np.zeros((n, 1))
    return FeatureTable(np.array(freq), np.ones(n), z, z.astype(int), z.astype(int))


def test_the_default_feature_is_the_most_frequent_sparse_one_and_dense_ones_are_marked():
    table = _table([0.54, 0.0, 0.03, 0.049, 0.21, 0.001])
    assert default_feature(table) == 3
    assert [is_dense(table, f) for f in (0, 4, 3)] == [True, True, False]
    assert default_feature(_table([0.5, 0.3, 0.0])) == 1  # all dense: the rarest alive
    assert default_feature(_table([0.0, 0.0])) is None


def test_the_feature_match_claim_says_same_only_at_the_threshold():
    m = Matches(np.array([3, 1]), np.array([0.7, 0.69]), np.zeros(2), np.ones(2, bool))
    same, other = feature_match_claim(0, m, 100), feature_match_claim(1, m, 100)
    assert same.made and "feature 3" in same.text and "0.70" in same.text
    assert not other.made and "no counterpart" in other.text


def test_matching_a_lab_with_itself_finds_every_firing_feature(model, windows):
    from viz_model.text.tokenization import Tokenizer

    text = "".join(f"line {i}: the cat sat on the mat.\n" for i in range(200))
    tok = Tokenizer.train(text, "char")
    m = tiny_model(seed=8, vocab_size=tok.vocab_size)
    lab = train_lab(m, tok, text, NAME, SAEConfig(n_features=32, k=4, batch_size=128), 2000)
    found = match_labs(m, lab, m, lab)
    alive = found.alive
    assert alive.any() and np.allclose(found.r[alive], 1.0, atol=1e-4)
    assert match_claim(found.r, found.chance, alive, 0, untrained=found.chance).made
    with_blank = match_labs(m, lab, m, lab, untrained=(m, lab))
    assert np.allclose(with_blank.untrained[alive], 1.0, atol=1e-4)


def test_the_splice_sentence_says_the_direction_its_numbers_show():
    """Issue 36 (an audit on a class run at step 0): 'raises the loss from 4.358 to 4.356
    (-0.002)'. A model that learned nothing can lose nothing to a splice: the verb follows the
    printed numbers, and an unchanged loss is said to stay."""

    def metrics(spliced: float, ablated: float) -> SAEMetrics:
        return SAEMetrics(0.9, 16.0, 0, 512, 4.358, spliced, ablated, 10_000)

    lower = splice_claim(metrics(4.356, 4.358)).text
    assert "lowers the loss from 4.358 to 4.356 nats per token (-0.002)" in lower
    assert "mean leaves it at 4.358 (+0.000)" in lower and "raises" not in lower
    higher = splice_claim(metrics(4.401, 4.9)).text
    assert "raises the loss from 4.358 to 4.401" in higher and "mean raises it to 4.900" in higher
    same = splice_claim(metrics(4.3581, 4.2)).text
    assert "leaves the loss at 4.358" in same and "mean lowers it to 4.200" in same
