"""Several correct answers per prompt (a row's `correct_answers`; demo 12)."""

import numpy as np
import pytest

from rlvr import make_task
from rlvr.estimators import advantages
from rlvr.policy import correct_entropy, softmax
from rlvr.task import with_correct_answers
from rlvr.training import make_row, train_seeds


def test_the_reference_keeps_p_correct_and_splits_it_by_halves():
    task = make_task(P=8, M=6, seed=2)
    assert with_correct_answers(task, 1) is task  # one correct answer: the task as it is
    four = with_correct_answers(task, 4)
    before, after = softmax(task["logits"]), softmax(four["logits"])
    np.testing.assert_allclose(after[:, :4].sum(1), before[:, 0], rtol=1e-12)  # p(correct) per prompt
    np.testing.assert_allclose(after[:, :4] / after[:, :1], np.broadcast_to([1, 1 / 2, 1 / 4, 1 / 8], (8, 4)),
                               rtol=1e-12)
    # the wrong answers 4, 5 keep their relative weights
    np.testing.assert_allclose(after[:, 4] / after[:, 5], before[:, 4] / before[:, 5], rtol=1e-12)
    assert four["n_correct"] == 4 and four["length"] is task["length"]
    with pytest.raises(ValueError, match="correct_answers = 6 must be in 1..5"):
        with_correct_answers(task, 6)
    with pytest.raises(ValueError, match="several correct answers already"):  # split once, not twice
        with_correct_answers(four, 2)


def test_training_equals_a_onehot_reimplementation_with_several_correct_answers():
    """The kernel with answers 0 .. 2 correct, against the loop written out: the same draws, the
    reward 1 for any of them, the same logits at the end."""
    from test_kernel import onehot_training

    task = with_correct_answers(make_task(P=20, M=6, seed=3), 3)
    steps, n, G, lr, seed = 30, 5, 4, 2.0, 11
    for method in ("grpo", "oracle", "unlikeliness"):
        out = train_seeds(task, make_row(method, steps, n, G, lr, [seed], eval_every=steps))[0]

        def advantages_of(y, pi, method=method):
            r = np.isin(y, [0, 1, 2]).astype(float)
            if method == "oracle":  # the true value: p(correct) = π_0 + π_1 + π_2
                return r - (pi[:, 0] + pi[:, 1] + pi[:, 2])[:, None]
            return advantages(r, method, logp=np.log(np.take_along_axis(pi, y, axis=1)))

        logits = onehot_training(task, steps, n, G, lr, seed, advantages_of)
        np.testing.assert_allclose(out["logits"], logits, atol=1e-10, err_msg=method)


@pytest.mark.parametrize("max_rounds,epochs", [(0, 1), (3, 1), (0, 2)])
def test_tracked_correct_answer_entropy_and_pass1_equal_a_full_recomputation(max_rounds, epochs):
    task = make_task(P=40, M=8, seed=1)  # the row's correct_answers makes answers 0 .. 2 correct
    out = train_seeds(task, make_row("grpo", 25, 8, 4, 3.0, [0, 1], eval_every=10, max_rounds=max_rounds,
                                     epochs=epochs, correct_answers=3))
    for o in out:
        first, last = o["history"][0], o["history"][-1]
        pi = softmax(o["logits"])
        q = pi[:, :3] / pi[:, :3].sum(1, keepdims=True)
        h = -(q * np.log(q)).sum(1)  # [P], by hand
        assert (abs(last.entropy_correct - h.mean()) < 1e-12
                and abs(last.pass1 - pi[:, :3].sum(1).mean()) < 1e-12)
        for k in range(task["n_levels"]):
            assert abs(last.entropy_correct_by_level[k] - h[task["level"] == k].mean()) < 1e-12
        shares = np.array([4, 2, 1]) / 7
        assert abs(first.entropy_correct + (shares * np.log(shares)).sum()) < 1e-12  # the halves at step 0
        assert last.entropy_correct < first.entropy_correct  # GRPO concentrates


def test_one_correct_answer_has_zero_correct_answer_entropy():
    out = train_seeds(make_task(P=8, M=4), make_row("grpo", 3, 2, 2, 1.0, [0]))[0]
    assert all(rec.entropy_correct == 0 for rec in out["history"])
    assert correct_entropy(np.array([[1e300, -1e300, 0.0]]), 2) == 0  # finite where π underflows


def test_too_many_correct_answers_are_refused_by_key():
    from rlvr.config import ConfigError, validate_config

    with pytest.raises(ConfigError,
                       match=r"rank_bias.rows\[0\].correct_answers\[1\]: 16 leaves no wrong answer"):
        validate_config({"rank_bias": {"rows": [{"method": "grpo", "lr": 1.0, "correct_answers": [2, 16]}]}})
    with pytest.raises(ConfigError, match=r"training.rows\[0\].correct_answers"):
        validate_config({"training": {"rows": [{"method": "grpo", "lr": 1.0, "correct_answers": 0}]}})


@pytest.mark.parametrize("method", ["grpo", "rloo", "none"])
def test_the_expected_step_on_a_correct_logit_is_its_probability_times_a_common_factor(method):
    """The rank bias is in the expected gradient: enumerating every group of G = 3 answers
    exactly, E[ĝ_j] / π_j is the same for every correct answer j (and differs from a wrong one's),
    so the likeliest correct answer's logit gains most. Holds for any estimator of the rewards."""
    from itertools import product

    from rlvr.policy import policy_gradient

    pi = softmax(np.array([[1.0, 0.2, -0.5, 0.3, -1.0]]))[0]  # answers 0, 1, 2 correct
    G, expected = 3, np.zeros(5)
    for group in product(range(5), repeat=G):
        y = np.array([group])
        A = advantages((y < 3).astype(float), method)
        expected += np.prod(pi[list(group)]) * policy_gradient(y, A, pi[None])[0]
    ratio = expected / pi
    np.testing.assert_allclose(ratio[:3], ratio[0], rtol=1e-12)
    assert ratio[0] > 0 and abs(ratio[3] - ratio[0]) > 1e-3
