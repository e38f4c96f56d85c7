"""The Using a model analyses read a model only through `model(ids)`: here they run on a small
recurrent language model with that signature and nothing else (no hooks, no KV cache, no config),
as the recurrent models of issue 26 will be, and the math still holds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from viz_model.analysis import noisy_channel as nc
from viz_model.analysis import scoring, usage
from viz_model.analysis.labs import fewshot
from viz_model.model.decoding import LogitStream, beam_search, decode

VOCAB = 12


class TinyGRU(nn.Module):
    """(T,) -> (T, V) and (B, T) -> (B, T, V), like GPT.forward; nothing more."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Embedding(VOCAB, 16)
        self.rnn = nn.GRU(16, 24, batch_first=True)
        self.out = nn.Linear(24, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        single = ids.dim() == 1
        x = ids[None] if single else ids
        h, _ = self.rnn(self.embed(x))
        logits = self.out(h)
        return logits[0] if single else logits


@pytest.fixture
def rnn() -> TinyGRU:
    return TinyGRU().eval()


IDS = [1, 4, 2, 7, 1, 4, 2]


def test_teacher_forcing_equals_the_passes_and_free_running_counts_them(rnn):
    race = usage.forcing_race(rnn, IDS)
    assert race.max_difference < usage.SAME_TOL and usage.forcing_claim(race).made
    assert race.passes_free == len(IDS) - 1


def test_the_stream_is_a_full_forward_without_a_cache(rnn):
    stream = LogitStream(rnn, IDS)
    assert stream.kv is None
    torch.testing.assert_close(stream.push(3), rnn(torch.tensor(IDS + [3]))[-1])


def test_decoding_forcing_and_repetition_run(rnn):
    alts, _ = usage.alternatives(rnn, IDS, 5)
    run = usage.force_token(rnn, IDS, 6, 2, alts[-1])
    assert run.forced[2] == alts[-1] and len(run.forced_surprisal) == 6
    out = usage.compare_decoders(rnn, IDS, 8, 1.0, 0, 1.5)
    assert out["greedy"] == decode(rnn, IDS, 8) and all(len(v) == 8 for v in out.values())


def test_beam_width_one_is_greedy_and_an_exhaustive_beam_is_exact(rnn):
    assert list(beam_search(rnn, IDS, 1, 5)[-1][0].tokens) == decode(rnn, IDS, 5)
    best = beam_search(rnn, IDS, VOCAB**2, 2)[-1][0]
    logp = {}
    for a in range(VOCAB):
        for b in range(VOCAB):
            logp[(a, b)] = float(scoring.candidate_logps(rnn, IDS, [a, b]).sum())
    assert best.tokens == max(logp, key=logp.get)
    assert best.logprob == pytest.approx(max(logp.values()), abs=1e-5)


def test_scoring_the_noisy_channel_and_few_shot_run(rnn):
    scores = scoring.score_candidates(rnn, IDS, [("a", [3]), ("bc", [5, 6])])
    assert scores[1].total == pytest.approx(float(np.sum(scores[1].token_logps)))
    encode = lambda text: [ord(c) % VOCAB for c in text]  # noqa: E731 (a stand-in tokenizer)
    ranked = nc.correct(rnn, encode, "so ", "abc", " ", {"abc": 1, "abd": 2}, 0.1)
    assert [c.word for c in ranked] and ranked[0].score >= ranked[-1].score
    curve = fewshot.fewshot_curve(rnn, encode, 1, n_prompts=10)
    assert curve.accuracy.shape == (2,)
