"""Every finding the core pages print (Home's card, Tokenization, Embeddings, MLP neurons, Next
token, Generation, N-grams) is a claim: here each claim function runs on every claim model
(tests/claims_models.py) and each sentence is checked against the numbers it came from, with the
chance baseline where a role or an effect is claimed; then constructed numbers where the answer is
known either way, and the pages themselves on the models where the old sentences were false."""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest

from tests.apptest_util import app_test
from tests.claims_models import ASSETS, CLAIM_MODELS, GPT_CLAIM_MODELS, claim_bundle
from viz_model.analysis import embeddings as emb
from viz_model.analysis import generation as gen
from viz_model.analysis import neurons as nx
from viz_model.analysis import next_token as nt
from viz_model.analysis import ngrams as ng
from viz_model.analysis import tokens as tk
from viz_model.analysis.claims import Claim
from viz_model.model.sampling import SamplingSettings

PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east."
NGRAM_CHARS = 120_000  # the n-gram claims are functions of the counts: a slice counts fast


def prompt_ids(bundle) -> list[int]:
    return bundle.tokenizer.encode(PROMPT)[-bundle.config.n_ctx :]


def first_number(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1).replace(",", ""))


# ---- Embeddings: the swap exercise ---------------------------------------------------------------


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_swap_sentence_matches_its_differences_and_the_models_mask(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    model, ids = bundle.model, prompt_ids(bundle)
    i = 0  # and the last earlier token that differs from it (induction models read <unk>s)
    j = max(k for k in range(len(ids) - 1) if ids[k] != ids[i])
    layers = (0, 1) if model.cfg.n_layer > 1 else (0,)
    off = emb.swap_experiments(model, ids, i, j, positions=False, layers=layers)
    on = emb.swap_experiments(model, ids, i, j, True)[0] if model.cfg.adds_positions else None
    claim = emb.swap_claim(
        off[0], on, off.get(1), model.cfg.causal, ids[i] == ids[j], model.cfg.pos
    )
    n, text = claim.numbers, claim.text
    assert not n["same_token"]
    if model.cfg.pos in emb.INSIDE_ATTENTION:  # RoPE, ALiBi: no vectors to zero, order is seen
        assert "no position vectors to zero" in text
        assert claim.made == (n["off"] > n["limit"]) and ("differ by" in text) == claim.made
        return
    # The invariance the exercise teaches holds on every model: layer 0, positions zeroed.
    assert n["off"] <= n["limit"] and "agree to about" in text
    if on is None:
        assert "no positions at all" in text
    else:
        assert ("differ by up to" in text) == (n["on"] > n["limit_on"])
    if 1 in off:
        d1, limit1 = n["off_layer1"], n["limit_layer1"]
        stops = "invariance stops" in text
        assert stops == (model.cfg.causal and d1 > limit1)
        if not model.cfg.causal:  # every token sees the same set: layer 1 is invariant too
            assert d1 <= limit1 and "no causal mask" in text and "Causal attention" not in text


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_neighbours_sentence_compares_with_a_shuffled_table(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    weights = bundle.model.W_E.detach()
    token = prompt_ids(bundle)[-1]
    claim = emb.neighbours_claim(weights, token, "x", k=10)
    near = emb.nearest_neighbours(weights, token, 10)
    assert claim.numbers["mean"] == pytest.approx(float(near.similarity.mean()))
    assert claim.numbers["chance"] == pytest.approx(emb.chance_similarity(weights.numpy(), token))
    assert claim.made == (claim.numbers["mean"] > claim.numbers["chance"])
    assert (
        f"{claim.numbers['mean']:.2f}" in claim.text
        and f"{claim.numbers['chance']:.2f}" in claim.text
    )
    assert ("no learned grouping)" in claim.text) == claim.made


def test_neighbours_beyond_chance_need_a_learned_cluster():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(200, 16)).astype(np.float32)  # no structure: no claim
    assert not emb.neighbours_claim(table, 0, "a").made
    clustered = table.copy()
    clustered[:11] = table[0] + 0.1 * rng.normal(size=(11, 16))  # token 0 and 10 close ones
    claim = emb.neighbours_claim(clustered, 0, "a")
    assert claim.made and claim.numbers["mean"] > 0.9


def test_the_swap_of_a_token_with_itself_claims_nothing():
    a = emb.SwapResult(np.ones(4), np.ones(4), False)
    claim = emb.swap_claim(a, a, a, True, same_token=True)
    assert not claim.made and "same token" in claim.text and "rounding" not in claim.text


def test_the_rounding_limit_scales_with_the_output_so_a_random_models_change_counts():
    """A random GPT-2's layer-0 outputs are ~1e-3: a 3e-5 change is 3% of them, not rounding."""
    original = np.full(8, 1e-3)
    on = emb.SwapResult(original, original + 3e-5, True)
    off = emb.SwapResult(original, original + 1e-10, False)
    claim = emb.swap_claim(off, on, None, True, False)
    assert claim.made and "differ by up to 3e-05" in claim.text


@pytest.mark.parametrize("causal", [True, False])
def test_the_no_positions_note_names_what_carries_order(causal):
    text = emb.no_positions_note(causal).text
    assert ("causal mask carries order" in text) == causal
    assert ("bag of tokens" in text) == (not causal)


# ---- Next token: perplexity ----------------------------------------------------------------------


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_perplexity_sentence_matches_the_perplexity(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    ids, vocab = prompt_ids(bundle), bundle.tokenizer.vocab_size
    ppl = nt.perplexity(nt.surprisal(nt.prompt_logits(bundle.model, ids), ids))
    claim = nt.perplexity_claim(ppl, vocab, bundle.config.causal)
    assert claim.numbers["blind_guess"] == vocab
    if not bundle.config.causal:
        assert not claim.made and "no causal mask" in claim.text and "unsure" not in claim.text
        return
    assert first_number(r"among \*\*([\d,.]+)\*\*", claim.text) == pytest.approx(ppl, abs=0.051)
    assert ("worse than a blind guess" in claim.text) == (ppl > claim.numbers["high"])
    low, high = claim.numbers["low"], claim.numbers["high"]
    assert ("about what a blind guess scores" in claim.text) == (low <= ppl <= high)


def test_a_perplexity_at_the_vocabulary_size_is_a_blind_guess_not_a_confident_error():
    """A random model's 300.5 over 300 tokens: the old page said 'confidently wrong'."""
    text = nt.perplexity_claim(300.5, 300, True).text
    assert "worse than a blind guess" not in text and "about what a blind guess" in text
    assert "worse than a blind guess" in nt.perplexity_claim(5910.4, 28, True).text
    plain = nt.perplexity_claim(5.4, 77, True).text
    assert "blind guess scores" not in plain and "worse" not in plain


def test_a_model_without_the_causal_mask_gets_no_perplexity_finding():
    claim = nt.perplexity_claim(1.02, 77, False)
    assert not claim.made and "copies" in claim.text
    assert nt.lookahead_claim(False).made and not nt.lookahead_claim(True).made
    assert nt.loss_lookahead_claim(False).made and nt.loss_lookahead_claim(True).text == ""


# ---- Next token: the loss, named ----------------------------------------------------------------


def _loss(model, ids: list[int]) -> float:
    return nt.mean_loss(nt.surprisal(nt.prompt_logits(model, ids), ids))


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_cross_entropy_sentence_matches_the_loss_and_the_untrained_twin(name, claim_bundles):
    from viz_model.analysis.untrained import untrained_twin

    bundle = claim_bundle(claim_bundles, name)
    ids, vocab = prompt_ids(bundle), bundle.tokenizer.vocab_size
    loss, twin = _loss(bundle.model, ids), _loss(untrained_twin(bundle).model, ids)
    claim = nt.cross_entropy_claim(loss, twin, vocab, bundle.config.causal)
    blind, margin = np.log(vocab), 0.1 * np.log(vocab)
    assert claim.numbers["blind"] == pytest.approx(blind)
    assert first_number(r"([\d.]+) nats", claim.text) == pytest.approx(loss, abs=0.0051)
    if not bundle.config.causal:
        assert not claim.made and "no causal mask" in claim.text and "chance" not in claim.text
        return
    beats = loss < blind - margin and loss < twin - margin
    assert claim.made == beats == ("beats chance" in claim.text)
    assert f"random weights scores {twin:.2f}" in claim.text
    assert ("about chance" in claim.text) == (not beats and abs(loss - blind) <= margin)
    # the twin itself, a model that learned nothing, never beats chance on the same text
    on_twin = nt.cross_entropy_claim(twin, twin, vocab, True)
    assert not on_twin.made and "beats" not in on_twin.text
    if bundle.family == "gpt":  # a GPT's random init gives near-flat logits: about ln V
        assert "about chance" in on_twin.text


def test_the_cross_entropy_claim_on_constructed_numbers():
    ln28 = float(np.log(28))  # 3.33; the margin is 0.33 nats
    assert nt.cross_entropy_claim(1.5, 3.3, 28, True).made
    assert not nt.cross_entropy_claim(1.5, 1.6, 28, True).made  # no better than random weights
    assert "not clearly below its random weights" in nt.cross_entropy_claim(1.5, 1.6, 28, True).text
    about = nt.cross_entropy_claim(ln28 + 0.2, ln28, 28, True)
    assert not about.made and "about chance" in about.text and "ln 28 = 3.33" in about.text
    assert "worse than a blind guess" in nt.cross_entropy_claim(5.0, 3.3, 28, True).text
    copying = nt.cross_entropy_claim(0.02, 3.3, 28, False)
    assert not copying.made and "copying" in copying.text


def test_the_accuracy_sentence_counts_the_positions():
    numbers = nt.loss_numbers(np.array([np.nan, 0.1, 2.0, 0.5]), np.array([np.nan, 1, 0, 1]), 28)
    assert nt.accuracy_text(numbers).startswith("At 2 of 3 positions")
    assert "accuracy 67%" in nt.accuracy_text(numbers)


# ---- Generation: the KV cache ---------------------------------------------------------------------


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_kv_cache_sentence_matches_the_two_runs(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    settings = SamplingSettings(temperature=1.0, top_k=0, top_p=1.0)
    result = gen.compare_kv_cache(bundle.model, prompt_ids(bundle)[:20], 8, settings, seed=0)
    if bundle.family != "gpt":  # an RNN, LSTM, GRU or CNN: the page's claim is about its state
        claim = gen.state_claim(result)
        assert claim.made == result.match and result.match  # the carried state is exact
        assert f"The {len(result.with_cache)} tokens match" in claim.text
        assert "no keys or values to cache" in gen.state_idea(bundle.family)
        return
    claim = gen.kv_cache_claim(result, bundle.config.causal)
    assert claim.numbers["match"] == result.match
    if bundle.config.causal:
        assert claim.made == result.match and result.match  # the cache is exact
        assert f"The {len(result.with_cache)} tokens match" in claim.text
        assert "no causal mask" not in gen.kv_cache_idea(True)
    else:
        assert not claim.made and "nothing to cache" in claim.text
        assert "no causal mask" in gen.kv_cache_idea(False)


def test_a_kv_mismatch_is_reported_with_its_first_token():
    result = gen.KVComparison([1, 2, 3], [1, 2, 4], 0.1, 0.2)
    claim = gen.kv_cache_claim(result, True)
    assert not claim.made and "from token 3 on" in claim.text


# ---- MLP neurons: dead and positional ----------------------------------------------------------------


@cache
def corpus_text(name: str, folders: tuple) -> str | None:
    from viz_model.text.data import load_text

    source = claim_bundle(dict(folders), name).meta.get("data")
    if not isinstance(source, dict) or not source:
        return None
    return load_text(source)


def text_for(name, claim_bundles) -> str | None:
    return corpus_text(name, tuple(sorted(claim_bundles.items())))


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_the_neuron_claims_match_the_corpus_scan(name, claim_bundles):
    from viz_model.text.data import load_corpus

    bundle = claim_bundle(claim_bundles, name)
    if not nx.has_mlp(bundle.model):
        pytest.skip("attention-only: the page has no neurons to claim anything about")
    text = text_for(name, claim_bundles) or load_corpus("shakespeare")
    found = nx.corpus_search(bundle.model, bundle.tokenizer, text, n_windows=40, keep=8)
    ranking = nx.rank_neurons(found.maxima, found.argmax, k=8)
    width = found.windows.ids.shape[1]
    for layer in range(bundle.config.n_layer):
        peaks = ranking.peak[layer]
        claim = nx.dead_neurons_claim(peaks, 40)
        n = claim.numbers
        assert n["threshold"] == pytest.approx(min(nx.DEAD_BELOW, 0.1 * np.median(peaks)))
        assert n["dead"] == int((peaks < n["threshold"]).sum()) == int(ranking.dead[layer].sum())
        assert f"**{n['dead']} of {peaks.size}**" in claim.text and claim.made == (n["dead"] > 0)
        # A dead neuron is one that stays silent while the layer's typical neuron fires.
        # (float32 peaks: the threshold is a tenth of the median rounded to float32, ~1e-7 off)
        assert n["dead"] == 0 or n["threshold"] <= 0.1 * n["median_peak"] * (1 + 1e-6)
        for neuron in {ranking.best(layer), int(np.argmax(ranking.position_share[layer]))}:
            examples = nx.top_examples(found.maxima, found.argmax, layer, neuron, 8)
            where = [e.position for e in examples]
            tokens = [str(found.windows.ids[e.window, e.position]) for e in examples]
            c = nx.position_claim(where, tokens, width, neuron)
            share = max(where.count(p) for p in where) / len(where)
            assert c.numbers["share"] == share
            assert c.numbers["chance"] == nx.chance_position_share(width, len(where))
            at_mode = {t for p, t in zip(where, tokens, strict=True) if p == c.numbers["position"]}
            assert c.numbers["distinct_tokens"] == len(at_mode)
            beyond_chance = share >= 0.5 and c.numbers["chance"] < 0.01
            assert c.made == (beyond_chance and len(at_mode) >= 2)
            assert ("where a token sits" in c.text) == c.made
            if beyond_chance:
                assert f"{share:.0%} of neuron {neuron}" in c.text


def test_weak_neurons_of_a_random_model_are_not_dead():
    """Every neuron peaks near 0.05 (a random GPT-2): the old rule (peak < 0.1) called them all
    dead; none is silent while its layer-mates fire."""
    rng = np.random.default_rng(0)
    maxima = 0.04 + 0.02 * rng.random((1, 20, 16))
    argmax = rng.integers(0, 16, size=(1, 20, 16))
    ranking = nx.rank_neurons(maxima, argmax, k=8)
    assert ranking.dead.sum() == 0
    assert nx.dead_neurons_claim(ranking.peak[0], 20).numbers["dead"] == 0


def test_a_silent_neuron_among_firing_ones_is_dead():
    peaks = np.array([2.0, 3.0, 2.5, 0.01, 0.2])
    claim = nx.dead_neurons_claim(peaks, 200)
    assert claim.made and claim.numbers["dead"] == 1 and "**1 of 5**" in claim.text


def test_peaks_on_one_position_and_one_token_do_not_claim_a_position_effect():
    """All 8 peaks at position 0 on the same token: the old page said 'reacts to where a token
    sits, not to what it is', which these snippets cannot tell."""
    same = nx.position_claim([0] * 8, ["A"] * 8, 64, 3)
    assert not same.made and "cannot tell" in same.text
    varied = nx.position_claim([0] * 6 + [5, 9], list("ABCDEFGH"), 64, 3)
    assert varied.made and "75% of neuron 3" in varied.text and "6 different tokens" in varied.text
    spread = nx.position_claim(list(range(8)), list("ABCDEFGH"), 64, 3)
    assert not spread.made and spread.text == ""
    # On a 4-token window half the peaks at one position is likely by chance: no claim.
    assert not nx.position_claim([0, 0, 0, 0, 1, 2, 3, 1], list("ABCDEFGH"), 4, 3).made


# ---- Tokenization: the pitfalls and the vocabulary curve -------------------------------------------


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_each_pitfall_sentence_is_true_of_the_models_tokenizer(name, claim_bundles):
    tok = claim_bundle(claim_bundles, name).tokenizer
    named = [("This model's tokenizer", tok)]
    for pitfall, texts in tk.PITFALLS:
        claim = tk.pitfall_claim(pitfall, texts, named, corpus_digits=10)
        pieces = {t: [p for i, p in tk.display_tokens(tok, t) if i != tok.unk_id] for t in texts}
        ids = {t: tok.encode(t) for t in texts}
        unk = {t: tok.unk_id is not None and tok.unk_id in ids[t] for t in texts}
        if pitfall == tk.LETTERS:
            lost = any(
                c.isalpha() and tok.unk_id is not None and tok.unk_id in tok.encode(c)
                for t in texts
                for c in t
            )
            split = any(len(p.strip()) > 1 for t in texts for p in pieces[t])
            assert claim.made == (lost or split)
            assert ("gives every letter its own token" in claim.text) == (not lost and not split)
        elif pitfall == tk.SPACING:
            a, b = texts
            assert claim.made == (ids[a] != ids[b])
            assert ("drops the space" in claim.text) == (ids[a] == ids[b])
        elif pitfall == tk.LEADING:
            whole = (
                all(len(x) == 1 for x in ids.values()) and len({x[0] for x in ids.values()}) == 3
            )
            assert claim.made == whole
            assert ("different single token for each" in claim.text) == whole
        elif pitfall == tk.SCRIPTS:
            costly = any(unk.values()) or any(len(ids[t]) > len(t) for t in texts)
            assert claim.made == costly
            for t in texts:
                if len(ids[t]) > len(t):
                    assert f"{len(ids[t])} tokens on the {len(t)} character" in claim.text
        elif pitfall == tk.NUMBERS:
            assert claim.made == bool(tk.digit_groups(tok, texts))


def test_a_character_tokenizer_is_not_said_to_hide_letters():
    from viz_model.text.tokenization import Tokenizer

    char = Tokenizer.train("a strawberry, hello Hello", "char")
    claim = tk.letters_claim([("The char model", char)], ["strawberry", " strawberry"])
    assert not claim.made and "never sees" not in claim.text
    lead = tk.leading_space_claim([("The char model", char)], [" hello", "hello", "Hello"])
    assert not lead.made and "letter by letter" in lead.text
    # a model with no space and no capitals (induction-2l's letters): it reads them as <unk>
    lower = Tokenizer.train("abcdefghijklmnopqrstuvwxyz", "char")
    lead = tk.leading_space_claim([("The task model", lower)], [" hello", "hello", "Hello"])
    assert not lead.made and "letter by letter" not in lead.text
    assert "the space" in lead.text and "`H`" in lead.text and "<unk>" in lead.text


def test_a_tokenizer_that_drops_spaces_reads_both_spellings_the_same():
    from viz_model.text.tokenization import Tokenizer

    words = Tokenizer.train("http : // http :// and more words", "word", 50)
    a, b = words.encode("http://"), words.encode("http: //")
    claim = tk.spacing_claim([("Words", words)], ["http://", "http: //"])
    assert claim.made == (a != b)
    assert ("drops the space" in claim.text) == (a == b)


def test_the_vocabulary_curve_claims_shrinking_savings_only_when_they_shrink():
    shrinking = tk.vocab_curve_claim([256, 512, 1024, 2048], [1000, 700, 560, 500])
    assert (
        shrinking.made and "30%" in shrinking.text and "each doubling saves less" in shrinking.text
    )
    growing = tk.vocab_curve_claim([256, 512, 1024], [1000, 900, 600])
    assert not growing.made and "each doubling saves less" not in growing.text
    assert tk.vocab_curve_claim([256, 384], [10, 9]).text == ""  # no doubling to compare


# ---- N-grams and memorisation ------------------------------------------------------------------------


@cache
def counted(name: str, folders: tuple):
    bundle = claim_bundle(dict(folders), name)
    text = corpus_text(name, folders)
    if text is None:
        return None
    return ng.token_models(text[:NGRAM_CHARS], bundle.tokenizer)


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_n_gram_sentences_match_the_counts(name, claim_bundles):
    from ui.frame import val_loss

    bundle = claim_bundle(claim_bundles, name)
    models = counted(name, tuple(sorted(claim_bundles.items())))
    if models is None:
        pytest.skip("no training text recorded: the N-grams page stops before any claim")
    unseen = [x for x in models.unseen if np.isfinite(x)]
    sparse = ng.sparsity_claim(models.unseen)
    rising = all(b >= a for a, b in zip(unseen, unseen[1:], strict=False))
    assert sparse.made == (rising and unseen[-1] > unseen[0])
    if sparse.made:
        assert f"{unseen[-1]:.1%}" in sparse.text
    bits = [x / ng.LN2 for x in models.scores.add_k]
    add_k = ng.add_k_claim(models.scores.orders, bits)
    best = int(np.argmin(bits))
    assert add_k.made == (best < len(bits) - 1 and bits[-1] > bits[best])
    assert f"n = {models.scores.orders[best]} ({bits[best]:.2f}" in add_k.text
    kn = [x / ng.LN2 for x in models.scores.kneser_ney]
    # issue 36: "the best of the classic counting models" only where it is, order by order
    verdict = ng.kneser_ney_claim(models.scores.orders, bits, kn, models.vocab)
    pairs = list(zip(models.scores.orders, bits, kn, strict=True))
    worse = [n for n, a, k in pairs if k > a + ng.KN_MARGIN]
    better = [n for n, a, k in pairs if k < a - ng.KN_MARGIN]
    assert verdict.made == (not worse and bool(better))
    assert ("does not hold" in verdict.text) == bool(worse)
    if worse:
        assert f"add-k at {ng.order_ranges(worse)}" in verdict.text
    loss = val_loss(bundle)
    gpt = None if loss is None else loss / ng.LN2
    versus = ng.gpt_vs_counts_claim(name, gpt, models.scores.orders, kn, bundle.config.causal)
    if gpt is None:
        assert not versus.made
    elif not bundle.config.causal:
        assert not versus.made and "no causal mask" in versus.text and "beats" not in versus.text
    else:
        assert versus.made == (gpt < min(kn)) and ("beats" in versus.text) == versus.made
        assert f"{min(kn):.2f} bits" in versus.text and f"{gpt:.2f} bits" in versus.text


@pytest.mark.parametrize("name", CLAIM_MODELS)
def test_the_memorisation_sentence_compares_with_held_out_overlap(name, claim_bundles):
    bundle = claim_bundle(claim_bundles, name)
    models = counted(name, tuple(sorted(claim_bundles.items())))
    if models is None:
        pytest.skip("no training text recorded: nothing to compare a generation with")
    from viz_model.model.sampling import generate

    prompt = [int(t) for t in models.index.tokens[:8]]  # a start the model knows
    seq = generate(bundle.model, prompt, 40, SamplingSettings(0.0, 0, 1.0), seed=0)
    seq = list(prompt) + [int(t) for t in seq]
    min_len = 12 if bundle.tokenizer.kind == "char" else 5
    spans = ng.memorised_spans(models.index, seq, min_len, len(prompt))
    chance = ng.chance_match_length(models.index)
    claim = ng.memorisation_claim(spans, min_len, chance, len(prompt))
    generated = [s.end - max(s.start, len(prompt)) for s in spans if s.in_train]
    longest = max(generated, default=0)
    assert claim.numbers["longest"] == longest and claim.numbers["chance"] == chance
    assert claim.made == (longest > chance)
    if claim.made:
        assert f"**{longest} generated tokens**" in claim.text and f"(up to {chance})" in claim.text


def _index(train: list[int], val: list[int]):
    from viz_model.text.corpus_index import CorpusIndex

    return CorpusIndex.build(np.array(train + val, dtype=np.int32), len(train))


def test_chance_overlap_is_the_longest_stretch_held_out_text_shares_with_training():
    index = _index([1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 0, 3, 4, 5, 6, 0, 0])
    assert ng.chance_match_length(index, chunks=1, length=8) == 4  # 3 4 5 6
    # Held-out text is matched against the training split only, never against itself.
    assert ng.train_match_lengths(index, [0, 0, 0]).tolist() == [0, 0, 0]


def test_a_stretch_no_longer_than_chance_overlap_is_not_called_copied():
    spans = [ng.Span(10, 22, 3, 0)]
    assert not ng.memorisation_claim(spans, 12, chance=21).made
    copied = ng.memorisation_claim([ng.Span(10, 40, 1, 0)], 12, chance=21)
    assert copied.made and "**30 generated tokens**" in copied.text


def test_a_quoted_prompt_is_not_the_models_copying():
    """Seen in Chromium: the prompt 'But soft, what light...' is Shakespeare; a 42-token stretch
    of which 1 token was generated was called copied."""
    quoted = ng.memorisation_claim([ng.Span(16, 58, 1, 0)], 12, chance=21, first=57)
    assert not quoted.made and "holds 1 generated token;" in quoted.text
    assert "42 with the prompt" in quoted.text
    only_val = ng.memorisation_claim([ng.Span(10, 40, 0, 2)], 12, chance=21)
    assert not only_val.made and "No stretch" in only_val.text


def test_add_k_that_keeps_improving_is_not_said_to_get_worse():
    assert not ng.add_k_claim((1, 2, 3), [3.0, 2.5, 2.2]).made
    assert ng.add_k_claim((1, 2, 3), [3.0, 2.5, 2.9]).made


def test_a_model_without_the_causal_mask_is_not_compared_with_counting():
    claim = ng.gpt_vs_counts_claim("nomask", 0.03, (1, 2), [3.0, 2.4], causal=False)
    assert not claim.made and "beats" not in claim.text
    assert ng.gpt_vs_counts_claim("m", 2.0, (1, 2), [3.0, 2.4], True).made
    assert not ng.gpt_vs_counts_claim("m", 2.5, (1, 2), [3.0, 2.4], True).made


def test_claims_are_claims():
    assert isinstance(ng.sparsity_claim((0.0, 0.1, 0.5)), Claim)


# ---- Home: the loss note and the architecture's attention ------------------------------------------


@pytest.mark.parametrize("name", GPT_CLAIM_MODELS)
def test_home_says_when_attention_sees_the_future(name, claim_bundles):
    from ui.charts.architecture import architecture_figure
    from ui.frame import loss_note

    bundle = claim_bundle(claim_bundles, name)
    causal = bundle.config.causal
    assert ("no causal mask" in loss_note(bundle)) == (not causal)
    hovers = " ".join(
        str(h) for trace in architecture_figure(bundle.config).data for h in (trace.hovertext or [])
    )
    assert ("Causal self-attention" in hovers) == causal


# ---- the pages where the old sentences were false ------------------------------------------------------


def page_texts(at) -> str:
    parts = [*at.markdown, *at.caption, *at.info, *at.warning, *at.success, *at.error]
    return " ".join(str(p.value) for p in parts)


def test_embeddings_on_the_no_mask_model_does_not_credit_the_causal_mask():
    at = app_test(
        ASSETS, "pages/02_embeddings.py", prompt=PROMPT, query={"model": "shakespeare-nomask"}
    )
    assert not at.exception
    text = page_texts(at)
    assert "Causal attention is itself a weak source of order" not in text
    assert "in layer 1 too the output is unchanged" in text


def test_next_token_on_the_no_mask_model_gives_no_perplexity_finding():
    at = app_test(
        ASSETS, "pages/07_next_token.py", prompt=PROMPT, query={"model": "shakespeare-nomask"}
    )
    assert not at.exception
    text = page_texts(at)
    assert "as unsure as if it had to pick" not in text and "measures how well it copies" in text


def test_generation_on_the_no_mask_model_says_there_is_nothing_to_cache():
    at = app_test(
        ASSETS, "pages/08_generation.py", prompt=PROMPT, query={"model": "shakespeare-nomask"}
    )
    assert not at.exception
    (idea,) = [
        m.value for m in at.markdown if "KV cache" in m.value and "Without a cache" in m.value
    ]
    assert "This model has no causal mask" in idea


def test_tokenization_on_a_character_model_says_it_sees_the_letters():
    at = app_test(
        ASSETS, "pages/01_tokenization.py", prompt=PROMPT, query={"model": "shakespeare-char"}
    )
    assert not at.exception
    (letters,) = [m.value for m in at.markdown if m.value.startswith("**Counting letters.**")]
    assert "This model's tokenizer (shakespeare-char) gives every letter its own token" in letters
    assert "The model never sees letters" not in letters


def test_a_state_mismatch_is_reported_with_its_first_token():
    result = gen.KVComparison([1, 2, 3], [1, 2, 4], 0.1, 0.2)
    claim = gen.state_claim(result)
    assert not claim.made and "from token 3 on" in claim.text
