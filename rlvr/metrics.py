"""Exact pass@k and Monte Carlo statistics of gradient estimators."""

import numpy as np

from .estimators import ESTIMATORS, advantages
from .policy import correct_mass, policy_gradient, sample_iid, softmax
from .task import LEVEL_KEYS


def pass_at_k(p, k):
    """Exact pass@k = 1 - (1 - p)^k, elementwise in p (and k)."""
    return 1.0 - (1.0 - np.asarray(p, dtype=float)) ** k


def pass_at_k_unbiased(n, c, k):
    """Chen et al. 2021: 1 - C(n-c, k) / C(n, k) from c correct among n samples, elementwise in c.

    Computed as 1 - prod_{i=n-c+1..n} (1 - k/i), stable for large n.
    """
    c = np.atleast_1d(np.asarray(c))
    out = np.ones(c.shape)
    for j, cj in enumerate(c.ravel()):
        if n - cj >= k:
            out.flat[j] = 1.0 - np.prod(1.0 - k / np.arange(n - cj + 1, n + 1))
    return out


def gradient_stats(logits_row, method, G, n_reps, rng, offset=0.0, chunk=1 << 16):
    """Monte Carlo moments of one prompt's gradient estimate under an estimator.

    logits_row: [M]. Repeats n_reps times "draw G answers, estimate the gradient" and
    returns (mean of the correct-logit component, its std, total variance of the [M]
    vector), all with ddof=0 as the lecture. Works in chunks so memory stays O(chunk * M)
    and combines chunk moments exactly (Chan et al.), so the result is the same for any n.
    """
    pi = softmax(np.asarray(logits_row, float)[None, :])  # [1, M]
    M = pi.shape[1]
    log_pi = np.log(pi[0]) if "logp" in ESTIMATORS[method].needs else None  # [M], for an estimator that ranks
    count, mean, m2 = 0, np.zeros(M), np.zeros(M)  # running moments of g: [M]
    while count < n_reps:
        n = min(chunk, n_reps - count)
        y = sample_iid(pi[0], (n, G), rng)  # [n, G]
        r = (y == 0) + offset
        pis = np.broadcast_to(pi, (n, M))
        A = advantages(r, method, offset=offset, pi=pis, logp=None if log_pi is None else log_pi[y])
        g = policy_gradient(y, A, pis)  # [n, M]
        c_mean = g.mean(axis=0)
        c_m2 = ((g - c_mean) ** 2).sum(axis=0)
        delta = c_mean - mean
        total = count + n
        mean = mean + delta * (n / total)
        m2 = m2 + c_m2 + delta**2 * (count * n / total)
        count = total
    var = m2 / count
    return float(mean[0]), float(np.sqrt(var[0])), float(var.sum())


def level_groups(task):
    """[(level id, mask [P])] for each level, then ("all", every prompt), then ("minority", the
    prompts whose correct answer needs the minority strategy) if the task has any."""
    groups = [(LEVEL_KEYS[k], task["level"] == k) for k in range(task["n_levels"])]
    groups.append(("all", np.ones(task["P"], bool)))
    minority = np.asarray(task.get("minority", np.zeros(task["P"], bool)), bool)
    return groups + ([("minority", minority)] if minority.any() else [])


def crossover_ks(policies, task, k_max=256):
    """For each policy's logits [P, M]: the smallest k <= k_max at which its exact pass@k over all
    prompts falls below the reference policy's (task["logits"]), or 0 if it never does: [int]."""
    k = np.arange(1, k_max + 1)

    def curve(p):  # [K]: mean over prompts of 1 - (1 - p)^k
        return (1 - (1 - p[:, None]) ** k[None]).mean(axis=0)

    C = task.get("n_correct", 1)
    reference = curve(correct_mass(softmax(task["logits"]), C))  # once for all the policies
    out = []
    for logits in policies:
        below = np.flatnonzero(curve(correct_mass(softmax(logits), C)) < reference)
        out.append(int(k[below[0]]) if len(below) else 0)
    return out


def passk_columns(logits, task, ks):
    """Exact pass@k per level and overall of the policy with these logits: [P, M]."""
    p0 = correct_mass(softmax(logits), task.get("n_correct", 1))  # [P] π(correct)
    rows = [(name, int(mask.sum()), k, float(pass_at_k(p0[mask], k).mean()))
            for name, mask in level_groups(task) for k in ks]
    level, n_prompts, k, value = zip(*rows)
    return {"level": list(level), "n_prompts": np.array(n_prompts), "k": np.array(k),
            "pass_at_k": np.array(value)}


def reference_columns(task, ks, n_samples=256, seed=0):
    """Exact pass@k of the reference policy per level and overall, for each k, beside the
    unbiased estimate of Chen et al. 2021 from n_samples answers per prompt (k <= n_samples;
    NaN beyond) and its standard error over prompts."""
    cols = passk_columns(task["logits"], task, ks)
    p0 = softmax(task["logits"])[:, 0]
    correct = np.random.default_rng(seed).binomial(n_samples, p0)  # [P] correct answers of n
    est, se = [], []
    for _, mask in level_groups(task):
        for k in ks:
            if k > n_samples:
                est.append(np.nan)
                se.append(np.nan)
                continue
            e = pass_at_k_unbiased(n_samples, correct[mask], k)
            err = e - pass_at_k(p0[mask], k)  # sampling error per prompt
            est.append(float(e.mean()))
            se.append(float(err.std(ddof=1) / np.sqrt(mask.sum())) if mask.sum() > 1 else np.nan)
    cols.update({"n_samples": np.full(len(est), n_samples), "pass_at_k_estimate": np.array(est),
                 "pass_at_k_estimate_se": np.array(se)})
    return cols
