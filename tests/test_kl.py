"""Issue 14, item 2: the exact expected gradient of each KL estimator as a loss or in the reward;
issue 13, item 4: the first-order law of a step's entropy change.

The five laws (rlvr.exact.KL_GRADIENT_LAWS, k3 in the reward among them) to 1e-12 against the
closed-form gradients of the two KLs, and every (estimator, placement) against finite
differences taken without the closed forms: of each sampled answer's estimator (loss) or of
Σ_y π_y k_y with k frozen (reward).
"""

import numpy as np
import pytest

from rlvr.exact import (
    KL_ESTIMATORS,
    KL_GRADIENT_LAWS,
    KL_PLACEMENTS,
    kl,
    kl_estimates,
    kl_gradient,
    kl_true_gradients,
)
from rlvr.policy import softmax


@pytest.fixture
def policies():
    rng = np.random.default_rng(0)
    z, z_ref = rng.normal(size=(5, 7)) * 2, rng.normal(size=(5, 7)) * 2  # [n, M]
    return z, softmax(z), softmax(z_ref)


def test_the_kl_gradient_laws(policies):
    """Each law a ∇KL(π‖π_ref) + b ∇KL(π_ref‖π) equals the exact expected gradient, and k2 in the
    reward, which has no law, is no such combination here."""
    _, pi, ref = policies
    reverse, forward = kl_true_gradients(pi, ref)
    every = {(e, p) for e in KL_ESTIMATORS for p in KL_PLACEMENTS}
    assert set(KL_GRADIENT_LAWS) == every - {("k2", "reward")}
    for (estimator, placement), (a, b) in KL_GRADIENT_LAWS.items():
        np.testing.assert_allclose(kl_gradient(pi, ref, estimator, placement), a * reverse + b * forward,
                                   rtol=0, atol=1e-12, err_msg=f"{estimator} in the {placement}")
    assert np.abs(forward - reverse).max() > 0.1  # the two KLs' gradients really differ here
    k2 = kl_gradient(pi, ref, "k2", "reward").ravel()
    basis = np.stack([reverse.ravel(), forward.ravel()], axis=1)
    fit = np.linalg.lstsq(basis, k2, rcond=None)[0]
    assert np.abs(basis @ fit - k2).max() > 1e-3  # not in their span: a law for it would be wrong


def _numerical_gradient(f, z, h=1e-6):
    """Central differences of a scalar function of the logits z: [M]."""
    g = np.zeros_like(z)
    for m in range(len(z)):
        dz = np.zeros_like(z)
        dz[m] = h
        g[m] = (f(z + dz) - f(z - dz)) / (2 * h)
    return g


@pytest.mark.parametrize("placement", KL_PLACEMENTS)
@pytest.mark.parametrize("estimator", KL_ESTIMATORS)
def test_each_estimator_and_placement_against_finite_differences(policies, estimator, placement):
    z_all, pi_all, ref_all = policies
    for z, pi, ref in zip(z_all, pi_all, ref_all):
        if placement == "loss":  # E_y~π [∇ k(y)]: differentiate each answer's estimator, then average
            per_answer = [
                _numerical_gradient(lambda z_, y=y, ref=ref: kl_estimates(softmax(z_), ref, estimator)[y], z)
                for y in range(len(z))]
            expected = sum(p * g for p, g in zip(pi, per_answer))
        else:  # the score function: ∇ Σ_y π_y k_y with k frozen at the current policy
            k = kl_estimates(pi, ref, estimator)
            expected = _numerical_gradient(lambda z_, k=k: (softmax(z_) * k).sum(), z)
        np.testing.assert_allclose(kl_gradient(pi, ref, estimator, placement), expected, rtol=0, atol=1e-8)


def test_true_gradients_are_the_gradients_of_the_kls(policies):
    z_all, pi_all, ref_all = policies
    reverse, forward = kl_true_gradients(pi_all, ref_all)
    for i, (z, ref) in enumerate(zip(z_all, ref_all)):
        np.testing.assert_allclose(reverse[i],
                                   _numerical_gradient(lambda z_, ref=ref: kl(softmax(z_), ref), z),
                                   atol=1e-8)
        np.testing.assert_allclose(forward[i],
                                   _numerical_gradient(lambda z_, ref=ref: kl(ref, softmax(z_)), z),
                                   atol=1e-8)


def test_one_prompt_and_a_batch_agree_and_bad_names_are_refused(policies):
    _, pi, ref = policies
    np.testing.assert_array_equal(kl_gradient(pi[2], ref[2], "k3", "reward"),
                                  kl_gradient(pi, ref, "k3", "reward")[2])
    assert abs(kl(pi[0], pi[0])) < 1e-15 and kl(pi[0], ref[0]) > 0
    with pytest.raises(ValueError, match="unknown KL estimator 'k4'; allowed: k1, k2, k3"):
        kl_gradient(pi, ref, "k4", "loss")
    with pytest.raises(ValueError, match="unknown KL placement 'advantage'; allowed: loss, reward"):
        kl_gradient(pi, ref, "k1", "advantage")


def test_one_steps_entropy_change_follows_the_first_order_covariance_law():
    """Cui et al. 2025 on one GRPO step of a group of 8: ΔH = −Cov_π(log π, Δz) + O(lr²). At
    every lr the remainder is below 0.5 lr² |g|² per prompt (0.16 lr² |g|² at most here), and it
    shrinks 100-fold when lr shrinks 10-fold: the law is the whole first-order term."""
    from rlvr.estimators import advantages
    from rlvr.exact import entropy, entropy_change_first_order
    from rlvr.policy import policy_gradient, sample_answers

    rng = np.random.default_rng(7)
    z = rng.normal(size=(6, 10)) * 1.5  # [n, M]
    pi = softmax(z)
    y = sample_answers(pi, 8, rng)
    g = policy_gradient(y, advantages((y == 0) * 1.0, "grpo"), pi)  # [n, M]
    remainders = []
    for lr in (0.1, 0.01, 0.001):
        actual = entropy(softmax(z + lr * g)) - entropy(pi)
        predicted = entropy_change_first_order(pi, lr * g)
        remainder = np.abs(actual - predicted)
        # second order: |remainder| <= C lr² |g|² with C = 0.5 (3x the largest measured, 0.16)
        assert (remainder <= 0.5 * lr**2 * (g**2).sum(axis=1) + 1e-15).all(), (lr, remainder)
        remainders.append(remainder.max())
    assert 50 < remainders[0] / remainders[1] < 200 and 50 < remainders[1] / remainders[2] < 200
    assert np.abs(entropy_change_first_order(pi, 0.1 * g)).max() > 1e-3  # the step moves the entropy
