"""Policy-gradient training of the tabular policy, one estimator at a time."""

from typing import NamedTuple

import numpy as np

from .estimators import ESTIMATORS, advantages
from .policy import policy_gradient, sample_answers, softmax


class Record(NamedTuple):
    step: int
    pass1: float  # exact pass@1 over all prompts
    mean_reward: float  # mean reward of this step's samples (offset included)
    zero_signal_frac: float  # share of this step's groups whose G rewards are all equal
    pass1_by_level: np.ndarray  # [n_levels]


def pass1_by_level(logits, level, n_levels):
    """Exact pass@1 per level: [n_levels], from logits: [P, M] and level: [P]."""
    p0 = softmax(logits)[:, 0]
    return np.bincount(level, weights=p0, minlength=n_levels) / np.bincount(level, minlength=n_levels)


def train(task, method, steps, prompts_per_step, G, lr, seed, reward_offset=0.0,
          value_lr=0.2, eval_every=1):
    """Train from the reference logits; return {"history": [Record], "zero_frac", "logits"}.

    Each step draws prompts_per_step distinct prompts, G answers for each, and moves those
    prompts' logits by lr * policy_gradient. `learned` keeps a value V per prompt (start 0)
    that moves value_lr of the way toward each observed group-mean reward.
    history holds step 0 (the reference) and every eval_every-th step, always the last.
    """
    P, level, n_levels = task["P"], task["level"], task["n_levels"]
    if method not in ESTIMATORS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(ESTIMATORS)}")
    if not 1 <= prompts_per_step <= P:
        raise ValueError(f"prompts_per_step = {prompts_per_step} must be in 1..{P}")
    rng = np.random.default_rng(seed)
    logits = np.array(task["logits"], dtype=float)  # [P, M]
    V = np.zeros(P)  # learned baseline, read only by `learned`
    needs_p = "p" in ESTIMATORS[method].needs

    def record(step, mean_reward, zero):
        lv = pass1_by_level(logits, level, n_levels)
        overall = float(softmax(logits)[:, 0].mean())
        return Record(step, overall, mean_reward, zero, lv)

    history = [record(0, float("nan"), float("nan"))]
    zero_groups = 0
    for step in range(1, steps + 1):
        prompts = rng.choice(P, prompts_per_step, replace=False)  # [n]
        pi = softmax(logits[prompts])  # [n, M]
        y = sample_answers(pi, G, rng)  # [n, G]
        r = (y == 0) + reward_offset  # [n, G]
        A = advantages(r, method, baseline=V[prompts], p=pi[:, 0] if needs_p else None,
                       offset=reward_offset)
        if method == "learned":
            V[prompts] += value_lr * (r.mean(axis=1) - V[prompts])
        logits[prompts] += lr * policy_gradient(y, A, pi)
        zero = int((r == r[:, :1]).all(axis=1).sum())
        zero_groups += zero
        if step % eval_every == 0 or step == steps:
            history.append(record(step, float(r.mean()), zero / prompts_per_step))
    return {
        "history": history,
        "zero_frac": zero_groups / (steps * prompts_per_step),
        "logits": logits,
    }
