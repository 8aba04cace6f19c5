"""Exact moments of a gradient estimate on one prompt, with binary rewards.

With rewards 1{correct} + offset, a permutation-equivariant estimator gives every correct
answer in a group the same advantage a_c and every wrong one the same a_w; both depend only
on c, the number of correct answers, c ~ Binomial(G, p). Given c the wrong answers are
G - c independent draws from q = π restricted to the wrong answers, so

    ĝ | c = (c a_c / G) e_0 - m(c) π + (a_w / G) W,   W ~ Multinomial(G - c, q),

with m(c) the mean advantage of the group. Its conditional mean and covariance are closed
form; summing over c gives E[ĝ] and the total variance exactly. Batch estimators see the
population of groups of this prompt (rows weighted by P(c)): the large-batch limit.
"""

from math import comb

import numpy as np

from .estimators import ESTIMATORS, advantages
from .importance import is_weights
from .kl import KL_ESTIMATORS, KL_PLACEMENTS, kl_estimate, kl_estimate_slope  # noqa: F401
from .policy import softmax


def _group_advantages(pi, method, G, offset):
    """The advantages of a group by c, its number of correct answers: (c [G+1], P(c) [G+1],
    a_c [G+1] a correct answer's, a_w [G+1] a wrong answer's; 0 where there is none)."""
    if "logp" in ESTIMATORS[method].needs:
        raise ValueError(f"method {method!r} ranks a group's answers by π_old(y): its advantages depend on "
                         "more than the number of correct answers, so these exact moments do not hold")
    M, p = len(pi), pi[0]
    c = np.arange(G + 1)  # number of correct answers in the group
    prob = np.array([comb(G, k) for k in c]) * p**c * (1 - p) ** (G - c)  # [G+1]
    r = (np.arange(G)[None, :] < c[:, None]) + offset  # [G+1, G]: row c has c correct first
    A = advantages(r, method, pi=np.broadcast_to(pi, (G + 1, M)), offset=offset, weights=prob)
    a_c = np.where(c > 0, A[c, 0], 0.0)  # correct answers come first in row c
    a_w = np.where(c < G, A[c, G - 1], 0.0)  # wrong answers
    return c, prob, a_c, a_w, A


def exact_moments(pi, method, G, offset=0.0):
    """Exact (E[ĝ_0], std of ĝ_0, total variance of ĝ) for one prompt with probabilities pi: [M]."""
    pi = np.asarray(pi, float)
    M, p = len(pi), pi[0]
    c, prob, a_c, a_w, A = _group_advantages(pi, method, G, offset)
    m = A.mean(axis=1)  # [G+1]
    q = np.concatenate([[0.0], pi[1:] / (1 - p)]) if p < 1 else np.zeros(M)  # [M]
    e0 = np.eye(M)[0]
    # conditional mean and covariance of ĝ given c
    mean_c = (c * a_c / G)[:, None] * e0 - m[:, None] * pi + (a_w * (G - c) / G)[:, None] * q  # [G+1, M]
    cov_trace_c = (a_w / G) ** 2 * (G - c) * (1 - (q**2).sum())  # [G+1]: tr(diag q - q q^T)
    # sums, not BLAS products, whose order of addition depends on the thread count
    mean = (prob[:, None] * mean_c).sum(axis=0)  # [M]
    total_var = (prob * cov_trace_c).sum() + (prob * ((mean_c - mean) ** 2).sum(axis=1)).sum()
    var0 = (prob * (mean_c[:, 0] - mean[0]) ** 2).sum()  # ĝ_0 has no variance given c (q_0 = 0)
    return float(mean[0]), float(np.sqrt(var0)), float(total_var)


def advantage_given_reward(p, method, G, offset=0.0):
    """(E[A_i | answer i correct], E[A_i | answer i wrong]) for a group of G answers each correct
    with probability p, under an estimator whose advantages depend only on the group's rewards
    (a batch estimator: the large-batch limit, as exact_moments). Answer i is correct in a group
    of c correct with probability c/G: E[A_i | correct] = Σ_c P(c)(c/G) a_c / p, and alike for
    a wrong answer. With answers' updates weighted alike, E[ĝ] = (c1 − c0)∇p; weighted by length
    (rlvr/net/enumerate.py expected_update) each answer's own c counts."""
    if not 0 < p < 1:
        raise ValueError(f"p = {p!r} must be in (0, 1): both conditional advantages must exist")
    if {"pi", "baseline"} & set(ESTIMATORS[method].needs):
        raise ValueError(f"method {method!r} reads more than the group's rewards (π or a learned V)")
    c, prob, a_c, a_w, _ = _group_advantages(np.array([p, 1 - p]), method, G, offset)
    return float((prob * c * a_c).sum() / (G * p)), float((prob * (G - c) * a_w).sum() / (G * (1 - p)))


def uniform_wrong_prompt(p, M):
    """A prompt with π(correct) = p and the rest spread evenly: [M]."""
    return np.concatenate([[p], np.full(M - 1, (1 - p) / (M - 1))])


def bias_curve(method, G, M, offset, ps):
    """E[ĝ_0] / ∇J and std(ĝ_0) over a grid ps of π(correct), on uniform-wrong prompts.

    E[ĝ_0] depends on π only through p, so the curve holds for every prompt.
    """
    rows = [exact_moments(uniform_wrong_prompt(p, M), method, G, offset) for p in ps]
    mean, std, _ = (np.array(x) for x in zip(*rows))
    true = np.asarray(ps) * (1 - np.asarray(ps))
    return mean / true, std


# --- KL to the reference policy: what each estimator's gradient is, exactly ---------------------
#
# With y ~ π and ℓ(y) = log π(y)/π_ref(y), Schulman's estimators of KL(π‖π_ref) are
#   k1 = ℓ,   k2 = ℓ²/2,   k3 = π_ref/π − 1 + ℓ   (k3 ≥ 0, unbiased like k1).
# GRPO and TRL add β·k to the loss and differentiate it at the sampled y ("loss"); verl's
# use_kl_in_reward subtracts β·k from the reward, so it acts through the score function
# ("reward"). On-policy, each expected gradient but k2's in the reward is a fixed combination of
# the two KLs' gradients (KL_GRADIENT_LAWS, tested to 1e-12 in tests/test_kl.py). k3 in the
# reward: E[k3 (e_y − π)] = Σ_y ∇π_y (π_ref/π − 1 + log π/π_ref) = −∇KL(π_ref‖π) + ∇KL(π‖π_ref),
# as Σ_y ∇π_y = 0 and ∇KL(π‖π_ref) = Σ_y ∇π_y log π/π_ref.

# (a, b): the exact on-policy E[ĝ] = a ∇KL(π‖π_ref) + b ∇KL(π_ref‖π), by (estimator, placement)
KL_GRADIENT_LAWS = {
    ("k1", "loss"): (0, 0),  # zero on average: a constant −β on every answer's weight
    ("k2", "loss"): (1, 0),
    ("k3", "loss"): (0, 1),  # the forward KL's gradient
    ("k1", "reward"): (1, 0),
    ("k3", "reward"): (1, -1),  # both KLs' gradients, the forward one with a minus sign
}

def kl_estimates(pi, ref, estimator):
    """The estimator's value at each answer: k: [..., M] for pi, ref: [..., M] (π(y) > 0)."""
    return kl_estimate(np.log(pi) - np.log(ref), estimator)


def kl_gradient(pi, ref, estimator, placement):
    """Exact on-policy expected gradient w.r.t. the logits of the KL term (β = 1, the sign of a
    cost to minimise): [M] for one prompt or [n, M], from pi, ref: [..., M].

    loss:   E_y~π[∇_z k(y)] = E[(dk/dℓ)(y) (e_y − π)]   (k differentiated at the sampled y)
    reward: E_y~π[k(y) (e_y − π)]                       (k held fixed, through the score function)
    Both are Σ_y π_y w_y (e_y − π) = π∘w − π (π·w) for the weight w of each answer; π∘w is
    written out so that an answer with π_y = 0 (never drawn) adds its limit, not 0·∞.
    """
    if estimator not in KL_ESTIMATORS:
        raise ValueError(f"unknown KL estimator {estimator!r}; allowed: {', '.join(KL_ESTIMATORS)}")
    if placement not in KL_PLACEMENTS:
        raise ValueError(f"unknown KL placement {placement!r}; allowed: {', '.join(KL_PLACEMENTS)}")
    pi, ref = np.asarray(pi, float), np.asarray(ref, float)
    pl, pl2 = _pi_log_ratio(pi, ref)  # π ℓ, π ℓ²
    weighted = {("k1", "reward"): pl, ("k2", "reward"): pl2 / 2, ("k3", "reward"): ref - pi + pl,
                ("k1", "loss"): pi, ("k2", "loss"): pl, ("k3", "loss"): pi - ref}[estimator, placement]
    return weighted - pi * weighted.sum(axis=-1, keepdims=True)


def _pi_log_ratio(pi, ref):
    """(π ℓ, π ℓ²) with ℓ = log π/π_ref, each 0 where π = 0 (its limit)."""
    drawn = pi > 0
    log_ratio = np.log(np.where(drawn, pi, 1.0)) - np.log(np.where(drawn, ref, 1.0))  # 0 where π = 0
    return pi * log_ratio, pi * log_ratio**2


def kl(pi, ref):
    """Exact KL(π‖π_ref) per prompt: [...] from pi, ref: [..., M] (swap the arguments for the
    forward KL(π_ref‖π))."""
    pi, ref = np.asarray(pi, float), np.asarray(ref, float)
    return (pi * (np.log(pi) - np.log(ref))).sum(axis=-1)


def kl_true_gradients(pi, ref):
    """(∇_z KL(π‖π_ref), ∇_z KL(π_ref‖π)): each [..., M], with π = softmax(z) and π_ref fixed."""
    pi, ref = np.asarray(pi, float), np.asarray(ref, float)
    weighted = _pi_log_ratio(pi, ref)[0]
    reverse = weighted - pi * weighted.sum(axis=-1, keepdims=True)
    forward = pi * ref.sum(axis=-1, keepdims=True) - ref  # −Σ_y π_ref(y) (e_y − π) = π − π_ref
    return reverse, forward


def entropy(pi):
    """Exact entropy of each row of pi: [..., M] -> [...] in nats (0 log 0 = 0)."""
    pi = np.asarray(pi, float)
    return -(pi * np.log(np.where(pi > 0, pi, 1.0))).sum(axis=-1)


def entropy_change_first_order(pi, delta_logits):
    """Cui et al. 2025: moving the logits by Δz changes the entropy of π = softmax(z), to first
    order, by −Cov_{y~π}(log π(y), Δz(y)): [...] from pi, delta_logits: [..., M]. The
    remainder is O(|Δz|²) (tests/test_kl.py checks both)."""
    pi, dz = np.asarray(pi, float), np.asarray(delta_logits, float)
    logp = np.log(np.where(pi > 0, pi, 1.0))
    centred = dz - (pi * dz).sum(axis=-1, keepdims=True)
    return -(pi * centred * (logp - (pi * logp).sum(axis=-1, keepdims=True))).sum(axis=-1)


def kl_gradient_columns(logits, ref_logits):
    """How each (estimator, placement) of the KL term points, on a whole policy: the cosine and
    norm ratio of its exact expected gradient (kl_gradient) against ∇ Σ_p KL(π‖π_ref) ("reverse")
    and ∇ Σ_p KL(π_ref‖π) ("forward"), over all P·M logits at once. logits, ref_logits: [P, M]
    -> columns with a row per (estimator, placement). A zero vector has cosine 0 with anything
    (k1 as a loss, or the reference policy itself)."""
    pi, ref = softmax(np.asarray(logits, float)), softmax(np.asarray(ref_logits, float))
    true = dict(zip(("reverse", "forward"), kl_true_gradients(pi, ref)))
    cols = {name: [] for name in ("estimator", "placement", "cos_reverse", "cos_forward",
                                  "norm_ratio_reverse", "norm_ratio_forward")}
    for estimator in KL_ESTIMATORS:
        for placement in KL_PLACEMENTS:
            g = kl_gradient(pi, ref, estimator, placement).ravel()
            cols["estimator"].append(estimator)
            cols["placement"].append(placement)
            for kind, t in true.items():
                t = t.ravel()
                g_norm, t_norm = np.sqrt((g * g).sum()), np.sqrt((t * t).sum())
                tiny = g_norm <= 1e-12 * t_norm or t_norm == 0  # 0 up to rounding
                cols[f"cos_{kind}"].append(0.0 if tiny else float((g * t).sum() / (g_norm * t_norm)))
                cols[f"norm_ratio_{kind}"].append(float(g_norm / t_norm) if t_norm else 0.0)
    return cols


def off_policy_group_moments(pi, sampler, method, G, correction, cap=2.0, cap_low=None):
    """The expected update E[ĝ] of a group estimator (0/1 rewards, answer 0 correct) whose G answers
    are drawn from `sampler` instead of π, each answer's advantage weighted by w(ρ_y), ρ_y = π_y /
    sampler_y (importance.is_weights), as the lecture's loss weighs them (every answer alike, a
    constant normaliser, so masked_renorm weighs as masked): ĝ = (1/G) Σ_i w(ρ_{y_i}) A_i
    (e_{y_i} − π); and the variance of its component along ∇π(correct) = π_0 (e_0 − π),
    Var[ĝ·∇π(correct)]. pi, sampler: [..., M] -> (mean [..., M], var [...]).

    The advantages depend on the group only through its number k of correct answers, k ~
    Binomial(G, sampler_0); given k the wrong answers are G − k independent draws from the
    sampler's wrong answers, so each moment is a sum over k. With sampler = π and correction
    "none": exact_moments' mean."""
    spec = ESTIMATORS[method]
    if "logp" in spec.needs:
        raise ValueError(f"method {method!r} ranks a group's answers by π_old(y): its advantages depend on "
                         "more than the number of correct answers")
    pi, sampler = np.asarray(pi, float), np.asarray(sampler, float)
    shape = pi.shape
    pi, sampler = pi.reshape(-1, shape[-1]), sampler.reshape(-1, shape[-1])  # [N, M]
    N, M = pi.shape
    q0 = sampler[:, 0]  # [N]: how often the sampler draws the correct answer
    w = is_weights(pi / sampler, correction, cap, cap_low)  # [N, M]
    k = np.arange(G + 1)  # number of correct answers in the group
    prob = np.array([comb(G, j) for j in k]) * q0[:, None] ** k * (1 - q0[:, None]) ** (G - k)  # [N, G+1]
    r = (np.arange(G)[None, :] < k[:, None]).astype(float)  # [G+1, G]: row k has k correct first
    if {"pi", "weights"} & set(spec.needs):  # the advantages depend on the prompt
        A = np.stack([advantages(r, method, pi=np.broadcast_to(pi[n], (G + 1, M)), weights=prob[n])
                      for n in range(N)])  # [N, G+1, G]
    else:
        A = np.broadcast_to(advantages(r, method), (N, G + 1, G))
    a_c = np.where(k > 0, A[:, k, 0], 0.0)  # [N, G+1]: each correct answer's advantage
    a_w = np.where(k < G, A[:, k, G - 1], 0.0)  # [N, G+1]: each wrong one's
    eye = np.eye(M)
    q = np.where(q0[:, None] < 1, np.concatenate([np.zeros((N, 1)), sampler[:, 1:]], axis=1)
                 / np.maximum(1 - q0[:, None], 1e-300), 0.0)  # [N, M]: the sampler's wrong answers
    correct = w[:, :1] * (eye[0] - pi)  # [N, M]: a correct answer's weighted update
    wrong = q * w - (q * w).sum(axis=1, keepdims=True) * pi  # [N, M]: a wrong one's, on average
    c_k, w_k = k * a_c / G, (G - k) * a_w / G  # [N, G+1] each
    mean = ((prob * c_k).sum(axis=1)[:, None] * correct
            + (prob * w_k).sum(axis=1)[:, None] * wrong)  # [N, M]; sums, not BLAS products
    d = pi[:, :1] * (eye[0] - pi)  # [N, M]: ∇π(correct) in the logits
    u = d - (pi * d).sum(axis=1, keepdims=True)  # [N, M]: (e_y − π)·∇π(correct) of each answer y
    wu = w * u  # [N, M]
    m1, m2 = (q * wu).sum(axis=1), (q * wu**2).sum(axis=1)  # [N]: a wrong answer's mean, second moment
    s_k = c_k * wu[:, :1] + w_k * m1[:, None]  # [N, G+1]: the component's mean given k
    var_k = (G - k) * (a_w / G) ** 2 * (m2 - m1**2)[:, None]  # [N, G+1]: its variance given k
    s = (prob * s_k).sum(axis=1, keepdims=True)
    var = (prob * (var_k + (s_k - s) ** 2)).sum(axis=1)  # [N]
    return mean.reshape(shape), var.reshape(shape[:-1])


def off_policy_gradient(pi, sampler, r, baseline, correction, cap=2.0, cap_low=None):
    """The expected update of one answer y drawn from `sampler` instead of π, weighted by
    w(ρ_y), ρ_y = π_y/sampler_y (importance.is_weights), with a baseline b that does not depend on
    the group: E_{y ~ sampler}[w(ρ_y) (r_y − b)(e_y − π)]. pi, sampler, r: [..., M], baseline:
    [...] -> [..., M]. With "full" the sampler cancels: Σ_y π_y (r_y − b)(e_y − π), the on-policy
    gradient; "truncated" keeps min(π_y, C sampler_y) of each answer's π_y, so an answer the
    sampler draws less than 1/C as often as π would is under-weighted whatever the data. The
    sampler must give every answer π gives a probability > 0 (importance weights need it)."""
    pi, sampler = np.asarray(pi, float), np.asarray(sampler, float)
    if ((sampler <= 0) & (pi > 0)).any():
        raise ValueError("the sampler gives probability 0 to an answer π does not: no importance weight "
                         "corrects for an answer it never draws")
    coef = sampler * is_weights(pi / sampler, correction, cap, cap_low) * (np.asarray(r, float)
                                                                  - np.asarray(baseline, float)[..., None])
    return coef - coef.sum(axis=-1, keepdims=True) * pi  # Σ_y coef_y (e_y − π)
