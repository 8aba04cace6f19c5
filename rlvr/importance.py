"""The corrections of off-policy rollouts: answers drawn by a sampler other than π_old weigh
w(ρ) with ρ = π_old(y)/π_sampler(y), the weight multiplying the advantage (verl's rollout
correction). rlvr/objective.py applies them in the update; rlvr/exact.py gives the exact
expected gradient under each one.
"""

from typing import NamedTuple

import numpy as np


def _no_correction(rho, cap, low):
    return np.ones_like(rho)


def _full_is(rho, cap, low):
    return rho


def _truncated_is(rho, cap, low):
    return np.clip(rho, 0.0 if low is None else low, cap)


def _masked_is(rho, cap, low):
    return np.where((rho >= (1 / cap if low is None else low)) & (rho <= cap), rho, 0.0)


class Correction(NamedTuple):
    weight: object  # w(ρ, C, C_low) -> each answer's weight (is_weights); C_low None: its own
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


def is_weights(rho, correction, cap, cap_low=None):
    """Each sampled answer's importance weight from ρ = π_old(y)/π_sampler(y): [...] -> [...].

    cap_low C_low (the knob is_cap_low; None or < 0: the correction's own, 1/C for the masks and
    none for truncation) is the lower bound of the capped corrections:
    none: 1 (the sampler's answers taken as π_old's); full: ρ, unbiased; truncated: min(ρ, C)
        (TIS; verl rollout_is="sequence" with rollout_is_threshold C, at verl b178a3c), and with
        C_low clamp(ρ, C_low, C) (OpenRLHF 3c3be62's "tis" clamps each token's ratio to [0.5, 5]);
    masked: ρ where 1/C ≤ ρ ≤ C, else 0: the answer is dropped (verl rollout_rs="seq_sum_k1" with
        threshold "1/C_C" beside rollout_is="sequence", which then never truncates), and stays in
        the loss's count of answers; with C_low 0, TRL f2cd577's default "sequence_mask" at
        vllm_importance_sampling_clip_max 3 (ρ above 3 set to 0, no lower bound);
    masked_renorm: masked's weights, and the dropped answers leave the loss's count (verl's
        rejection rewrites response_mask): under token-mean the loss is divided by the kept
        answers' tokens, under seq-mean-token-mean by the kept answers; seq-mean-token-sum-norm's
        normaliser is a constant, so there it is masked (as in verl's agg_loss).
    The weight multiplies the advantage: the loss's w·min(ρ'A, clip(ρ')A) is min(ρ'wA, clip(ρ')wA)
    for w ≥ 0, so the clip and the dual clip see the same answers as verl's weighted loss.
    """
    if correction not in IS_CORRECTIONS:
        raise ValueError(f"unknown is_correction {correction!r}; allowed: {', '.join(IS_CORRECTIONS)}")
    if cap_low is not None and cap_low < 0:
        cap_low = None  # the knob's null (its spec value −1): the correction's own
    elif cap_low is not None and cap_low >= 1:
        raise ValueError(f"is_cap_low = {cap_low!r} must be in [0, 1): a lower bound at 1 or above "
                         "would cut the on-policy answers' weight ρ = 1")
    return IS_CORRECTIONS[correction].weight(rho, cap, cap_low)
