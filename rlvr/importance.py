"""The corrections of off-policy rollouts: answers drawn by a sampler other than π_old weigh
w(ρ) with ρ = π_old(y)/π_sampler(y), the weight multiplying the advantage (verl's rollout
correction). rlvr/objective.py applies them in the update; rlvr/exact.py gives the exact
expected gradient under each one.
"""

import numpy as np


def _no_correction(rho, cap):
    return np.ones_like(rho)


def _full_is(rho, cap):
    return rho


def _truncated_is(rho, cap):
    return np.minimum(rho, cap)


def _masked_is(rho, cap):
    return np.where((rho >= 1 / cap) & (rho <= cap), rho, 0.0)


# corrections of off-policy rollouts: name -> w(ρ, C), each answer's weight (is_weights)
IS_CORRECTIONS = {
    "none": _no_correction,
    "full": _full_is,
    "truncated": _truncated_is,
    "masked": _masked_is,
}


def is_weights(rho, correction, cap):
    """Each sampled answer's importance weight from ρ = π_old(y)/π_sampler(y): [...] -> [...].

    none: 1 (the sampler's answers taken as π_old's); full: ρ, unbiased; truncated: min(ρ, C)
        (TIS; verl rollout_is="sequence" with rollout_is_threshold C, at verl b178a3c);
    masked: ρ where 1/C ≤ ρ ≤ C, else 0: the answer is dropped (verl rollout_rs="seq_sum_k1" with
        threshold "1/C_C" beside rollout_is="sequence", which then never truncates).
    The weight multiplies the advantage: the loss's w·min(ρ'A, clip(ρ')A) is min(ρ'wA, clip(ρ')wA)
    for w ≥ 0, so the clip and the dual clip see the same answers as verl's weighted loss.
    """
    if correction not in IS_CORRECTIONS:
        raise ValueError(f"unknown is_correction {correction!r}; allowed: {', '.join(IS_CORRECTIONS)}")
    return IS_CORRECTIONS[correction](rho, cap)
