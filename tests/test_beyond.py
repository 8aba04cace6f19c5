"""Issue 4: exact moments, the field's estimators, dynamic sampling, zero-signal prediction,
the unbiased pass@k estimator. Statistical checks state their tolerance in standard errors."""

from math import comb

import numpy as np
import pytest

from rlvr import ESTIMATORS, advantages, gradient_stats, make_task, train
from rlvr.exact import exact_moments, uniform_wrong_prompt
from rlvr.metrics import pass_at_k, pass_at_k_unbiased
from rlvr.policy import softmax

R_3_OF_8 = np.array([[1, 1, 1, 0, 0, 0, 0, 0]], float)


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


@pytest.mark.parametrize("method", [m for m in sorted(ESTIMATORS) if "logp" not in ESTIMATORS[m].needs])
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_monte_carlo_within_3_se_of_exact(method, offset):
    task = make_task()
    logits = task["logits"][100]  # the first medium prompt
    n = 100_000
    mean, std, total_var = gradient_stats(logits, method, 8, n, np.random.default_rng(7), offset)
    ex_mean, ex_std, ex_var = exact_moments(softmax(logits[None])[0], method, 8, offset)
    assert abs(mean - ex_mean) < 3 * std / np.sqrt(n)  # 3 s.e. of the Monte Carlo mean
    assert abs(std / ex_std - 1) < 0.02  # the spread within 2% (its s.e. is about 0.3%)
    assert abs(total_var / ex_var - 1) < 0.03


@pytest.mark.parametrize("p", [0.01, 0.2, 0.5, 0.9])
def test_exact_identities(p):
    pi = uniform_wrong_prompt(p, 16)
    true = p * (1 - p)
    for m in ("none", "rloo", "oracle", "optimal"):
        assert exact_moments(pi, m, 8)[0] == pytest.approx(true, rel=1e-10), m
    assert exact_moments(pi, "group", 8)[0] == pytest.approx(7 / 8 * true, rel=1e-10)
    # with a population batch std sqrt(p(1-p)) the batch estimator is the group mean rescaled
    assert exact_moments(pi, "batch_std", 8)[0] == pytest.approx(7 / 8 * true / np.sqrt(true), rel=1e-4)


def test_grpo_bias_depends_on_difficulty():
    ratio = {p: exact_moments(uniform_wrong_prompt(p, 16), "grpo", 8)[0] / (p * (1 - p))
             for p in (0.01, 0.2, 0.5)}
    assert ratio[0.01] > ratio[0.2] > ratio[0.5] > 1


def test_chen_estimator_formula_and_unbiasedness():
    for n, c, k in [(10, 3, 2), (256, 1, 64), (20, 0, 5), (5, 5, 3), (20, 2, 19)]:
        assert pass_at_k_unbiased(n, c, k)[0] == pytest.approx(1 - comb(n - c, k) / comb(n, k))
    # 20,000 replicate draws of c ~ Binomial(n, p): mean within 4 s.e. of the exact pass@k
    rng = np.random.default_rng(0)
    n, k, p = 32, 8, 0.05
    est = pass_at_k_unbiased(n, rng.binomial(n, p, size=20_000), k)
    assert abs(est.mean() - pass_at_k(p, k)) < 4 * est.std() / np.sqrt(len(est))


def test_zero_signal_fraction_matches_its_prediction():
    task = make_task()
    for G, pps in ((2, 64), (8, 16)):
        out = train(task, "grpo", 300, pps, G, 2.0, 0)
        n = 300 * pps
        # the binomial s.e. bounds that of a sum of Bernoullis with varying probabilities
        se = np.sqrt(out["zero_frac_pred"] * (1 - out["zero_frac_pred"]) / n)
        assert abs(out["zero_frac"] - out["zero_frac_pred"]) < 4 * se, G


def test_dynamic_sampling_counts_every_answer_and_fills_with_signal():
    task = make_task()
    plain = train(task, "grpo", 100, 16, 8, 2.0, 0)
    dyn = train(task, "grpo", 100, 16, 8, 2.0, 0, max_rounds=4)
    assert plain["answers"] == 100 * 16 * 8 and plain["kept_frac"] == 1.0
    assert dyn["answers"] > plain["answers"]
    assert dyn["answers"] % 8 == 0 and dyn["answers"] <= 4 * plain["answers"]
    assert 0 < dyn["kept_frac"] <= 1
    # same steps: dropping no-signal groups and refilling learns faster
    assert dyn["history"][-1].pass1 > plain["history"][-1].pass1
    # one round and filtering: fewer groups are used than drawn
    one = train(task, "grpo", 100, 16, 8, 2.0, 0, max_rounds=1)
    assert one["answers"] == plain["answers"] and one["kept_frac"] == pytest.approx(1 - one["zero_frac"])
