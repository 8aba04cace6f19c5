"""Issue 14, item 1: the rest of GRPO's objective (rlvr/objective.py) against hand-derived values.

Clipping: a weight vector worked by hand, a step where the clip must bind (every answer of the
second update zeroed, so μ = 2 ends where μ = 1 did) and one where it must not. The KL term:
the expected update of each estimator in the loss equals −lr·β times its exact expected
gradient (rlvr.exact.kl_gradient, itself checked against finite differences in test_kl.py);
in the reward, one kernel step recomputed by hand. Aggregation: each mode's weights by hand.
Defaults: the lecture's numbers, bit for bit.
"""


import numpy as np
import pytest

from rlvr.exact import kl_gradient
from rlvr.kl import kl_estimate
from rlvr.objective import Objective, aggregation_weights, clipped_surrogate_weights, policy_updates
from rlvr.policy import inverse_cdf, log_softmax, softmax
from rlvr.task import make_task
from rlvr.training import make_row, train_seeds


def test_clipped_surrogate_weights_by_hand():
    A = np.array([[1.0, 1.0, -1.0, -1.0, -1.0, 0.0, 2.0]])
    ratio = np.array([[1.1, 1.3, 0.9, 0.7, 3.5, 2.0, 1.25]])
    # ε_low 0.2, ε_high 0.28, dual clip c = 3: clipped are 1.3 (A > 0, above 1.28), 0.7 (A < 0,
    # below 0.8) and 3.5 (A < 0, above c); A = 0 is never clipped; 1.25 < 1.28 is not
    W, clipped = clipped_surrogate_weights(A, ratio, 0.2, 0.28, 3.0)
    assert clipped.tolist() == [[False, True, False, True, True, False, False]]
    np.testing.assert_array_equal(W, [[1.1, 0.0, -0.9, 0.0, 0.0, 0.0, 2.5]])
    # without the dual clip a negative advantage with a large ratio keeps its weight Aρ
    W, clipped = clipped_surrogate_weights(A, ratio, 0.2, 0.28)
    assert not clipped[0, 4] and W[0, 4] == -3.5


def test_the_clip_binds_and_a_second_update_does_nothing():
    """One group on 3 equally likely answers: y = (0, 1), A = (+1, −1), lr 1. The first update is
    z = (1/2)(e0 − e1) = (0.5, −0.5, 0), so π(0)/π_old(0) = 3 e^0.5 / (e^0.5 + e^−0.5 + 1) = 1.52
    > 1.2 and π(1)/π_old(1) = 0.56 < 0.8: both clipped, and the second update adds nothing."""
    z0, y, A = np.zeros((1, 3)), np.array([[0, 1]]), np.array([[1.0, -1.0]])
    one, clipped1 = policy_updates(z0, y, A, softmax(z0), 1.0, Objective(epochs=1))
    two, clipped2 = policy_updates(z0, y, A, softmax(z0), 1.0, Objective(epochs=2))
    np.testing.assert_allclose(one, [[0.5, -0.5, 0.0]], rtol=0, atol=1e-15)
    assert clipped1.tolist() == [0] and clipped2.tolist() == [2]
    np.testing.assert_array_equal(two, one)
    # with ε_high = 0.6 the correct answer's ratio 1.52 is inside: it is pushed again, the other not
    wide, clipped = policy_updates(z0, y, A, softmax(z0), 1.0, Objective(epochs=2, clip_high=0.6))
    assert clipped.tolist() == [1] and wide[0, 0] > one[0, 0] + 0.1


def test_the_clip_does_not_bind_in_a_small_step():
    """lr 1e-3: every ratio stays within 1 ± 0.002, nothing is clipped, and μ updates move the
    logits μ times as far as one, up to O(lr²)."""
    rng = np.random.default_rng(0)
    z0 = rng.normal(size=(4, 6))
    y = inverse_cdf(softmax(z0), rng.random((4, 8)))
    A = rng.normal(size=(4, 8))
    one, _ = policy_updates(z0, y, A, softmax(z0), 1e-3, Objective())
    for mu in (2, 4):
        z, clipped = policy_updates(z0, y, A, softmax(z0), 1e-3, Objective(epochs=mu))
        assert clipped.sum() == 0
        step1 = np.abs(one - z0).max()
        assert np.abs((z - z0) - mu * (one - z0)).max() < 10 * mu**2 * step1**2


def test_training_clips_only_from_the_second_update():
    task = make_task(P=40, M=6, seed=1)
    kw = dict(eval_every=5)
    for eh in (0.2, 0.4):
        out = train_seeds(task, make_row("grpo", 20, 8, 8, 2.0, [0, 1], clip_high=eh, **kw))
        assert all(rec.clip_frac == 0 for o in out for rec in o["history"][1:])
    out = train_seeds(task, make_row("grpo", 20, 8, 8, 2.0, [0, 1], epochs=4, **kw))
    fracs = [rec.clip_frac for o in out for rec in o["history"][1:]]
    assert 0 < max(fracs) <= 0.75  # at most the updates after the first: 3 of 4
    assert out[0]["history"][0].clip_frac == 0  # step 0: no update yet


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
def test_kl_in_the_loss_moves_by_its_exact_expected_gradient(estimator):
    """G = 1, A = 0, one update: averaged over y ~ π exactly (every answer, weighted by π(y)), the
    step is −lr·β·E[∇ k(y)], the exact expected gradient of the estimator as a loss."""
    rng = np.random.default_rng(1)
    M, beta, lr = 5, 0.7, 0.1
    z, z_ref = rng.normal(size=(1, M)), rng.normal(size=(1, M))
    pi, ref_logp = softmax(z), log_softmax(z_ref)
    mean_step = np.zeros(M)
    for answer in range(M):
        y = np.array([[answer]])
        z_new, _ = policy_updates(z, y, np.zeros((1, 1)), pi, lr,
                                  Objective(kl_beta=beta, kl_estimator=estimator),
                                  ref_y=ref_logp[:, [answer]])
        mean_step += pi[0, answer] * (z_new - z)[0]
    expected = -lr * beta * kl_gradient(pi[0], softmax(z_ref)[0], estimator, "loss")
    np.testing.assert_allclose(mean_step, expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
def test_kl_in_the_reward_by_hand(estimator):
    """Three kernel steps of REINFORCE (A = r) with β k(y) subtracted from the reward, redone by
    hand from the same random draws: every prompt each step, G uniforms per prompt, the answers,
    r − β k(y) with k at π_old against π_ref, then z += lr (1/G) Σ_i A_i (e_{y_i} − π_old).
    (The first step's penalty is 0: π_old is the reference; the later ones are not.)"""
    task = make_task(P=4, M=5, seed=2)
    beta, lr, G, seed, steps = 0.5, 3.0, 6, 7, 3
    obj = Objective(kl_beta=beta, kl_estimator=estimator, kl_placement="reward")
    out = train_seeds(task, make_row("none", steps, 4, G, lr, [seed], **obj._asdict()))[0]

    rng = np.random.default_rng(seed)
    z, ref = task["logits"].copy(), softmax(task["logits"])
    penalties = []
    for _ in range(steps):
        prompts = rng.choice(4, 4, replace=False)
        u = rng.random((4, G))
        pi = softmax(z[prompts])  # [4, M] in draw order
        y = inverse_cdf(pi[None], u[None])[0]  # [4, G]
        for j, prompt in enumerate(prompts):
            k = kl_estimate(np.log(pi[j, y[j]]) - np.log(ref[prompt, y[j]]), estimator)  # [G]
            penalties.append(np.abs(k).max())
            A = (y[j] == 0) - beta * k
            z[prompt] = z[prompt] + lr * sum(A[i] * (np.eye(5)[y[j, i]] - pi[j]) for i in range(G)) / G
    assert max(penalties) > 0.05  # the penalty really acted
    np.testing.assert_allclose(out["logits"], z, rtol=0, atol=1e-12)


def test_aggregation_weights_by_hand():
    length = np.array([[100, 300], [200, 400]])  # [n = 2, G = 2], mean answer 250 tokens
    assert aggregation_weights("seq-mean-token-sum-norm", length, unit=250.0) is None  # every answer 1
    np.testing.assert_allclose(aggregation_weights("seq-mean-token-mean", length, unit=250.0),
                               [[2.5, 250 / 300], [1.25, 0.625]], rtol=1e-15)
    # token-mean: 4 answers of 1000 tokens in all, 4 · 250 / 1000 = 1 for each; a batch of short
    # answers (400 tokens) gets 2.5, the same for every answer in it
    tokens, answers = np.full((2, 1), 1000), np.full((2, 1), 4)
    np.testing.assert_array_equal(aggregation_weights("token-mean", length, tokens, answers, 250.0),
                                  np.ones((2, 2)))
    short = np.full((2, 2), 100)
    np.testing.assert_array_equal(
        aggregation_weights("token-mean", short, np.full((2, 1), 400), answers, 250.0),
        np.full((2, 2), 2.5))
    with pytest.raises(ValueError,
                       match="unknown loss aggregation 'tokens'.*allowed: seq-mean-token-sum-norm"):
        aggregation_weights("tokens", length)


def test_token_mean_scales_each_seeds_batch_by_its_own_tokens():
    """Three seeds in one kernel call: each seed's token-mean weight uses its own batch's tokens,
    so a seed gives the same bits alone or beside others, under every objective knob at once."""
    task = make_task(P=40, M=6, seed=1)
    obj = Objective(epochs=3, clip_high=0.28, clip_c=3.0, kl_beta=0.1, kl_estimator="k2",
                    loss_agg="token-mean")
    for placement, rounds in (("loss", 0), ("reward", 3)):
        o = obj._replace(kl_placement=placement)
        kw = dict(eval_every=3, max_rounds=rounds, **o._asdict())
        alone = train_seeds(task, make_row("grpo", 10, 8, 4, 2.0, [5], **kw))[0]
        batched = train_seeds(task, make_row("grpo", 10, 8, 4, 2.0, [0, 5, 9], **kw))[1]
        assert np.array_equal(alone["logits"], batched["logits"])
        for ra, rb in zip(alone["history"], batched["history"]):
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ra, rb))


def test_equal_lengths_make_every_aggregation_the_lecture_loss():
    """With every answer of the same length each mode weighs every answer 1, exactly: the logits
    are the same bits as the default's; and the default is the lecture's step."""
    task = make_task(P=40, M=6, seed=1, answer_length=(300, 300))
    runs = {agg: train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1], loss_agg=agg))
            for agg in ("seq-mean-token-sum-norm", "seq-mean-token-mean", "token-mean")}
    lecture = train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1]))
    for outs in runs.values():
        for a, b in zip(outs, lecture):
            assert np.array_equal(a["logits"], b["logits"])
    # lengths that differ change the GRPO-style mode and leave the default alone
    varied = make_task(P=40, M=6, seed=1)
    default = train_seeds(varied, make_row("grpo", 15, 8, 8, 2.0, [0]))[0]
    per_token = train_seeds(varied, make_row("grpo", 15, 8, 8, 2.0, [0], loss_agg="seq-mean-token-mean"))[0]
    assert np.array_equal(default["logits"], lecture[0]["logits"])
    assert not np.array_equal(per_token["logits"], default["logits"])


def test_expected_lengths_are_exact():
    """length_correct / length_wrong of a record equal a recomputation from the final logits:
    Σ_p π_p0 L_p0 / Σ_p π_p0 and Σ_p Σ_{a≥1} π_pa L_pa / Σ_p (1 − π_p0), per level and overall."""
    task = make_task(P=40, M=6, seed=3)
    out = train_seeds(task, make_row("grpo", 12, 8, 8, 4.0, [2], eval_every=12,
                                     loss_agg="seq-mean-token-mean"))[0]
    pi, L, level = softmax(out["logits"]), task["length"], task["level"]
    last = out["history"][-1]
    for k in range(4):
        p = pi[level == k]
        np.testing.assert_allclose(last.length_correct_by_level[k],
                                   (p[:, 0] * L[level == k, 0]).sum() / p[:, 0].sum(), rtol=1e-12)
        np.testing.assert_allclose(last.length_wrong_by_level[k],
                                   (p[:, 1:] * L[level == k, 1:]).sum() / (1 - p[:, 0]).sum(), rtol=1e-12)
    np.testing.assert_allclose(last.length_wrong, (pi[:, 1:] * L[:, 1:]).sum() / (1 - pi[:, 0]).sum(),
                               rtol=1e-12)


@pytest.mark.parametrize("field,value,message", [
    ("epochs", 0, "epochs = 0 must be a whole number >= 1"),
    ("clip_low", 1.5, r"clip_low = 1.5 must be in \(0, 1\) \(or null: no lower clip\)"),
    ("clip_high", 0.0, "clip_high = 0.0 must be > 0"),
    ("clip_c", 0.9, r"clip_c = 0.9 must be > 1 \(or 0: no dual clip\)"),
    ("kl_beta", -0.1, "kl_beta = -0.1 must be >= 0"),
    ("kl_estimator", "k4", "kl_estimator = 'k4'; allowed: k1, k2, k3"),
    ("kl_placement", "advantage", "kl_placement = 'advantage'; allowed: loss, reward"),
    ("loss_agg", "sum", "loss_agg = 'sum'; allowed: seq-mean-token-sum-norm"),
])
def test_a_bad_objective_is_refused_before_training(field, value, message):
    with pytest.raises(ValueError, match=message):
        train_seeds(make_task(P=8, M=4), make_row("grpo", 1, 2, 4, 1.0, [0], **{field: value}))


def test_clip_fraction_over_several_steps_is_the_mean_of_each_steps():
    """The share recorded every 5 steps is the mean of the 5 shares recorded step by step,
    overall (every step updates n·G·μ pairs) and per level, weighted by how many of the level's
    prompts each step drew (the prompts redrawn from the seed's generator)."""
    task = make_task(P=40, M=6, seed=1)
    obj, n, G, seed = Objective(epochs=3, clip_high=0.28), 8, 8, 3
    every5 = train_seeds(task, make_row("grpo", 20, n, G, 4.0, [seed], eval_every=5, **obj._asdict()))[0]
    every1 = train_seeds(task, make_row("grpo", 20, n, G, 4.0, [seed], eval_every=1, **obj._asdict()))[0]
    per_step = np.array([rec.clip_frac for rec in every1["history"][1:]])  # steps 1..20
    recorded = np.array([rec.clip_frac for rec in every5["history"][1:]])  # steps 5, 10, 15, 20
    assert per_step.max() > 0
    np.testing.assert_allclose(recorded, per_step.reshape(4, 5).mean(axis=1), rtol=1e-12)
    rng = np.random.default_rng(seed)
    drawn = np.zeros((20, 4))  # prompts of each level drawn at each step
    for step in range(20):
        np.add.at(drawn[step], task["level"][rng.choice(40, n, replace=False)], 1)
        rng.random((n, G))
    by_level = np.array([rec.clip_frac_by_level for rec in every1["history"][1:]])  # [20, 4]
    for i, rec in enumerate(every5["history"][1:]):
        w = drawn[5 * i: 5 * i + 5]
        expected = (by_level[5 * i: 5 * i + 5] * w).sum(axis=0) / np.maximum(w.sum(axis=0), 1)
        np.testing.assert_allclose(rec.clip_frac_by_level, expected, rtol=1e-12, atol=1e-15)


def test_a_diverging_run_stops_with_an_error_that_says_where_and_what_to_lower(tmp_path):
    """k3's gradient 1 − π_ref/π grows without bound as π(y) falls: with β 10 and lr 50 the logits
    leave the floating-point range in the first step. The run stops there, naming the step, seed,
    method, lr and objective, and the job exits 2 with that message, writing nothing."""
    import subprocess
    import sys

    from rlvr.specs import TrainRow, to_json
    from rlvr.task import task_columns

    task = make_task(P=8, M=5, seed=2, level_logodds=(-30, -30, -4.5, -4.5))
    obj = Objective(epochs=3, kl_beta=10.0, kl_estimator="k3")
    with pytest.raises(FloatingPointError,
                       match=r"training diverged at step 1 \(seed 0\): the logits of none "
                             r"at lr 50 with Objective\(epochs=3.*lower lr or kl_beta"):
        train_seeds(task, make_row("none", 5, 4, 4, 50.0, [0, 1], **obj._asdict()))
    # the same through a pipeline job
    from rlvr import io

    cfg = {"P": 8, "M": 5, "seed": 2, "level_logodds": [-30, -30, -4.5, -4.5], "logodds_spread": 0.3,
           "answer_length": [100, 1000],
           "minority": {"levels": ["very_hard"], "share": 0.5, "wrong_share": 0.5}}
    io.write_table(tmp_path / "task.parquet", task_columns(cfg))
    row = TrainRow("training", "none", 50.0, 0.0, 4, 4, 5, 0, (0, 1), 0.2, 5, (1,), **obj._asdict())
    proc = subprocess.run([sys.executable, "-m", "rlvr", "train", "--spec", to_json(row), "--task",
                           str(tmp_path / "task.parquet"), "--results", str(tmp_path)], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "training diverged at step 1" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task.parquet"]
