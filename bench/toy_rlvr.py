"""A fixed reference for bench/run.py's target 1: the seven names the lecture's script imports
(it was written against a module `toy_rlvr`), in plain numpy, one seed at a time, written once
and not changed with rlvr. bench/run.py runs examples/lecture_01_grpo.py on this module, so the
reference neither speeds up nor slows down with the code under test.

The same work as the lecture's demos: the task's size (200 prompts x 16 answers, 4 levels), 20,000
repetitions per gradient case, 300-step runs recording the exact pass@1 every step. Its numbers
are close to rlvr's, not equal (its own task draw and sampling).
"""

import unicodedata

import numpy as np

LEVEL_NAMES = ["很难", "难", "中等", "容易"]
LEVEL_LOGODDS = (-4.5, -3.0, -1.1, 0.6)


def make_task(P=200, M=16, seed=0, spread=0.3):
    """P prompts in 4 levels, M answers each, answer 0 correct with the level's log-odds."""
    rng = np.random.default_rng(seed)
    level = np.repeat(np.arange(4), P // 4)
    logits = rng.normal(0.0, 1.0, (P, M))
    wrong = np.log(np.exp(logits[:, 1:]).sum(axis=1))  # [P]
    logodds = np.asarray(LEVEL_LOGODDS)[level] + spread * rng.normal(size=P)
    logits[:, 0] = wrong + logodds  # p(correct) = sigmoid(logodds)
    return {"P": P, "M": M, "level": level, "logits": logits}


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Policy:
    """A tabular softmax policy: one logit per (prompt, answer)."""

    def __init__(self, task):
        self.logits = np.array(task["logits"], float)

    def probs(self, prompts=None):
        return softmax(self.logits if prompts is None else self.logits[prompts])

    def sample(self, prompts, G, rng):
        """G answers for each prompt (an array of prompt ids): [n, G]."""
        cdf = np.cumsum(self.probs(prompts), axis=1)  # [n, M]
        u = rng.random((len(prompts), G))
        return np.minimum((u[:, :, None] > cdf[:, None, :]).sum(axis=2), cdf.shape[1] - 1)


def advantages(r, method, baseline=None):
    """r: [n, G] rewards -> [n, G] advantages."""
    G = r.shape[1]
    if method == "none":
        return r
    if method == "learned":
        return r - baseline[:, None]
    if method == "rloo":
        return r - (r.sum(axis=1, keepdims=True) - r) / (G - 1)
    if method == "group":
        return r - r.mean(axis=1, keepdims=True)
    if method == "grpo":
        return (r - r.mean(axis=1, keepdims=True)) / (r.std(axis=1, keepdims=True) + 1e-6)
    raise ValueError(method)


def pass_at_k(p, k):
    return 1.0 - (1.0 - np.asarray(p, float)) ** k


def pad(text, width):
    """text padded with spaces to width columns (a CJK character takes two)."""
    used = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(0, width - used)


def train(task, method, steps, prompts_per_step, G, lr, seed, reward_offset=0.0, value_lr=0.2,
          eval_every=1):
    """One run; history: (step, exact pass@1, mean reward, zero-signal share, pass@1 per level)
    every eval_every steps and at the last; zero_frac: the run's share of groups whose rewards
    were all equal."""
    rng = np.random.default_rng(seed)
    pol, level, M = Policy(task), task["level"], task["M"]
    V = np.zeros(task["P"])
    history, zero = [], []
    for step in range(1, steps + 1):
        prompts = rng.choice(task["P"], prompts_per_step, replace=False)
        pi = pol.probs(prompts)  # [n, M]
        y = pol.sample(prompts, G, rng)  # [n, G]
        r = (y == 0).astype(float) + reward_offset
        A = advantages(r, method, V[prompts])
        if method == "learned":
            V[prompts] += value_lr * (r.mean(axis=1) - V[prompts])
        counts = np.zeros((len(prompts), M))
        for j in range(G):  # sum over the group of A * onehot(y)
            np.add.at(counts, (np.arange(len(prompts)), y[:, j]), A[:, j])
        grad = (counts - A.sum(axis=1, keepdims=True) * pi) / G  # mean of A (onehot - pi)
        pol.logits[prompts] += lr * grad
        zero.append(np.mean(r.min(axis=1) == r.max(axis=1)))
        if step % eval_every and step != steps:
            continue
        p = pol.probs()[:, 0]
        history.append((step, p.mean(), r.mean(), zero[-1], [p[level == k].mean() for k in range(4)]))
    return {"history": history, "zero_frac": float(np.mean(zero))}
