"""Advantage estimators: r: [n, G] rewards of G answers to each of n prompts -> A: [n, G].

Every estimator is one function in ESTIMATORS. To add one, write

    @estimator("my_method", label="my method")
    def my_method(r, ctx):
        return ...  # [n, G]

`ctx` carries what some estimators need beyond the rewards: `baseline` [n] (the learned
per-prompt value V), `pi` [n, M] (the policy's probabilities, answers 0 .. `n_correct`−1
correct, one by default), `logp` [n, G] (log π_old of each sampled answer), `offset`
(the constant reward offset: r = 1{correct} + offset; "correctness" in needs: the estimator reads
1{correct} = r − offset, so the rewards must not be shaped by a KL penalty) and `weights` [n]
(how much each row counts in batch statistics: None for equal weights; the exact moments in rlvr/exact.py pass
the probability of each row's reward pattern, so batch statistics become population ones).
Declare what an estimator reads with `needs=`, and `batch=True` if it looks across rows;
`label=` names it in figures, `long_label=` and `label_zh=` in the English and Chinese tables
(both default to the label), and `family=` (one of FAMILIES) picks its hue in every figure.
One function may be registered under two names when two methods of the field coincide.
"""

from typing import NamedTuple

import numpy as np

from .policy import correct_mass

# GRPO divides by std + EPS; all-equal groups have r - mean = 0 exactly, so EPS only
# keeps the division finite. TRL uses 1e-4; we use a smaller value so that GRPO's
# scaling is visible even when std is small (p near 0 or 1).
EPS = 1e-6


class Context(NamedTuple):
    baseline: np.ndarray | None = None  # [n] learned value V per prompt
    pi: np.ndarray | None = None  # [n, M] policy probabilities, answers 0 .. n_correct−1 correct
    offset: float = 0.0  # reward offset: r = 1{correct} + offset
    weights: np.ndarray | None = None  # [n] row weights for batch statistics
    logp: np.ndarray | None = None  # [n, G] log π_old(y) of each sampled answer
    n_correct: int = 1  # answers 0 .. n_correct−1 of pi are the correct ones


class Spec(NamedTuple):
    fn: object
    min_G: int  # smallest group size the estimator is defined for
    needs: tuple  # Context fields it reads
    batch: bool  # whether A of one group depends on the other groups in the batch
    label: str  # its name in figures
    family: str  # one of FAMILIES: sets its hue in every figure (rlvr/style.py)
    long_label: str  # its name in the English tables
    label_zh: str  # its name in the Chinese tables

    def table_label(self, lang):
        """Its name in the tables of a language ("en" or "zh")."""
        return self.label_zh if lang == "zh" else self.long_label


ESTIMATORS: dict[str, Spec] = {}
# families of estimators; a figure gives each family related hues (rlvr/style.py)
FAMILIES = ("no baseline", "baseline", "group-normalised", "batch-normalised", "pass@k", "sample sign",
            "other")


def estimator(name, min_G=1, needs=(), batch=False, label=None, family="other", long_label=None,
              label_zh=None):
    """Register fn(r, ctx) -> A under `name`; `label` (default: the name) is how figures call it,
    `long_label` / `label_zh` how the English / Chinese tables do (default: the label), `family`
    the hue it gets (a user's estimator: "other"). A name can be registered once."""
    if family not in FAMILIES:
        raise ValueError(f"estimator {name!r}: family {family!r} is not one of {', '.join(FAMILIES)}")
    if name in ESTIMATORS:
        raise ValueError(f"estimator {name!r} is registered already (by {ESTIMATORS[name].fn.__name__}); "
                         "choose another name")
    label = label or name
    long_label = long_label or label

    def register(fn):
        ESTIMATORS[name] = Spec(fn, min_G, needs, batch, label, family, long_label, label_zh or long_label)
        return fn

    return register


def _group_mean(r):
    return r.mean(axis=1, keepdims=True)  # [n, 1]


def _batch_mean_std(x, weights):
    """Mean and population std of all entries of x: [n, G], rows weighted by weights: [n].

    Sums, not `w @ v`: a BLAS dot product adds in an order that depends on its thread count,
    and the same numbers must come out of every machine and every job layout.
    """
    w = np.ones(x.shape[0]) if weights is None else weights
    mean = (w * x.sum(axis=1)).sum() / (w.sum() * x.shape[1])
    var = (w * ((x - mean) ** 2).sum(axis=1)).sum() / (w.sum() * x.shape[1])
    return mean, np.sqrt(var)


@estimator("none", label="REINFORCE (no baseline)", family="no baseline",
           long_label="no baseline (REINFORCE)", label_zh="无基线（REINFORCE）")
def reinforce(r, ctx):
    """REINFORCE, no baseline: A = r."""
    return r.copy()


@estimator("learned", needs=("baseline",), label="learned baseline", family="baseline",
           long_label="learned baseline (V per prompt)", label_zh="学到的基线（每题一个 V）")
def learned_baseline(r, ctx):
    """A = r - V(prompt), with V learned across steps by the caller."""
    return r - ctx.baseline[:, None]


@estimator("rloo", min_G=2, label="RLOO", family="baseline", long_label="leave-one-out (RLOO)",
           label_zh="留一法基线（RLOO）")
def rloo(r, ctx):
    """Leave-one-out: A_i = r_i - mean of the other G-1 rewards (unbiased)."""
    G = r.shape[1]
    return r - (r.sum(axis=1, keepdims=True) - r) / (G - 1)


@estimator("group", min_G=2, label="group mean", family="baseline", long_label="group mean (no std)",
           label_zh="组内均值（不除标准差）")
def group_mean(r, ctx):
    """A_i = r_i - mean(r): includes r_i in its own baseline, so E[A] shrinks by (G-1)/G.
    Registered as `dr_grpo` too (below)."""
    return r - _group_mean(r)


@estimator("grpo", min_G=2, label="GRPO", family="group-normalised", long_label="GRPO (divide by group std)",
           label_zh="GRPO（除以组内标准差）")
def grpo(r, ctx):
    """GRPO: (r_i - mean(r)) / (std(r) + EPS), population std (ddof=0) as the lecture."""
    return (r - _group_mean(r)) / (r.std(axis=1, keepdims=True) + EPS)


# --- the field's variants (TRL GRPOTrainer, verl, OpenRLHF) --------------------------------


# Dr. GRPO (TRL scale_rewards="none", OpenRLHF dr_grpo) is the group mean without std division:
# the same function as `group`, under the field's name (its place here sets its colour)
estimator("dr_grpo", min_G=2, label="Dr. GRPO", family="baseline", long_label="Dr. GRPO (mean, no std)",
          label_zh="Dr. GRPO（均值，不除标准差）")(group_mean)


@estimator("grpo_unbiased_std", min_G=2, label="GRPO (N−1 std)", family="group-normalised",
           long_label="GRPO, N-1 std (TRL/verl)", label_zh="GRPO，N-1 标准差（TRL/verl）")
def grpo_unbiased_std(r, ctx):
    """GRPO with the N-1 std, as TRL, verl and OpenRLHF compute it."""
    return (r - _group_mean(r)) / (r.std(axis=1, ddof=1, keepdims=True) + EPS)


@estimator("batch_std", min_G=2, needs=("weights",), batch=True, label="batch std",
           family="batch-normalised", long_label="batch std (TRL batch)", label_zh="批内标准差（TRL batch）")
def batch_std(r, ctx):
    """Group mean subtracted, divided by the std of all rewards in the batch (TRL
    scale_rewards="batch"; population std here, TRL's N-1 differs by O(1/(nG)))."""
    _, std = _batch_mean_std(r, ctx.weights)
    return (r - _group_mean(r)) / (std + EPS)


@estimator("reinforce_pp_baseline", min_G=2, needs=("weights",), batch=True,
           label="REINFORCE++ baseline", family="batch-normalised", label_zh="REINFORCE++ 基线")
def reinforce_pp_baseline(r, ctx):
    """REINFORCE++ with baseline (verl, OpenRLHF): group mean subtracted, then the centred
    rewards whitened over the whole batch. With the population (N) variance; verl whitens with
    the N-1 one, so its advantages are larger by sqrt(N/(N-1)) for N = n*G answers in the
    batch (+0.4% at 16 x 8, +41% for one group of 2)."""
    x = r - _group_mean(r)
    mean, std = _batch_mean_std(x, ctx.weights)
    return (x - mean) / (std + EPS)


@estimator("oracle", needs=("pi", "offset"), label="oracle baseline", family="baseline",
           long_label="oracle baseline V = p", label_zh="理想基线 V = p")
def oracle(r, ctx):
    """The true value as baseline: V = E[r] = p + offset (unbiased, not available in practice)."""
    return r - (correct_mass(ctx.pi, ctx.n_correct) + ctx.offset)[:, None]


@estimator("optimal", needs=("pi", "offset"), label="optimal baseline", family="baseline",
           long_label="optimal constant baseline", label_zh="最优常数基线")
def optimal(r, ctx):
    """The constant baseline that minimises the total variance of the one-sample estimate
    (r - b)(e_y - π): b* = E[r |s|^2] / E[|s|^2], with |s|^2 = |e_y - π|^2 = 1 - 2π_y + |π|^2."""
    pi = ctx.pi
    s2 = 1 - 2 * pi + (pi**2).sum(axis=1, keepdims=True)  # [n, M] |e_y - π|^2 for each y
    reward = np.full(pi.shape, ctx.offset)
    reward[:, :ctx.n_correct] += 1.0
    b = (pi * reward * s2).sum(axis=1) / (pi * s2).sum(axis=1)  # [n]
    return r - b[:, None]


# --- the pass@k family: advantages whose expected gradient is that of pass@k, not pass@1 ------


def _pkpo(r, k):
    """PKPO (Walder & Karkhanis 2025): the unbiased pass@k reward transform, as advantages in
    rlvr's (1/G) Σ_i A_i (e_{y_i} − π) convention. r: [n, G] -> [n, G].

    With the G rewards of a group sorted ascending (ties by position), answer i at rank m gets
    ρ_i = [C(m−1, k−1) f_i + Σ_{l>m} C(l−2, k−2) f_(l)] / C(G, k): its share of the max over all
    k-subsets that contain it, so Σ_i ρ_i ∇log π(y_i) is unbiased for ∇ pass@k; A_i = G ρ_i.
    With 0/1 rewards: a correct answer gets k, a wrong one k (1 − C(G−c−1, k−1) / C(G−1, k−1))
    for c correct answers in its group; k = 1 is REINFORCE.
    """
    from math import comb

    n, G = r.shape
    order = np.argsort(r, axis=1, kind="stable")  # [n, G] ascending
    f = np.take_along_axis(r, order, axis=1)  # [n, G] sorted rewards
    m = np.arange(1, G + 1)  # ranks
    own = np.array([comb(int(j) - 1, k - 1) for j in m], float)  # C(m−1, k−1): subsets where it is the max
    above = np.array([comb(int(j) - 2, k - 2) if j >= 2 and k >= 2 else 0 for j in m], float)  # C(l−2, k−2)
    # Σ_{l>m} C(l−2, k−2) f_(l): a reversed cumulative sum of the higher ranks' weighted rewards
    higher = np.cumsum((above * f)[:, ::-1], axis=1)[:, ::-1]  # [n, G]: Σ_{l>=m}
    higher = np.concatenate([higher[:, 1:], np.zeros((n, 1))], axis=1)  # Σ_{l>m}
    rho = np.empty_like(r)
    np.put_along_axis(rho, order, (own * f + higher) / comb(G, k), axis=1)
    return G * rho


@estimator("pkpo_k2", min_G=2, label="PKPO (k = 2)", family="pass@k", label_zh="PKPO（k = 2）")
def pkpo_k2(r, ctx):
    """PKPO for pass@2: the unbiased pass@k transform (_pkpo) with k = 2."""
    return _pkpo(r, 2)


@estimator("pkpo_k4", min_G=4, label="PKPO (k = 4)", family="pass@k", label_zh="PKPO（k = 4）")
def pkpo_k4(r, ctx):
    """PKPO for pass@4 (another k: one more function like this one)."""
    return _pkpo(r, 4)


@estimator("grpo_passk", min_G=2, label="GRPO pass@k (verl)", family="pass@k", label_zh="GRPO pass@k（verl）")
def grpo_passk(r, ctx):
    """verl's grpo_passk (after Chen et al. 2025, arXiv 2503.19595): only a group's best answer
    gets an advantage, r_max − r_second_max, divided by the group's N−1 std + EPS (verl's
    default norm_adv_by_std_in_grpo); all others get 0. With 0/1 rewards only a group with
    exactly one correct answer moves: that answer gets sqrt(G)."""
    rows = np.arange(r.shape[0])
    order = np.argsort(-r, axis=1, kind="stable")  # best first; a tie at the top gives 0 anyway
    best, second = r[rows, order[:, 0]], r[rows, order[:, 1]]
    A = np.zeros_like(r)
    A[rows, order[:, 0]] = (best - second) / (r.std(axis=1, ddof=1) + EPS)
    return A


# --- rewarding the unlikely: a correct answer the policy already finds gets less ----------------

UNLIKELINESS_BETA = 0.25  # He et al.'s rank penalty β (their released recipe's lean.rank_penalty)


@estimator("unlikeliness", min_G=2, needs=("logp",), label="unlikeliness reward", family="pass@k",
           label_zh="罕见奖励（unlikeliness）")
def unlikeliness(r, ctx):
    """The unlikeliness reward (He, Fried & Welleck 2025, "Rewarding the unlikely"), then GRPO
    with the N−1 std, as their code does: each reward is scaled by 1 − β·rank/G, where rank 0 is
    the group's least likely answer by log π_old(y) and G−1 the likeliest (ties by position), so
    a correct answer the policy already samples often is rewarded least. They rank by the mean
    token log-prob; an answer here is one unit, so by log π_old(y)."""
    G = r.shape[1]
    rank = np.argsort(np.argsort(ctx.logp, axis=1, kind="stable"), axis=1, kind="stable")  # [n, G]
    scaled = r * (1 - UNLIKELINESS_BETA * rank / G)
    return (scaled - _group_mean(scaled)) / (scaled.std(axis=1, ddof=1, keepdims=True) + EPS)


# --- one sign of sample: reinforce only the correct answers, or only penalise the wrong ones ------
#
# Zhu et al. 2025, "The surprising effectiveness of negative reinforcement in LLM reasoning", as
# their code computes it (github.com/TianHongZXY/RLVR-Decomposed at a5d4e7c,
# compute_psr_nsr_outcome_advantage, with 0/1 scores): PSR A = score, NSR A = score − 1,
# W-REINFORCE A = λ·score for a correct answer and score − 1 for a wrong one. They read each
# answer's correctness off its reward (needs "correctness": r − offset is 1 or 0), so a reward
# offset changes nothing, and the config refuses them a KL penalty in the reward, which would
# blur it. On the tabular policy all three have E[ĝ] ∝ ∇p (NSR is REINFORCE with the constant
# baseline 1; tests/test_estimators.py).

W_REINFORCE_LAMBDA = 0.1  # their λ (the run scripts' positive_advantage_weight)


def _correct(r, ctx):
    """[n, G] 1.0 for a correct answer, 0.0 for a wrong one (r = 1{correct} + offset)."""
    return (r - ctx.offset > 0.5).astype(float)


@estimator("psr", needs=("correctness",), label="PSR", family="sample sign",
           long_label="PSR (correct answers only)", label_zh="PSR（只强化正确回答）")
def psr(r, ctx):
    """Positive sample reinforcement: A = 1 for a correct answer, 0 for a wrong one (at reward
    offset 0 exactly REINFORCE without a baseline, `none`)."""
    return _correct(r, ctx)


@estimator("nsr", needs=("correctness",), label="NSR", family="sample sign",
           long_label="NSR (wrong answers only)", label_zh="NSR（只惩罚错误回答）")
def nsr(r, ctx):
    """Negative sample reinforcement: A = −1 for a wrong answer, 0 for a correct one."""
    return _correct(r, ctx) - 1.0


@estimator("w_reinforce", needs=("correctness",), label="W-REINFORCE", family="sample sign",
           long_label="W-REINFORCE (λ = 0.1)", label_zh="W-REINFORCE（λ = 0.1）")
def w_reinforce(r, ctx):
    """Weighted REINFORCE: A = λ for a correct answer, −1 for a wrong one (λ = W_REINFORCE_LAMBDA)."""
    correct = _correct(r, ctx)
    return W_REINFORCE_LAMBDA * correct + (correct - 1.0)


def advantages(r, method, baseline=None, pi=None, offset=0.0, weights=None, logp=None, n_correct=1):
    """A: [n, G] for rewards r: [n, G] under the named estimator.

    baseline: [n] learned values (only `learned` reads it; zeros if not given);
    pi: [n, M] the policy's probabilities (for `oracle`, `optimal`);
    logp: [n, G] log π_old of each sampled answer (for `unlikeliness`);
    n_correct: how many of pi's answers, from answer 0 on, are correct.
    """
    if method not in ESTIMATORS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(ESTIMATORS)}")
    r = np.asarray(r, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"rewards must have shape [n, G], got {r.shape}")
    spec = ESTIMATORS[method]
    if r.shape[1] < spec.min_G:
        raise ValueError(f"method {method!r} needs G >= {spec.min_G}, got G = {r.shape[1]}")
    n = r.shape[0]
    if baseline is None and "baseline" in spec.needs:
        baseline = np.zeros(n)
    if pi is None and "pi" in spec.needs:
        raise ValueError(f"method {method!r} needs the policy's probabilities (pi=)")
    if logp is None and "logp" in spec.needs:
        raise ValueError(f"method {method!r} needs the log-probability of each sampled answer (logp=)")
    return spec.fn(r, Context(baseline=baseline, pi=pi, offset=offset, weights=weights, logp=logp,
                              n_correct=n_correct))
