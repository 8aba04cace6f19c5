"""Issue 13, item 1: a policy with shared weights per answer type, logits = z + w[type].

w moves by shared_lr times the exact sum over the batch of each prompt's score-function gradient
on the answers of each type: checked against finite differences of the batch's surrogate
Σ_rows (1/G) Σ_i A_i log π(y_i) in w, and one step redone by hand. shared_lr = 0 is the tabular
policy, bit for bit; a seed's bits do not depend on the seeds beside it.
"""

import numpy as np

from rlvr.estimators import advantages
from rlvr.policy import inverse_cdf, log_softmax, policy_gradient, softmax
from rlvr.task import make_task
from rlvr.training import make_row, train_seeds


def test_shared_lr_zero_is_the_tabular_policy_bit_for_bit():
    task = make_task(P=40, M=6, seed=1)
    tabular = train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1], eval_every=5))
    shared0 = train_seeds(task, make_row("grpo", 15, 8, 8, 2.0, [0, 1], eval_every=5, shared_lr=0.0))
    for a, b in zip(tabular, shared0):
        assert np.array_equal(a["logits"], b["logits"])


def test_one_step_by_hand_and_the_shared_gradient_by_finite_differences():
    """One GRPO step, redone from the same draws: the batch rows move by lr·g, then every prompt's
    answers of type k by shared_lr·Σ_rows Σ_{a: type k} g[row, a]; that sum is the derivative in
    w_k of the surrogate Σ_rows (1/G) Σ_i A_i log softmax(z_row + w[type_row])[y_i] (A held fixed)."""
    task = make_task(P=8, M=5, seed=4,
                     minority={"levels": ("very_hard", "hard"), "share": 0.5, "wrong_share": 0.5})
    lr, shared_lr, n, G, seed = 1.5, 0.7, 4, 6, 3
    out = train_seeds(task, make_row("grpo", 1, n, G, lr, [seed], shared_lr=shared_lr))[0]

    rng = np.random.default_rng(seed)
    prompts = rng.choice(8, n, replace=False)
    z = task["logits"][prompts]  # [n, M]
    pi = softmax(z)
    y = inverse_cdf(pi[None], rng.random((1, n, G)))[0]  # [n, G]
    A = advantages((y == 0).astype(float), "grpo")
    g = policy_gradient(y, A, pi)  # [n, M]
    types = task["type"]
    grad_w = np.array([(g * (types[prompts] == k)).sum() for k in range(2)])

    def surrogate(w):
        logp = log_softmax(z + w[types[prompts]])
        return (A * np.take_along_axis(logp, y, axis=1)).sum() / G

    h = 1e-6
    numeric = np.array([(surrogate(np.eye(2)[k] * h) - surrogate(-np.eye(2)[k] * h)) / (2 * h)
                        for k in range(2)])
    np.testing.assert_allclose(grad_w, numeric, rtol=0, atol=1e-8)
    assert np.abs(grad_w).max() > 1e-3  # the step really moved the shared weights

    expected = task["logits"].copy()
    expected[prompts] += lr * g
    expected += shared_lr * grad_w[types]
    np.testing.assert_allclose(out["logits"], expected, rtol=0, atol=1e-12)


def test_shared_weights_move_prompts_that_were_not_drawn():
    task = make_task(P=40, M=6, seed=1)
    out = train_seeds(task, make_row("grpo", 1, 4, 8, 2.0, [0], shared_lr=0.5))[0]
    moved = np.abs(out["logits"] - task["logits"]).max(axis=1) > 0  # [P]
    assert moved.sum() > 4  # more than the 4 prompts drawn


def test_a_seed_gives_the_same_bits_alone_or_beside_others():
    task = make_task(P=40, M=6, seed=1)
    alone = train_seeds(task, make_row("rloo", 12, 8, 4, 2.0, [5], eval_every=4, shared_lr=0.3))[0]
    batched = train_seeds(task, make_row("rloo", 12, 8, 4, 2.0, [0, 5, 9], eval_every=4, shared_lr=0.3))[1]
    assert np.array_equal(alone["logits"], batched["logits"])
    for ra, rb in zip(alone["history"], batched["history"]):
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ra, rb))


def test_the_records_follow_every_prompt_not_only_the_drawn_ones():
    """pass@1, entropy and KL recorded after a step equal a full recomputation from the logits."""
    task = make_task(P=40, M=6, seed=1)
    out = train_seeds(task, make_row("grpo", 7, 4, 8, 2.0, [2], eval_every=7, shared_lr=0.5))[0]
    pi = softmax(out["logits"])
    last = out["history"][-1]
    np.testing.assert_allclose(last.pass1, pi[:, 0].mean(), rtol=1e-12)
    np.testing.assert_allclose(last.entropy, -(pi * np.log(pi)).sum(axis=1).mean(), rtol=1e-12)


def test_inner_updates_move_the_shared_weights_after_each_update():
    """μ = 3 with shared weights, one step redone by hand: after each update the shared weights
    move by shared_lr·Σ_rows Σ_{a: type k} g[row, a] and the batch rows see it at once, so the
    next update's ratio π/π_old (clipped, ε 0.2) is taken on z + w[type]; every prompt ends moved
    by the three moves of w."""
    from rlvr.objective import clipped_surrogate_weights

    task = make_task(P=8, M=5, seed=4,
                     minority={"levels": ("very_hard", "hard"), "share": 0.5, "wrong_share": 0.5})
    lr, shared_lr, n, G, seed, mu = 1.5, 0.7, 4, 6, 3, 3
    out = train_seeds(task, make_row("grpo", 1, n, G, lr, [seed], epochs=mu, shared_lr=shared_lr))[0]

    rng = np.random.default_rng(seed)
    prompts = rng.choice(8, n, replace=False)
    types = task["type"]
    z = task["logits"][prompts]  # [n, M]
    pi_old = softmax(z)
    y = inverse_cdf(pi_old[None], rng.random((1, n, G)))[0]  # [n, G]
    A = advantages((y == 0).astype(float), "grpo")
    logp_old = np.take_along_axis(log_softmax(z), y, axis=1)
    moved = np.zeros(2)
    for epoch in range(mu):
        pi = softmax(z)
        ratio = np.exp(np.take_along_axis(log_softmax(z), y, axis=1) - logp_old)
        W = A if epoch == 0 else clipped_surrogate_weights(A, ratio, 0.2, 0.2, 0.0)[0]
        g = policy_gradient(y, W, pi)
        dw = shared_lr * np.array([(g * (types[prompts] == k)).sum() for k in range(2)])
        z = z + lr * g + dw[types[prompts]]
        moved += dw
    expected = task["logits"] + moved[types]
    expected[prompts] = z
    np.testing.assert_allclose(out["logits"], expected, rtol=0, atol=1e-12)
    one = train_seeds(task, make_row("grpo", 1, n, G, lr, [seed], shared_lr=shared_lr))[0]
    assert np.abs(out["logits"] - one["logits"]).max() > 1e-3  # the inner updates did move it further


def test_minority_prompts_need_the_minority_type():
    task = make_task()
    minority, types = task["minority"], task["type"]
    assert minority.sum() > 0 and set(task["level"][minority]) == {0}  # some very hard prompts, by default
    assert (types[minority, 0] == 1).all() and (types[~minority, 0] == 0).all()
    assert 0.4 < types[:, 1:].mean() < 0.6  # wrong answers: the minority type half the time
    # drawn after the logits and lengths: the task's logits are those of a task without types
    assert np.array_equal(make_task(minority={"levels": (), "share": 0.0, "wrong_share": 0.0})["logits"],
                          task["logits"])
