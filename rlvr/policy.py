"""Tabular softmax policy: one logit per (prompt, answer)."""

import numpy as np


def softmax(z):
    """Row-wise softmax of z: [n, M], stable for any finite logits."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(z):
    """Row-wise log π for logits z: [..., M]; finite where π itself underflows to 0."""
    shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def correct_mass(pi, n_correct=1):
    """π(correct) [...] for probabilities pi: [..., M] whose first n_correct answers are correct
    (one correct answer: pi[..., 0] itself)."""
    return pi[..., 0] if n_correct == 1 else pi[..., :n_correct].sum(axis=-1)


def correct_entropy(logits, n_correct):
    """Entropy in nats of π restricted to the correct answers 0 .. n_correct−1 and renormalised,
    from logits [..., M] (finite even where π(correct) underflows): [...]; 0 for one answer."""
    if n_correct == 1:
        return np.zeros(logits.shape[:-1])
    s = logits[..., :n_correct] - logits[..., :n_correct].max(axis=-1, keepdims=True)
    log_q = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
    return -(np.exp(log_q) * log_q).sum(axis=-1)


def _cdf(pi):
    cdf = np.cumsum(pi, axis=-1)
    cdf[..., -1] = 1.0  # rounding must never let u fall past the last answer
    return cdf


def sample_iid(pi_row, shape, rng):
    """Answers of the given shape, all drawn from one distribution pi_row: [M]."""
    return np.searchsorted(_cdf(pi_row), rng.random(shape), side="right")


def inverse_cdf(pi, u):
    """Answers y: [..., n, G] for probabilities pi: [..., n, M] and uniforms u: [..., n, G].

    y counts the answers whose cumulative probability is <= u. Row j of each batch adds j to
    both sides before comparing, as a single searchsorted over rows shifted by j once did: the
    same draws, bit for bit, whatever the leading dimensions.
    """
    j = np.arange(pi.shape[-2])[:, None]  # [n, 1]
    cdf = _cdf(pi) + j  # [..., n, M]
    v = u + j  # [..., n, G]
    y = np.zeros(v.shape, np.int64)
    for m in range(pi.shape[-1] - 1):  # the last cdf is 1 + j > v: never counted
        y += cdf[..., m : m + 1] <= v
    return y


def sample_answers(pi, G, rng):
    """Draw G answers per row of pi: [n, M] -> y: [n, G] int."""
    return inverse_cdf(pi, rng.random((pi.shape[0], G)))


def policy_gradient(y, A, pi):
    """Score-function gradient of each sampled group, w.r.t. that prompt's logits.

    y: [n, G] answers, A: [n, G] advantages, pi: [n, M] probabilities -> g: [n, M]
    g = (1/G) Σ_i A_i (e_{y_i} - π) = (1/G) Σ_i A_i e_{y_i} - mean(A) π,
    so the one-hot [n, G, M] tensor is never built: a bincount scatters A onto y.
    """
    n, G = y.shape
    M = pi.shape[1]
    flat = (y + M * np.arange(n)[:, None]).ravel()
    scatter = np.bincount(flat, weights=A.ravel(), minlength=n * M).reshape(n, M)
    return scatter / G - A.mean(axis=1, keepdims=True) * pi


class Policy:
    """Softmax policy over answers, started from the task's reference logits."""

    def __init__(self, task):
        self.logits = np.array(task["logits"], dtype=float)  # [P, M], a copy

    def probs(self, prompts=None):
        """π: [P, M], or [len(prompts), M] for the given prompts."""
        z = self.logits if prompts is None else self.logits[np.asarray(prompts)]
        return softmax(z)

    def sample(self, prompts, G, rng):
        """y: [len(prompts), G] answers drawn from π for each prompt."""
        return sample_answers(self.probs(prompts), G, rng)
