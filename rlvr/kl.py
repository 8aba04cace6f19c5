"""Schulman's estimators of KL(π‖π_ref) at a sampled answer, and their slopes.

On the tabular policy an answer is one choice, so the estimators see the whole answer, as if it
were one token; differentiated at the sampled y, an estimator's gradient w.r.t. the logits is
(dk/dℓ)(e_y − π) with ℓ = log π(y)/π_ref(y). rlvr/objective.py puts them in the loss or the
reward; rlvr/exact.py gives each one's exact expected gradient.
"""

import numpy as np

# Schulman's estimators of KL(π‖π_ref) at a sampled answer, from ℓ = log π(y)/π_ref(y): name ->
# (k(ℓ), dk/dℓ). Differentiated at the sampled y, k's gradient w.r.t. the logits is (dk/dℓ)(e_y − π).
KL_ESTIMATORS = {
    "k1": (lambda lr: lr, np.ones_like),  # ℓ; slope 1
    "k2": (lambda lr: 0.5 * lr**2, lambda lr: lr),  # ℓ²/2; slope ℓ
    "k3": (lambda lr: np.exp(-lr) - 1 + lr,  # π_ref/π − 1 + ℓ ≥ 0
           lambda lr: 1 - np.exp(-lr)),  # slope 1 − π_ref/π
}
KL_PLACEMENTS = ("loss", "reward")


def _kl(estimator):
    if estimator not in KL_ESTIMATORS:
        raise ValueError(f"unknown KL estimator {estimator!r}; allowed: {', '.join(KL_ESTIMATORS)}")
    return KL_ESTIMATORS[estimator]


def kl_estimate(log_ratio, estimator):
    """Schulman's estimator of KL(π‖π_ref) at sampled answers, from ℓ = log π(y)/π_ref(y) (any
    shape -> the same shape): k1 = ℓ, k2 = ℓ²/2, k3 = π_ref/π − 1 + ℓ (≥ 0)."""
    return _kl(estimator)[0](log_ratio)


def kl_estimate_slope(log_ratio, estimator):
    """dk/dℓ: differentiated at the sampled y, k's gradient w.r.t. the logits is
    (dk/dℓ)(e_y − π). k1: 1, k2: ℓ, k3: 1 − π_ref/π."""
    return _kl(estimator)[1](log_ratio)
