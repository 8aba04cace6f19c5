"""Policy-gradient training of the tabular policy, one estimator at a time."""

from typing import NamedTuple

import numpy as np

from .estimators import ESTIMATORS, advantages
from .policy import policy_gradient, sample_answers, softmax


class Record(NamedTuple):
    step: int
    pass1: float  # exact pass@1 over all prompts
    mean_reward: float  # mean reward of the groups used this step (offset included)
    zero_signal_frac: float  # share of this step's sampled groups whose G rewards are all equal
    pass1_by_level: np.ndarray  # [n_levels]
    answers: int  # answers sampled so far, kept or not


def pass1_by_level(logits, level, n_levels):
    """Exact pass@1 overall and per level: (float, [n_levels]), from logits: [P, M], level: [P]."""
    p0 = softmax(logits)[:, 0]
    by_level = np.bincount(level, weights=p0, minlength=n_levels) / np.bincount(level, minlength=n_levels)
    return float(p0.mean()), by_level


def train(task, method, steps, prompts_per_step, G, lr, seed, reward_offset=0.0,
          value_lr=0.2, eval_every=1, max_rounds=0):
    """Train from the reference logits; return a dict with "history" ([Record]), "zero_frac",
    "zero_frac_pred", "answers", "kept_frac" and the final "logits" [P, M].

    Each step draws prompts_per_step distinct prompts, G answers for each, and moves those
    prompts' logits by lr * policy_gradient. `learned` keeps a value V per prompt (start 0)
    that moves value_lr of the way toward each observed group-mean reward.

    max_rounds > 0 turns on dynamic sampling (DAPO; verl filter_groups): groups whose rewards
    are all equal are dropped and further rounds draw other prompts until prompts_per_step
    groups are kept or max_rounds rounds were drawn; every answer drawn counts in "answers".
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

    def draw(candidates, n):
        """n distinct prompts from candidates, G answers each: prompts [n], pi [n, M], y, r [n, G]."""
        prompts = rng.choice(candidates, n, replace=False)
        pi = softmax(logits[prompts])
        y = sample_answers(pi, G, rng)
        return prompts, pi, y, (y == 0) + reward_offset

    all_prompts = np.arange(P)
    overall, by_level = pass1_by_level(logits, level, n_levels)
    history = [Record(0, overall, float("nan"), float("nan"), by_level, 0)]
    groups = zero_groups = kept_groups = answers = 0
    zero_pred = 0.0
    for step in range(1, steps + 1):
        # one generation round; with dynamic sampling, more rounds over prompts not yet drawn
        # this step until prompts_per_step groups with signal are kept
        parts, used = [], np.zeros(P, bool)
        kept = rounds = step_groups = step_zero = 0
        while True:
            candidates = all_prompts if rounds == 0 else np.flatnonzero(~used)
            prompts, pi, y, r = draw(candidates, min(prompts_per_step, len(candidates)))
            used[prompts] = True
            rounds += 1
            answers += len(prompts) * G
            no_signal = (r == r[:, :1]).all(axis=1)  # [n]: all G rewards equal
            step_groups += len(prompts)
            step_zero += int(no_signal.sum())
            zero_pred += float((pi[:, 0] ** G + (1 - pi[:, 0]) ** G).sum())  # P(all G equal)
            keep = ~no_signal if max_rounds else np.ones(len(prompts), bool)
            parts.append((prompts[keep], pi[keep], y[keep], r[keep]))
            kept += int(keep.sum())
            if not max_rounds or kept >= prompts_per_step or rounds >= max_rounds or used.all():
                break
        prompts, pi, y, r = (np.concatenate(x)[:prompts_per_step] for x in zip(*parts))
        groups += step_groups
        zero_groups += step_zero
        kept_groups += len(prompts)
        if len(prompts):
            A = advantages(r, method, baseline=V[prompts], pi=pi, offset=reward_offset)  # [n, G]
            if method == "learned":
                V[prompts] += value_lr * (r.mean(axis=1) - V[prompts])
            logits[prompts] += lr * policy_gradient(y, A, pi)
        if step % eval_every == 0 or step == steps:
            overall, by_level = pass1_by_level(logits, level, n_levels)
            mean_reward = float(r.mean()) if len(prompts) else float("nan")
            history.append(Record(step, overall, mean_reward, step_zero / step_groups, by_level, answers))
    return {
        "history": history,
        "zero_frac": zero_groups / groups,
        "zero_frac_pred": zero_pred / groups,
        "answers": answers,
        "kept_frac": kept_groups / (steps * prompts_per_step),
        "logits": logits,
    }
