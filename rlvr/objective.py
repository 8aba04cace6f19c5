"""The rest of GRPO's objective, as weights on each sampled answer's score gradient.

On the tabular policy every term of the loss differentiates to (weight) x (e_y − π) for the
sampled answer y, so a whole objective is one weight per answer, W: [n, G], and the update is
policy.policy_gradient(y, W, π). This module gives those weights:

- the PPO clipped surrogate over μ inner updates on one batch (GRPO's objective; TRL
  `num_iterations`/`epsilon`/`epsilon_high`, verl `clip_ratio_low/high/c`): an answer's weight
  is A·ρ with ρ = π(y)/π_old(y), or 0 where the clip takes over;
- the KL to the reference: Schulman's estimators k1/k2/k3 of KL(π‖π_ref) at the sampled answer,
  either subtracted from the reward (verl `use_kl_in_reward`) or added to the loss (GRPO, TRL);
- loss aggregation over answers of different lengths (verl `loss_agg_mode`, TRL `loss_type`).

An answer is one choice in this toy: its log-probability is the sum of its tokens', so
Σ_t ∇ log π(o_t) = e_y − π, and the KL estimators see the whole answer, as if it were one token.
"""

import math

import numpy as np

KL_ESTIMATORS = ("k1", "k2", "k3")
KL_PLACEMENTS = ("loss", "reward")
LOSS_AGGREGATIONS = ("seq-mean-token-sum-norm", "seq-mean-token-mean", "token-mean")


def kl_estimate(log_ratio, estimator):
    """Schulman's estimators of KL(π‖π_ref) at sampled answers, from ℓ = log π(y)/π_ref(y):
    k1 = ℓ, k2 = ℓ²/2, k3 = π_ref/π − 1 + ℓ (≥ 0). Any shape -> the same shape."""
    if estimator == "k1":
        return log_ratio
    if estimator == "k2":
        return 0.5 * log_ratio**2
    if estimator == "k3":
        return np.exp(-log_ratio) - 1 + log_ratio
    raise ValueError(f"unknown KL estimator {estimator!r}; allowed: {', '.join(KL_ESTIMATORS)}")


def kl_estimate_slope(log_ratio, estimator):
    """dk/dℓ: differentiated at the sampled y, k's gradient w.r.t. the logits is
    (dk/dℓ)(e_y − π). k1: 1, k2: ℓ, k3: 1 − π_ref/π."""
    if estimator == "k1":
        return np.ones_like(log_ratio)
    if estimator == "k2":
        return log_ratio
    if estimator == "k3":
        return 1 - np.exp(-log_ratio)
    raise ValueError(f"unknown KL estimator {estimator!r}; allowed: {', '.join(KL_ESTIMATORS)}")


def clipped_surrogate_weights(A, ratio, clip_low, clip_high, clip_c=math.inf):
    """Weights of the PPO clipped surrogate min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A), with verl's
    dual clip max(·, c·A) for A < 0 (c = inf: none): A, ratio: [n, G] -> (W, clipped): [n, G].

    Where the clipped term is the one taken, the objective is constant in the logits, so the
    answer's weight is 0 (`clipped`); elsewhere d(ρA)/dz = A ρ (e_y − π), weight Aρ.
    """
    clipped = ((A > 0) & (ratio > 1 + clip_high)) | ((A < 0) & (ratio < 1 - clip_low))
    if clip_c < math.inf:
        clipped |= (A < 0) & (ratio > clip_c)
    return np.where(clipped, 0.0, A * ratio), clipped


def aggregation_weights(mode, length, batch_tokens=None, batch_answers=None, unit=1.0):
    """Each answer's share of the loss under an aggregation mode, in units where every mode
    gives 1 to an answer of `unit` tokens in a batch of such answers (so the lr means the same):
    length: [n, G] tokens of each sampled answer -> [n, G], or None for weight 1 everywhere.

    seq-mean-token-sum-norm (Dr. GRPO): a constant normaliser, every answer 1 (the toy's own loss);
    seq-mean-token-mean (GRPO, TRL "grpo", verl's default): an answer's token losses averaged,
        unit / length: a long answer moves its probability less;
    token-mean (DAPO): every token of the batch alike, batch_answers · unit / batch_tokens:
        one scale for the whole batch ([n, 1] arrays, for a batch made of several seeds' rows).
    """
    if mode == "seq-mean-token-sum-norm":
        return None
    if mode == "seq-mean-token-mean":
        return unit / length
    if mode == "token-mean":
        return np.broadcast_to(batch_answers * unit / batch_tokens, length.shape)
    raise ValueError(f"unknown loss aggregation {mode!r}; allowed: {', '.join(LOSS_AGGREGATIONS)}")
