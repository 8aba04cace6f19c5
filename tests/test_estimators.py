"""Estimator properties: known vectors, exact identities, and unbiasedness within stated SEs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr import ESTIMATORS, advantages, gradient_stats, make_task
from rlvr.policy import softmax

R_3_OF_8 = np.array([[1, 1, 1, 0, 0, 0, 0, 0]], float)


def test_known_vector_group_and_rloo():
    # G = 8 with 3 correct: group mean 3/8; RLOO's other-7 means are 2/7 and 3/7
    np.testing.assert_allclose(advantages(R_3_OF_8, "group")[0, [0, 3]], [0.625, -0.375])
    np.testing.assert_allclose(advantages(R_3_OF_8, "rloo")[0, [0, 3]], [5 / 7, -3 / 7])
    np.testing.assert_allclose(advantages(R_3_OF_8, "rloo")[0, [0, 3]], [0.7143, -0.4286], atol=5e-5)


def test_grpo_divides_by_population_std():
    std = np.sqrt(3 / 8 * 5 / 8)
    np.testing.assert_allclose(advantages(R_3_OF_8, "grpo")[0, [0, 3]],
                               [0.625 / std, -0.375 / std], rtol=1e-5)


def test_none_and_learned():
    r = np.array([[1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(advantages(r, "none"), r)
    np.testing.assert_array_equal(advantages(r, "learned", baseline=np.array([0.5, 0.25])),
                                  [[0.5, -0.5], [-0.25, -0.25]])
    np.testing.assert_array_equal(advantages(r, "learned"), r)  # no baseline given: V = 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=2, max_size=16), st.floats(-100, 100),
       st.sampled_from(["rloo", "group", "grpo"]))
def test_group_baselines_ignore_a_constant_offset(correct, offset, method):
    r = np.array([correct], float)
    np.testing.assert_allclose(advantages(r + offset, method), advantages(r, method), atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=2, max_size=16))
def test_group_and_rloo_are_proportional(correct):
    # r_i - mean = (G-1)/G * (r_i - mean of the others): the source of the 7/8 shrinkage
    r = np.array([correct], float)
    G = r.shape[1]
    np.testing.assert_allclose(advantages(r, "group"), (G - 1) / G * advantages(r, "rloo"), atol=1e-12)


def test_all_equal_groups_give_zero_advantage():
    r = np.ones((3, 4)) * np.array([[0.0], [1.0], [6.0]])
    for method in ("rloo", "group", "grpo"):
        assert np.all(advantages(r, method) == 0), method


def test_bad_input_is_refused_with_names():
    with pytest.raises(ValueError, match="unknown method 'nope'.*rloo"):
        advantages(R_3_OF_8, "nope")
    with pytest.raises(ValueError, match="rloo.*G >= 2"):
        advantages(np.ones((4, 1)), "rloo")
    with pytest.raises(ValueError, match=r"\[n, G\]"):
        advantages(np.ones(4), "none")


def test_every_registered_estimator_returns_the_shape_of_r():
    rng = np.random.default_rng(0)
    r = (rng.random((5, 8)) < 0.3).astype(float)
    for name in ESTIMATORS:
        A = advantages(r, name, baseline=np.zeros(5), pi=softmax(rng.normal(size=(5, 4))),
                       logp=np.log(rng.random((5, 8))))
        assert A.shape == r.shape and np.all(np.isfinite(A)), name


# Monte Carlo: 200,000 repetitions, fixed seed, tolerance 4 standard errors of the mean.
N_REPS, TOL_SE = 200_000, 4.0


@pytest.fixture(scope="module")
def medium_prompt():
    task = make_task()
    prompt = int(np.flatnonzero(task["level"] == 2)[0])
    logits = task["logits"][prompt]
    p = softmax(logits[None])[0, 0]
    return logits, p * (1 - p)


@pytest.mark.parametrize("method,factor", [("none", 1.0), ("rloo", 1.0), ("group", 7 / 8)])
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_unbiased_and_seven_eighths(medium_prompt, method, factor, offset):
    logits, true = medium_prompt
    mean, std, _ = gradient_stats(logits, method, 8, N_REPS, np.random.default_rng(1), offset)
    se = std / np.sqrt(N_REPS)
    assert abs(mean - factor * true) < TOL_SE * se, (mean, factor * true, se)


def test_grpo_overshoots_the_true_gradient(medium_prompt):
    logits, true = medium_prompt
    mean, std, _ = gradient_stats(logits, "grpo", 8, N_REPS, np.random.default_rng(2))
    assert mean - true > TOL_SE * std / np.sqrt(N_REPS)


def test_gradient_stats_do_not_depend_on_chunking(medium_prompt):
    logits, _ = medium_prompt
    a = gradient_stats(logits, "grpo", 8, 5000, np.random.default_rng(3), chunk=5000)
    b = gradient_stats(logits, "grpo", 8, 5000, np.random.default_rng(3), chunk=5000)
    c = gradient_stats(logits, "grpo", 8, 5000, np.random.default_rng(3), chunk=777)
    assert a == b
    # the generator yields the same stream in any chunk size; only the moment merging differs
    np.testing.assert_allclose(a, c, rtol=1e-9)


def test_grpo_at_G_2_is_rloo():
    """Two different rewards: both give ±1 (GRPO up to its EPS); two equal ones: both 0."""
    r = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [6.0, 5.0]])
    np.testing.assert_allclose(advantages(r, "grpo"), advantages(r, "rloo"), rtol=0, atol=1e-5)


def test_group_std_overshoot_levels_off_at_sqrt_G_minus_1_and_batch_std_does_not():
    """The README's numbers: GRPO's E[g]/grad J tends to sqrt(G-1) as p -> 0 (one correct answer
    in a group: A = sqrt(G-1)); the batch std follows (G-1)/G / sqrt(p(1-p)): 19.6x at p = 0.002."""
    from rlvr.exact import bias_curve

    G, M = 8, 16
    grpo, _ = bias_curve("grpo", G, M, 0.0, np.array([1e-6, 0.002]))
    assert abs(grpo[0] - np.sqrt(G - 1)) < 1e-3 and abs(grpo[1] - 2.64) < 0.005
    p = 0.002
    batch, _ = bias_curve("batch_std", G, M, 0.0, np.array([p]))
    np.testing.assert_allclose(batch[0], (G - 1) / G / np.sqrt(p * (1 - p)), rtol=1e-3)
    assert abs(batch[0] - 19.6) < 0.05


def _pass_at_k_shares(f, k):
    """By brute force over every k-subset: G × each answer's share of the subsets' max rewards."""
    from itertools import combinations
    from math import comb

    G, share = len(f), np.zeros(len(f))
    for subset in combinations(range(G), k):
        for i in subset:
            share[i] += max(f[j] for j in subset)
    return G * share / comb(G, k)


@pytest.mark.parametrize("method,k", [("pkpo_k2", 2), ("pkpo_k4", 4)])
def test_pkpo_is_the_share_of_every_k_subsets_max(method, k):
    """Walder & Karkhanis 2025's transform, against its definition summed over all subsets (real
    rewards with ties; 0/1 rewards: k for a correct answer)."""
    rng = np.random.default_rng(k)
    r = np.round(rng.normal(size=(4, 7)), 1)
    r[0, :3] = r[0, 3]  # ties
    A = advantages(r, method)
    for row, a in zip(r, A):
        np.testing.assert_allclose(a, _pass_at_k_shares(row, k), rtol=0, atol=1e-12)
    binary = advantages(np.array([[1.0, 0, 0, 1, 0, 0, 0]]), method)
    assert np.allclose(binary[0, [0, 3]], k)


@pytest.mark.parametrize("p", [0.01, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("method,k,G", [("pkpo_k2", 2, 8), ("pkpo_k4", 4, 8), ("pkpo_k4", 4, 4)])
def test_pkpo_expected_gradient_is_the_gradient_of_pass_at_k(p, method, k, G):
    """Exactly (rlvr/exact.py): E[ĝ_0] = d pass@k / dz_0 = k (1 − p)^(k−1) p (1 − p)."""
    from rlvr.exact import exact_moments, uniform_wrong_prompt

    mean, _, _ = exact_moments(uniform_wrong_prompt(p, 16), method, G)
    assert abs(mean - k * (1 - p) ** (k - 1) * p * (1 - p)) < 1e-12


def test_grpo_passk_moves_only_a_lone_correct_answer():
    """verl's grpo_passk on 0/1 rewards: a group with exactly one correct answer gives it
    (1 − 0) / (N−1 std + EPS) = sqrt(G) (up to EPS); two or none correct give nothing."""
    from rlvr.estimators import EPS

    r = np.array([[0.0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [6, 5, 5, 5]])
    A = advantages(r, "grpo_passk")
    expected = np.zeros((4, 4))
    expected[0, 1] = 1 / (0.5 + EPS)  # N−1 std of one 1 among 4: 1/sqrt(4)
    expected[3, 0] = 1 / (0.5 + EPS)  # an offset changes nothing
    np.testing.assert_allclose(A, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("p", [0.01, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("G", [4, 8])
def test_grpo_passk_expected_gradient_is_that_of_pass_at_G_over_sqrt_G(p, G):
    """Exactly (rlvr/exact.py): only a group with one correct answer moves, that answer by
    a = 1 / (1/sqrt(G) + EPS), so E[ĝ_0] = G p (1 − p)^(G−1) · (1/G) · a · (1 − p) = a p (1 − p)^G,
    which is d pass@G / dz_0 = G p (1 − p)^G divided by sqrt(G), up to EPS: pass@G, not pass@k."""
    from rlvr.estimators import EPS
    from rlvr.exact import exact_moments, uniform_wrong_prompt

    mean, _, _ = exact_moments(uniform_wrong_prompt(p, 16), "grpo_passk", G)
    assert abs(mean - p * (1 - p) ** G / (1 / np.sqrt(G) + EPS)) < 1e-12
    assert abs(mean - G * p * (1 - p) ** G / np.sqrt(G)) < 1e-5 * G * p * (1 - p) ** G

def test_unlikeliness_scales_each_reward_by_its_likelihood_rank():
    """He et al. 2025: r_i (1 − β rank_i / G), rank 0 the least likely answer by log π_old(y),
    β = 0.25, then GRPO with the N−1 std. By hand for G = 4: log π = (−1, −3, −0.5, −2) gives
    ranks (2, 0, 3, 1), so the correct answers' rewards become 0.875, 0.8125 and 0.9375."""
    r = np.array([[1.0, 0.0, 1.0, 1.0]])
    A = advantages(r, "unlikeliness", logp=np.array([[-1.0, -3.0, -0.5, -2.0]]))
    scaled = np.array([0.875, 0.0, 0.8125, 0.9375])
    np.testing.assert_allclose(A[0], (scaled - scaled.mean()) / (scaled.std(ddof=1) + 1e-6),
                               rtol=0, atol=1e-12)
    assert A[0, 3] > A[0, 0] > A[0, 2]  # of the correct answers, the least likely gets the most
    # ties rank by position: the same answer drawn twice is ranked twice
    tied = advantages(np.array([[1.0, 1.0, 0.0]]), "unlikeliness", logp=np.array([[-1.0, -1.0, -2.0]]))
    scaled = np.array([1 - 0.25 / 3, 1 - 0.25 * 2 / 3, 0.0])
    np.testing.assert_allclose(tied[0], (scaled - scaled.mean()) / (scaled.std(ddof=1) + 1e-6),
                               rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="needs the log-probability of each sampled answer"):
        advantages(r, "unlikeliness")


def test_unlikeliness_is_refused_where_only_rewards_are_known():
    """The exact moments assume advantages depend on the rewards alone: the unlikeliness reward's
    also depend on which answers were drawn, so exact_moments and demo 2's config refuse it."""
    from rlvr.config import ConfigError, validate_config
    from rlvr.exact import exact_moments, uniform_wrong_prompt

    with pytest.raises(ValueError, match="'unlikeliness' ranks a group's answers"):
        exact_moments(uniform_wrong_prompt(0.3, 16), "unlikeliness", 8)
    with pytest.raises(ConfigError, match=r"gradient_stats.exact_curve.methods\[0\]: 'unlikeliness' ranks"):
        validate_config({"gradient_stats": {"exact_curve": {"methods": ["unlikeliness"]}}})


def test_known_vector_grpo_unbiased_std():
    np.testing.assert_allclose(advantages(R_3_OF_8, "grpo_unbiased_std")[0, [0, 3]], [1.2076, -0.7246],
                               atol=5e-5)
    np.testing.assert_allclose(advantages(R_3_OF_8, "dr_grpo"), advantages(R_3_OF_8, "group"))


def test_batch_estimators_use_the_whole_batch():
    r = np.array([[1, 0, 0, 0], [1, 1, 1, 0]], float)
    batch = r.std()  # population std of all 8 rewards
    np.testing.assert_allclose(advantages(r, "batch_std"), (r - r.mean(1, keepdims=True)) / (batch + 1e-6))
    x = r - r.mean(1, keepdims=True)
    np.testing.assert_allclose(advantages(r, "reinforce_pp_baseline"), (x - x.mean()) / (x.std() + 1e-6))


def test_oracle_and_optimal_baselines():
    pi = softmax(np.random.default_rng(0).normal(size=(3, 5)))
    r = np.array([[1, 0], [0, 0], [1, 1]], float) + 2.0
    np.testing.assert_allclose(advantages(r, "oracle", pi=pi, offset=2.0), r - (pi[:, :1] + 2.0))
    # the optimal constant baseline minimises the total variance of (r - b)(e_y - pi) over b
    p = pi[0]
    reward = np.array([3.0] + [2.0] * 4)
    s2 = ((np.eye(5) - p) ** 2).sum(axis=1)  # |e_y - pi|^2 per answer y
    grid = np.linspace(1.5, 3.5, 4001)
    risk = [(p * (reward - b) ** 2 * s2).sum() for b in grid]  # E|g|^2; E[g] does not depend on b
    b_star = 3.0 - advantages(np.array([[3.0]]), "optimal", pi=pi[:1], offset=2.0)[0, 0]
    assert abs(b_star - grid[np.argmin(risk)]) < 1e-3
    with pytest.raises(ValueError, match="needs the policy's probabilities"):
        advantages(r, "oracle")


# --- one sign of sample (Zhu et al. 2025): PSR, NSR, W-REINFORCE -------------------------------


@pytest.mark.parametrize("offset", [0.0, 5.0])
def test_sample_sign_advantages_are_the_papers(offset):
    """As RLVR-Decomposed a5d4e7c computes them from 0/1 scores: PSR A = score, NSR A = score − 1,
    W-REINFORCE λ·score on a correct answer and score − 1 on a wrong one; an offset changes nothing."""
    from rlvr.estimators import W_REINFORCE_LAMBDA

    score = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    r = score + offset
    np.testing.assert_array_equal(advantages(r, "psr", offset=offset), score)
    np.testing.assert_array_equal(advantages(r, "nsr", offset=offset), score - 1)
    np.testing.assert_array_equal(advantages(r, "w_reinforce", offset=offset),
                                  np.where(score == 1, W_REINFORCE_LAMBDA * score, score - 1))


@pytest.mark.parametrize("p", [0.05, 0.3, 0.8])
def test_sample_sign_expected_gradients_are_multiples_of_the_true_one(p):
    """On the tabular policy, exactly: PSR and NSR have E[ĝ] = ∇p (NSR is REINFORCE with the
    constant baseline 1), W-REINFORCE (1 + λ) ∇p."""
    from rlvr.estimators import W_REINFORCE_LAMBDA
    from rlvr.exact import exact_moments, uniform_wrong_prompt

    pi = uniform_wrong_prompt(p, 16)
    for method, factor in (("psr", 1.0), ("nsr", 1.0), ("w_reinforce", 1 + W_REINFORCE_LAMBDA)):
        mean, _, _ = exact_moments(pi, method, 8)
        assert abs(mean - factor * p * (1 - p)) < 1e-12, method


def test_psr_is_reinforce_without_a_baseline_bit_for_bit():
    """With 0/1 rewards PSR's advantages are REINFORCE's: the same training, to the bit."""
    from rlvr.training import make_row, train_seeds

    task = make_task(P=8, M=4)
    psr, none = ([out["logits"] for out in train_seeds(task, make_row(method, 20, 4, 4, 2.0, [0, 1]))]
                 for method in ("psr", "none"))
    np.testing.assert_array_equal(psr, none)
    nsr = train_seeds(task, make_row("nsr", 20, 4, 4, 2.0, [0]))[0]["logits"]
    assert np.abs(nsr - psr[0]).max() > 0.01  # NSR moves differently: the test can fail
