"""Off-policy rollouts and rewards that ignore the answer: the exact facts of rlvr.exact and the
training code that they describe (demos 15 and 16).

The Monte Carlo checks train one step of many seeds at once and compare each logit's mean change
with the exact expectation: a difference beyond 4 standard errors fails (fixed seeds)."""

import numpy as np
import pytest

from rlvr.estimators import advantages
from rlvr.exact import exact_moments, off_policy_gradient, off_policy_group_moments, uniform_wrong_prompt
from rlvr.importance import IS_CORRECTIONS, is_weights
from rlvr.objective import Objective, random_reward_logit_change
from rlvr.policy import softmax
from rlvr.rewards import REWARDS
from rlvr.sampler import sampler_noise_logits
from rlvr.task import make_task
from rlvr.training import make_row, train, train_seeds

RNG = np.random.default_rng(7)
PEER_BOUNDS = [("truncated", 5.0, 0.5), ("masked", 3.0, 0.0)]  # OpenRLHF's tis clamp, TRL's sequence_mask


def _random_policies(n, M):
    return softmax(RNG.normal(0, 1.5, (n, M))), softmax(RNG.normal(0, 1.5, (n, M)))


def _on_policy(pi, r, b):
    """Σ_y π_y (r_y − b)(e_y − π), written out answer by answer: [n, M]."""
    n, M = pi.shape
    out = np.zeros((n, M))
    for y in range(M):
        out += (pi[:, y] * (r[:, y] - b))[:, None] * (np.eye(M)[y] - pi)
    return out


def test_full_importance_weights_give_the_on_policy_gradient_exactly():
    pi, mu = _random_policies(200, 6)
    r, b = RNG.normal(size=(200, 6)), RNG.normal(size=200)
    np.testing.assert_allclose(off_policy_gradient(pi, mu, r, b, "full"), _on_policy(pi, r, b),
                               rtol=0, atol=1e-12)
    # without a correction the sampler's own gradient, which differs
    assert np.abs(off_policy_gradient(pi, mu, r, b, "none") - _on_policy(pi, r, b)).max() > 1e-2


@pytest.mark.parametrize("cap", [1.5, 2.0, 5.0])
def test_truncation_bias_is_what_the_cap_cuts_off(cap):
    """truncated − on-policy = −Σ_{y: ρ_y > C} (π_y − C μ_y)(r_y − b)(e_y − π): only answers the
    sampler draws less than 1/C as often as π are under-weighted, each by what the cap cuts off."""
    pi, mu = _random_policies(200, 6)
    r, b = RNG.normal(size=(200, 6)), RNG.normal(size=200)
    cut = np.where(pi / mu > cap, pi - cap * mu, 0.0)  # [n, M]
    n, M = pi.shape
    bias = np.zeros((n, M))
    for y in range(M):
        bias -= (cut[:, y] * (r[:, y] - b))[:, None] * (np.eye(M)[y] - pi)
    got = off_policy_gradient(pi, mu, r, b, "truncated", cap) - _on_policy(pi, r, b)
    np.testing.assert_allclose(got, bias, rtol=0, atol=1e-12)
    assert (np.abs(bias).max(axis=1) > 0).any()


@pytest.mark.parametrize("method", ["grpo", "rloo"])
def test_a_group_estimators_exact_off_policy_update_equals_monte_carlo(method):
    """Demo 15's exact part is for the estimator it trains: off_policy_group_moments, enumerated
    over the group's number of correct answers, against groups of G = 8 drawn from a sampler that
    draws the correct answer a quarter as often as π (p = 0.5), each correction; the projection on
    ∇π(correct) and the correct answer's component within 4 standard errors (60,000 groups, seed 0)."""
    M, G, N = 16, 8, 60_000
    pi, mu = uniform_wrong_prompt(0.5, M), uniform_wrong_prompt(0.125, M)
    grad_p = 0.5 * (np.eye(M)[0] - pi)
    rng = np.random.default_rng(0)
    y = rng.choice(M, size=(N, G), p=mu)  # [N, G]
    A = advantages((y == 0).astype(float), method, pi=np.broadcast_to(pi, (N, M)))  # [N, G]
    onehot = np.eye(M)[y]  # [N, G, M]
    for correction in ("full", "truncated", "masked"):
        w = is_weights(pi[y] / mu[y], correction, 2.0)  # [N, G]
        g = ((w * A)[..., None] * (onehot - pi)).mean(axis=1)  # [N, M]: each group's update
        exact = off_policy_group_moments(pi, mu, method, G, correction, 2.0)[0]
        for sample, value in ((g @ grad_p, exact @ grad_p), (g[:, 0], exact[0])):
            se = sample.std(ddof=1) / np.sqrt(N)
            assert abs(sample.mean() - value) < 4 * se, (correction, sample.mean(), value, se)


@pytest.mark.parametrize("correction,cap,low", [("truncated", 2.0, None), *PEER_BOUNDS, ("full", 2.0, None)])
def test_a_group_estimators_exact_off_policy_moments_equal_monte_carlo(correction, cap, low):
    """off_policy_group_moments' mean and variance of ĝ·∇π(correct), for GRPO (G = 8) with a sampler
    and a policy of 16 answers drawn at random, each within 3 standard errors of 200,000 groups'
    (seed 0); the variance's s.e. from the sample's fourth moment."""
    M, G, N = 16, 8, 200_000
    pi, mu = (np.random.default_rng(s).dirichlet(np.ones(M)) for s in (2, 1))
    mean, var = off_policy_group_moments(pi, mu, "grpo", G, correction, cap, low)
    d = pi[0] * (np.eye(M)[0] - pi)  # ∇π(correct)
    y = np.random.default_rng(0).choice(M, size=(N, G), p=mu)  # [N, G]
    A = advantages((y == 0).astype(float), "grpo")  # [N, G]
    u = d - pi @ d  # [M]: (e_y − π)·∇π(correct)
    s = (is_weights(pi[y] / mu[y], correction, cap, low) * A * u[y]).mean(axis=1)  # [N]
    assert abs(s.mean() - mean @ d) < 3 * s.std(ddof=1) / np.sqrt(N)
    dev = (s - s.mean()) ** 2
    assert abs(dev.mean() - var) < 3 * dev.std(ddof=1) / np.sqrt(N)


def test_demo15s_stale_sampler_model_reaches_the_policy_it_names():
    """The exact part's stale sampler: _start_for finds the made prompt that `lag` expected steps
    bring to the named π(correct) (to 1e-6), and with the sampler the policy (lag 0) every
    correction keeps the whole on-policy update (share 1, s.d. 1, bias 0)."""
    from rlvr.demos.off_policy import PEERS, _made_logits, _start_for, cap_measures, expected_path

    target = np.array([0.01, 0.05, 0.5])
    start = _start_for(target, 16, "grpo", 8, 0.16, 16)
    reached = softmax(expected_path(_made_logits(start, 16), "grpo", 8, 0.16, 16))[:, 0]
    np.testing.assert_allclose(reached, target, rtol=1e-6)
    assert (start < target).all()
    pi = softmax(_made_logits(target, 16))
    keys = [("none", None, None), *PEERS.values(), ("masked_renorm", 2.0, None)]
    for k in cap_measures(pi, pi, "grpo", 8, keys, np.arange(3)).values():
        np.testing.assert_allclose(np.stack([k.share, k.share_se, k.sd, k.bias]),
                                   [[1] * 3, [0] * 3, [1] * 3, [0] * 3], atol=1e-12)


def test_the_group_formula_is_reinforces_and_on_policy_exact_moments():
    """With REINFORCE the group does not matter: off_policy_group_moments is off_policy_gradient's
    per-answer expectation; on-policy without a correction it is exact_moments' mean, for GRPO too;
    for GRPO full IS is not on-policy: it gives more the rarer the sampler's correct answer."""
    M, G = 16, 8
    pi = uniform_wrong_prompt(0.5, M)
    grad_p = 0.5 * (np.eye(M)[0] - pi)
    for share in (0.5, 0.25, 0.0625):
        mu = uniform_wrong_prompt(0.5 * share, M)
        for correction in ("none", "full", "truncated", "masked"):
            assert np.allclose(off_policy_group_moments(pi, mu, "none", G, correction, 2.0)[0],
                               off_policy_gradient(pi, mu, np.eye(M)[0], 0.0, correction, 2.0), atol=1e-12)
    for method in ("grpo", "rloo", "none"):
        on_policy = off_policy_group_moments(pi, pi, method, G, "none")[0][0]
        assert np.isclose(on_policy, exact_moments(pi, method, G)[0], atol=1e-12)
    on = off_policy_group_moments(pi, pi, "grpo", G, "none")[0] @ grad_p
    full = [off_policy_group_moments(pi, uniform_wrong_prompt(0.5 * s, M), "grpo", G, "full")[0] @ grad_p / on
            for s in (1.0, 0.5, 0.25, 0.125, 0.0625)]
    assert np.isclose(full[0], 1.0) and all(a < b for a, b in zip(full, full[1:])), full


def test_is_weights_of_each_correction():
    rho = np.array([0.1, 0.5, 1.0, 1.9, 2.0, 2.1, 30.0])
    np.testing.assert_array_equal(is_weights(rho, "none", 2.0), np.ones(7))
    np.testing.assert_array_equal(is_weights(rho, "full", 2.0), rho)
    np.testing.assert_array_equal(is_weights(rho, "truncated", 2.0), [0.1, 0.5, 1.0, 1.9, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(is_weights(rho, "masked", 2.0), [0.0, 0.5, 1.0, 1.9, 2.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="unknown is_correction 'clip'; allowed: none, full, truncated, "):
        is_weights(rho, "clip", 2.0)
    # a lower bound of its own (is_cap_low): OpenRLHF's clamp to [0.5, 5], TRL's mask above 3 alone
    np.testing.assert_array_equal(is_weights(rho, "truncated", 5.0, 0.5), [0.5, 0.5, 1.0, 1.9, 2.0, 2.1, 5.0])
    np.testing.assert_array_equal(is_weights(rho, "masked", 3.0, 0.0), [0.1, 0.5, 1.0, 1.9, 2.0, 2.1, 0.0])
    np.testing.assert_array_equal(is_weights(rho, "masked", 2.0, -1.0), is_weights(rho, "masked", 2.0))
    with pytest.raises(ValueError, match="is_cap_low = 1.0 must be in"):
        is_weights(rho, "masked", 3.0, 1.0)


def _one_step(correction, **knobs):
    """The logit change of one step of REINFORCE (A = r) for each of 4000 seeds on a 4 x 4 task,
    every prompt drawn once with one answer: ([S, P, M], the task)."""
    task = make_task(P=4, M=4, seed=3)
    seeds = list(range(4000))
    outs = train_seeds(task, make_row("none", 1, 4, 1, 1.0, seeds, is_correction=correction, **knobs))
    return np.stack([o["logits"] for o in outs]) - task["logits"], task, seeds


def _z(sample, expected):
    """The largest |mean over seeds − expected| in standard errors, over the components."""
    diff = sample - expected  # [S, ...]
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(diff))
    return (np.abs(diff.mean(axis=0)) / np.where(se > 0, se, np.inf)).max()


def _within(sample, expected, n_se=4.0):
    """Each component's mean over seeds within n_se standard errors of the expected mean."""
    assert _z(sample, expected) < n_se, _z(sample, expected)


@pytest.mark.parametrize("correction,cap,low", [(c, 2.0, None) for c in IS_CORRECTIONS] + PEER_BOUNDS)
def test_training_with_a_perturbed_sampler_follows_the_exact_expectation(correction, cap, low):
    """One training step with answers from softmax(z + σ ε) and each correction (and the peers'
    bounds, is_cap_low, at σ = 2, where many ratios pass them) moves the logits, on average over
    seeds, by the exact off_policy_gradient of that seed's sampler; with full weights that is the
    on-policy gradient whatever the sampler."""
    sigma = 1.0 if low is None else 2.0
    dz, task, seeds = _one_step(correction, sampler_noise=sigma, is_cap=cap, is_cap_low=low)
    pi = softmax(task["logits"])  # [P, M]
    mu = softmax(task["logits"][None] + sampler_noise_logits(seeds, pi.shape, sigma))  # [S, P, M]
    r = np.broadcast_to(np.eye(4)[0], mu.shape)
    pis, b = np.broadcast_to(pi, mu.shape), np.zeros(mu.shape[:2])
    _within(dz, off_policy_gradient(pis, mu, r, b, correction, cap, low))
    if low is not None:  # the bound is read: the correction's own lower bound predicts otherwise
        own = off_policy_gradient(pis, mu, r, b, correction, cap)
        assert _z(dz, own) > 6, _z(dz, own)
    if correction == "full":
        _within(dz, np.broadcast_to(_on_policy(pi, np.eye(4)[[0] * 4], np.zeros(4)), dz.shape))


def test_a_stale_sampler_draws_from_the_policy_of_lag_steps_ago():
    """With sampler_lag L the first L + 1 steps sample from the reference: their answers are
    those of a run whose policy never moved (lr tiny), step by step, and the (L+2)-th differs."""
    task = make_task(P=8, M=4, seed=0)
    lag = train(task, "grpo", 3, 8, 4, 2.0, [0, 1], sampler_lag=2, eval_every=1)
    frozen = train(task, "grpo", 3, 8, 4, 1e-12, [0, 1], eval_every=1)
    for a, b in zip(lag, frozen):  # the mean reward of each step's batch: the answers drawn
        assert [r.mean_reward for r in a["history"][1:]] == [r.mean_reward for r in b["history"][1:]]
    more = train(task, "grpo", 12, 8, 4, 2.0, [0, 1], sampler_lag=2, eval_every=1)
    frozen = train(task, "grpo", 12, 8, 4, 1e-12, [0, 1], eval_every=1)
    assert any([r.mean_reward for r in a["history"]] != [r.mean_reward for r in b["history"]]
               for a, b in zip(more, frozen))


@pytest.mark.parametrize("method", ["grpo", "rloo", "none"])
def test_rewards_that_ignore_the_answer_move_no_logit_in_expectation_with_one_update(method):
    z = np.log([0.6, 0.2, 0.15, 0.05])
    for p_reward in (0.5, 0.3):
        change = random_reward_logit_change(z, 4, method, Objective(), 2.0, p_reward)
        np.testing.assert_allclose(change, 0.0, rtol=0, atol=1e-12)
    # beyond the first update the clip sees each answer's ratio, and the expectation moves
    clipped = random_reward_logit_change(z, 4, method, Objective(epochs=4, clip_high=0.28), 2.0)
    assert np.abs(clipped).max() > 1e-3


@pytest.mark.slow
def test_random_reward_training_follows_the_exact_expectation():
    """One batch of μ = 4 clipped GRPO updates on random ½ rewards: the mean logit change over
    4000 seeds is random_reward_logit_change's, prompt by prompt."""
    task = make_task(P=4, M=4, seed=3)
    obj = {"epochs": 4, "clip_high": 0.28}
    outs = train(task, "grpo", 1, 4, 4, 2.0, list(range(16000)), reward="random_half", **obj)
    dz = np.stack([o["logits"] for o in outs]) - task["logits"]

    def exact(**knobs):
        return np.broadcast_to([random_reward_logit_change(z, 4, "grpo", Objective(**knobs), 2.0)
                                for z in task["logits"]], dz.shape)

    _within(dz, exact(**obj))
    # the test tells the clip's ε apart: ε_high 0.2 predicts a change this sample rules out
    assert _z(dz, exact(epochs=4, clip_high=0.2)) > 6


def test_random_rewards_pay_at_their_rate_whatever_the_answer():
    y = np.random.default_rng(0).integers(0, 4, (20000, 8))
    pi = np.broadcast_to([0.3, 0.3, 0.2, 0.2], (20000, 4))
    u = np.random.default_rng(1).random(y.shape)
    for name, rate in (("random_half", 0.5), ("random_mean", 0.3)):
        r = REWARDS[name].fn(y, 1, pi, u).astype(float)
        assert abs(r.mean() - rate) < 4 * r.std() / np.sqrt(r.size)
        se = r.std() * np.sqrt(1 / (y == 0).sum() + 1 / (y != 0).sum())
        assert abs(r[y == 0].mean() - r[y != 0].mean()) < 4 * se
    np.testing.assert_array_equal(REWARDS["verifier"].fn(y, 2, pi, None), y < 2)


def test_bad_knobs_are_refused_and_random_draws_do_not_depend_on_the_seeds_beside():
    """An unknown reward or a cap <= 1 is refused by name; a seed's random rewards and sampler
    noise come from generators of its own, so it trains the same alone or beside another seed."""
    task = make_task(P=8, M=4, seed=0)
    with pytest.raises(ValueError, match="reward = 'coin'; allowed: verifier, random_half, random_mean"):
        train(task, "grpo", 1, 8, 4, 2.0, 0, reward="coin")
    with pytest.raises(ValueError, match="is_cap = 1.0 must be > 1"):
        train(task, "grpo", 1, 8, 4, 2.0, 0, is_cap=1.0)
    knobs = {"reward": "random_mean", "sampler_noise": 0.5, "sampler_lag": 2, "is_correction": "truncated"}
    both = train(task, "grpo", 6, 4, 4, 2.0, [0, 1], **knobs)
    alone = train(task, "grpo", 6, 4, 4, 2.0, 1, **knobs)
    assert both[1]["logits"].tolist() == alone["logits"].tolist()
    assert both[0]["logits"].tolist() != alone["logits"].tolist()


def test_where_a_correction_loses_most_is_named_only_when_resolved():
    """Demo 15's per-level claim names one level only where its loss is resolved below 0 and
    resolved beyond the next level's (paired by seed); two close levels are named together."""
    import pandas as pd

    from rlvr.demos.off_policy import _most_lost

    seeds = pd.Index(range(10), name="seed")
    noise = pd.Series(np.linspace(-0.01, 0.01, 10), index=seeds)
    one = {"easy": noise * 0, "hard": -0.1 + noise, "very_hard": -0.3 + noise}
    text, diffs = _most_lost(one)
    assert text.startswith("it loses most on the very hard prompts (0.2") and len(diffs) == 2
    two = {"easy": noise * 0, "medium": -0.30 + noise, "hard": -0.29 - noise}
    text, diffs = _most_lost(two)
    assert text.startswith("it loses most on the medium and hard prompts") and not diffs[1].resolved
    text, diffs = _most_lost({"easy": noise, "hard": noise * 2})
    assert text == "it loses resolvably on no level" and diffs == []


def test_masked_renorm_counts_only_the_answers_it_kept_as_verls_rejection_does():
    """masked_renorm weighs as masked does; the loss's count leaves out what it dropped: under
    token-mean each seed's minibatch divides by its kept answers' tokens, under seq-mean-token-mean
    by its kept answers, and seq-mean-token-sum-norm's constant normaliser is unchanged (verl
    b178a3c agg_loss), by hand on two seeds' rows; in training, bit for bit masked's there."""
    from rlvr.training import Batch, loss_weights

    np.testing.assert_array_equal(is_weights(np.array([0.1, 1.0, 3.0]), "masked_renorm", 2.0), [0, 1.0, 0])
    length = np.array([[2, 4, 6, 8]] * 3)  # [P, M] tokens of each answer
    y = np.array([[0, 1, 2, 3], [3, 3, 0, 1], [1, 2, 2, 0]])  # [R, G]: rows 0, 1 seed 0; row 2 seed 1
    b = Batch(np.array([0, 0, 1]), np.array([0, 1, 2]), None, y, None, np.array([2, 1]))
    kept = np.array([[True, False, True, True], [False, False, True, True], [True, True, False, True]])
    unit = 5.0
    tokens = length[0][y]  # [R, G]
    for agg in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
        obj = Objective(loss_agg=agg)
        plain, renorm = loss_weights(obj, b, length, unit), loss_weights(obj, b, length, unit, kept)
        if agg == "seq-mean-token-sum-norm":
            assert plain is None and renorm is None
            continue
        if agg == "token-mean":  # N·unit / (tokens of the kept answers), per seed
            kept_tokens = np.array([(tokens[:2] * kept[:2]).sum()] * 2 + [(tokens[2] * kept[2]).sum()])
            expected = np.array([8, 8, 4])[:, None] * unit / kept_tokens[:, None] * np.ones((3, 4))
        else:  # unit/|y| times the answers over the kept answers, per seed
            share = np.array([8 / 5, 8 / 5, 4 / 3])
            expected = unit / tokens * share[:, None]
        np.testing.assert_allclose(renorm, expected, rtol=1e-14)
        assert not np.allclose(renorm, plain)
    task = make_task(P=20, M=6, seed=2)
    same = train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1], sampler_lag=3, sampler_noise=1.0,
                                      is_correction="masked_renorm", is_cap=1.5))
    masked = train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1], sampler_lag=3, sampler_noise=1.0,
                                        is_correction="masked", is_cap=1.5))
    for a, c in zip(masked, same):
        np.testing.assert_array_equal(a["logits"], c["logits"])
    token = {c: train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1], sampler_lag=3, sampler_noise=1.0,
                                           is_correction=c, is_cap=1.5, loss_agg="token-mean"))
             for c in ("masked", "masked_renorm")}
    assert not np.array_equal(token["masked"][0]["logits"], token["masked_renorm"][0]["logits"])
