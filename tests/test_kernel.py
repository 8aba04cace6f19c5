"""The fast training kernel against the straightforward one-hot formula, and sampling."""

import numpy as np
import pytest

from rlvr import Policy, advantages, make_task, train
from rlvr.policy import policy_gradient, sample_answers, sample_iid, softmax
from rlvr.training import make_row, train_seeds


def onehot_gradient(y, A, pi):
    """The lecture's formula: mean over the group of A_i (onehot(y_i) - pi). [n, G, M] memory."""
    n, G = y.shape
    onehot = np.zeros((n, G, pi.shape[1]))
    np.put_along_axis(onehot, y[:, :, None], 1.0, axis=2)
    return (A[:, :, None] * (onehot - pi[:, None, :])).mean(axis=1)


@pytest.mark.parametrize("n,G,M", [(1, 2, 2), (16, 8, 16), (7, 32, 5), (50, 3, 40)])
def test_policy_gradient_equals_onehot_formula(n, G, M):
    rng = np.random.default_rng(n * 1000 + G)
    pi = softmax(rng.normal(size=(n, M)))
    y = sample_answers(pi, G, rng)
    A = rng.normal(size=(n, G))
    np.testing.assert_allclose(policy_gradient(y, A, pi), onehot_gradient(y, A, pi), atol=1e-12)


def onehot_training(task, steps, n, G, lr, seed, advantages_of):
    """train()'s loop written out with the one-hot formula: the same draws from default_rng(seed);
    advantages_of(y, pi) -> A: [n, G]. The final logits [P, M]."""
    rng = np.random.default_rng(seed)
    logits = task["logits"].copy()
    for _ in range(steps):
        prompts = rng.choice(task["P"], n, replace=False)
        pi = softmax(logits[prompts])
        y = sample_answers(pi, G, rng)
        logits[prompts] += lr * onehot_gradient(y, advantages_of(y, pi), pi)
    return logits


@pytest.mark.parametrize("method", ["grpo", "unlikeliness"])
def test_training_equals_a_onehot_reimplementation_for_the_same_seed(method):
    """Re-run train()'s loop with the one-hot formula: same draws, same logits at the end (the
    unlikeliness reward ranks by log π_old(y) of the answers drawn, taken here from π itself)."""
    task = make_task(P=20, M=6, seed=3)
    steps, n, G, lr, seed = 40, 5, 4, 2.0, 11
    out = train(task, method, steps, n, G, lr, seed, eval_every=steps)
    logits = onehot_training(task, steps, n, G, lr, seed, lambda y, pi: advantages(
        (y == 0).astype(float), method, logp=np.log(np.take_along_axis(pi, y, axis=1))))
    np.testing.assert_allclose(out["logits"], logits, atol=1e-10)


def test_sampling_matches_the_probabilities():
    # 400,000 draws from 5 rows: each frequency within 4 binomial standard errors of pi
    rng = np.random.default_rng(0)
    pi = softmax(rng.normal(size=(5, 6)) * 2)
    y = sample_answers(pi, 80_000, rng)
    assert y.min() >= 0 and y.max() < 6
    freq = np.stack([np.bincount(row, minlength=6) / len(row) for row in y])
    se = np.sqrt(pi * (1 - pi) / y.shape[1])
    assert np.all(np.abs(freq - pi) < 4 * se + 1e-12)


def test_sample_iid_never_returns_an_out_of_range_answer():
    pi = np.array([0.0, 0.0, 1.0])  # cumulative sums end exactly at 1
    y = sample_iid(pi, (1000,), np.random.default_rng(0))
    assert np.all(y == 2)


def test_softmax_is_stable_for_huge_logits():
    z = np.array([[1e6, 0.0, -1e6], [-1e308, -1e308, 0.0]])
    p = softmax(z)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_huge_learning_rate_stays_finite():
    task = make_task(P=8, M=4)
    out = train(task, "none", 50, 4, 4, 1e6, 0, reward_offset=1e6)
    assert np.all(np.isfinite(out["logits"]))
    assert all(np.isfinite(rec.pass1) for rec in out["history"])


def test_train_is_deterministic_and_seed_dependent():
    task = make_task(P=16, M=4)
    a = train(task, "rloo", 30, 4, 4, 2.0, 5)
    b = train(task, "rloo", 30, 4, 4, 2.0, 5)
    c = train(task, "rloo", 30, 4, 4, 2.0, 6)
    np.testing.assert_array_equal(a["logits"], b["logits"])
    assert not np.array_equal(a["logits"], c["logits"])


def test_policy_probs_and_sample_shapes():
    task = make_task()
    pol = Policy(task)
    assert pol.probs().shape == (200, 16)
    assert pol.probs([3]).shape == (1, 16)
    np.testing.assert_allclose(pol.probs().sum(axis=1), 1.0)
    y = pol.sample(np.array([0, 5, 5]), 7, np.random.default_rng(0))
    assert y.shape == (3, 7) and y.dtype.kind == "i"


@pytest.mark.parametrize("method,pps,G,rounds", [
    ("grpo", 16, 8, 0), ("learned", 16, 8, 0), ("batch_std", 16, 8, 0), ("grpo", 1, 8, 0),
    ("grpo", 16, 8, 4), ("batch_std", 16, 4, 3), ("unlikeliness", 16, 8, 3)])
def test_a_seed_gives_the_same_bits_alone_or_in_any_batch(method, pps, G, rounds):
    """Seed 3 trained alone, beside 4 others and beside 499 others: identical logits and history."""
    task = make_task(P=40, M=6, seed=1)
    kw = dict(reward_offset=1.0 if method == "learned" else 0.0, eval_every=4, max_rounds=rounds)
    alone = train_seeds(task, make_row(method, 12, pps, G, 2.0, [3], **kw))[0]
    for seeds in ([0, 1, 3, 8, 9], list(range(500))):
        batched = train_seeds(task, make_row(method, 12, pps, G, 2.0, seeds, **kw))[seeds.index(3)]
        assert np.array_equal(alone["logits"], batched["logits"])
        assert len(alone["history"]) == len(batched["history"])
        for ra, rb in zip(alone["history"], batched["history"]):
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ra, rb)), (ra, rb)
        for key in ("zero_frac", "zero_frac_pred", "answers", "kept_frac"):
            assert alone[key] == batched[key], key


def test_the_same_bits_whatever_the_blas_thread_count():
    """A BLAS product adds in an order that depends on its threads; rlvr's maths uses none, so
    a batch estimator's Monte Carlo moments are the same bits with 1 thread and with 2."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from rlvr.metrics import gradient_stats; from rlvr.task import make_task;"
            "z = make_task()['logits'][100];"
            "print(repr(gradient_stats(z, 'batch_std', 8, 20000, np.random.default_rng(0), 1.0)),"
            " repr(gradient_stats(z, 'reinforce_pp_baseline', 8, 20000, np.random.default_rng(0), 1.0)))")
    outs = []
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads,
               "MKL_NUM_THREADS": threads}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True).stdout)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("method,max_rounds", [("grpo", 0), ("learned", 0), ("grpo", 3)])
def test_tracked_entropy_and_kl_equal_a_full_recomputation(method, max_rounds):
    """The entropy and KL(π‖π_ref) that training keeps row by row equal, at the last step, the
    ones computed afresh from the final logits (per level and overall), to 1e-12; at step 0 the
    entropy is the reference's and the KL exactly 0."""
    from rlvr.exact import kl

    task = make_task(P=40, M=8, seed=1)
    ref = softmax(task["logits"])
    out = train_seeds(task, make_row(method, 25, 8, 4, 3.0, [0, 1], eval_every=10, max_rounds=max_rounds))
    for o in out:
        first, last = o["history"][0], o["history"][-1]
        assert first.kl_ref == 0.0
        assert abs(first.entropy - (-(ref * np.log(ref)).sum(axis=1)).mean()) < 1e-12
        pi = softmax(o["logits"])
        entropy, divergence = -(pi * np.log(pi)).sum(axis=1), kl(pi, ref)  # [P] each
        assert abs(last.entropy - entropy.mean()) < 1e-12 and abs(last.kl_ref - divergence.mean()) < 1e-12
        for k in range(task["n_levels"]):
            at = task["level"] == k
            assert abs(last.entropy_by_level[k] - entropy[at].mean()) < 1e-12
            assert abs(last.kl_ref_by_level[k] - divergence[at].mean()) < 1e-12
        assert last.kl_ref > 0.01 and last.entropy < first.entropy  # it did move


def test_zero_signal_fraction_matches_its_prediction():
    task = make_task()
    for G, pps in ((2, 64), (8, 16)):
        out = train(task, "grpo", 300, pps, G, 2.0, 0)
        n = 300 * pps
        # the binomial s.e. bounds that of a sum of Bernoullis with varying probabilities
        se = np.sqrt(out["zero_frac_pred"] * (1 - out["zero_frac_pred"]) / n)
        assert abs(out["zero_frac"] - out["zero_frac_pred"]) < 4 * se, G


def test_dynamic_sampling_counts_every_answer_and_fills_with_signal():
    task = make_task()
    plain = train(task, "grpo", 100, 16, 8, 2.0, 0)
    dyn = train(task, "grpo", 100, 16, 8, 2.0, 0, max_rounds=4)
    assert plain["answers"] == 100 * 16 * 8 and plain["kept_frac"] == 1.0
    assert dyn["answers"] > plain["answers"]
    assert dyn["answers"] % 8 == 0 and dyn["answers"] <= 4 * plain["answers"]
    assert 0 < dyn["kept_frac"] <= 1
    # same steps: dropping no-signal groups and refilling learns faster
    assert dyn["history"][-1].pass1 > plain["history"][-1].pass1
    # one round and filtering: fewer groups are used than drawn
    one = train(task, "grpo", 100, 16, 8, 2.0, 0, max_rounds=1)
    assert one["answers"] == plain["answers"] and one["kept_frac"] == pytest.approx(1 - one["zero_frac"])


def test_where_the_mass_went_is_the_final_policy_against_the_reference():
    """The runs' fell_frac_<level> and top_wrong_<level> (demo 13's claim), recomputed from the
    job's own final logits: the share of a level's prompts whose π(correct) ended below the
    reference's, and the mean mass of each prompt's likeliest wrong answer."""
    import dataclasses

    from rlvr.task import LEVEL_KEYS
    from rlvr.training import row_columns

    task = make_task()
    row = dataclasses.replace(make_row("nsr", 40, 16, 8, 8.0, range(3), eval_every=20), k=(1,))
    summary, _, _, _, logits = row_columns(task, row)
    z = np.stack([np.asarray(logits[f"logit_{j}"]) for j in range(task["M"])], axis=1)  # [S * P, M]
    ref = softmax(task["logits"])
    for i, seed in enumerate(row.seeds):
        pi = softmax(z[np.asarray(logits["seed"]) == seed])  # [P, M]
        for k, name in enumerate(LEVEL_KEYS):
            level = task["level"] == k
            assert np.isclose(summary[f"fell_frac_{name}"][i], np.mean(pi[level, 0] < ref[level, 0]), rtol=0)
            assert np.isclose(summary[f"top_wrong_{name}"][i], pi[level, 1:].max(axis=1).mean(), rtol=1e-12)
    assert max(summary["fell_frac_very_hard"]) > 0  # NSR at lr 8 lowers some very hard prompts' π(correct)


def test_a_records_batch_statistics_are_its_steps():
    """With 0/1 rewards a batch's reward std over its answers is sqrt(m(1 − m)) of its mean m, and
    with GRPO at G = 2 every answer of a group with both rewards different has |A| = 1 (up to the
    std's ε) and of one without a signal 0, so the mean |A| is 1 − the zero-signal share; the
    curve file holds them on the "all" rows only (NaN on a level's and at step 0)."""
    import dataclasses

    import pandas as pd

    from rlvr.training import BATCH_CURVES, make_row, row_columns, train

    task = make_task(P=40, M=6, seed=1)
    out = train(task, "grpo", 12, 8, 2, 2.0, [0, 1, 2], eval_every=1)
    recs = [rec for o in out for rec in o["history"][1:]]
    for rec in recs:
        m = rec.mean_reward
        assert abs(rec.reward_std - np.sqrt(m * (1 - m))) < 1e-12, rec
        assert abs(rec.adv_abs - (1 - rec.zero_signal_frac)) < 1e-3, rec
    assert len({rec.adv_abs for rec in recs}) > 1  # the steps differ
    row = dataclasses.replace(make_row("grpo", 4, 8, 2, 2.0, [0], eval_every=2), k=(1,))
    curve = pd.DataFrame(row_columns(task, row)[1])
    on_all = (curve["level"] == "all") & (curve["step"] > 0)
    assert curve.loc[on_all, list(BATCH_CURVES)].notna().all().all()
    assert curve.loc[~on_all, list(BATCH_CURVES)].isna().all().all()
