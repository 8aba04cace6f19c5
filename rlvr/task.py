"""The toy reasoning task: P prompts, M candidate answers each, answer 0 correct.

The reference policy's logits are drawn so that each difficulty level has a target
probability of the correct answer: the logit-odds of answer 0 on a prompt of level k
is Normal(level_logodds[k], logodds_spread). Wrong answers get Normal(0, 1) logits.
Each (prompt, answer) also has a length in tokens, uniform on [min, max] and independent of
everything else; it matters only to the loss aggregation modes that weight answers by it.

And each answer has a strategy type, 0 (the majority's) or 1 (a minority's), which matters only
to a policy with shared weights per type (training's shared_lr > 0): answer 0 of a "minority
prompt" is of type 1 (its one correct way needs the minority strategy), of any other prompt of
type 0; a wrong answer is of type 1 with probability `wrong_share`. The minority prompts are a
share of the prompts of the given levels (by default half the very hard ones): what RL on the
majority's prompts can take away from, through the shared weights.

A training row may make several answers of every prompt correct (with_correct_answers): the
reference's p(correct) is kept and split among them, so that a likely solution and rarer ones
exist side by side.
"""

import numpy as np

from . import io
from .policy import softmax

LEVEL_KEYS = ("very_hard", "hard", "medium", "easy")  # ids used in files and tables
# display names, in the lecture's language: its script prints them beside its own Chinese labels
LEVEL_NAMES = ("很难", "难", "中等", "容易")
LEVEL_NAMES_EN = ("very hard", "hard", "medium", "easy")

# log-odds of the correct answer per level: p ≈ 0.012, 0.05, 0.25, 0.65
DEFAULT_LEVEL_LOGODDS = (-4.5, -3.0, -1.1, 0.6)
DEFAULT_ANSWER_LENGTH = (100, 1000)  # tokens: (min, max), both included
DEFAULT_MINORITY = {"levels": ("very_hard",), "share": 0.5, "wrong_share": 0.5}


def make_task(P=200, M=16, seed=0, level_logodds=DEFAULT_LEVEL_LOGODDS, logodds_spread=0.3,
              answer_length=DEFAULT_ANSWER_LENGTH, minority=DEFAULT_MINORITY):
    """Return {"P", "M", "level": [P] int (0 = very hard), "logits": [P, M] float,
    "length": [P, M] int (tokens of each answer), "type": [P, M] int (0 majority, 1 minority
    strategy), "minority": [P] bool (the correct answer needs the minority strategy)}.

    Levels come in P / n_levels contiguous blocks, hardest first. The lengths, then the types,
    are drawn after the logits, from the same generator, so they leave the logits as they were.
    """
    n_levels = len(level_logodds)
    if P % n_levels:
        raise ValueError(f"task.P = {P} must be a multiple of the number of levels ({n_levels})")
    if M < 2:
        raise ValueError(f"task.M = {M} must be at least 2 (one correct answer and a wrong one)")
    lo, hi = answer_length
    if not 1 <= lo <= hi:
        raise ValueError(f"task.answer_length = {list(answer_length)} must be [min, max] "
                         "with 1 <= min <= max")
    rng = np.random.default_rng(seed)
    level = np.repeat(np.arange(n_levels), P // n_levels)  # [P]
    wrong = rng.normal(0.0, 1.0, size=(P, M - 1))  # [P, M-1]
    logodds = np.asarray(level_logodds, float)[level] + rng.normal(0.0, logodds_spread, P)
    # choose the correct logit so that log(p / (1 - p)) = logodds exactly
    lse_wrong = np.logaddexp.reduce(wrong, axis=1)  # [P]
    logits = np.concatenate([(logodds + lse_wrong)[:, None], wrong], axis=1)  # [P, M]
    length = rng.integers(lo, hi + 1, size=(P, M))  # [P, M]
    in_levels = np.isin(level, [LEVEL_KEYS.index(name) for name in minority["levels"]])  # [P]
    is_minority = in_levels & (rng.random(P) < minority["share"])  # [P]
    types = (rng.random((P, M)) < minority["wrong_share"]).astype(np.int64)  # [P, M]
    types[:, 0] = is_minority
    return {"P": P, "M": M, "level": level, "logits": logits, "n_levels": n_levels, "length": length,
            "type": types, "minority": is_minority}


def with_correct_answers(task, n_correct):
    """The task with answers 0 .. n_correct−1 of every prompt correct (a training row's
    `correct_answers`): each prompt keeps the reference's p(correct), split among its correct
    answers in the ratios 1 : 1/2 : 1/4 ... (a likely solution and rarer ones), while the wrong
    answers n_correct .. M−1 keep their relative weights and share 1 − p. Pass@k, which depends on
    p(correct) alone, is the reference's; what changes is which correct answer the policy finds.
    n_correct = 1 returns the task itself."""
    if n_correct == 1:
        return task
    if "n_correct" in task:  # its logits are no longer the reference's: a second split would be wrong
        raise ValueError("the task has several correct answers already; give the task make_task made")
    M = task["M"]
    if not 1 <= n_correct < M:
        raise ValueError(f"correct_answers = {n_correct} must be in 1..{M - 1} "
                         f"(task.M = {M}: one wrong answer at least)")
    z = np.asarray(task["logits"], float)  # [P, M]
    lse = np.logaddexp.reduce(z, axis=1)  # [P]
    log_p = z[:, 0] - lse  # log p(correct), as the reference has it
    log_wrong = np.logaddexp.reduce(z[:, 1:], axis=1) - lse  # log(1 − p)
    share = 0.5 ** np.arange(n_correct)  # [C]
    correct = log_p[:, None] + np.log(share / share.sum())[None]  # [P, C]
    wrong = (z[:, n_correct:] - np.logaddexp.reduce(z[:, n_correct:], axis=1, keepdims=True)
             + log_wrong[:, None])
    return {**task, "logits": np.concatenate([correct, wrong], axis=1), "n_correct": n_correct}


def task_columns(task_cfg):
    """The task as columns: prompt, level, level_name, p_correct, logit_0 .. logit_{M-1},
    length_0 .. length_{M-1}."""
    task = make_task(P=task_cfg["P"], M=task_cfg["M"], seed=task_cfg["seed"],
                     level_logodds=task_cfg["level_logodds"],
                     logodds_spread=task_cfg["logodds_spread"],
                     answer_length=task_cfg["answer_length"], minority=task_cfg["minority"])
    cols = {
        "prompt": np.arange(task["P"]),
        "level": task["level"],
        "level_name": [LEVEL_KEYS[k] for k in task["level"]],
        "p_correct": softmax(task["logits"])[:, 0],
        "minority": task["minority"],
    }
    cols.update({f"logit_{j}": task["logits"][:, j] for j in range(task["M"])})
    cols.update({f"length_{j}": task["length"][:, j] for j in range(task["M"])})
    cols.update({f"type_{j}": task["type"][:, j] for j in range(task["M"])})
    return cols


def task_from_columns(cols):
    """The task mapping (as make_task returns) from task_columns' output."""
    M = sum(name.startswith("logit_") for name in cols)
    logits = np.stack([np.asarray(cols[f"logit_{j}"], float) for j in range(M)], axis=1)
    length = np.stack([np.asarray(cols[f"length_{j}"], np.int64) for j in range(M)], axis=1)
    types = np.stack([np.asarray(cols[f"type_{j}"], np.int64) for j in range(M)], axis=1)
    level = np.asarray(cols["level"], dtype=np.int64)
    return {"P": len(level), "M": M, "level": level, "logits": logits, "n_levels": len(LEVEL_KEYS),
            "length": length, "type": types, "minority": np.asarray(cols["minority"], bool)}


def read_task(path):
    """The task mapping from its Parquet file (task_columns' output); InputError naming the file."""
    return task_from_columns(io.read_table(path, required=("level", "logit_0", "logit_1", "length_0",
                                                           "type_0", "minority")))
