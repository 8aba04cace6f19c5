"""Exact pass@k and Monte Carlo statistics of gradient estimators."""

import numpy as np

from .estimators import advantages
from .policy import policy_gradient, sample_iid, softmax


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
    count, mean, m2 = 0, np.zeros(M), np.zeros(M)  # running moments of g: [M]
    while count < n_reps:
        n = min(chunk, n_reps - count)
        y = sample_iid(pi[0], (n, G), rng)  # [n, G]
        r = (y == 0) + offset
        pis = np.broadcast_to(pi, (n, M))
        A = advantages(r, method, offset=offset, pi=pis)
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
