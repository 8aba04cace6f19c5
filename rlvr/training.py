"""Policy-gradient training of the tabular policy: one configuration, many seeds at once.

`train_seeds` trains S seeds of one (method, lr, offset, G, ...) configuration in one loop.
Each seed draws from its own generator, default_rng(seed), in the same order as a lone run,
and every array operation works row by row, so a seed's numbers are bit for bit the same
whether it is trained alone or beside 499 others (tests/test_kernel.py checks it). Only the
random draws loop over seeds; the softmax, sampling, advantages and updates are one numpy
call for all of them.
"""

from functools import partial
from typing import NamedTuple

import numpy as np

from .estimators import ESTIMATORS, advantages
from .exact import kl_gradient_columns
from .metrics import crossover_k, passk_columns
from .objective import Objective, aggregation_weights, kl_estimate, policy_updates
from .policy import correct_entropy, correct_mass, inverse_cdf, log_softmax, softmax
from .task import LEVEL_KEYS, with_correct_answers


class Record(NamedTuple):
    step: int
    pass1: float  # exact pass@1 over all prompts
    mean_reward: float  # mean reward of the groups used this step (offset included)
    zero_signal_frac: float  # share of this step's sampled groups whose G rewards are all equal
    pass1_by_level: np.ndarray  # [n_levels]
    answers: int  # answers sampled so far, kept or not
    entropy: float  # exact entropy of π(·|prompt) in nats, mean over all prompts
    entropy_by_level: np.ndarray  # [n_levels]
    kl_ref: float  # exact KL(π‖π_ref) per prompt, mean over all prompts
    kl_ref_by_level: np.ndarray  # [n_levels]
    entropy_correct: float  # exact entropy of π among the correct answers, renormalised (0: one correct answer)
    entropy_correct_by_level: np.ndarray  # [n_levels]
    clip_frac: float  # share of (answer, update) pairs the clip zeroed since the last record (0: none)
    clip_frac_by_level: np.ndarray  # [n_levels]
    length_correct: float  # exact expected tokens of a correct answer to a uniform prompt (NaN: π(correct) = 0)
    length_correct_by_level: np.ndarray  # [n_levels]
    length_wrong: float  # exact expected tokens of a wrong answer to a uniform prompt (NaN: π(correct) = 1)
    length_wrong_by_level: np.ndarray  # [n_levels]


def level_means(x, level, n_levels):
    """Mean over all prompts and per level of per-prompt quantities of S policies:
    x: [..., S, P], level [P] -> ([..., S], [..., S, n_levels]); one bincount for all of them."""
    rows = x.reshape(-1, x.shape[-1])  # [K * S, P]
    bins = (level[None, :] + n_levels * np.arange(len(rows))[:, None]).ravel()  # [K * S * P]
    sums = np.bincount(bins, weights=rows.ravel(), minlength=len(rows) * n_levels)
    return x.mean(axis=-1), sums.reshape(*x.shape[:-1], n_levels) / np.bincount(level, minlength=n_levels)


def softmax_entropy_kl(logits, ref_logp):
    """π = softmax(logits) (the same bits as policy.softmax), its exact entropy and KL(π‖π_ref)
    in nats, row by row: logits [..., M], ref_logp = log π_ref [..., M] -> ([..., M], [...], [...]).
    log π = s − log Σ e^s with s = z − max z (as policy.log_softmax, so the KL of the reference
    is exactly 0): one exp per answer and one log per row, finite where π underflows to 0."""
    s = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(s)
    Z = e.sum(axis=-1, keepdims=True)
    pi, logp = e / Z, s - np.log(Z)
    return pi, -(pi * logp).sum(axis=-1), (pi * (logp - ref_logp)).sum(axis=-1)


def shared_weights_step(z_before, z_after, lr, shared_lr, cell, moved):
    """The move of the weights shared per (seed, answer type) after one update of a batch's rows
    z_before -> z_after: [R, M]: ∂/∂w_k = Σ_rows Σ_{a: type k} g[row, a] with g = (z_after −
    z_before) / lr, times shared_lr. cell: [R, M] the (seed, type) index s·T + k of each row's
    answers; the move is added into moved: [S, T] and returned on the rows' answers: [R, M]."""
    g = (z_after - z_before) / lr  # [R, M]: each row's gradient
    dw = shared_lr * np.bincount(cell.ravel(), g.ravel(), moved.size)  # [S * T]
    moved += dw.reshape(moved.shape)
    return dw[cell]


def train_seeds(task, method, steps, prompts_per_step, G, lr, seeds, reward_offset=0.0,
                value_lr=0.2, eval_every=1, max_rounds=0, objective=None, shared_lr=0.0):
    """Train from the reference logits once per seed; return one dict per seed with "history"
    ([Record]), "zero_frac", "zero_frac_pred", "answers", "kept_frac" and the final "logits" [P, M].

    Each step draws prompts_per_step distinct prompts, G answers for each from π_old (the
    policy at the start of the step), computes the advantages, and moves those prompts' logits
    objective.epochs times by lr * policy_gradient with the objective's weights: the clipped
    ratio π/π_old, the KL term and the loss aggregation (rlvr/objective.py). `learned` keeps a
    value V per prompt (start 0) that moves value_lr of the way toward each observed group-mean
    reward.

    shared_lr > 0 adds shared weights w: [S, T] per answer type (task["type"]: [P, M]) to every
    prompt's logits, logits = z + w[type], so that an update on one prompt moves every prompt's
    answers of the same types; w moves by shared_lr times the exact sum over the batch of each
    prompt's score-function gradient on the answers of that type, after each of the epochs
    updates (so the inner updates' ratios see it). shared_lr = 0 is the tabular policy, bit for bit.

    A task from task.with_correct_answers has answers 0 .. task["n_correct"]−1 correct (reward 1
    for any of them); every other task, answer 0 alone.

    max_rounds > 0 turns on dynamic sampling (DAPO; verl filter_groups): groups whose rewards
    are all equal are dropped and further rounds draw other prompts until prompts_per_step
    groups are kept or max_rounds rounds were drawn; every answer drawn counts in "answers".
    history holds step 0 (the reference) and every eval_every-th step, always the last.
    """
    P, level, n_levels = task["P"], task["level"], task["n_levels"]
    C = task.get("n_correct", 1)  # answers 0 .. C−1 are correct (task.with_correct_answers)
    if method not in ESTIMATORS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(ESTIMATORS)}")
    if not 1 <= prompts_per_step <= P:
        raise ValueError(f"prompts_per_step = {prompts_per_step} must be in 1..{P}")
    obj = objective or Objective()
    obj.check()
    if not shared_lr >= 0:
        raise ValueError(f"shared_lr = {shared_lr!r} must be >= 0")
    S, n = len(seeds), prompts_per_step
    rngs = [np.random.default_rng(seed) for seed in seeds]
    logits = np.repeat(np.asarray(task["logits"], float)[None], S, axis=0)  # [S, P, M]
    V = np.zeros((S, P))  # learned baseline, read only by `learned`
    seed_rows = np.repeat(np.arange(S), n)  # [S * n]: the seed of each row of a full batch
    batch_estimator = ESTIMATORS[method].batch
    reads_logp = "logp" in ESTIMATORS[method].needs

    # π(correct), entropy and KL to the reference [S, P], kept current row by row: a full
    # softmax at every evaluation cost more than the training steps between two
    ref_logp = log_softmax(np.asarray(task["logits"], float))  # [P, M]: the reference policy
    length = np.asarray(task["length"], np.int64)  # [P, M] tokens of each answer
    unit = length.mean()  # every aggregation mode weighs an answer of the mean length alike

    def tracked(pi, z, tokens):
        """The rest of what is kept per prompt, from π, the logits and the answers' lengths
        [..., M]: π(correct), the expected tokens Σ_{a<C} π_a L_a and Σ_{a≥C} π_a L_a, and the
        entropy among the correct answers (0 with one), each [...]."""
        return (correct_mass(pi, C), (pi[..., :C] * tokens[..., :C]).sum(axis=-1),
                (pi[..., C:] * tokens[..., C:]).sum(axis=-1), correct_entropy(z, C))

    pi_all, H, kl_ref = softmax_entropy_kl(logits, ref_logp)  # [S, P, M], [S, P], [S, P]
    p_correct, correct_tokens, wrong_tokens, H_correct = tracked(pi_all, logits, length)  # [S, P] each
    updated = []  # (seed and level of each row, its answers the clip zeroed) of each step since the last record
    if shared_lr:
        types = np.asarray(task["type"], np.int64)  # [P, M]
        n_types = int(types.max()) + 1

    def record(step, mean_reward, zero_frac, answers_so_far):
        per_prompt = np.stack([p_correct, H, kl_ref, correct_tokens, wrong_tokens, 1 - p_correct, H_correct])
        means, level_mean = level_means(per_prompt, level, n_levels)  # [7, S], [7, S, n_levels]
        (overall, h, d, c, w, q, hc), (by_level, h_level, d_level, c_level, w_level, q_level, hc_level) = \
            means, level_mean
        # E[L | correct] and E[L | wrong] of an answer to a uniform prompt: ratios of sums
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 only where π(correct) is 0 or 1
            len_c, len_c_level = c / overall, c_level / by_level
            len_w, len_w_level = w / q, w_level / q_level
        # answers the clip zeroed over all (answer, update) pairs since the last record; 0 where
        # nothing was updated (step 0, or a level none of whose prompts was drawn)
        if updated:  # only with epochs > 1: the first update of a batch never clips
            cells = np.concatenate([cell for cell, _ in updated])
            clipped_n = np.bincount(cells, np.concatenate([rows for _, rows in updated]), S * n_levels)
            updates_n = np.bincount(cells, minlength=S * n_levels) * (G * obj.epochs)
            updated.clear()
            clip = clipped_n.reshape(S, n_levels).sum(1) / np.maximum(updates_n.reshape(S, n_levels).sum(1), 1)
            clip_level = clipped_n.reshape(S, n_levels) / np.maximum(updates_n.reshape(S, n_levels), 1)
        else:
            clip, clip_level = np.zeros(S), np.zeros((S, n_levels))
        return [Record(step, float(overall[s]), float(mean_reward[s]), float(zero_frac[s]), by_level[s],
                       int(answers_so_far[s]), float(h[s]), h_level[s], float(d[s]), d_level[s],
                       float(hc[s]), hc_level[s], float(clip[s]), clip_level[s], float(len_c[s]), len_c_level[s],
                       float(len_w[s]), len_w_level[s])
                for s in range(S)]

    history = [[rec] for rec in record(0, np.full(S, np.nan), np.full(S, np.nan), np.zeros(S, int))]
    groups, zero_groups, kept_groups, answers = (np.zeros(S, int) for _ in range(4))
    zero_pred = np.zeros(S)
    prompts, u = np.zeros((S, n), int), np.zeros((S, n, G))  # each step's first round of draws
    for step in range(1, steps + 1):
        # round 1, every seed: n distinct prompts, then G uniforms per prompt, from its own generator
        for s, rng in enumerate(rngs):
            prompts[s] = rng.choice(P, n, replace=False)
            rng.random(out=u[s])
        pi = softmax(logits[seed_rows.reshape(S, n), prompts])  # [S, n, M]
        y = inverse_cdf(pi, u)  # [S, n, G]
        r = (y < C) + reward_offset  # [S, n, G]
        no_signal = (r == r[..., :1]).all(axis=-1)  # [S, n]: all G rewards equal
        answers += n * G
        step_groups = np.full(S, n)
        step_zero = no_signal.sum(axis=1)
        p_drawn = correct_mass(pi, C)  # [S, n]
        zero_pred += (p_drawn**G + (1 - p_drawn) ** G).sum(axis=1)  # P(all G equal)
        if not max_rounds:  # the batch: all S * n rows, seed by seed
            rows = (seed_rows, prompts.ravel(), pi.reshape(S * n, -1), y.reshape(S * n, G),
                    r.reshape(S * n, G))
            sizes = step_groups
        else:  # dynamic sampling: each seed draws further rounds until its batch is full
            parts = []
            for s, rng in enumerate(rngs):
                keep = ~no_signal[s]
                seed_parts = [(prompts[s][keep], pi[s][keep], y[s][keep], r[s][keep])]
                used = np.zeros(P, bool)
                used[prompts[s]] = True
                kept, rounds = int(keep.sum()), 1
                while kept < n and rounds < max_rounds and not used.all():
                    candidates = np.flatnonzero(~used)
                    more = rng.choice(candidates, min(n, len(candidates)), replace=False)  # [m]
                    pi_m = softmax(logits[s, more])  # [m, M]
                    y_m = inverse_cdf(pi_m, rng.random((len(more), G)))  # [m, G]
                    r_m = (y_m < C) + reward_offset
                    signal = ~(r_m == r_m[:, :1]).all(axis=1)
                    used[more] = True
                    rounds += 1
                    answers[s] += len(more) * G
                    step_groups[s] += len(more)
                    step_zero[s] += int((~signal).sum())
                    p_m = correct_mass(pi_m, C)
                    zero_pred[s] += float((p_m**G + (1 - p_m) ** G).sum())
                    seed_parts.append((more[signal], pi_m[signal], y_m[signal], r_m[signal]))
                    kept += int(signal.sum())
                parts.append([np.concatenate(x)[:n] for x in zip(*seed_parts)])
            sizes = np.array([len(p[0]) for p in parts])
            rows = (np.repeat(np.arange(S), sizes), *(np.concatenate(x) for x in zip(*parts)))
        seed_of, prompt_of, pi_b, y_b, r_b = rows  # [R], [R], [R, M], [R, G], [R, G]
        groups += step_groups
        zero_groups += step_zero
        kept_groups += sizes
        if len(prompt_of):
            z = logits[seed_of, prompt_of]  # [R, M]: π_old's logits, updated below
            ref_y = np.take_along_axis(ref_logp[prompt_of], y_b, axis=1) if obj.kl_beta else None  # [R, G]
            r_adv = r_b  # the reward the estimator sees
            kl_reward = obj.kl_beta and obj.kl_placement == "reward"
            # log π_old(y) [R, G], for a KL in the reward or an estimator that ranks answers by it
            logp_old = np.take_along_axis(log_softmax(z), y_b, axis=1) if kl_reward or reads_logp else None
            if kl_reward:  # verl use_kl_in_reward: r − β k(y)
                with np.errstate(over="ignore"):  # k3 = π_ref/π − 1 − log(π_ref/π) may overflow: caught below
                    r_adv = r_b - obj.kl_beta * kl_estimate(logp_old - ref_y, obj.kl_estimator)
            if batch_estimator:  # batch statistics are per seed: one call per seed's rows
                cuts = np.cumsum(sizes)[:-1]
                parts = zip(*(np.split(x, cuts) for x in (r_adv, pi_b, V[seed_of, prompt_of])),
                            np.split(logp_old, cuts) if reads_logp else [None] * S)
                A = np.concatenate([advantages(r_s, method, baseline=v_s, pi=pi_s, offset=reward_offset, logp=l_s,
                                               n_correct=C) for r_s, pi_s, v_s, l_s in parts])
            else:
                A = advantages(r_adv, method, baseline=V[seed_of, prompt_of], pi=pi_b,
                               offset=reward_offset, logp=logp_old if reads_logp else None, n_correct=C)  # [R, G]
            if method == "learned":
                V[seed_of, prompt_of] += value_lr * (r_adv.mean(axis=1) - V[seed_of, prompt_of])
            gain = None  # the lecture's loss weighs every answer 1, whatever its length
            if obj.loss_agg != "seq-mean-token-sum-norm":
                length_b = length[prompt_of[:, None], y_b]  # [R, G] tokens of each sampled answer
                batch_tokens = np.bincount(seed_of, length_b.sum(axis=1), S)[seed_of, None]  # [R, 1]
                gain = aggregation_weights(obj.loss_agg, length_b, batch_tokens, sizes[seed_of, None] * G, unit)
            shared_move = None
            if shared_lr:  # the shared weights move after each of the μ updates
                moved = np.zeros((S, n_types))  # their move over this batch's updates
                shared_move = partial(shared_weights_step, lr=lr, shared_lr=shared_lr, moved=moved,
                                      cell=seed_of[:, None] * n_types + types[prompt_of])  # (seed, type) per answer
            with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is caught just below
                z, clipped = policy_updates(z, y_b, A, pi_b, lr, obj, ref_y, gain, shared_move)  # μ updates
            if not np.isfinite(z).all():  # k2/k3 grow without bound where π(y) ≪ π_ref(y)
                raise FloatingPointError(
                    f"training diverged at step {step} (seed {seeds[seed_of[~np.isfinite(z).all(axis=1)][0]]}): "
                    f"the logits of {method} at lr {lr:g} with {obj} left the floating-point range; "
                    "lower lr or kl_beta")
            if obj.epochs > 1:
                updated.append((seed_of * n_levels + level[prompt_of], clipped))  # [R]: (seed, level) cells
            if not shared_lr:  # only the batch's prompts moved
                logits[seed_of, prompt_of] = z
                pi_new, H[seed_of, prompt_of], kl_ref[seed_of, prompt_of] = softmax_entropy_kl(
                    z, ref_logp[prompt_of])
                (p_correct[seed_of, prompt_of], correct_tokens[seed_of, prompt_of], wrong_tokens[seed_of, prompt_of],
                 H_correct[seed_of, prompt_of]) = tracked(pi_new, z, length[prompt_of])
            else:  # the shared weights moved every prompt; the batch rows' z has it already
                logits += moved[np.arange(S)[:, None, None], types[None]]  # [S, P, M]
                logits[seed_of, prompt_of] = z
                pi_all, H, kl_ref = softmax_entropy_kl(logits, ref_logp)
                p_correct, correct_tokens, wrong_tokens, H_correct = tracked(pi_all, logits, length)
        if step % eval_every == 0 or step == steps:
            if not max_rounds:
                mean_reward = r.reshape(S, n * G).mean(axis=1)  # [S]
            else:
                mean_reward = [r_s.mean() if len(r_s) else np.nan
                               for r_s in np.split(r_b, np.cumsum(sizes)[:-1])]
            for s, rec in enumerate(record(step, mean_reward, step_zero / step_groups, answers)):
                history[s].append(rec)
    return [
        {
            "history": history[s],
            "zero_frac": zero_groups[s] / groups[s],
            "zero_frac_pred": zero_pred[s] / groups[s],
            "answers": int(answers[s]),
            "kept_frac": kept_groups[s] / (steps * prompts_per_step),
            "logits": logits[s],
        }
        for s in range(S)
    ]


def train(task, method, steps, prompts_per_step, G, lr, seed, reward_offset=0.0,
          value_lr=0.2, eval_every=1, max_rounds=0):
    """One seed of train_seeds (the lecture's interface): its dict."""
    return train_seeds(task, method, steps, prompts_per_step, G, lr, [seed], reward_offset,
                       value_lr, eval_every, max_rounds)[0]


def row_columns(task, row):
    """Train every seed of a TrainRow (specs.py); return its (summary: a row per seed, learning
    curves in long format, exact pass@k of each trained policy, how each KL estimator's exact
    gradient points on each trained policy), as columns, seed after seed."""
    task = with_correct_answers(task, row.correct_answers)
    outs = train_seeds(task, row.method, row.steps, row.prompts_per_step, row.G, row.lr, row.seeds,
                       reward_offset=row.reward_offset, value_lr=row.value_lr, eval_every=row.eval_every,
                       max_rounds=row.max_rounds, objective=row.objective, shared_lr=row.shared_lr)
    ident = {name: getattr(row, name) for name in row.COLUMNS}
    names = list(LEVEL_KEYS) + ["all"]
    tables = ([], [], [], [])
    for seed, out in zip(row.seeds, outs):
        final = out["history"][-1]
        summary = {k: [v] for k, v in ident.items()}
        summary.update({"steps": [row.steps], "seed": [seed], "final_pass1": [final.pass1]})
        for k, name in enumerate(LEVEL_KEYS):
            summary[f"final_pass1_{name}"] = [float(final.pass1_by_level[k])]
        summary.update({"zero_signal_frac": [out["zero_frac"]], "zero_signal_pred_frac": [out["zero_frac_pred"]],
                        "answers": [out["answers"]], "kept_frac": [out["kept_frac"]],
                        "crossover_k": [crossover_k(out["logits"], task)]})

        steps = np.array([rec.step for rec in out["history"]])  # [T]
        pass1 = np.array([list(rec.pass1_by_level) + [rec.pass1] for rec in out["history"]])  # [T, 5]
        entropy = np.array([list(rec.entropy_by_level) + [rec.entropy] for rec in out["history"]])  # [T, 5]
        kl_ref = np.array([list(rec.kl_ref_by_level) + [rec.kl_ref] for rec in out["history"]])  # [T, 5]
        h_correct = np.array([list(rec.entropy_correct_by_level) + [rec.entropy_correct] for rec in out["history"]])
        clip = np.array([list(rec.clip_frac_by_level) + [rec.clip_frac] for rec in out["history"]])  # [T, 5]
        len_c = np.array([list(rec.length_correct_by_level) + [rec.length_correct] for rec in out["history"]])
        len_w = np.array([list(rec.length_wrong_by_level) + [rec.length_wrong] for rec in out["history"]])
        answers = np.array([rec.answers for rec in out["history"]])  # [T]
        n = pass1.size
        curve = {k: [v] * n for k, v in ident.items()}
        curve.update({"seed": [seed] * n, "step": np.repeat(steps, len(names)),
                      "answers": np.repeat(answers, len(names)), "level": names * len(steps),
                      "pass1": pass1.ravel(), "entropy": entropy.ravel(), "kl_ref": kl_ref.ravel(),
                      "entropy_correct": h_correct.ravel(),
                      "clip_frac": clip.ravel(), "length_correct": len_c.ravel(), "length_wrong": len_w.ravel()})
        exact = passk_columns(out["logits"], task, row.k)
        passk = {k: [v] * len(exact["k"]) for k, v in ident.items()}
        passk["seed"] = [seed] * len(exact["k"])
        passk.update(exact)
        klgrad = kl_gradient_columns(out["logits"], task["logits"])
        klgrad = {**{k: [v] * len(klgrad["estimator"]) for k, v in ident.items()},
                  "seed": [seed] * len(klgrad["estimator"]), **klgrad}
        for table, cols in zip(tables, (summary, curve, passk, klgrad)):
            table.append(cols)
    return tuple({name: [x for cols in table for x in cols[name]] for name in table[0]} for table in tables)
