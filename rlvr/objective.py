"""The rest of GRPO's objective, as weights on each sampled answer's score gradient.

On the tabular policy every term of the loss differentiates to (weight) x (e_y − π) for the
sampled answer y, so a whole objective is one weight per answer, W: [n, G], and the update is
policy.policy_gradient(y, W, π). This module gives those weights:

- the PPO clipped surrogate over μ inner updates on one batch (GRPO's objective; TRL
  `num_iterations`/`epsilon`/`epsilon_high`, verl `clip_ratio_low/high/c`): an answer's weight
  is A·ρ with ρ = π(y)/π_old(y), or 0 where the clip takes over;
- the KL to the reference: Schulman's estimators k1/k2/k3 of KL(π‖π_ref) at the sampled answer
  (rlvr/kl.py), either subtracted from the reward (verl `use_kl_in_reward`) or added to the loss
  (GRPO, TRL);
- loss aggregation over answers of different lengths (verl `loss_agg_mode`, TRL `loss_type`);
- the correction of off-policy rollouts (rlvr/importance.py, verl's rollout correction): answers
  drawn by a sampler other than π_old weigh w(ρ) with ρ = π_old(y)/π_sampler(y), the weight
  multiplying A.

And one exact fact of those updates: the expected change of the logits under rewards that ignore
the answer (random_reward_logit_change).

An answer is one choice in this toy: its log-probability is the sum of its tokens', so
Σ_t ∇ log π(o_t) = e_y − π, and the KL estimators see the whole answer, as if it were one token.
"""

from collections import namedtuple

import numpy as np

from .estimators import advantages
from .kl import kl_estimate_slope
from .knobs import KNOBS, OBJECTIVE
from .policy import log_softmax, policy_gradient, softmax


class Objective(namedtuple("Objective", OBJECTIVE,
                           defaults=[KNOBS[name].spec_default for name in OBJECTIVE])):
    """What each step maximises beyond the advantages: the objective's knobs (rlvr/knobs.py gives
    each one's meaning, default and allowed values); the defaults are the lecture's: one on-policy
    update per batch, no KL, every answer counted once."""

    __slots__ = ()

    @classmethod
    def of(cls, row):
        """The objective of a training row (rlvr/specs.py's TrainRow: its objective knobs)."""
        return cls(**{name: getattr(row, name) for name in OBJECTIVE})

    @property
    def kl_in_reward(self):
        """Whether a KL penalty is subtracted from the reward (verl use_kl_in_reward), so that
        the estimator sees shaped rewards."""
        return bool(self.kl_beta) and self.kl_placement == "reward"

    def check(self):
        """ValueError naming the first field that is not allowed."""
        for name, value in self._asdict().items():
            problem = KNOBS[name].problem(value)
            if problem:
                raise ValueError(problem)


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


def _every_answer_alike(length, batch_tokens, batch_answers, unit):
    return None


def _answer_tokens_averaged(length, batch_tokens, batch_answers, unit):
    return unit / length


def _batch_tokens_alike(length, batch_tokens, batch_answers, unit):
    return np.broadcast_to(batch_answers * unit / batch_tokens, length.shape)


# loss aggregation modes: name -> weights(length, batch_tokens, batch_answers, unit) (aggregation_weights)
LOSS_AGGREGATIONS = {
    "seq-mean-token-sum-norm": _every_answer_alike,
    "seq-mean-token-mean": _answer_tokens_averaged,
    "token-mean": _batch_tokens_alike,
}


def aggregation_weights(mode, length, batch_tokens=None, batch_answers=None, unit=1.0):
    """Each answer's share of the loss under an aggregation mode, in units where every mode
    gives 1 to an answer of `unit` tokens in a batch of such answers (so the lr means the same):
    length: [n, G] tokens of each sampled answer -> [n, G], or None for weight 1 everywhere.

    seq-mean-token-sum-norm (Dr. GRPO): a constant normaliser, every answer 1 (the toy's own loss);
    seq-mean-token-mean (GRPO, TRL loss_type "grpo"): an answer's token losses averaged,
        unit / length: a long answer moves its probability less;
    token-mean (DAPO; the default of verl's loss_agg_mode and of TRL's loss_type "dapo", at verl
        b178a3c and TRL f2cd577): every token of the batch alike, batch_answers · unit / batch_tokens:
        one scale for the whole batch ([n, 1] arrays, for a batch made of several seeds' rows).
    """
    if mode not in LOSS_AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {mode!r}; allowed: {', '.join(LOSS_AGGREGATIONS)}")
    return LOSS_AGGREGATIONS[mode](length, batch_tokens, batch_answers, unit)


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


def random_reward_logit_change(logits, G, method, objective, lr, p_reward=0.5, max_rows=2_000_000):
    """The exact expected change of every logit of one prompt over one batch of μ = objective.epochs
    updates (policy_updates, the training code's own) when each of the G answers
    drawn from softmax(logits: [M]) earns 1 with probability p_reward whatever it is: [M].

    Every group (M^G answer tuples x 2^G reward tuples) is one row of a single batch, weighted by
    its probability, so the sum is exact; refused beyond max_rows rows (16 answers x G = 8 is 10^12).
    With μ = 1 it is 0 for any estimator whose advantages depend only on the rewards: the rewards
    are independent of the answers and E_y[e_y − π] = 0. That needs every weight of an answer to be
    independent of which answer it is: not so for the unlikeliness reward (log π_old), k2 or k3 in
    the loss or any KL in the reward (log π/π_ref), length-dependent aggregation with a non-zero
    mean advantage, or an off-policy sampler with E[A] ≠ 0. Beyond the first update the clip sees
    the ratio π(y)/π_old(y), which depends on the answer; without the clip the change is not 0
    either (a drift, not a random walk). An estimator that reads more than the rewards
    (π, log π, a learned baseline) is refused by rlvr.estimators.advantages; a batch estimator's
    statistics are the population's of this prompt's groups (the large-batch limit, as exact_moments)."""
    from itertools import product

    z0 = np.asarray(logits, float)
    M = len(z0)
    if M**G * 2**G > max_rows:
        raise ValueError(f"{M} answers and G = {G} make {M**G * 2**G} groups to enumerate (> {max_rows})")
    pi = softmax(z0[None])[0]
    ys = np.array(list(product(range(M), repeat=G)))  # [M^G, G]
    rs = np.array(list(product((0.0, 1.0), repeat=G)))  # [2^G, G]
    y = np.repeat(ys, len(rs), axis=0)  # [K, G]
    r = np.tile(rs, (len(ys), 1))  # [K, G]
    prob = (np.prod(pi[y], axis=1) * np.prod(np.where(r > 0, p_reward, 1 - p_reward), axis=1))  # [K]
    A = advantages(r, method, weights=prob)  # [K, G]; a batch estimator sees the population of groups
    z = np.broadcast_to(z0, (len(y), M)).copy()
    z_after, _ = policy_updates(z, y, A, softmax(z), lr, objective)
    return (prob[:, None] * (z_after - z)).sum(axis=0)
