"""Policy-gradient training of the tabular policy: one configuration, many seeds at once.

`train_seeds(task, row)` trains the S seeds of one training row in one loop: the row is a
specs.TrainRow, the spec a pipeline job holds (or make_row's, outside the pipeline), so a knob
of rlvr/knobs.py reaches the kernel as a field of it, with no list of parameters to extend.
Each seed draws from its own generator, default_rng(seed), in the same order as a lone run,
and every array operation works row by row, so a seed's numbers are bit for bit the same
whether it is trained alone or beside 499 others (tests/test_kernel.py checks it). Only the
random draws loop over seeds; the softmax, sampling, advantages and updates are one numpy
call for all of them.

A step reads top to bottom as its phases: `draw` (prompts, answers from the sampler, which is
π_old unless a lag or noise makes it off-policy, rewards, and dynamic sampling's further rounds),
`off_policy_weights` (only then), `old_log_probs`, `shaped_rewards` and `estimate_advantages`
(the advantages), `loss_weights` and `update_policy` (the μ updates), `track` (the logits, and
which prompts moved) and, at evaluation steps, `refresh` (their exact per-prompt quantities),
`curve_values` and `records`. The phases after `draw` read the step's sampled groups as one
Batch value.
"""

from collections import deque
from functools import partial
from itertools import chain
from typing import NamedTuple

import numpy as np

from .estimators import ESTIMATORS, advantages
from .exact import kl_gradient_columns
from .importance import IS_CORRECTIONS, is_weights
from .kl import kl_estimate
from .knobs import OPTIONAL
from .metrics import crossover_ks, passk_columns
from .objective import Objective, aggregation_weights, minibatch_columns, minibatches_problem, policy_updates
from .optimizers import Adam
from .policy import correct_entropy, correct_mass, inverse_cdf, log_softmax, softmax
from .rewards import REWARDS
from .sampler import sampler_noise_logits
from .specs import TrainRow
from .task import LEVEL_KEYS, with_correct_answers

# The learning-curve metrics, the one list Record, the recording (curve_values) and the curves
# table (row_columns) are made from. Each is recorded as an overall value (a float, over all
# prompts) and a per-level array [n_levels]: Record's fields m and m_by_level, and the curves
# table's column m, with a row per level and one for "all".
CURVES = (
    "pass1",  # exact pass@1 over all prompts
    "entropy",  # exact entropy of π(·|prompt) in nats, mean over all prompts
    "kl_ref",  # exact KL(π‖π_ref) per prompt, mean over all prompts
    "entropy_correct",  # exact entropy of π among the correct answers, renormalised (0: one correct)
    "clip_frac",  # share of (answer, update) pairs the clip zeroed (cispo: capped) since the last record
    "length_correct",  # exact expected tokens of a correct answer to a uniform prompt (NaN: π(correct) = 0)
    "length_wrong",  # exact expected tokens of a wrong answer to a uniform prompt (NaN: π(correct) = 1)
)
_CURVE_FIELDS = [(f, t) for m in CURVES for f, t in ((m, float), (f"{m}_by_level", np.ndarray))]
# pass1 and pass1_by_level stay at positions 1 and 4: the lecture script reads rec[1] and rec[4]
Record = NamedTuple("Record", [("step", int), _CURVE_FIELDS[0], ("mean_reward", float),
                               ("zero_signal_frac", float), _CURVE_FIELDS[1], ("answers", int),
                               *_CURVE_FIELDS[2:], ("reward_std", float), ("adv_abs", float)])
Record.__doc__ = """One seed at one evaluation step: step; mean_reward, the mean reward of the groups
used this step (offset included; NaN at step 0); zero_signal_frac, the share of this step's sampled
groups whose G rewards are all equal; answers, the answers sampled so far, kept or not; for every
metric m of CURVES, m (overall) and m_by_level [n_levels]; reward_std, the std of this step's
rewards over its answers, and adv_abs, the mean |advantage| of its answers (NaN at step 0)."""
# the step's batch statistics a record holds (Record), written on a curve's "all" rows
BATCH_CURVES = ("mean_reward", "reward_std", "zero_signal_frac", "adv_abs")


class Batch(NamedTuple):
    """A step's sampled groups, R rows seed by seed (draw); the phases after it read them."""

    seed_of: np.ndarray  # [R] each row's seed, as an index into the row's seeds
    prompt_of: np.ndarray  # [R]
    pi: np.ndarray  # [R, M] the sampler's π; π_old once off_policy_weights has replaced it
    y: np.ndarray  # [R, G] the answers
    r: np.ndarray  # [R, G] their rewards
    sizes: np.ndarray  # [S] rows per seed: n, or fewer where dynamic sampling ran out of rounds


class SharedWeights(NamedTuple):
    """The weights shared per (seed, answer type) of a row with shared_lr > 0."""

    lr: float  # the row's shared_lr
    types: np.ndarray  # [P, M] each answer's type (task["type"])
    n_types: int  # T


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


def prompt_stats(z, ref_logp, tokens, C):
    """What training keeps of each prompt, from its logits z, log π_ref and the answers' lengths
    tokens, each [..., M]: {name: [...]} with π(correct) "p_correct", the exact "entropy" and
    "kl_ref" = KL(π‖π_ref), the expected tokens "correct_tokens" Σ_{a<C} π_a L_a and
    "wrong_tokens" Σ_{a≥C} π_a L_a, and "entropy_correct" among the correct answers (0 with one)."""
    pi, H, kl_ref = softmax_entropy_kl(z, ref_logp)  # [..., M], [...], [...]
    return {"p_correct": correct_mass(pi, C), "entropy": H, "kl_ref": kl_ref,
            "correct_tokens": (pi[..., :C] * tokens[..., :C]).sum(axis=-1),
            "wrong_tokens": (pi[..., C:] * tokens[..., C:]).sum(axis=-1),
            "entropy_correct": correct_entropy(z, C)}


class Rewarder(NamedTuple):
    """What pays the sampled answers: a reward of rlvr/rewards.py, the offset added to it, and
    for a random reward each seed's own generator (so paying leaves the answers' generator alone)."""

    reward: object  # rewards.Reward
    offset: float
    rngs: list | None  # [S] generators of the reward's uniforms, or None

    def __call__(self, y, C, pi, seed=None):
        """The rewards [..., G] of answers y [..., G] sampled from pi [..., M]: of one seed's rows,
        or with seed None of every seed's, y [S, n, G]."""
        u = None
        if self.reward.random:
            u = (self.rngs[seed].random(y.shape) if seed is not None
                 else np.stack([rng.random(y.shape[1:]) for rng in self.rngs]))
        return self.reward.fn(y, C, pi if self.reward.reads_pi else None, u) + self.offset


def rewarder(reward, reward_offset, seeds):
    """The Rewarder of a reward's name for these seeds; a random reward's uniforms come from
    default_rng((seed, 2)), apart from the seed's sampling generator."""
    spec = REWARDS[reward]
    rngs = [np.random.default_rng((s, 2)) for s in seeds] if spec.random else None
    return Rewarder(spec, reward_offset, rngs)


def all_equal(r):
    """Groups without a learning signal: r [..., G] -> [...], True where all G rewards are equal."""
    return (r == r[..., :1]).all(axis=-1)


def p_all_equal(pi, C, G):
    """The probability that a group's G rewards are all equal, π(correct)^G + π(wrong)^G, from
    π [..., M]: [...]."""
    p = correct_mass(pi, C)
    return p**G + (1 - p) ** G


def dynamic_rounds(rng, logits_s, first_prompts, kept, row, C, pay, s):
    """Dynamic sampling's further rounds for seed s (DAPO; verl filter_groups): after the first
    round drew first_prompts [n] and kept `kept` groups, draw up to n = row.prompts_per_step
    prompts not drawn yet per round from logits_s [P, M] until n groups with a signal are kept,
    row.max_rounds rounds were drawn or no prompt is left. A list of rounds (prompts [m], π [m, M],
    answers [m, G], rewards [m, G], signal [m])."""
    n, G, max_rounds = row.prompts_per_step, row.G, row.max_rounds
    used = np.zeros(len(logits_s), bool)  # [P]
    used[first_prompts] = True
    rounds = []
    while kept < n and 1 + len(rounds) < max_rounds and not used.all():
        candidates = np.flatnonzero(~used)
        more = rng.choice(candidates, min(n, len(candidates)), replace=False)  # [m]
        pi_m = softmax(logits_s[more])  # [m, M]
        y_m = inverse_cdf(pi_m, rng.random((len(more), G)))  # [m, G]
        r_m = pay(y_m, C, pi_m, s)  # [m, G]
        signal = ~all_equal(r_m)  # [m]
        used[more] = True
        rounds.append((more, pi_m, y_m, r_m, signal))
        kept += int(signal.sum())
    return rounds


def draw(rngs, logits, row, C, pay, zero_pred):
    """Each seed's batch of the step from the sampler softmax(logits [S, P, M]) (π_old on-policy),
    paid by pay (a Rewarder): n = row.prompts_per_step distinct prompts, then G uniforms per
    prompt, from the seed's own generator; with row.max_rounds, the groups without a signal are
    dropped and further rounds drawn (dynamic_rounds). Adds each drawn group's P(all G rewards
    equal) into zero_pred [S]. Returns the Batch and, per seed [S], the groups drawn and how
    many of them had all G rewards equal."""
    S, P, _ = logits.shape
    n, G, max_rounds = row.prompts_per_step, row.G, row.max_rounds
    prompts, u = np.zeros((S, n), int), np.zeros((S, n, G))
    for s, rng in enumerate(rngs):
        prompts[s] = rng.choice(P, n, replace=False)
        rng.random(out=u[s])
    seed_rows = np.repeat(np.arange(S), n)  # [S * n]: the seed of each row of a full batch
    pi = softmax(logits[seed_rows.reshape(S, n), prompts])  # [S, n, M]
    y = inverse_cdf(pi, u)  # [S, n, G]
    r = pay(y, C, pi)  # [S, n, G]
    no_signal = all_equal(r)  # [S, n]
    drawn, zero = np.full(S, n), no_signal.sum(axis=1)  # [S], [S]
    zero_pred += p_all_equal(pi, C, G).sum(axis=1)
    if not max_rounds:  # the batch: all S * n rows, seed by seed
        b = Batch(seed_rows, prompts.ravel(), pi.reshape(S * n, -1), y.reshape(S * n, G), r.reshape(S * n, G),
                  drawn.copy())
        return b, drawn, zero
    parts = []
    for s, rng in enumerate(rngs):  # dynamic sampling: each seed draws further rounds until its batch is full
        keep = ~no_signal[s]
        seed_parts = [(prompts[s][keep], pi[s][keep], y[s][keep], r[s][keep])]
        rounds = dynamic_rounds(rng, logits[s], prompts[s], int(keep.sum()), row, C, pay, s)
        for more, pi_m, y_m, r_m, signal in rounds:
            drawn[s] += len(more)
            zero[s] += int((~signal).sum())
            zero_pred[s] += float(p_all_equal(pi_m, C, G).sum())
            seed_parts.append((more[signal], pi_m[signal], y_m[signal], r_m[signal]))
        parts.append([np.concatenate(x)[:n] for x in zip(*seed_parts)])
    sizes = np.array([len(p[0]) for p in parts])  # [S]
    b = Batch(np.repeat(np.arange(S), sizes), *(np.concatenate(x) for x in zip(*parts)), sizes)
    return b, drawn, zero


def off_policy_weights(z, z_sampler, y_b, correction, cap, cap_low):
    """π_old [R, M] of the trained policy's logits z [R, M] and each answer's importance weight
    w(ρ) [R, G] (importance.is_weights), ρ = π_old(y)/π_sampler(y), for answers y_b [R, G] drawn
    from softmax(z_sampler [R, M])."""
    log_rho = (np.take_along_axis(log_softmax(z), y_b, axis=1)
               - np.take_along_axis(log_softmax(z_sampler), y_b, axis=1))  # [R, G]
    return softmax(z), is_weights(np.exp(log_rho), correction, cap, cap_low)


def mean_rewards(b, max_rounds):
    """The mean reward of each seed's rows of the Batch b: [S] (NaN for a seed whose dynamic
    sampling kept no group)."""
    if not max_rounds:  # every seed has n rows
        return b.r.reshape(len(b.sizes), -1).mean(axis=1)
    return [r_s.mean() if len(r_s) else np.nan for r_s in np.split(b.r, np.cumsum(b.sizes)[:-1])]


def spread_stats(b, A):
    """Per seed [S] of the Batch b's rows: the std of its rewards over its answers and the mean
    |A| of its advantages A [R, G] (NaN for a seed whose dynamic sampling kept no group)."""
    if b.sizes.min() == b.sizes.max() > 0:  # every seed has as many rows: one call, the same bits
        return b.r.reshape(len(b.sizes), -1).std(axis=1), np.abs(A).reshape(len(b.sizes), -1).mean(axis=1)
    cuts = np.cumsum(b.sizes)[:-1]
    parts = list(zip(np.split(b.r, cuts), np.split(A, cuts)))
    return ([r_s.std() if len(r_s) else np.nan for r_s, _ in parts],
            [np.abs(a_s).mean() if len(a_s) else np.nan for _, a_s in parts])


def old_log_probs(z, b, ref_logp, obj, reads_logp):
    """log π_old(y) and log π_ref(y) of the Batch b's answers from π_old's logits z [R, M]:
    ([R, G] or None, [R, G] or None). log π_old is taken for a KL in the reward or an
    estimator that ranks answers by it; log π_ref for any KL term."""
    ref_y = np.take_along_axis(ref_logp[b.prompt_of], b.y, axis=1) if obj.kl_beta else None
    logp_old = np.take_along_axis(log_softmax(z), b.y, axis=1) if obj.kl_in_reward or reads_logp else None
    return logp_old, ref_y


def shaped_rewards(r_b, logp_old, ref_y, obj):
    """The reward the estimator sees [R, G]: r_b [R, G], or with a KL in the reward (verl
    use_kl_in_reward) r − β k(y) from log π_old(y) and log π_ref(y) [R, G]."""
    if not obj.kl_in_reward:
        return r_b
    with np.errstate(over="ignore"):  # k3 = π_ref/π − 1 − log(π_ref/π) may overflow: caught after the update
        return r_b - obj.kl_beta * kl_estimate(logp_old - ref_y, obj.kl_estimator)


def estimate_advantages(row, b, r_adv, baseline, logp, C):
    """The advantages [R, G] of row.method for the Batch b's rewards as the estimator sees them,
    r_adv [R, G], with π_old b.pi, the learned baseline [R] and log π_old(y) logp [R, G] (or None)."""
    method, offset = row.method, row.reward_offset
    if ESTIMATORS[method].batch:  # batch statistics are per seed: one call per seed's rows
        cuts = np.cumsum(b.sizes)[:-1]
        parts = zip(*(np.split(x, cuts) for x in (r_adv, b.pi, baseline)),
                    np.split(logp, cuts) if logp is not None else [None] * len(b.sizes))
        return np.concatenate([advantages(r_s, method, baseline=v_s, pi=pi_s, offset=offset, logp=l_s,
                                          n_correct=C) for r_s, pi_s, v_s, l_s in parts])
    return advantages(r_adv, method, baseline=baseline, pi=b.pi, offset=offset, logp=logp, n_correct=C)


def loss_weights(obj, b, length, unit, kept=None):
    """Each of the Batch b's answers' share of the loss under obj.loss_agg [R, G], or None where
    the loss weighs every answer 1 (the lecture's, whatever its length); token-mean's batch is
    each seed's rows of one minibatch. length [P, M]: each answer's tokens; unit: the mean of them.
    kept [R, G] (masked_renorm): the answers a correction kept, the only ones counted, in tokens
    (token-mean) or answers (seq-mean-token-mean), as verl's agg_loss after its rejection; None:
    every answer counted."""
    if obj.loss_agg == "seq-mean-token-sum-norm":  # a constant normaliser: nothing to count
        return None
    length_b = length[b.prompt_of[:, None], b.y]  # [R, G] tokens of each sampled answer
    gain = np.empty(length_b.shape)
    for mb in minibatch_columns(b.y.shape[1], obj.minibatches):
        part = length_b[:, mb]  # [R, G/m]
        batch_tokens = np.bincount(b.seed_of, part.sum(axis=1), len(b.sizes))[b.seed_of, None]  # [R, 1]
        gain[:, mb] = aggregation_weights(obj.loss_agg, part, batch_tokens,
                                          b.sizes[b.seed_of, None] * part.shape[1], unit)
        if kept is not None:  # the count of the whole minibatch over the count of its kept part
            counted = part if obj.loss_agg == "token-mean" else np.ones(part.shape)
            per_seed = [np.bincount(b.seed_of, (counted * k).sum(axis=1), len(b.sizes))
                        for k in (1.0, kept[:, mb])]  # [S] each: all, kept
            gain[:, mb] *= (per_seed[0] / np.maximum(per_seed[1], 1))[b.seed_of, None]
    return gain


def update_policy(z, b, A, ref_y, gain, obj, lr, shared, length, step=None):
    """The μ·m = obj.epochs·obj.minibatches updates of the Batch b's logits z [R, M] (π_old's, b.pi)
    by its answers, the advantages A [R, G], log π_ref(y) ref_y and loss weights gain [R, G]
    -> (z [R, M], clipped [R]: the (answer, update) pairs the clip acted on per row, shift [S, P, M]:
    what the shared weights' move adds to every prompt's logits, already in z; None without them).
    With shared weights (a SharedWeights, or None) they move after each update, so the later
    updates' ratios see it. length [P, M]: each answer's tokens (GSPO's ratio reads them). step:
    objective.policy_updates' (an optimizer other than SGD; None: SGD)."""
    moved = shared_move = None
    if shared:
        moved = np.zeros((len(b.sizes), shared.n_types))  # [S, T]: the move over this batch's updates
        shared_move = partial(shared_weights_step, lr=lr, shared_lr=shared.lr, moved=moved,
                              cell=b.seed_of[:, None] * shared.n_types + shared.types[b.prompt_of])  # [R, M]
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is caught by the caller
        reads_length = obj.policy_loss == "gspo" or obj.ratio_tokens != "one"
        length_y = length[b.prompt_of[:, None], b.y] if reads_length else None  # [R, G]
        z, clipped = policy_updates(z, b.y, A, b.pi, lr, obj, ref_y, gain, shared_move, length_y, step)
    if moved is None:
        return z, clipped, None
    return z, clipped, moved[np.arange(len(moved))[:, None, None], shared.types[None]]


def track(logits, stale, z, shift, b):
    """Write the Batch b's updated logits z [R, M] into logits [S, P, M] and mark the (seed,
    prompt) rows that moved in stale [S, P], for refresh to bring their stats up to date at the
    next record: the batch's prompts, or with shared weights (shift [S, P, M]) every prompt."""
    if shift is not None:
        logits += shift
        stale[:] = True
    logits[b.seed_of, b.prompt_of] = z  # the batch rows' z has the shift already
    stale[b.seed_of, b.prompt_of] = True


def refresh(stats, stale, logits, ref_logp, length, C):
    """stats ({name: [S, P]}, prompt_stats) of the (seed, prompt) rows marked in stale [S, P],
    recomputed from logits [S, P, M] in one call, and the marks cleared: a prompt drawn several
    times between two records costs one computation, the same bits as one per step (row by row).
    With every row marked (shared weights move every prompt) the call takes logits as they are,
    not a gathered copy of them."""
    if stale.all():
        stats.update(prompt_stats(logits, ref_logp, length, C))
    else:
        seed_of, prompt_of = np.nonzero(stale)
        if not len(seed_of):
            return
        for name, value in prompt_stats(logits[seed_of, prompt_of], ref_logp[prompt_of], length[prompt_of],
                                        C).items():
            stats[name][seed_of, prompt_of] = value
    stale[:] = False


def clip_fractions(updated, S, n_levels, per_row):
    """The share of (answer, update) pairs the clip zeroed per seed, overall [S] and per level
    [S, n_levels], from the updates since the last record: updated, a list of ((seed, level) cell
    s·n_levels + k [R], clipped [R]) with per_row = G·μ pairs per row; 0 where nothing was
    updated (step 0, or a level none of whose prompts was drawn)."""
    if not updated:  # only with μ·m > 1: the first update of a batch never clips
        return np.zeros(S), np.zeros((S, n_levels))
    cells = np.concatenate([cell for cell, _ in updated])
    clipped_n = np.bincount(cells, np.concatenate([rows for _, rows in updated]), S * n_levels)
    updates_n = np.bincount(cells, minlength=S * n_levels) * per_row
    clip = clipped_n.reshape(S, n_levels).sum(1) / np.maximum(updates_n.reshape(S, n_levels).sum(1), 1)
    clip_level = clipped_n.reshape(S, n_levels) / np.maximum(updates_n.reshape(S, n_levels), 1)
    return clip, clip_level


def curve_values(stats, updated, level, n_levels, per_row):
    """Every metric of CURVES for S policies, from their per-prompt stats ({name: [S, P]},
    prompt_stats) and the clip counts since the last record (clip_fractions):
    {metric: (overall [S], per level [S, n_levels])} in the order of CURVES."""
    per_prompt = np.stack([stats["p_correct"], stats["entropy"], stats["kl_ref"], stats["correct_tokens"],
                           stats["wrong_tokens"], 1 - stats["p_correct"],
                           stats["entropy_correct"]])  # [7, S, P]
    means, level_mean = level_means(per_prompt, level, n_levels)  # [7, S], [7, S, n_levels]
    (overall, h, d, c, w, q, hc), (by_level, h_level, d_level, c_level, w_level, q_level, hc_level) = \
        means, level_mean
    # E[L | correct] and E[L | wrong] of an answer to a uniform prompt: ratios of sums
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 only where π(correct) is 0 or 1
        len_c, len_c_level = c / overall, c_level / by_level
        len_w, len_w_level = w / q, w_level / q_level
    clip, clip_level = clip_fractions(updated, len(overall), n_levels, per_row)
    return {"pass1": (overall, by_level), "entropy": (h, h_level), "kl_ref": (d, d_level),
            "entropy_correct": (hc, hc_level), "clip_frac": (clip, clip_level),
            "length_correct": (len_c, len_c_level), "length_wrong": (len_w, len_w_level)}


def records(step, curves, mean_reward, zero_frac, answers, spread):
    """One Record per seed: the step, the step's mean reward [S], share of groups without a
    signal [S], answers so far [S], the curves ({metric: ([S], [S, n_levels])}, curve_values) and
    the step's (reward std [S], mean |A| [S]) (spread_stats)."""
    S = len(answers)
    columns = {"step": [step] * S, "mean_reward": [float(x) for x in mean_reward],
               "zero_signal_frac": [float(x) for x in zero_frac], "answers": [int(x) for x in answers],
               "reward_std": [float(x) for x in spread[0]], "adv_abs": [float(x) for x in spread[1]]}
    for metric in CURVES:
        overall, by_level = curves[metric]
        columns[metric], columns[f"{metric}_by_level"] = [float(x) for x in overall], list(by_level)
    return [Record(*fields) for fields in zip(*(columns[name] for name in Record._fields))]


def train_seeds(task, row):
    """Train every seed of row (a specs.TrainRow: a pipeline job's spec, or make_row's) from the
    reference logits, all at once; return one dict per seed with "history" ([Record]),
    "zero_frac", "zero_frac_pred", "answers", "kept_frac" and the final "logits" [P, M].

    Each step draws prompts_per_step distinct prompts, G answers for each from π_old (the
    policy at the start of the step), computes the advantages, and moves those prompts' logits
    epochs × minibatches times by lr * policy_gradient with the objective's weights: the policy
    loss of the ratio π/π_old, the KL term and the loss aggregation (rlvr/objective.py).
    `learned` keeps a value V per prompt (start 0) that moves value_lr of the way toward each
    observed group-mean reward.

    shared_lr > 0 adds shared weights w: [S, T] per answer type (task["type"]: [P, M]) to every
    prompt's logits, logits = z + w[type], so that an update on one prompt moves every prompt's
    answers of the same types; w moves by shared_lr times the exact sum over the batch of each
    prompt's score-function gradient on the answers of that type, after each of the epochs
    updates (so the inner updates' ratios see it). shared_lr = 0 is the tabular policy, bit for bit.

    correct_answers = C makes answers 0 .. C−1 of every prompt correct (task.with_correct_answers
    of the task given; reward 1 for any of them); 1: answer 0 alone.

    max_rounds > 0 turns on dynamic sampling (DAPO; verl filter_groups): groups whose rewards
    are all equal are dropped and further rounds draw other prompts until prompts_per_step
    groups are kept or max_rounds rounds were drawn; every answer drawn counts in "answers".

    reward names the reward function (rlvr/rewards.py; "verifier": 1 for a correct answer).
    Off-policy rollouts: sampler_lag L > 0 draws each step's answers from the policy at the start
    of step t − L (the reference for t ≤ L), sampler_noise σ > 0 from logits + σ ε with ε fixed
    per seed; the update's π_old is the trained policy's, and is_correction weighs each answer by
    w(ρ) (importance.is_weights, bounds is_cap_low and is_cap), ρ = π_old(y)/π_sampler(y).
    history holds step 0 (the reference) and every eval_every-th step, always the last.
    """
    if row.method not in ESTIMATORS:
        raise ValueError(f"unknown method {row.method!r}; known: {', '.join(ESTIMATORS)}")
    if not 1 <= row.prompts_per_step <= task["P"]:
        raise ValueError(f"prompts_per_step = {row.prompts_per_step} must be in 1..{task['P']}")
    problems = ([p for knob in OPTIONAL if (p := knob.problem(getattr(row, knob.name)))]
                or [why for _, why in Objective.of(row).conflicts()])
    problems += filter(None, [minibatches_problem(row.minibatches, row.G)])
    if row.optimizer != "sgd" and row.shared_lr:
        problems.append(f"optimizer {row.optimizer!r} with shared_lr {row.shared_lr:g}: the shared weights "
                        "move by SGD; set shared_lr: 0 or optimizer: sgd")
    if problems:
        raise ValueError("; ".join(problems))
    task = with_correct_answers(task, row.correct_answers)
    P, level, n_levels = task["P"], task["level"], task["n_levels"]
    C = task.get("n_correct", 1)  # answers 0 .. C−1 are correct
    seeds, obj, G = row.seeds, Objective.of(row), row.G
    S, n = len(seeds), row.prompts_per_step
    rngs = [np.random.default_rng(seed) for seed in seeds]
    pay = rewarder(row.reward, row.reward_offset, seeds)
    logits = np.repeat(np.asarray(task["logits"], float)[None], S, axis=0)  # [S, P, M]
    off_policy = bool(row.sampler_lag or row.sampler_noise)
    noise = sampler_noise_logits(seeds, logits.shape[1:], row.sampler_noise)  # [S, P, M] or 0
    past = deque(maxlen=row.sampler_lag + 1)  # the logits at the start of the last L + 1 steps
    V = np.zeros((S, P))  # learned baseline, read only by `learned`
    reads_logp = "logp" in ESTIMATORS[row.method].needs
    ref_logp = log_softmax(np.asarray(task["logits"], float))  # [P, M]: the reference policy
    length = np.asarray(task["length"], np.int64)  # [P, M] tokens of each answer
    unit = length.mean()  # every aggregation mode weighs an answer of the mean length alike
    adam = Adam(logits, row.lr) if row.optimizer == "adam" else None  # moves logits in place
    shared = None
    if row.shared_lr:
        types = np.asarray(task["type"], np.int64)  # [P, M]
        shared = SharedWeights(row.shared_lr, types, int(types.max()) + 1)

    # π(correct), entropy, KL to the reference, ... [S, P], recomputed at each record for the rows
    # that moved since the last (refresh): a full softmax at every record cost more than the steps
    stats = prompt_stats(logits, ref_logp, length, C)  # {name: [S, P]}
    stale = np.zeros((S, P), bool)  # rows whose logits moved since stats were last computed
    updated = []  # ((seed, level) cell [R], answers the clip zeroed [R]) of each update since the last record
    per_row = G * obj.epochs  # (answer, update) pairs of a batch row: each answer once per epoch
    nothing = np.full(S, np.nan)
    history = [[rec] for rec in records(0, curve_values(stats, updated, level, n_levels, per_row),
                                        nothing, nothing, np.zeros(S, int), (nothing, nothing))]
    groups, zero_groups, kept_groups, answers = (np.zeros(S, int) for _ in range(4))
    zero_pred = np.zeros(S)  # Σ P(all G rewards equal) over the groups drawn
    for step in range(1, row.steps + 1):
        # draw: R rows, seed by seed, from the sampler; every answer drawn counts, kept or not
        sampler = logits
        if off_policy:
            if row.sampler_lag:
                past.append(logits.copy())
            sampler = (past[0] if row.sampler_lag else logits) + noise  # [S, P, M]
        b, drawn, zero = draw(rngs, sampler, row, C, pay, zero_pred)  # b.pi: the sampler's
        groups += drawn
        zero_groups += zero
        kept_groups += b.sizes
        answers += G * drawn
        if len(b.prompt_of):
            # advantages
            at = b.seed_of, b.prompt_of  # the batch's (seed, prompt) rows
            z = logits[at]  # [R, M]: π_old's logits, updated below
            if off_policy:  # π_old is the trained policy's, not the sampler's
                pi_old, w = off_policy_weights(z, sampler[at], b.y, row.is_correction, row.is_cap,
                                               row.is_cap_low)  # w [R, G]
                b = b._replace(pi=pi_old)
            logp_old, ref_y = old_log_probs(z, b, ref_logp, obj, reads_logp)  # [R, G] each, or None
            r_adv = shaped_rewards(b.r, logp_old, ref_y, obj)  # [R, G]
            A = estimate_advantages(row, b, r_adv, V[at], logp_old if reads_logp else None, C)  # [R, G]
            if row.method == "learned":  # V moves value_lr of the way toward the group's mean reward
                V[at] += row.value_lr * (r_adv.mean(axis=1) - V[at])
            if off_policy:
                A = A * w
            # update
            renormalise = off_policy and IS_CORRECTIONS[row.is_correction].renormalise
            gain = loss_weights(obj, b, length, unit, kept=w > 0 if renormalise else None)  # [R, G] or None
            step_to = partial(adam.step, rows=at) if adam else None
            z, clipped, shift = update_policy(z, b, A, ref_y, gain, obj, row.lr, shared, length, step_to)
            if not np.isfinite(z).all():  # k2/k3 grow without bound where π(y) ≪ π_ref(y)
                bad = seeds[b.seed_of[~np.isfinite(z).all(axis=1)][0]]
                raise FloatingPointError(
                    f"training diverged at step {step} (seed {bad}): "
                    f"the logits of {row.method} at lr {row.lr:g} with {obj} left the floating-point range; "
                    "lower lr or kl_beta")
            # track
            if obj.epochs * obj.minibatches > 1:  # the first update never clips: μ = m = 1 never does
                updated.append((b.seed_of * n_levels + level[b.prompt_of], clipped))  # (seed, level) cell [R]
            track(logits, stale, z, shift, b)
            if adam:  # its running mean moves every prompt's logits, drawn or not
                stale[:] = True
        # record
        if step % row.eval_every == 0 or step == row.steps:
            refresh(stats, stale, logits, ref_logp, length, C)
            curves = curve_values(stats, updated, level, n_levels, per_row)
            updated.clear()
            mean_reward = mean_rewards(b, row.max_rounds)  # [S]
            spread = spread_stats(b, A) if len(b.prompt_of) else (nothing, nothing)  # [S] each
            for s, rec in enumerate(records(step, curves, mean_reward, zero / drawn, answers, spread)):
                history[s].append(rec)
    return [
        {
            "history": history[s],
            "zero_frac": zero_groups[s] / groups[s],
            "zero_frac_pred": zero_pred[s] / groups[s],
            "answers": int(answers[s]),
            "kept_frac": kept_groups[s] / (row.steps * n),
            "logits": logits[s],
        }
        for s in range(S)
    ]


def make_row(method, steps, prompts_per_step, G, lr, seeds, reward_offset=0.0, value_lr=0.2, eval_every=1,
             max_rounds=0, **knobs):
    """The TrainRow (rlvr/specs.py) that train_seeds takes, outside a pipeline job: these seeds
    and settings, and any other knob of a training row by its config name (rlvr/knobs.py's
    OPTIONAL: the objective's, shared_lr, correct_answers, reward and the off-policy sampler's),
    each at its default unless given. The fields only a job reads (experiment, k) are empty."""
    known = {knob.name: knob for knob in OPTIONAL}
    unknown = sorted(set(knobs) - set(known))
    if unknown:
        import difflib

        near = [m for name in unknown for m in difflib.get_close_matches(name, known, n=1)]
        raise ValueError(f"unknown knob {', '.join(unknown)}{f' (did you mean {near[0]}?)' if near else ''}; "
                         f"the knobs: {', '.join(known)}")
    return TrainRow(experiment="", method=method, lr=lr, reward_offset=reward_offset, G=G,
                    prompts_per_step=prompts_per_step, steps=steps, max_rounds=max_rounds, seeds=tuple(seeds),
                    value_lr=value_lr, eval_every=eval_every, k=(),
                    **{name: known[name].cast(value) for name, value in knobs.items()})


def train(task, method, steps, prompts_per_step, G, lr, seed, reward_offset=0.0,
          value_lr=0.2, eval_every=1, max_rounds=0, **knobs):
    """Train one seed (the lecture's interface: its dict) or a list of seeds (trained together:
    a list of dicts), as train_seeds does. knobs: any other knob of a training row by its config
    name (make_row), each at its default unless given."""
    one = not isinstance(seed, list | tuple | range)
    runs = train_seeds(task, make_row(method, steps, prompts_per_step, G, lr, [seed] if one else seed,
                                      reward_offset, value_lr, eval_every, max_rounds, **knobs))
    return runs[0] if one else runs


def row_columns(task, row):
    """Train every seed of a TrainRow (specs.py); return its (summary: a row per seed, learning
    curves in long format, exact pass@k of each trained policy, how each KL estimator's exact
    gradient points on each trained policy, each trained policy's final logits: a row per
    (seed, prompt), logit_0 .. logit_{M-1}), as columns, seed after seed."""
    outs = train_seeds(task, row)
    task = with_correct_answers(task, row.correct_answers)  # as trained: pass@k counts its correct answers
    ident = {name: getattr(row, name) for name in row.COLUMNS}
    names = list(LEVEL_KEYS) + ["all"]
    tables = ([], [], [], [], [])
    crossings = crossover_ks([out["logits"] for out in outs], task)
    C = task.get("n_correct", 1)
    ref_p = correct_mass(softmax(np.asarray(task["logits"], float)), C)  # [P] the reference's π(correct)
    levels = [np.asarray(task["level"]) == k for k in range(len(LEVEL_KEYS))]  # [P] masks
    for seed, out, crossing in zip(row.seeds, outs, crossings):
        final = out["history"][-1]
        summary = {"steps": [row.steps], "seed": [seed], "final_pass1": [final.pass1]}
        for k, name in enumerate(LEVEL_KEYS):
            summary[f"final_pass1_{name}"] = [float(final.pass1_by_level[k])]
        summary.update({"zero_signal_frac": [out["zero_frac"]],
                        "zero_signal_pred_frac": [out["zero_frac_pred"]],
                        "answers": [out["answers"]], "kept_frac": [out["kept_frac"]],
                        "crossover_k": [crossing]})
        # per level: the share of prompts whose π(correct) ended below the reference's, and the mass
        # of each prompt's likeliest wrong answer, mean over the level (where a prompt's mass went)
        pi = softmax(out["logits"])  # [P, M]
        fell, top_wrong = correct_mass(pi, C) < ref_p, pi[:, C:].max(axis=1)  # [P], [P]
        for column, values in (("fell_frac", fell), ("top_wrong", top_wrong)):
            for name, mask in zip(LEVEL_KEYS, levels):  # NaN for a level without prompts
                summary[f"{column}_{name}"] = [float(values[mask].mean()) if mask.any() else np.nan]

        steps = np.array([rec.step for rec in out["history"]])  # [T]
        answers = np.array([rec.answers for rec in out["history"]])  # [T]
        curves = {metric: np.array([list(getattr(rec, f"{metric}_by_level")) + [getattr(rec, metric)]
                                    for rec in out["history"]])
                  for metric in CURVES}  # [T, n_levels + 1] each: per level, then over all prompts
        n = curves["pass1"].size
        curve = {"seed": repeated(seed, n), "step": np.repeat(steps, len(names)),
                 "answers": np.repeat(answers, len(names)), "level": names * len(steps)}
        curve.update({metric: values.ravel() for metric, values in curves.items()})
        # the step's batch statistics: batch-wide, on the "all" rows (NaN on a level's)
        on_all = np.array(names * len(steps)) == "all"
        curve.update({stat: np.where(on_all, np.repeat([getattr(rec, stat) for rec in out["history"]],
                                                         len(names)), np.nan) for stat in BATCH_CURVES})
        exact = passk_columns(out["logits"], task, row.k)
        passk = {"seed": repeated(seed, len(exact["k"])), **exact}
        klgrad = kl_gradient_columns(out["logits"], task["logits"])
        klgrad = {"seed": repeated(seed, len(klgrad["estimator"])), **klgrad}
        P, M = out["logits"].shape
        logits = {"seed": repeated(seed, P), "prompt": np.arange(P),
                  **{f"logit_{j}": out["logits"][:, j] for j in range(M)}}
        for table, cols in zip(tables, (summary, curve, passk, klgrad, logits)):
            table.append(cols)
    # each table: the row's own columns first (built once for all its seeds' rows), then the seeds'
    joined = [{name: one_column([cols[name] for cols in table]) for name in table[0]} for table in tables]
    return tuple({**{k: repeated(v, len(cols["seed"])) for k, v in ident.items()}, **cols} for cols in joined)


def repeated(value, n):
    """value n times, as a column: a number as a numpy array (int64 or float64, the types Arrow
    gives a list of Python ints or floats), anything else (a string) as a list."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return np.full(n, value)
    return [value] * n


def one_column(parts):
    """One column from the seeds' parts: numpy arrays joined as one array (Arrow takes it as it
    is, where a list of numpy scalars is converted one by one: ~5 s of the default config), any
    other parts as one list; the same values and types either way."""
    if all(isinstance(part, np.ndarray) for part in parts):
        return np.concatenate(parts)
    return list(chain.from_iterable(parts))
