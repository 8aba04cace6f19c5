"""One function per pipeline job: arrays in, columns out (name -> 1-D array), no I/O.

The Snakemake rules call these through `python -m rlvr <stage>`; `python -m rlvr all`
calls them in one process. Both therefore compute the same numbers.
"""

import zlib

import numpy as np

from .config import LEVELS
from .metrics import gradient_stats, pass_at_k
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


def reference_columns(task, ks):
    """Exact pass@k of the reference policy per level and overall, for each k."""
    p0 = softmax(task["logits"])[:, 0]  # [P]
    groups = [(LEVELS[k], task["level"] == k) for k in range(task["n_levels"])]
    groups.append(("all", np.ones(task["P"], bool)))
    rows = [(name, int(mask.sum()), k, float(pass_at_k(p0[mask], k).mean()))
            for name, mask in groups for k in ks]
    level, n_prompts, k, value = zip(*rows)
    return {"level": list(level), "n_prompts": np.array(n_prompts), "k": np.array(k),
            "pass_at_k": np.array(value)}


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
    true_grad = p * (1 - p)
    return {
        "reward_offset": [case.reward_offset], "method": [case.method], "level": [case.level],
        "prompt": [prompt], "p_correct": [p], "G": [G], "n_reps": [n_reps],
        "true_grad": [true_grad], "grad_mean": [mean], "grad_mean_se": [std / np.sqrt(n_reps)],
        "grad_std": [std], "total_var": [total_var], "mean_over_true": [mean / true_grad],
    }


def run_columns(task, run, value_lr, eval_every):
    """Train one run; return (its one-row summary, its learning curve in long format)."""
    out = train(task, run.method, run.steps, run.prompts_per_step, run.G, run.lr, run.seed,
                reward_offset=run.reward_offset, value_lr=value_lr, eval_every=eval_every)
    final = out["history"][-1]
    ident = {"experiment": run.experiment, "method": run.method, "lr": run.lr,
             "reward_offset": run.reward_offset, "G": run.G,
             "prompts_per_step": run.prompts_per_step}
    summary = {k: [v] for k, v in ident.items()}
    summary.update({"steps": [run.steps], "seed": [run.seed], "final_pass1": [final.pass1]})
    for k, name in enumerate(LEVELS):
        summary[f"final_pass1_{name}"] = [float(final.pass1_by_level[k])]
    summary["zero_signal_frac"] = [out["zero_frac"]]

    names = list(LEVELS) + ["all"]
    steps = np.array([rec.step for rec in out["history"]])  # [T]
    pass1 = np.array([list(rec.pass1_by_level) + [rec.pass1] for rec in out["history"]])  # [T, 5]
    n = pass1.size
    curve = {k: [v] * n for k, v in ident.items()}
    curve.update({"seed": np.full(n, run.seed), "step": np.repeat(steps, len(names)),
                  "level": names * len(steps), "pass1": pass1.ravel()})
    return summary, curve
