"""Exact P(correct), mass on the candidates and pass@k by teacher forcing (rlvr/net/exact.py)
against the frequencies of sampled answers, on a micro model taught an easy task."""

import numpy as np
import pytest
import torch

from rlvr.metrics import pass_at_k
from rlvr.net.base import train_base
from rlvr.net.exact import candidate_probs, level_means, p_correct, pass_k, sequence_logprob
from rlvr.net.model import Config, forward, generator
from rlvr.net.sample import sample_answers
from rlvr.net.tokens import candidate_index, make_token_task
from rlvr.task import make_task

torch.set_num_threads(1)
MICRO = Config(n_layer=1, d_model=16, n_head=2)


@pytest.fixture(scope="module")
def micro():
    """A micro model after 100 SFT steps on 8 prompts of P(correct) ≈ 0.3–0.9: its P(correct) is
    0.12–0.63 and 36–80 % of its mass is off the candidates, so both are measured well by sampling."""
    ttask = make_token_task(make_task(P=8, level_logodds=(-1.0, 0.0, 1.0, 2.0)), seed=0)
    params, _ = train_base(MICRO, ttask, [(0, 0)], steps=100, batch=64, lr=1e-2, warmup=10)
    return ttask, params


def test_exact_p_correct_and_mass_equal_sampling_frequencies(micro):
    ttask, params = micro
    G = 4000
    probs = candidate_probs(params, MICRO, ttask)[0]  # [8, 16]
    p, on = probs[:, 0], probs.sum(axis=1)
    np.testing.assert_allclose(p, p_correct(params, MICRO, ttask)[0], rtol=1e-12)
    assert p.min() > 0.05 and on.max() < 0.9  # neither comparison is trivial
    tokens, lengths = sample_answers(params, MICRO, ttask["prompt"], G, [generator((1, 2, 3))])
    j = candidate_index(ttask, np.arange(8), tokens.numpy(), lengths.numpy())[0]  # [8, G]
    for exact, freq in ((p, (j == 0).mean(axis=1)), (on, (j >= 0).mean(axis=1))):
        se = np.sqrt(exact * (1 - exact) / G)
        assert (np.abs(freq - exact) < 4 * se).all(), (freq, exact, se)  # 4 s.e. per prompt


def test_the_log_prob_of_a_string_is_its_tokens_log_probs(micro):
    """A string off the candidates gets its probability too, and candidates of several models come
    out per model: sequence_logprob of a pack is each model's own."""
    ttask, params = micro
    answers = np.array([[[0, 12, 13], [1, 1, 12]]])  # "0$" and "11$" for prompt 0: [1, 2, 3]
    lp = sequence_logprob(params, MICRO, ttask["prompt"][:1], answers, [[2, 3]])[0, 0].detach().numpy()
    tokens = [0, 12], [1, 1, 12]
    for s, toks in enumerate(tokens):
        seq = torch.tensor([[list(ttask["prompt"][0]) + toks[:-1]]])
        logp = forward(params, MICRO, seq)[0, 0, 5:].double()  # the answer's positions
        assert lp[s] == pytest.approx(sum(logp[t, tok].item() for t, tok in enumerate(toks)), abs=1e-6)
    whole = sequence_logprob(params, MICRO, ttask["prompt"], ttask["answers"], ttask["answer_len"])
    chunked = sequence_logprob(params, MICRO, ttask["prompt"], ttask["answers"], ttask["answer_len"], chunk=5)
    assert whole.shape == (1, 8, 16) and torch.allclose(whole, chunked, rtol=0, atol=1e-6)


def test_pass_at_k_is_the_toys_formula_on_exact_p(micro):
    ttask, params = micro
    p = p_correct(params, MICRO, ttask)  # [1, 8]
    ks = np.array([1, 4, 64])
    curve = pass_k(p, ks)  # [1, 8, 3]
    np.testing.assert_allclose(curve, pass_at_k(p[..., None], ks))
    np.testing.assert_allclose(curve[0, :, 0], p[0])
    assert (np.diff(curve, axis=-1) > 0).all()
    np.testing.assert_allclose(level_means(p, ttask["level"])[0], p[0].reshape(4, 2).mean(1))
