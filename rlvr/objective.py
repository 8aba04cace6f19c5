"""The rest of GRPO's objective, as weights on each sampled answer's score gradient.

On the tabular policy every term of the loss differentiates to (weight) x (e_y − π) for the
sampled answer y, so a whole objective is one weight per answer, W: [n, G], and the update is
policy.policy_gradient(y, W, π). This module gives those weights:

- the PPO clipped surrogate over μ inner updates on one batch (GRPO's objective; TRL
  `num_iterations`/`epsilon`/`epsilon_high`, verl `clip_ratio_low/high/c`): an answer's weight
  is A·ρ with ρ = π(y)/π_old(y), or 0 where the clip takes over; or another policy loss of
  POLICY_LOSSES (GSPO's sequence ratio, CISPO's clipped weight);
- minibatches: each batch's answers split into m minibatches, an update each (TRL
  `steps_per_generation`, verl `ppo_mini_batch_size`), so later minibatches are off-policy;
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
        """ValueError naming the first field that is not allowed, alone or with the others."""
        for name, value in self._asdict().items():
            problem = KNOBS[name].problem(value)
            if problem:
                raise ValueError(problem)
        for _, problem in self.conflicts():
            raise ValueError(problem)

    def conflicts(self):
        """[(field, why)] for the fields whose values do not go together (each allowed alone)."""
        out = []
        if self.policy_loss == "gspo" and self.loss_agg != "seq-mean-token-mean":
            # GSPO's gradient is s/|y| ∇log π(y): the 1/|y| is the aggregation's (verl b178a3c's gspo
            # forces seq-mean-token-mean; TRL f2cd577 refuses a sequence-level ratio with token sums)
            out.append(("loss_agg", f"loss_agg = {self.loss_agg!r} with policy_loss = 'gspo': GSPO averages "
                                    "an answer's tokens; set loss_agg: seq-mean-token-mean"))
        if self.ratio_tokens != "one" and self.policy_loss == "gspo":
            out.append(("ratio_tokens", f"ratio_tokens = {self.ratio_tokens!r} with policy_loss = 'gspo': "
                                        "GSPO's ratio is the answer's own, ρ^(1/|y|) on every token; set "
                                        "ratio_tokens: one, or policy_loss: ppo or cispo"))
        if self.clip_c and self.policy_loss != "ppo":
            out.append(("clip_c", f"clip_c = {self.clip_c:g} with policy_loss = {self.policy_loss!r}: "
                                  "the dual clip is PPO's surrogate's; set clip_c: null or policy_loss: ppo"))
        return out


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


# where an answer's log-ratio lies among its tokens, for the policy losses that see a token's ratio
# (ppo's clip, cispo's cap): name -> the number n of tokens that share it evenly, from the answer's
# length [n, G]; each of them has ratio ρ^(1/n), every other token 1. A token's term in the loss is
# then the answer's with ρ^(1/n) for ρ (its gradient α_t ∇log π(y), Σ_t α_t = 1), so the clip acts on
# the answer where ρ leaves [(1 − ε_low)^n, (1 + ε_high)^n]
FEW_TOKENS = 4
RATIO_TOKENS = {
    "one": None,  # all of it on one token: a token's ratio is the answer's (the toy's answer as one choice)
    "few": lambda length: np.minimum(length, FEW_TOKENS),  # on FEW_TOKENS of them
    "even": lambda length: length,  # spread over every token: each has GSPO's ρ^(1/|y|)
}


def token_ratio(log_ratio, length, obj):
    """The ratio a token of each answer carries, ρ^(1/n) with n = RATIO_TOKENS[obj.ratio_tokens]
    of its length: log_ratio, length [n, G] -> [n, G] (ρ itself for "one")."""
    share = RATIO_TOKENS[obj.ratio_tokens]
    if share is None:
        return np.exp(log_ratio)
    if length is None:
        raise ValueError(f"ratio_tokens {obj.ratio_tokens!r} reads each sampled answer's length; "
                         "none was given")
    return np.exp(log_ratio / share(length))


def _ppo(A, log_ratio, length, obj):
    """PPO's clipped surrogate of a token's ratio (GRPO's; verl b178a3c "vanilla", TRL f2cd577
    "grpo"; token_ratio: the answer's ρ itself unless ratio_tokens spreads it): weight A·r, or 0
    where the clip takes over (clipped_surrogate_weights)."""
    return clipped_surrogate_weights(A, token_ratio(log_ratio, length, obj), obj.clip_low, obj.clip_high,
                                     obj.clip_c)


def _gspo(A, log_ratio, length, obj):
    """GSPO (Zheng et al. 2025; verl b178a3c "gspo", TRL f2cd577 importance_sampling_level
    "sequence"): the sequence ratio s = ρ^(1/|y|), the geometric mean of its tokens' ratios, in the
    clipped surrogate. ∇s = (s/|y|) ∇log π(y): the weight here is As, the 1/|y| is loss_agg
    seq-mean-token-mean's (Objective.conflicts), as in verl's per-token form."""
    if length is None:
        raise ValueError("policy_loss 'gspo' reads each sampled answer's length; none was given")
    return clipped_surrogate_weights(A, np.exp(log_ratio / length), obj.clip_low, obj.clip_high)


def _cispo(A, log_ratio, length, obj):
    """CISPO (MiniMax-M1, 2025; verl b178a3c "cispo"): the stopped weight clip(r, 1 − ε_low, 1 + ε_high)·A
    on ∇log π(y), r a token's ratio (token_ratio): the clip caps a weight and zeroes none; `clipped`
    marks the capped ones."""
    ratio = token_ratio(log_ratio, length, obj)
    held = np.clip(ratio, 1 - obj.clip_low, 1 + obj.clip_high)
    return held * A, held != ratio


# policy losses: name -> weights(A, log ρ, length, obj) -> (W, clipped): [n, G] each, for an update
# where π has moved from π_old (log ρ = log π(y) − log π_old(y)); on-policy every one is W = A
POLICY_LOSSES = {"ppo": _ppo, "gspo": _gspo, "cispo": _cispo}


def minibatches_problem(m, G):
    """Why m minibatches cannot split groups of G answers (None if they can): a row's check, where
    a config or a caller gives both (m >= 1 is the knob's own)."""
    return None if m <= G else f"{m} minibatches of a group of G = {G} answers; at most G"


def minibatch_columns(G, m):
    """The answers of each group in each of m minibatches: m slices of range(G), in the order drawn
    (a group's answers are exchangeable, so this is a random split of each group, with every
    minibatch holding G/m answers of every prompt)."""
    if not 1 <= m <= G:
        raise ValueError(f"minibatches = {m} must be between 1 and the group size G = {G}")
    cuts = [k * G // m for k in range(m + 1)]
    return [slice(a, b) for a, b in zip(cuts, cuts[1:])]


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


def policy_updates(z, y, A, pi_old, lr, obj, ref_y=None, gain=None, shared=None, length=None, step=None):
    """The μ = obj.epochs passes over one batch in m = obj.minibatches updates each, as GRPO's inner
    loop: z: [R, M] logits of π_old, y: [R, G] the answers sampled from it, A: [R, G] their
    advantages, pi_old = softmax(z): [R, M], ref_y: [R, G] log π_ref(y) (read when obj.kl_beta),
    gain: [R, G] aggregation weights (None: 1), shared(z_before, z_after) -> [R, M]: what weights
    shared across prompts add to these rows' logits after each update (training's shared_lr; None:
    none), length: [R, G] tokens of each answer (read by gspo), step(g) -> z: [R, M] the rows'
    logits after an update whose gradient is g: [R, M] (rlvr/optimizers.py's Adam; None: SGD's
    z + lr·g) -> (z after the updates: [R, M], clipped: [R] (answer, update) pairs the clip acted
    on per row).

    Each update takes one minibatch of every group's answers (minibatch_columns) and ascends
    (1/|mb|) Σ_{i in mb} gain_i [w_i − β k(y_i)], w the policy loss's weight (POLICY_LOSSES) of A_i
    and ρ_i = π(y_i)/π_old(y_i); the first update is on-policy (ρ = 1 exactly, nothing clipped),
    so with μ = m = 1, β = 0 and no gain it is the lecture's step, bit for bit.
    """
    clipped_rows = np.zeros(len(z), np.int64)
    kl_loss = obj.kl_beta and obj.kl_placement == "loss"  # (in the reward it is in A already)
    parts = minibatch_columns(y.shape[1], obj.minibatches)
    updates = obj.epochs * len(parts)
    if updates > 1 or kl_loss:
        logp_old = np.take_along_axis(log_softmax(z), y, axis=1)  # [R, G]: log π_old(y)
    weights = POLICY_LOSSES[obj.policy_loss]
    for update in range(updates):
        mb = parts[update % len(parts)]  # this minibatch's answers of every group
        y_mb = y[:, mb]  # [R, G/m]
        if update == 0:
            pi, W, logp = pi_old, A[:, mb], (logp_old[:, mb] if kl_loss else None)
        else:
            pi = softmax(z)
            logp = np.take_along_axis(log_softmax(z), y_mb, axis=1)  # [R, G/m]: log π(y)
            length_mb = None if length is None else length[:, mb]
            W, clipped = weights(A[:, mb], logp - logp_old[:, mb], length_mb, obj)
            clipped_rows += clipped.sum(axis=1)
        if kl_loss:  # GRPO, TRL: + β k(y) in the loss
            W = W - obj.kl_beta * kl_estimate_slope(logp - ref_y[:, mb], obj.kl_estimator)
        if gain is not None:
            W = W * gain[:, mb]
        g = policy_gradient(y_mb, W, pi)  # [R, M]
        z_next = z + lr * g if step is None else step(g)
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
