"""One function per pipeline job: arrays in, columns out (name -> 1-D array), no I/O.

The Snakemake rules call these through `python -m rlvr <stage>`; `python -m rlvr all`
calls them in one process. Both therefore compute the same numbers.
"""

import zlib

import numpy as np

from .config import LEVELS
from .exact import bias_curve, exact_moments
from .metrics import gradient_stats, pass_at_k, pass_at_k_unbiased
from .policy import softmax
from .task import make_task
from .training import train


def task_columns(task_cfg):
    """The task as columns: prompt, level, level_name, p_correct, logit_0 .. logit_{M-1}."""
    task = make_task(P=task_cfg["P"], M=task_cfg["M"], seed=task_cfg["seed"],
                     level_logodds=task_cfg["level_logodds"],
                     logodds_spread=task_cfg["logodds_spread"])
    cols = {
        "prompt": np.arange(task["P"]),
        "level": task["level"],
        "level_name": [LEVELS[k] for k in task["level"]],
        "p_correct": softmax(task["logits"])[:, 0],
    }
    cols.update({f"logit_{j}": task["logits"][:, j] for j in range(task["M"])})
    return cols


def task_from_columns(cols):
    """The task mapping (as make_task returns) from task_columns' output."""
    M = sum(name.startswith("logit_") for name in cols)
    logits = np.stack([np.asarray(cols[f"logit_{j}"], float) for j in range(M)], axis=1)
    level = np.asarray(cols["level"], dtype=np.int64)
    return {"P": len(level), "M": M, "level": level, "logits": logits, "n_levels": len(LEVELS)}


def _level_groups(task):
    groups = [(LEVELS[k], task["level"] == k) for k in range(task["n_levels"])]
    return groups + [("all", np.ones(task["P"], bool))]


def passk_columns(logits, task, ks):
    """Exact pass@k per level and overall of the policy with these logits: [P, M]."""
    p0 = softmax(logits)[:, 0]  # [P]
    rows = [(name, int(mask.sum()), k, float(pass_at_k(p0[mask], k).mean()))
            for name, mask in _level_groups(task) for k in ks]
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
    for _, mask in _level_groups(task):
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


def probe_prompt(task, level):
    """The prompt a gradient-statistics case probes: the first of its level."""
    return int(np.flatnonzero(task["level"] == LEVELS.index(level))[0])


def case_seed(seed, case):
    """A seed for one gradient-statistics case that does not depend on job order."""
    key = f"{case.reward_offset!r}|{case.method}|{case.level}".encode()
    return np.random.SeedSequence([seed, zlib.crc32(key)])


def gradstat_columns(task, case, G, n_reps, seed):
    """One row: Monte Carlo mean/std of the correct-logit gradient and total variance."""
    prompt = probe_prompt(task, case.level)
    logits = task["logits"][prompt]
    p = float(softmax(logits[None, :])[0, 0])
    rng = np.random.default_rng(case_seed(seed, case))
    mean, std, total_var = gradient_stats(logits, case.method, G, n_reps, rng, case.reward_offset)
    ex_mean, ex_std, ex_var = exact_moments(softmax(logits[None, :])[0], case.method, G, case.reward_offset)
    true_grad = p * (1 - p)
    se = std / np.sqrt(n_reps)
    return {
        "reward_offset": [case.reward_offset], "method": [case.method], "level": [case.level],
        "prompt": [prompt], "p_correct": [p], "G": [G], "n_reps": [n_reps],
        "true_grad": [true_grad], "grad_mean": [mean], "grad_mean_se": [se],
        "grad_std": [std], "total_var": [total_var], "mean_over_true": [mean / true_grad],
        "exact_grad_mean": [ex_mean], "exact_grad_std": [ex_std], "exact_total_var": [ex_var],
        "exact_mean_over_true": [ex_mean / true_grad],
        # in units of the exact standard error, which stays positive where a sample may show no spread
        "z_vs_exact": [(mean - ex_mean) / (ex_std / np.sqrt(n_reps)) if ex_std > 0 else 0.0],
    }


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


def run_columns(task, run, value_lr, eval_every, ks):
    """Train one run; return (its one-row summary, its learning curve in long format,
    exact pass@k of the trained policy for each k)."""
    out = train(task, run.method, run.steps, run.prompts_per_step, run.G, run.lr, run.seed,
                reward_offset=run.reward_offset, value_lr=value_lr, eval_every=eval_every,
                max_rounds=run.max_rounds)
    final = out["history"][-1]
    ident = {"experiment": run.experiment, "method": run.method, "lr": run.lr,
             "reward_offset": run.reward_offset, "G": run.G,
             "prompts_per_step": run.prompts_per_step, "max_rounds": run.max_rounds}
    summary = {k: [v] for k, v in ident.items()}
    summary.update({"steps": [run.steps], "seed": [run.seed], "final_pass1": [final.pass1]})
    for k, name in enumerate(LEVELS):
        summary[f"final_pass1_{name}"] = [float(final.pass1_by_level[k])]
    summary["zero_signal_frac"] = [out["zero_frac"]]
    summary["zero_signal_pred_frac"] = [out["zero_frac_pred"]]
    summary["answers"] = [out["answers"]]
    summary["kept_frac"] = [out["kept_frac"]]

    names = list(LEVELS) + ["all"]
    steps = np.array([rec.step for rec in out["history"]])  # [T]
    pass1 = np.array([list(rec.pass1_by_level) + [rec.pass1] for rec in out["history"]])  # [T, 5]
    n = pass1.size
    curve = {k: [v] * n for k, v in ident.items()}
    answers = np.array([rec.answers for rec in out["history"]])  # [T]
    curve.update({"seed": np.full(n, run.seed), "step": np.repeat(steps, len(names)),
                  "answers": np.repeat(answers, len(names)), "level": names * len(steps),
                  "pass1": pass1.ravel()})
    passk = {k: [v] * (len(names) * len(ks)) for k, v in ident.items()}
    passk["seed"] = np.full(len(names) * len(ks), run.seed)
    passk.update(passk_columns(out["logits"], task, ks))
    return summary, curve, passk
