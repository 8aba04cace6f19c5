"""Issue 36, items 4 and 5: minibatches, GSPO and CISPO (rlvr/objective.py) against their formulas.

Each policy loss's update is the gradient of its paper's objective, taken by finite differences
of that objective written here from the paper (not from rlvr's weights); minibatches are the
same updates done by hand, one minibatch after the other; m = 1 and μ = 1 are today's update,
bit for bit (the default config's results, and a test here); combinations that do not go
together are refused before training, naming the key.
"""

import re

import numpy as np
import pytest

from rlvr.config import ConfigError, validate_config
from rlvr.objective import (
    Objective,
    clipped_surrogate_weights,
    minibatch_columns,
    policy_updates,
    random_reward_logit_change,
)
from rlvr.policy import inverse_cdf, log_softmax, policy_gradient, softmax
from rlvr.task import make_task
from rlvr.training import make_row, train_seeds


def _batch(seed=0, R=3, M=5, G=8):
    rng = np.random.default_rng(seed)
    z0 = rng.normal(size=(R, M))
    y = inverse_cdf(softmax(z0), rng.random((R, G)))
    A = rng.normal(size=(R, G))
    length = rng.integers(1, 6, size=(R, G)).astype(float)
    return z0, y, A, length


def _logp(z, y):
    return np.take_along_axis(log_softmax(z), y, axis=1)


def _numerical_gradient(f, z, h=1e-6):
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[idx] = h
        g[idx] = (f(z + e) - f(z - e)) / (2 * h)
    return g


# each paper's objective of one minibatch of answers, to ascend, as a function of the logits z
# (π_old's log-probabilities and the advantages fixed): a mean over the minibatch's answers
def _ppo_objective(z, y, A, logp_old, length, eps_low, eps_high):
    rho = np.exp(_logp(z, y) - logp_old)
    return np.minimum(rho * A, np.clip(rho, 1 - eps_low, 1 + eps_high) * A).mean(axis=1).sum()


def _gspo_objective(z, y, A, logp_old, length, eps_low, eps_high):
    # Zheng et al. 2025, eq. 5: s_i = (π(y_i)/π_old(y_i))^(1/|y_i|), min(s A, clip(s) A)
    s = np.exp((_logp(z, y) - logp_old) / length)
    return np.minimum(s * A, np.clip(s, 1 - eps_low, 1 + eps_high) * A).mean(axis=1).sum()


def _cispo_objective_at(z_at, y, A, logp_old, eps_low, eps_high):
    # MiniMax-M1 2025, eq. 4: sg(clip(r)) A log π(y), the weight taken at z_at and held
    held = np.clip(np.exp(_logp(z_at, y) - logp_old), 1 - eps_low, 1 + eps_high)
    return lambda z: (held * A * _logp(z, y)).mean(axis=1).sum()


@pytest.mark.parametrize("loss", ["ppo", "gspo", "cispo"])
def test_each_policy_loss_ascends_its_papers_objective(loss):
    """The second update of μ = 2 (π moved from π_old by the first) is lr times the gradient of
    the paper's objective at the moved logits, for every row; with lengths 1 to 5 and a clip that
    binds on some answers and not others."""
    z0, y, A, length = _batch()
    lr = 0.7
    lo, hi = (0.02, 0.03) if loss == "gspo" else (0.2, 0.28)  # GSPO's ratio is ρ^(1/|y|): nearer 1
    agg = "seq-mean-token-mean" if loss == "gspo" else "seq-mean-token-sum-norm"
    obj = Objective(epochs=2, clip_low=lo, clip_high=hi, policy_loss=loss, loss_agg=agg)
    gain = 1 / length if loss == "gspo" else None  # seq-mean-token-mean's 1/|y| (unit 1)
    # the first update is on-policy for every loss: W = A (times the aggregation's weight)
    first = z0 + lr * policy_gradient(y, A if gain is None else A * gain, softmax(z0))
    one, _ = policy_updates(z0, y, A, softmax(z0), lr, obj._replace(epochs=1), gain=gain, length=length)
    np.testing.assert_array_equal(one, first)
    logp_old = _logp(z0, y)
    if loss == "ppo":
        f = lambda z: _ppo_objective(z, y, A, logp_old, length, lo, hi)  # noqa: E731
    elif loss == "gspo":
        f = lambda z: _gspo_objective(z, y, A, logp_old, length, lo, hi)  # noqa: E731
    else:
        f = _cispo_objective_at(first, y, A, logp_old, lo, hi)
    got, clipped = policy_updates(z0, y, A, softmax(z0), lr, obj, gain=gain, length=length)
    expected = first + lr * _numerical_gradient(f, first)  # the objectives weigh |y| themselves
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7)
    assert 0 < clipped.sum() < y.size  # the clip acted on some answers, not all


def test_gspo_on_answers_of_one_token_is_ppo():
    """|y| = 1: the sequence ratio is the answer's ratio, so GSPO's update is PPO's, bit for bit."""
    z0, y, A, _ = _batch(seed=1)
    ones = np.ones_like(A)
    ppo = policy_updates(z0, y, A, softmax(z0), 1.5, Objective(epochs=3))
    gspo = policy_updates(z0, y, A, softmax(z0), 1.5,
                          Objective(epochs=3, policy_loss="gspo", loss_agg="seq-mean-token-mean"),
                          length=ones)
    np.testing.assert_array_equal(ppo[0], gspo[0])
    np.testing.assert_array_equal(ppo[1], gspo[1])


def test_a_per_token_clip_with_the_log_ratio_spread_evenly_is_gspos_and_on_few_tokens_its_root():
    """ratio_tokens: PPO's clip of a token's ratio with the log-ratio spread over all an answer's
    tokens is GSPO's sequence clip, bit for bit (weights and clipped marks, μ = 3); on few tokens
    (4, or |y| where shorter) a token's ratio is ρ^(1/n): PPO's weight A·ρ^(1/n) or 0 where it
    leaves [0.8, 1.2], CISPO's the capped ρ^(1/n) times A (by hand, answers on either side)."""
    from rlvr.objective import FEW_TOKENS, POLICY_LOSSES

    z0, y, A, length = _batch(seed=2)
    lo, hi = 0.02, 0.03
    gspo = policy_updates(z0, y, A, softmax(z0), 1.5, Objective(epochs=3, clip_low=lo, clip_high=hi,
                          policy_loss="gspo", loss_agg="seq-mean-token-mean"), length=length)
    even = policy_updates(z0, y, A, softmax(z0), 1.5, Objective(epochs=3, clip_low=lo, clip_high=hi,
                          loss_agg="seq-mean-token-mean", ratio_tokens="even"), length=length)
    np.testing.assert_array_equal(gspo[0], even[0])
    np.testing.assert_array_equal(gspo[1], even[1])
    log_ratio = np.log(np.array([[1.5, 0.3, 1.04, 2.5]]))
    L = np.array([[10.0, 10.0, 2.0, 8.0]])
    n = np.minimum(L, FEW_TOKENS)  # [[4, 4, 2, 4]]
    A1 = np.array([[1.0, -1.0, 1.0, 1.0]])
    obj = Objective(clip_low=0.2, clip_high=0.2, ratio_tokens="few")
    W, clipped = POLICY_LOSSES["ppo"](A1, log_ratio, L, obj)
    r = np.exp(log_ratio / n)  # [1.107, 0.740, 1.020, 1.257]
    assert clipped.tolist() == [[False, True, False, True]]
    np.testing.assert_allclose(W, np.where(clipped, 0.0, A1 * r))
    Wc, capped = POLICY_LOSSES["cispo"](A1, log_ratio, L, obj._replace(policy_loss="cispo"))
    np.testing.assert_allclose(Wc, np.clip(r, 0.8, 1.2) * A1)
    assert capped.tolist() == [[False, True, False, True]]
    with pytest.raises(ValueError, match="ratio_tokens 'even' reads each sampled answer's length"):
        POLICY_LOSSES["ppo"](A1, log_ratio, None, obj._replace(ratio_tokens="even"))


def test_cispo_keeps_the_gradient_where_ppo_zeroes_it():
    """ρ beyond the clip: PPO's weight is 0, CISPO's the capped ratio times A (never 0 where A is not)."""
    A = np.array([[1.0, -1.0, 1.0]])
    log_ratio = np.log([[1.6, 0.5, 1.1]])
    obj = Objective(clip_low=0.2, clip_high=0.28)
    from rlvr.objective import POLICY_LOSSES

    W_ppo, c_ppo = POLICY_LOSSES["ppo"](A, log_ratio, None, obj)
    W_cispo, c_cispo = POLICY_LOSSES["cispo"](A, log_ratio, None, obj)
    np.testing.assert_allclose(W_ppo, [[0.0, 0.0, 1.1]])
    np.testing.assert_allclose(W_cispo, [[1.28, -0.8, 1.1]])
    assert c_ppo.tolist() == c_cispo.tolist() == [[True, True, False]]


def test_minibatches_are_updates_one_after_the_other_by_hand():
    """m = 2, μ = 2: four updates, on answers 0-3, 4-7, 0-3, 4-7 of every group, each the mean over
    its four answers, the ratio against π_old and PPO's clip, written out here."""
    z0, y, A, _ = _batch(seed=2)
    lr, lo, hi = 1.2, 0.2, 0.2
    logp_old = _logp(z0, y)
    z, clipped = z0.copy(), 0
    for cols in (slice(0, 4), slice(4, 8), slice(0, 4), slice(4, 8)):
        rho = np.exp(_logp(z, y[:, cols]) - logp_old[:, cols])
        W, c = clipped_surrogate_weights(A[:, cols], rho, lo, hi)
        z = z + lr * policy_gradient(y[:, cols], W, softmax(z))
        clipped += c.sum()
    got, got_clipped = policy_updates(z0, y, A, softmax(z0), lr, Objective(epochs=2, minibatches=2))
    np.testing.assert_allclose(got, z, rtol=0, atol=1e-13)
    assert got_clipped.sum() == clipped > 0


def test_one_minibatch_and_one_epoch_are_todays_update_bit_for_bit():
    task = make_task(P=40, M=6, seed=1)
    plain = train_seeds(task, make_row("grpo", 20, 8, 8, 2.0, [0, 1]))
    same = train_seeds(task, make_row("grpo", 20, 8, 8, 2.0, [0, 1], minibatches=1, policy_loss="ppo"))
    for a, b in zip(plain, same):
        np.testing.assert_array_equal(a["logits"], b["logits"])
    # μ = 1, m = 1: the update is on-policy, so every policy loss is the same update
    cispo = train_seeds(task, make_row("grpo", 20, 8, 8, 2.0, [0, 1], policy_loss="cispo"))
    for a, b in zip(plain, cispo):
        np.testing.assert_array_equal(a["logits"], b["logits"])


def test_minibatch_columns_split_each_group_once():
    for G in (1, 4, 7, 8):
        for m in range(1, G + 1):
            parts = minibatch_columns(G, m)
            assert len(parts) == m
            assert np.concatenate([np.arange(G)[p] for p in parts]).tolist() == list(range(G))
            sizes = [len(range(G)[p]) for p in parts]
            assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
    with pytest.raises(ValueError, match="minibatches = 9 must be between 1 and the group size G = 8"):
        minibatch_columns(8, 9)


def test_training_with_minibatches_clips_only_after_the_first():
    """μ = 1, m = 4: the first minibatch is on-policy; the later three see a moved π, so the clip
    acts on at most 3/4 of the pairs, and on some at lr 2."""
    task = make_task(P=40, M=6, seed=1)
    out = train_seeds(task, make_row("grpo", 20, 8, 8, 2.0, [0, 1], minibatches=4, eval_every=5))
    fracs = [rec.clip_frac for o in out for rec in o["history"][1:]]
    assert 0 < max(fracs) <= 0.75


def test_random_rewards_move_the_logits_in_expectation_with_minibatches_only_through_the_clip():
    """Rewards that ignore the answer, exact over every group: μ = 1 and m = 1, no expected change;
    m minibatches without the clip, none either, by construction (each answer is used once, and its
    weight ρ = π/π_old makes E_y[ρ (e_y − π)] = 0 for the π it updates); with the clip, a drift,
    because the clip zeroes some answers' weights by their ratio."""
    logits = np.log([0.6, 0.2, 0.15, 0.05])
    still = random_reward_logit_change(logits, 4, "grpo", Objective(), 2.0)
    np.testing.assert_allclose(still, 0, atol=1e-12)
    for m in (2, 4):
        free = random_reward_logit_change(logits, 4, "grpo", Objective(minibatches=m, clip_low=1.0,
                                                                       clip_high=np.inf), 2.0)
        np.testing.assert_allclose(free, 0, atol=1e-12)
        moved = random_reward_logit_change(logits, 4, "grpo", Objective(minibatches=m), 2.0)
        assert np.abs(moved).max() > 1e-3


@pytest.mark.parametrize("knobs,message", [
    ({"policy_loss": "gspo"}, "loss_agg = 'seq-mean-token-sum-norm' with policy_loss = 'gspo'"),
    ({"policy_loss": "cispo", "clip_c": 3.0}, "clip_c = 3 with policy_loss = 'cispo'"),
    ({"policy_loss": "grpo"}, "policy_loss = 'grpo'; allowed: ppo, gspo, cispo"),
    ({"minibatches": 0}, "minibatches = 0 must be a whole number >= 1"),
    ({"policy_loss": "gspo", "loss_agg": "seq-mean-token-mean", "ratio_tokens": "even"},
     "ratio_tokens = 'even' with policy_loss = 'gspo'"),
    ({"ratio_tokens": "all"}, "ratio_tokens = 'all'; allowed: one, few, even"),
])
def test_a_bad_policy_loss_is_refused_before_training(knobs, message):
    with pytest.raises(ValueError, match=message):
        train_seeds(make_task(P=8, M=4), make_row("grpo", 1, 2, 4, 1.0, [0], **knobs))


@pytest.mark.parametrize("row,key,message", [
    ({"minibatches": 16}, "clipping.rows[0].minibatches", "16 minibatches of a group of G = 8 answers"),
    ({"policy_loss": "gspo"}, "clipping.rows[0].loss_agg", "GSPO averages an answer's tokens"),
    ({"policy_loss": "gspo", "loss_agg": "seq-mean-token-mean", "clip_c": 3},
     "clipping.rows[0].clip_c", "the dual clip is PPO's"),
])
def test_the_config_names_the_key_of_a_bad_combination(row, key, message):
    with pytest.raises(ConfigError, match=rf"config key {re.escape(key)}: .*{message}"):
        validate_config({"clipping": {"rows": [{"method": "grpo", "lr": 1.0, **row}]}})
