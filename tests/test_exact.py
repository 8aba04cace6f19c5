"""Exact gradient moments (rlvr/exact.py) against Monte Carlo (rlvr/metrics.gradient_stats) and
against the identities they must meet. Statistical checks state their tolerance in standard errors."""

import numpy as np
import pytest

from rlvr import ESTIMATORS, gradient_stats, make_task
from rlvr.exact import exact_moments, uniform_wrong_prompt
from rlvr.policy import softmax


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


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_the_mean_advantage_given_an_answers_reward_is_each_estimators_own(p):
    """advantage_given_reward against what each estimator's formula gives by hand: REINFORCE
    pays a correct answer 1 and a wrong one 0; RLOO's baseline is the mean of the G − 1 others,
    so E[A | correct] = 1 − p and E[A | wrong] = −p; NSR pays only wrong answers, −1. And for
    any estimator, c1 − c0 is exact_moments' E[ĝ_0] / (p(1 − p)) (answers summed)."""
    from rlvr.exact import advantage_given_reward

    assert advantage_given_reward(p, "none", 8) == pytest.approx((1.0, 0.0), abs=1e-12)
    assert advantage_given_reward(p, "rloo", 8) == pytest.approx((1 - p, -p), abs=1e-12)
    assert advantage_given_reward(p, "nsr", 8) == pytest.approx((0.0, -1.0), abs=1e-12)
    c1, c0 = advantage_given_reward(p, "grpo", 8)
    assert c1 - c0 == pytest.approx(exact_moments(uniform_wrong_prompt(p, 16), "grpo", 8)[0] / (p * (1 - p)))
    with pytest.raises(ValueError, match="learned V"):
        advantage_given_reward(p, "learned", 8)
