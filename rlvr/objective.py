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

from typing import NamedTuple

import numpy as np

from .policy import log_softmax, policy_gradient, softmax

KL_ESTIMATORS = ("k1", "k2", "k3")
KL_PLACEMENTS = ("loss", "reward")
LOSS_AGGREGATIONS = ("seq-mean-token-sum-norm", "seq-mean-token-mean", "token-mean")


class Objective(NamedTuple):
    """What each step maximises beyond the advantages; the defaults are the
    lecture's: one on-policy update per batch, no KL, every answer counted once."""

    epochs: int = 1  # μ: updates on each batch; ρ = π/π_old is clipped from the second on
    clip_low: float = 0.2  # ε_low: ρ below 1 − ε_low stops pushing a negative advantage
    clip_high: float = 0.2  # ε_high: ρ above 1 + ε_high stops pushing a positive one (DAPO: 0.28)
    clip_c: float = 0.0  # verl's dual clip: ρ above c (> 1) stops pushing a negative advantage; 0: none
    kl_beta: float = 0.0  # β of the KL to the reference; 0: none
    kl_estimator: str = "k3"  # k1, k2 or k3 (TRL's and verl's low_var_kl)
    kl_placement: str = "loss"  # "loss" (GRPO, TRL) or "reward" (verl use_kl_in_reward)
    loss_agg: str = "seq-mean-token-sum-norm"  # how answers of different lengths are weighted

    def check(self):
        """ValueError naming the first field that is not allowed."""
        if not (isinstance(self.epochs, int) and self.epochs >= 1):
            raise ValueError(f"epochs = {self.epochs!r} must be a whole number >= 1")
        if not 0 < self.clip_low < 1:
            raise ValueError(f"clip_low = {self.clip_low!r} must be in (0, 1)")
        if not self.clip_high > 0:
            raise ValueError(f"clip_high = {self.clip_high!r} must be > 0")
        if not (self.clip_c > 1 or self.clip_c == 0):
            raise ValueError(f"clip_c = {self.clip_c!r} must be > 1 (or 0: no dual clip)")
        if not self.kl_beta >= 0:
            raise ValueError(f"kl_beta = {self.kl_beta!r} must be >= 0")
        for name, allowed in (("kl_estimator", KL_ESTIMATORS), ("kl_placement", KL_PLACEMENTS),
                              ("loss_agg", LOSS_AGGREGATIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} = {getattr(self, name)!r}; allowed: {', '.join(allowed)}")


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


def clipped_surrogate_weights(A, ratio, clip_low, clip_high, clip_c=0.0):
    """Weights of the PPO clipped surrogate min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A), with verl's
    dual clip max(·, c·A) for A < 0 (c = 0: none): A, ratio: [n, G] -> (W, clipped): [n, G].

    Where the clipped term is the one taken, the objective is constant in the logits, so the
    answer's weight is 0 (`clipped`); elsewhere d(ρA)/dz = A ρ (e_y − π), weight Aρ.
    """
    clipped = ((A > 0) & (ratio > 1 + clip_high)) | ((A < 0) & (ratio < 1 - clip_low))
    if clip_c:
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


def policy_updates(z, y, A, pi_old, lr, obj, ref_y=None, gain=None, shared=None):
    """The obj.epochs (μ) updates of one batch, as GRPO's inner loop: z: [R, M] logits of π_old,
    y: [R, G] the answers sampled from it, A: [R, G] their advantages, pi_old = softmax(z): [R, M],
    ref_y: [R, G] log π_ref(y) (read when obj.kl_beta), gain: [R, G] aggregation weights (None: 1),
    shared(z_before, z_after) -> [R, M]: what weights shared across prompts add to these rows'
    logits after each update (training's shared_lr; None: none)
    -> (z after the updates: [R, M], clipped: [R] (answer, update) pairs the clip zeroed per row).

    Each update ascends (1/G) Σ_i gain_i [min(ρ_i A_i, clip(ρ_i) A_i) − β k(y_i)] with
    ρ = π(y)/π_old(y); the first is on-policy (ρ = 1 exactly, nothing clipped), so with μ = 1,
    β = 0 and no gain it is the lecture's step, bit for bit.
    """
    clipped_rows = np.zeros(len(z), np.int64)
    kl_loss = obj.kl_beta and obj.kl_placement == "loss"  # (in the reward it is in A already)
    if obj.epochs > 1 or kl_loss:
        logp_old = np.take_along_axis(log_softmax(z), y, axis=1)  # [R, G]: log π_old(y)
    for epoch in range(obj.epochs):
        if epoch == 0:
            pi, W, logp = pi_old, A, (logp_old if kl_loss else None)
        else:
            pi = softmax(z)
            logp = np.take_along_axis(log_softmax(z), y, axis=1)  # [R, G]: log π(y)
            W, clipped = clipped_surrogate_weights(A, np.exp(logp - logp_old), obj.clip_low,
                                                   obj.clip_high, obj.clip_c)
            clipped_rows += clipped.sum(axis=1)
        if kl_loss:  # GRPO, TRL: + β k(y) in the loss
            W = W - obj.kl_beta * kl_estimate_slope(logp - ref_y, obj.kl_estimator)
        if gain is not None:
            W = W * gain
        z_next = z + lr * policy_gradient(y, W, pi)
        z = z_next if shared is None else z_next + shared(z, z_next)
    return z, clipped_rows
