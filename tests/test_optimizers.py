"""The tabular policy's optimizers (rlvr/optimizers.py) against torch's own."""

import numpy as np
import pytest

from rlvr.optimizers import Adam
from rlvr.task import make_task
from rlvr.training import make_row, train_seeds


def test_adam_moves_every_logit_as_torchs_adam_does():
    """Five updates of random batches of rows of a [S, P, M] table of logits: the same logits as
    torch.optim.Adam (maximize, its default betas and eps) given the dense gradient, every logit,
    the rows not drawn too, to float64 rounding (1e-12): a row moves once it has been drawn."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    S, P, M, lr = 3, 7, 5, 0.05
    start = rng.normal(size=(S, P, M))
    ours = Adam(start.copy(), lr)
    param = torch.tensor(start.copy(), requires_grad=True)
    opt = torch.optim.Adam([param], lr=lr, maximize=True)
    ever = np.zeros((S, P), bool)
    for _ in range(5):
        before = ours.logits.copy()
        seed_of = np.repeat(np.arange(S), 3)
        prompt_of = np.concatenate([rng.choice(P, 3, replace=False) for _ in range(S)])
        g = rng.normal(size=(len(seed_of), M))
        rows = ours.step(g, (seed_of, prompt_of))
        dense = np.zeros((S, P, M))
        dense[seed_of, prompt_of] = g
        param.grad = torch.tensor(dense)
        opt.step()
        theirs = param.detach().numpy()
        assert np.abs(ours.logits - theirs).max() < 1e-12
        assert np.array_equal(rows, ours.logits[seed_of, prompt_of])
        ever[seed_of, prompt_of] = True
        moved = (ours.logits != before).all(axis=-1)  # [S, P]
        assert np.array_equal(moved, ever)  # a row drawn once moves at every update after, drawn or not


def test_adam_rows_train_and_refuse_shared_weights():
    """An Adam row trains to a higher pass@1 than it starts (5 seeds, each); one with shared
    weights is refused, naming both knobs."""
    task = make_task(P=40)
    out = train_seeds(task, make_row("grpo", 60, 8, 4, 0.1, tuple(range(5)), eval_every=10, optimizer="adam"))
    assert all(o["history"][-1].pass1 > o["history"][0].pass1 for o in out)
    with pytest.raises(ValueError, match="optimizer 'adam' with shared_lr 0.05"):
        train_seeds(task, make_row("grpo", 5, 8, 4, 0.1, (0,), optimizer="adam", shared_lr=0.05))
