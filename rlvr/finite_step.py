"""What one finite step does to a prompt's policy: every group of G answers enumerated (demo 13),
or one batch of updates by Monte Carlo where enumeration is out of reach (demo 16).

E[ĝ] says where an estimator points on average; the policy moves to softmax(z + lr·ĝ), which is
not linear in ĝ, so the expected step is not the step along the expected gradient. NSR's expected
gradient is ∇p (rlvr/estimators.py), yet one NSR step lowers the sampled wrong answers and raises
every other answer's logit by (lr/G)·n_wrong·π_a: the odds of two answers the batch did not draw
change by exp((lr/G)·n_wrong·(π_a − π_b)), so the likelier one gains, and where that is a wrong
answer, π(correct) can fall although its logit rose. Here every multiset of G answers of one
prompt is weighed by its multinomial probability, so each expectation is a sum, not an estimate.

The step is one on-policy update (μ = 1), the lecture's: z + lr·(1/G) Σ_i A_i (e_{y_i} − π),
rlvr.policy.policy_gradient, with the advantages A the estimator gives a group of k correct
answers (rlvr.estimators.advantages: one that reads the rewards alone gives every correct
answer of such a group one value and every wrong one another). tests/test_finite_step.py checks
it against the training code's own update (rlvr.objective.policy_updates) and Monte Carlo.
"""

import json
from itertools import combinations_with_replacement
from math import lgamma

import numpy as np

from .estimators import ESTIMATORS, advantages
from .objective import Objective, aggregation_weights, policy_updates
from .policy import log_softmax, softmax
from .rewards import REWARDS
from .specs import TrainRow, from_json

# the map's prompts: π(correct) on a log scale, wrong answers' logits spread as standard normal
# quantiles times `spread` (0: alike), and the lrs at which each is stepped
MAP_P = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
MAP_SPREADS = (0.0, 1.0, 2.0)
MAP_LRS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
MAP_LAMBDAS = (0.0, 0.1, 0.3)  # W-REINFORCE's weight of a correct answer: 0 is NSR, 0.1 the paper's


def groups(M, G):
    """Every multiset of G answers out of M: counts [K, M] (K = C(M + G − 1, G); 490,314 for 16
    answers and G = 8) and the log of each one's number of orderings, G!/∏ c_a!: [K]."""
    combos = np.array(list(combinations_with_replacement(range(M), G)), dtype=np.int64)  # [K, G]
    counts = np.zeros((len(combos), M))
    np.add.at(counts, (np.arange(len(combos))[:, None], combos), 1.0)
    log_fact = np.array([lgamma(n + 1) for n in range(G + 1)])
    return counts, log_fact[G] - log_fact[counts.astype(np.int64)].sum(axis=1)


def answer_advantages(weights, G):
    """[G + 1, 2]: the advantage of a correct (column 0) and a wrong (column 1) answer in a group
    of k = 0..G correct answers. weights: an estimator's name (one that reads the rewards alone),
    or (A_correct, A_wrong) whatever the group (W-REINFORCE at another λ: (λ, −1))."""
    if not isinstance(weights, str):
        return np.tile(np.asarray(weights, float), (G + 1, 1))
    r = (np.arange(G)[None, :] < np.arange(G + 1)[:, None]).astype(float)  # [G + 1, G]: k correct first
    A = advantages(r, weights)
    correct = np.where(np.arange(G + 1) > 0, A[:, 0], 0.0)  # k = 0: no correct answer (unused)
    wrong = np.where(np.arange(G + 1) < G, A[:, -1], 0.0)  # k = G: no wrong answer (unused)
    return np.stack([correct, wrong], axis=1)


def step_outcomes(logits, weights, lrs, G, enumerated=None):
    """One step from the prompt's logits [M] (answer 0 correct) under weights (answer_advantages),
    at each lr of lrs, over every group: a dict of [len(lrs)] arrays —
      d_p_correct: E[Δπ(correct)];  p_falls: P(π(correct) falls);
      d_top_wrong: E[Δπ] of the answer that is the likeliest wrong one before the step;
      d_logit_correct: E[Δz(correct) − mean Δz] (the logit's rise against the others).
    enumerated: groups(M, G), if already made (it depends on M and G only)."""
    z = np.asarray(logits, float)
    M = len(z)
    counts, log_orders = enumerated if enumerated is not None else groups(M, G)
    pi = softmax(z[None])[0]
    prob = np.exp(log_orders + counts @ np.log(pi))  # [K]: each multiset's multinomial probability
    k = counts[:, 0].astype(np.int64)  # [K]: correct answers in the group
    A = answer_advantages(weights, G)[k]  # [K, 2]
    per_answer = np.where(np.arange(M) == 0, A[:, :1], A[:, 1:])  # [K, M]: each answer's advantage
    mean_A = (A[:, 0] * k + A[:, 1] * (G - k)) / G  # [K]
    g = counts * per_answer / G - mean_A[:, None] * pi  # [K, M]: policy_gradient of each group
    top = 1 + int(np.argmax(pi[1:]))
    rise = prob @ (g[:, 0] - g.mean(axis=1))  # E[Δz(correct) − mean Δz] per unit lr
    out = {"d_p_correct": [], "p_falls": [], "d_top_wrong": [], "d_logit_correct": []}
    for lr in lrs:
        e = z + lr * g  # [K, M]: the logits after the step; their softmax's two columns read
        e -= e.max(axis=1, keepdims=True)
        np.exp(e, out=e)
        total = e.sum(axis=1)
        change = e[:, 0] / total - pi[0]
        out["d_p_correct"].append(prob @ change)
        out["p_falls"].append(prob @ (change < 0))
        out["d_top_wrong"].append(prob @ (e[:, top] / total - pi[top]))
        out["d_logit_correct"].append(lr * rise)
    return {key: np.array(v) for key, v in out.items()}


def map_logits(p, spread, M):
    """A prompt of M answers with π(correct) = p whose wrong answers' logits are spread as
    standard normal quantiles times spread: [M]."""
    from statistics import NormalDist

    wrong = spread * np.array([NormalDist().inv_cdf((j + 0.5) / (M - 1)) for j in range(M - 1)])
    log_wrong = np.log(np.exp(wrong).sum())
    return np.concatenate([[np.log(p / (1 - p)) + log_wrong], wrong])


def enumerable(method):
    """Whether an estimator's advantages read a group's rewards alone (not π, log π, a learned
    baseline or other groups), so that answer_advantages gives them."""
    est = ESTIMATORS[method]
    return not est.batch and set(est.needs) <= {"correctness"}


# the aggregations whose weight of an answer does not depend on the rest of its batch
PER_ANSWER_AGGREGATIONS = ("seq-mean-token-sum-norm", "seq-mean-token-mean")


def batchable(row):
    """Whether one_batch makes a training row's update as training does: one task policy (no
    shared weights), on-policy draws (no stale or perturbed sampler, no dynamic sampling), one
    correct answer, an answer's loss weighed by itself alone (the lecture's aggregation, or its
    tokens averaged), a KL penalty in the loss if any, and advantages that read the rewards alone."""
    return (not row.shared_lr and not row.sampler_lag and not row.sampler_noise and not row.max_rounds
            and row.correct_answers == 1 and row.loss_agg in PER_ANSWER_AGGREGATIONS
            and (not row.kl_beta or row.kl_placement == "loss") and enumerable(row.method))


def one_batch(logits, row, G, n_groups, rng, length=None, unit=1.0):
    """One batch of a training row's updates (its objective: μ passes, m minibatches, its clip and
    policy loss, its aggregation's weights; rlvr.objective.policy_updates, the training code's own)
    from each prompt of logits [P, M], by Monte Carlo: n_groups groups of G answers a prompt, drawn
    with their rewards (the row's reward function, rlvr/rewards.py). Per prompt and group, of the
    answer likeliest before the batch: the change of its logit against the mean logit, and of its
    probability; and the share of (answer, update) pairs the clip acted on, as training counts
    them: three [P, n_groups] arrays. length [P, M]: each answer's tokens (GSPO, ratio_tokens and
    seq-mean-token-mean read them); unit: the task's mean answer length (the aggregation's)."""
    P, M = logits.shape
    pi = softmax(logits)  # [P, M]
    z = np.repeat(logits, n_groups, axis=0)  # [R, M], R = P x n_groups
    pi_rows = np.repeat(pi, n_groups, axis=0)
    y = (rng.random((len(z), G, 1)) > np.cumsum(pi_rows, axis=1)[:, None, :]).sum(axis=2)  # [R, G] ~ π
    y = np.minimum(y, M - 1)
    reward = REWARDS[row.reward]
    u = rng.random(y.shape) if reward.random else None
    r = np.asarray(reward.fn(y, 1, pi_rows if reward.reads_pi else None, u), float) + row.reward_offset
    A = advantages(r, row.method)
    ref_y = np.take_along_axis(log_softmax(z), y, axis=1)  # the batch starts at the reference
    length_y = None if length is None else np.take_along_axis(np.repeat(length, n_groups, axis=0), y, axis=1)
    obj = Objective.of(row)
    gain = aggregation_weights(obj.loss_agg, length_y, unit=unit)  # None for the lecture's
    after, clipped = policy_updates(z, y, A, pi_rows, row.lr, obj, ref_y, gain, length=length_y)
    top = np.argmax(pi, axis=1).repeat(n_groups)  # [R]
    rows = np.arange(len(z))
    dz = after - z
    d_logit = dz[rows, top] - dz.mean(axis=1)
    d_p = softmax(after)[rows, top] - pi_rows[rows, top]
    clip = clipped / (G * obj.epochs)  # [R]: each answer is updated once a pass
    return d_logit.reshape(P, n_groups), d_p.reshape(P, n_groups), clip.reshape(P, n_groups)


def mean_and_se(values):
    """The mean over prompts of each prompt's mean over groups, [P, n], and its standard error."""
    P, n = values.shape
    return values.mean(), np.sqrt(values.var(axis=1, ddof=1).sum() / n) / P


def finite_step_columns(task, spec):
    """The finite-step table of a job's spec (rlvr/binding.py finite_step_spec, parsed), as
    columns, each part where the spec has it: "sample_sign" {"methods", "lrs", "G"}:
    exact_step_rows; "batches" {"rows": [TrainRow specs], "G", "n_groups", "seed"}: batch_rows.
    Every row carries every column (NaN or "" where its part has none), `source` telling the
    parts apart; "methods" (the spec's estimators, for its code version) is not read."""
    rows = exact_step_rows(task, **spec["sample_sign"]) if "sample_sign" in spec else []
    if "batches" in spec:
        batches = spec["batches"]
        trained = [from_json(TrainRow, json.dumps(row)) for row in batches["rows"]]
        rows += batch_rows(task, **{**batches, "rows": trained})
    blank = {"source": "", "prompt": -1, "method": "", "lam": np.nan, "spread": np.nan, "lr": np.nan,
             "p_correct": np.nan, "d_p_correct": np.nan, "p_falls": np.nan, "d_top_wrong": np.nan,
             "d_logit_correct": np.nan, "reward": "", "epochs": 0, "minibatches": 0, "clip_low": np.nan,
             "clip_high": np.nan, "n_prompts": 0, "n_groups": 0, "d_logit_top": np.nan,
             "d_logit_top_se": np.nan, "d_p_top": np.nan, "d_p_top_se": np.nan}
    rows = [{**blank, **row} for row in rows]
    return {key: [row[key] for row in rows] for key in blank}


def batch_rows(task, rows, G, n_groups, seed, level=3):
    """One batch of each of rows (TrainRows) that is batchable from the reference on the task's
    `level` (3: easy) prompts, by Monte Carlo (one_batch; n_groups a prompt, a generator seeded
    by seed and the row's place): the likeliest answer's E[Δz − mean Δz] and E[Δπ], mean over
    the prompts, each with its standard error over the groups."""
    logits = np.asarray(task["logits"], float)[task["level"] == level]
    length = np.asarray(task["length"], float)[task["level"] == level]
    p_correct = float(softmax(logits)[:, 0].mean())
    out = []
    for i, row in enumerate(rows):
        if not batchable(row):
            continue
        d_logit, d_p, _ = one_batch(logits, row, G, n_groups, np.random.default_rng([seed, i]), length,
                                    float(np.mean(task["length"])))
        (zl, zl_se), (dp, dp_se) = mean_and_se(d_logit), mean_and_se(d_p)
        out.append({"source": "batch", "method": row.method, "lr": row.lr, "reward": row.reward,
                    "epochs": row.epochs, "minibatches": row.minibatches,
                    "clip_low": row.clip_low, "clip_high": row.clip_high,  # no clip: 1 and inf, as in runs
                    "p_correct": p_correct, "n_prompts": len(logits),
                    "n_groups": n_groups, "d_logit_top": zl,
                    "d_logit_top_se": zl_se, "d_p_top": dp, "d_p_top_se": dp_se})
    return out


def exact_step_rows(task, methods, lrs, G, level=0):
    """The exact one-step rows: (1) each prompt of the task's `level` (0: very hard) from its
    reference policy, under each of methods that is enumerable, at each of lrs; (2) the map:
    prompts of MAP_P x MAP_SPREADS, W-REINFORCE at each λ of MAP_LAMBDAS (0: NSR), at MAP_LRS.
    Columns: source ("task" / "map"), prompt (−1 on the map), method, lam (NaN for a named
    estimator), spread (NaN for the task), lr, p_correct (before), and step_outcomes' four."""
    M = task["logits"].shape[1]
    enumerated = groups(M, G)
    rows = []

    def add(source, prompt, method, lam, spread, logits, step_lrs, weights, p=None):
        done = step_outcomes(logits, weights, step_lrs, G, enumerated)
        p = softmax(np.asarray(logits, float)[None])[0, 0] if p is None else p
        for i, lr in enumerate(step_lrs):
            rows.append({"source": source, "prompt": prompt, "method": method, "lam": lam,
                         "spread": spread, "lr": float(lr), "p_correct": p,
                         **{key: float(v[i]) for key, v in done.items()}})

    for prompt in np.flatnonzero(task["level"] == level):
        for method in filter(enumerable, methods):
            add("task", int(prompt), method, np.nan, np.nan, task["logits"][prompt], lrs, method)
    for spread in MAP_SPREADS:
        for p in MAP_P:
            for lam in MAP_LAMBDAS:  # p as mapped (its logits give it to rounding)
                add("map", -1, "nsr" if lam == 0 else "w_reinforce", lam, spread,
                    map_logits(p, spread, M), MAP_LRS, (lam, -1.0), p)
    return rows
