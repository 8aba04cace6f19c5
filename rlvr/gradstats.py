"""Demo 2: each estimator's gradient on a probe prompt, Monte Carlo beside its exact moments."""

import zlib

import numpy as np

from .exact import bias_curve, exact_moments
from .metrics import gradient_stats
from .policy import softmax
from .task import LEVEL_KEYS


def probe_prompt(task, level):
    """The prompt a gradient-statistics case probes: the first of its level."""
    return int(np.flatnonzero(task["level"] == LEVEL_KEYS.index(level))[0])


def case_seed(seed, reward_offset, method, level):
    """A seed for one gradient-statistics case that depends on neither job order nor grouping."""
    key = f"{float(reward_offset)!r}|{method}|{level}".encode()
    return np.random.SeedSequence([seed, zlib.crc32(key)])


def gradstat_columns(task, reward_offset, method, level, G, n_reps, seed):
    """One row: Monte Carlo mean/std of the correct-logit gradient and total variance."""
    prompt = probe_prompt(task, level)
    logits = task["logits"][prompt]
    p = float(softmax(logits[None, :])[0, 0])
    rng = np.random.default_rng(case_seed(seed, reward_offset, method, level))
    mean, std, total_var = gradient_stats(logits, method, G, n_reps, rng, reward_offset)
    ex_mean, ex_std, ex_var = exact_moments(softmax(logits[None, :])[0], method, G, reward_offset)
    true_grad = p * (1 - p)
    se = std / np.sqrt(n_reps)
    return {
        "reward_offset": [float(reward_offset)], "method": [method], "level": [level],
        "prompt": [prompt], "p_correct": [p], "G": [G], "n_reps": [n_reps],
        "true_grad": [true_grad], "grad_mean": [mean], "grad_mean_se": [se],
        "grad_std": [std], "total_var": [total_var], "mean_over_true": [mean / true_grad],
        "exact_grad_mean": [ex_mean], "exact_grad_std": [ex_std], "exact_total_var": [ex_var],
        "exact_mean_over_true": [ex_mean / true_grad],
        # in units of the exact standard error, which stays positive where a sample may show no spread
        "z_vs_exact": [(mean - ex_mean) / (ex_std / np.sqrt(n_reps)) if ex_std > 0 else 0.0],
    }


def gradstat_job_columns(task, job):
    """The rows of one GradStatJob (specs.py): one per (reward offset, level) case, in its order."""
    rows = [gradstat_columns(task, offset, job.method, level, job.G, job.n_reps, job.seed)
            for offset, level in job.cases]
    return {name: [x for row in rows for x in row[name]] for name in rows[0]}


def exact_curve_columns(methods, G, M, n_points):
    """Exact E[ĝ_0]/∇J and std(ĝ_0) against p on a logit-spaced grid, offset 0, per method."""
    ps = 1 / (1 + np.exp(-np.linspace(-6, 6, n_points)))
    cols = {"method": [], "G": [], "p": [], "mean_over_true": [], "exact_grad_std": []}
    for m in methods:
        ratio, std = bias_curve(m, G, M, 0.0, ps)
        cols["method"] += [m] * n_points
        cols["G"] += [G] * n_points
        cols["p"] += list(ps)
        cols["mean_over_true"] += list(ratio)
        cols["exact_grad_std"] += list(std)
    return cols
