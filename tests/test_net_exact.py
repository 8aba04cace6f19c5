"""Exact P(correct), mass on the candidates and pass@k by teacher forcing (rlvr/net/exact.py)
against the frequencies of sampled answers, on a micro model taught an easy task; and with answers
of at most 3 tokens, every answer enumerated (rlvr/net/enumerate.py): the expectations over them
against sampled means."""

import numpy as np
import pytest
import torch

from rlvr.kl import kl_estimate
from rlvr.metrics import pass_at_k
from rlvr.net.base import train_base
from rlvr.net.enumerate import all_answers, answer_table
from rlvr.net.exact import candidate_probs, level_means, p_correct, pass_k, sequence_logprob
from rlvr.net.model import Config, answer_logprob, forward, generator
from rlvr.net.sample import sample_answers
from rlvr.net.tokens import candidate_index, canonical, make_token_task
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
    assert whole.shape == (1, 8, 16) and torch.allclose(whole, chunked, rtol=1e-6, atol=1e-6)  # float32
    # the shared prompt pass, cached, against a full pass of each prompt-and-answer (float32 rounding)
    n, K, La = ttask["answers"].shape
    full = answer_logprob(params, MICRO, torch.as_tensor(ttask["prompt"]).repeat_interleave(K, 0)[None],
                          torch.as_tensor(ttask["answers"]).reshape(1, n * K, La),
                          torch.as_tensor(ttask["answer_len"]).reshape(1, n * K)).reshape(1, n, K)
    assert torch.allclose(whole, full, rtol=1e-6, atol=1e-6)


def test_pass_at_k_is_the_toys_formula_on_exact_p(micro):
    ttask, params = micro
    p = p_correct(params, MICRO, ttask)  # [1, 8]
    ks = np.array([1, 4, 64])
    curve = pass_k(p, ks)  # [1, 8, 3]
    np.testing.assert_allclose(curve, pass_at_k(p[..., None], ks))
    np.testing.assert_allclose(curve[0, :, 0], p[0])
    assert (np.diff(curve, axis=-1) > 0).all()
    np.testing.assert_allclose(level_means(p, ttask["level"])[0], p[0].reshape(4, 2).mean(1))


# ---- the enumerable task: answers of at most 3 tokens (1,885 strings a prompt) ----
SHORT = 3  # the correct strings of prompts whose sum has 1–2 digits fit (digits, then EOS)


@pytest.fixture(scope="module")
def enumerated(micro):
    """The micro model π, a reference π_ref (its weights plus N(0, 0.05²) noise, so KL(π‖π_ref) is
    neither 0 nor large), and every answer of at most SHORT tokens to each of the 8 prompts, with
    each token's log-prob under both and each position's next-token entropy under π: a dict."""
    ttask, params = micro
    g = generator((7, 7))
    ref = {k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in params.items()}
    with torch.no_grad():
        tokens, lengths, logp = answer_table(params, MICRO, ttask["prompt"], SHORT)
        _, _, logp_ref = answer_table(ref, MICRO, ttask["prompt"], SHORT)
        n, S = len(ttask["prompt"]), len(tokens)
        seq = np.concatenate([np.repeat(ttask["prompt"][:, None], S, 1),
                              np.broadcast_to(tokens, (n, S, SHORT))],
                             axis=-1)[..., :-1].reshape(1, n * S, -1)
        full = forward(params, MICRO, torch.from_numpy(seq))[0, :, 5:].double()  # [n·S, SHORT, n_out]
        entropy = -(full.exp() * full).sum(-1).reshape(n, S, SHORT)
    counted = np.arange(SHORT) < lengths[:, None]  # [S, SHORT]
    return dict(ttask=ttask, params=params, ref=ref, tokens=tokens, lengths=lengths, counted=counted,
                logp=logp[0].numpy(), ell=(logp - logp_ref)[0].numpy(), entropy=entropy.numpy() * counted)


def test_every_answer_the_sampler_can_draw_is_enumerated_once_and_their_probabilities_sum_to_one(
        enumerated):
    """1,885 distinct strings (1 + 12 + 144 ending in EOS, 12³ cut at 3 tokens); under π they
    sum to 1 for every prompt (to float32's rounding), and those of them that are candidates
    carry exactly candidate_probs' probabilities."""
    e = enumerated
    tokens, lengths = e["tokens"], e["lengths"]
    assert len(tokens) == 1 + 12 + 144 + 12**3 == len({tuple(t) for t in canonical(tokens, lengths)})
    with pytest.raises(ValueError, match="max_len = 6: 3,257,437 answers a prompt.*max_len <= 5"):
        all_answers(6)  # refused before any work
    pi = np.exp(e["logp"].sum(-1))  # [8, S]
    np.testing.assert_allclose(pi.sum(axis=1), 1.0, atol=1e-5)
    probs = candidate_probs(e["params"], MICRO, e["ttask"])[0]  # [8, 16]
    for i in range(8):
        j = candidate_index(e["ttask"], [i] * len(tokens), tokens[:, None], lengths[:, None])[:, 0]  # [S]
        fits = e["ttask"]["answer_len"][i] <= SHORT
        assert sorted(j[j >= 0]) == list(np.flatnonzero(fits))  # each short candidate found once
        np.testing.assert_allclose(pi[i, j >= 0], probs[i, j[j >= 0]], rtol=1e-5)


def test_enumerated_expectations_equal_the_means_of_sampled_answers(enumerated):
    """Exact over the 1,885 answers against 4,000 sampled answers a prompt (max_len 3), each
    within 4 s.e. per prompt: the answer's tokens, −log π(y) (whose mean is the sequence
    entropy), Σ_t of the next-token entropy (the entropy of the full next-token distribution that
    verl b178a3c logs as actor/entropy and TRL f2cd577 as entropy, both averaged over tokens), the
    share off the candidates, and Σ_t k(ℓ_t) of each KL estimator. Exactly, by the chain rule:
    Σ_t of the next-token entropies has the sequence entropy as its mean, and k1 and k3 summed
    over tokens both have KL(π‖π_ref) as theirs; k2's is another number."""
    e, G = enumerated, 4000
    ttask, pi = e["ttask"], np.exp(e["logp"].sum(-1))  # [8, S]
    tokens_s, lengths_s = e["tokens"][:, None], e["lengths"][:, None]  # [S, 1, ·]: as drawn, G = 1
    j = np.stack([candidate_index(ttask, [i] * len(tokens_s), tokens_s, lengths_s)[:, 0]
                  for i in range(8)])  # [8, S]
    per_answer = {"length": np.broadcast_to(e["lengths"], pi.shape), "surprise": -e["logp"].sum(-1),
                  "token_entropy": e["entropy"].sum(-1), "off_candidates": (j < 0).astype(float),
                  **{k: (kl_estimate(e["ell"], k) * e["counted"]).sum(-1) for k in ("k1", "k2", "k3")}}
    exact = {name: (pi * v).sum(axis=1) for name, v in per_answer.items()}  # [8] each
    kl = (pi * (e["logp"] - (e["logp"] - e["ell"])).sum(-1)).sum(axis=1)
    np.testing.assert_allclose(exact["k1"], kl, rtol=1e-9)
    np.testing.assert_allclose(exact["k3"], kl, rtol=1e-4)  # per token unbiased, so summed too
    np.testing.assert_allclose(exact["token_entropy"], exact["surprise"], rtol=1e-4)
    assert (kl > 0.01).all() and (np.abs(exact["k2"] - kl) > 1e-3).all()

    tokens, lengths = sample_answers(e["params"], MICRO, ttask["prompt"], G, [generator((3, 1, 4))], SHORT)
    tokens, lengths = tokens[0].numpy(), lengths[0].numpy()  # [8, G, 3], [8, G]
    # each sampled answer's row in the enumeration: its canonical string
    row_of = {tuple(t): s for s, t in enumerate(canonical(e["tokens"], e["lengths"]))}
    s = np.vectorize(lambda i, g: row_of[tuple(canonical(tokens[i, g], lengths[i, g]))])(
        *np.meshgrid(np.arange(8), np.arange(G), indexing="ij"))  # [8, G]
    np.testing.assert_array_equal(e["lengths"][s], lengths)
    for name, v in per_answer.items():
        drawn = np.take_along_axis(np.asarray(v), s, axis=1)  # [8, G]
        se = drawn.std(axis=1, ddof=1) / np.sqrt(G)
        assert (np.abs(drawn.mean(axis=1) - exact[name]) < 4 * se + 1e-12).all(), (name, exact[name], se)
