"""The corrections of off-policy rollouts: answers drawn by a sampler other than π_old weigh
w(ρ) with ρ = π_old(y)/π_sampler(y), the weight multiplying the advantage (verl's rollout
correction). rlvr/objective.py applies them in the update; rlvr/exact.py gives the exact
expected gradient under each one.
"""

from typing import NamedTuple

import numpy as np


def _no_correction(rho, cap):
    return np.ones_like(rho)


def _full_is(rho, cap):
    return rho


def _truncated_is(rho, cap):
    return np.minimum(rho, cap)


def _masked_is(rho, cap):
    return np.where((rho >= 1 / cap) & (rho <= cap), rho, 0.0)


class Correction(NamedTuple):
    weight: object  # w(ρ, C) -> each answer's weight (is_weights)
    # the answers it drops (weight 0) also leave the loss's count of answers, or of tokens under
    # token-mean, as verl's rollout_rs does by rewriting response_mask (training.loss_weights)
    renormalise: bool = False


# corrections of off-policy rollouts: name -> Correction
IS_CORRECTIONS = {
    "none": Correction(_no_correction),
    "full": Correction(_full_is),
    "truncated": Correction(_truncated_is),
    "masked": Correction(_masked_is),
    "masked_renorm": Correction(_masked_is, renormalise=True),
}


def is_weights(rho, correction, cap):
    """Each sampled answer's importance weight from ρ = π_old(y)/π_sampler(y): [...] -> [...].

    none: 1 (the sampler's answers taken as π_old's); full: ρ, unbiased; truncated: min(ρ, C)
        (TIS; verl rollout_is="sequence" with rollout_is_threshold C, at verl b178a3c);
    masked: ρ where 1/C ≤ ρ ≤ C, else 0: the answer is dropped (verl rollout_rs="seq_sum_k1" with
        threshold "1/C_C" beside rollout_is="sequence", which then never truncates), and stays in
        the loss's count of answers;
    masked_renorm: masked's weights, and the dropped answers leave the loss's count (verl's
        rejection rewrites response_mask): under token-mean the loss is divided by the kept
        answers' tokens, under seq-mean-token-mean by the kept answers; seq-mean-token-sum-norm's
        normaliser is a constant, so there it is masked (as in verl's agg_loss).
    The weight multiplies the advantage: the loss's w·min(ρ'A, clip(ρ')A) is min(ρ'wA, clip(ρ')wA)
    for w ≥ 0, so the clip and the dual clip see the same answers as verl's weighted loss.
    """
    if correction not in IS_CORRECTIONS:
        raise ValueError(f"unknown is_correction {correction!r}; allowed: {', '.join(IS_CORRECTIONS)}")
    return IS_CORRECTIONS[correction].weight(rho, cap)
