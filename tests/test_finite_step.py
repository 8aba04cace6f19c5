"""The exact one-step outcomes of demo 13 (rlvr/finite_step.py): the multiset enumeration with
its closed-form step equals the training code's own update over every ordered group, and
Monte Carlo through that update agrees with it within 3 standard errors (fixed seeds)."""

from itertools import product

import numpy as np
import pytest

from rlvr import finite_step as F
from rlvr.estimators import advantages
from rlvr.objective import Objective, policy_updates
from rlvr.policy import softmax
from rlvr.task import make_task

LRS = (0.5, 2.0, 8.0)


def through_training(logits, weights, lrs, y):
    """Each group of y [R, G] stepped by rlvr.objective.policy_updates (μ = 1, the lecture's
    step): π after, [len(lrs), R, M]."""
    z = np.broadcast_to(np.asarray(logits, float), (len(y), len(logits))).copy()
    r = (y == 0).astype(float)
    A = advantages(r, weights) if isinstance(weights, str) else np.where(r > 0, *weights)
    return np.stack([softmax(policy_updates(z, y, A, softmax(z), lr, Objective())[0]) for lr in lrs])


@pytest.mark.parametrize("weights", ["nsr", "psr", "w_reinforce", "grpo", "none", (0.3, -1.0)])
def test_the_multisets_give_what_every_ordered_group_gives_through_the_training_update(weights):
    """5 answers, G = 4: all 625 ordered groups through policy_updates, each weighed by its
    probability, against the 70 multisets' closed form: the same expectations to 1e-12."""
    logits = np.array([-1.5, 0.4, -0.2, 0.9, -2.0])
    pi = softmax(logits[None])[0]
    y = np.array(list(product(range(5), repeat=4)))
    prob = np.prod(pi[y], axis=1)
    after = through_training(logits, weights, LRS, y)  # [lr, R, M]
    top = 1 + int(np.argmax(pi[1:]))
    exact = F.step_outcomes(logits, weights, LRS, 4)
    np.testing.assert_allclose(exact["d_p_correct"], after[:, :, 0] @ prob - pi[0], atol=1e-12)
    np.testing.assert_allclose(exact["p_falls"], (after[:, :, 0] < pi[0]) @ prob, atol=1e-12)
    np.testing.assert_allclose(exact["d_top_wrong"], after[:, :, top] @ prob - pi[top], atol=1e-12)
    assert abs(exact["d_p_correct"]).max() > 1e-4  # a step that moves


def test_monte_carlo_through_the_training_update_agrees_on_a_very_hard_prompt():
    """The task's first very hard prompt (16 answers, G = 8: 490,314 multisets), NSR: 40,000
    groups drawn and stepped by the training code; E[Δπ(correct)], P(it falls) and the
    likeliest wrong answer's E[Δπ] within 3 s.e. of the enumeration at each lr."""
    task = make_task()
    logits = task["logits"][np.flatnonzero(task["level"] == 0)[0]]
    pi = softmax(logits[None])[0]
    top = 1 + int(np.argmax(pi[1:]))
    y = np.random.default_rng(7).choice(16, size=(40_000, 8), p=pi)
    after = through_training(logits, "nsr", LRS, y)
    exact = F.step_outcomes(logits, "nsr", LRS, 8)
    for key, sample in (("d_p_correct", after[:, :, 0] - pi[0]), ("p_falls", after[:, :, 0] < pi[0]),
                        ("d_top_wrong", after[:, :, top] - pi[top])):
        mean, se = sample.mean(axis=1), sample.std(axis=1, ddof=1) / np.sqrt(len(y))
        assert np.all(np.abs(mean - exact[key]) < 3 * se), (key, mean, exact[key], se)
    # the point: the correct logit rises against the others, yet at lr 8 π(correct)
    # falls in most groups and in expectation
    assert np.all(exact["d_logit_correct"] > 0) and exact["p_falls"][-1] > 0.5 > exact["p_falls"][0]
    assert exact["d_p_correct"][-1] < 0


def test_w_reinforce_at_lambda_is_the_registry_estimator_and_nsr_at_zero():
    for weights, method in (((0.1, -1.0), "w_reinforce"), ((0.0, -1.0), "nsr"), ((1.0, 0.0), "psr")):
        # k = 0 and k = G hold an answer of one kind only: the other's value is unused
        np.testing.assert_array_equal(F.answer_advantages(weights, 8)[1:-1],
                                      F.answer_advantages(method, 8)[1:-1])


def test_the_maps_prompts_have_the_asked_p_correct_and_spread():
    for p in F.MAP_P:
        for spread in F.MAP_SPREADS:
            z = F.map_logits(p, spread, 16)
            assert softmax(z[None])[0, 0] == pytest.approx(p, rel=1e-12)
            assert np.std(z[1:]) == pytest.approx(spread * np.std(F.map_logits(p, 1.0, 16)[1:]))


def test_only_estimators_that_read_the_rewards_alone_are_enumerated():
    assert all(F.enumerable(m) for m in ("grpo", "nsr", "psr", "w_reinforce", "none", "rloo"))
    assert not any(F.enumerable(m) for m in ("unlikeliness", "oracle", "learned", "batch_std"))


@pytest.mark.parametrize("knobs", [{"epochs": 4}, {"epochs": 4, "clip_low": 1.0, "clip_high": float("inf")},
                                   {"minibatches": 4}, {}])
def test_one_batch_by_monte_carlo_agrees_with_the_exact_expected_logit_change(knobs):
    """demo 16's batches from the reference (finite_step.one_batch): on the 4-answer prompt that
    rlvr.objective.random_reward_logit_change enumerates exactly (every answer and reward tuple),
    GRPO at lr 2 on random ½ rewards, the likeliest answer's E[Δz − mean Δz] by Monte Carlo
    (20,000 groups, fixed seed) within 3 s.e. of the exact."""
    from rlvr.objective import random_reward_logit_change
    from rlvr.specs import TrainRow

    logits = np.log([0.6, 0.2, 0.15, 0.05])
    row = TrainRow(experiment="spurious_rewards", method="grpo", lr=2.0, reward_offset=0.0, G=4,
                   prompts_per_step=1, steps=1, max_rounds=0, value_lr=0.0, eval_every=1, k=(1,),
                   seeds=(), reward="random_half", **knobs)
    d_logit, _, _ = F.one_batch(logits[None], row, 4, 20_000, np.random.default_rng(3))
    exact = random_reward_logit_change(logits, 4, "grpo", Objective.of(row), 2.0)
    mean, se = F.mean_and_se(d_logit)
    assert abs(mean - (exact[0] - exact.mean())) < 3 * se, (mean, se, exact)


def test_the_plan_enumerates_only_what_fits_and_names_every_estimator_it_runs():
    """Demo 13's part is planned for its rows' estimators, lrs and G while every multiset fits
    (rlvr/binding.py FINITE_STEP_CELLS), and left out beyond (G = 16 over 16 answers is 300
    million multisets), where demo 16's batches stay; the spec names every estimator the job
    runs, for its code version."""
    import json

    from rlvr import binding
    from rlvr import config as C

    cfg = C.validate_config({})
    spec = json.loads(binding.finite_step_spec(C.train_rows(cfg), 16))
    methods = ["grpo", "nsr", "psr", "w_reinforce"]  # the default's demo 13 rows, and demo 16's GRPO
    assert spec["sample_sign"] == {"G": 8, "lrs": [0.5, 2.0, 8.0], "methods": methods}
    assert spec["methods"] == methods and len(spec["batches"]["rows"]) == 12
    big = C.validate_config({"negative_samples": {"G": 16}})
    assert "sample_sign" not in json.loads(binding.finite_step_spec(C.train_rows(big), 16))
    off = C.validate_config({"negative_samples": {"enabled": False}, "spurious_rewards": {"enabled": False}})
    assert binding.finite_step_spec(C.train_rows(off), 16) == ""


@pytest.mark.parametrize("knobs", [{"policy_loss": "cispo", "ratio_tokens": "few"},
                                   {"policy_loss": "ppo", "ratio_tokens": "one"}])
def test_one_batch_of_averaged_tokens_is_trainings_first_step(knobs):
    """demo 18's first batch (finite_step.one_batch with its aggregation's weights, unit/|y|, and
    ratio_tokens): GRPO at μ = 4, lr 2, seq-mean-token-mean, from a 4-prompt task's reference:
    the likeliest answer's E[Δπ] per prompt and the clipped share of (answer, update) pairs, by
    Monte Carlo (3,000 groups a prompt), within 3 s.e. of 3,000 seeds of training's first step
    (rlvr.training.train, every prompt in the batch)."""
    from rlvr.specs import TrainRow
    from rlvr.training import train

    task = make_task(P=4, M=4, seed=3)
    G, n = 8, 3000
    obj = {"epochs": 4, "loss_agg": "seq-mean-token-mean", **knobs}
    outs = train(task, "grpo", 1, 4, G, 2.0, list(range(n)), **obj)
    pi0 = softmax(task["logits"])  # [P, M]
    top = pi0.argmax(axis=1)
    rows = np.arange(4)
    d_p = np.stack([softmax(o["logits"])[rows, top] - pi0[rows, top] for o in outs])  # [n, P]
    clip = np.array([o["history"][-1].clip_frac for o in outs])  # [n]: over the batch's 4 prompts
    row = TrainRow(experiment="policy_losses", method="grpo", lr=2.0, reward_offset=0.0, G=G,
                   prompts_per_step=1, steps=1, max_rounds=0, value_lr=0.0, eval_every=1, k=(1,), seeds=(),
                   **obj)
    length = np.asarray(task["length"], float)
    _, mc_p, mc_clip = F.one_batch(np.asarray(task["logits"], float), row, G, n, np.random.default_rng(5),
                                   length, length.mean())  # [P, n] each
    for a, b in ((d_p.T, mc_p), (clip[None], mc_clip.mean(axis=0, keepdims=True))):
        diff = a.mean(axis=1) - b.mean(axis=1)
        se = np.sqrt(a.var(axis=1, ddof=1) / a.shape[1] + b.var(axis=1, ddof=1) / b.shape[1])
        assert (np.abs(diff) < 3 * se).all(), (diff, se)
    assert mc_clip.mean() > 0.01  # the clip acts: the comparison sees it
