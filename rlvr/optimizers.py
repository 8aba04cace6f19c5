"""How a training step's gradient moves the tabular policy's logits: a row's `optimizer`.

sgd, the lecture's: z += lr·g, each update's own gradient times lr, so an estimator's scale (its
advantages' size) is its step's. adam: torch.optim.Adam's update (betas 0.9 and 0.999, eps 1e-8,
bias-corrected), ascending, on every logit of every prompt, as Adam on a table of parameters
does: each logit's step is its gradient's running mean over the running root mean square, so a
constant scale of the gradient cancels, and a prompt not drawn this step still moves on its
running mean. The network's optimizer knob (rlvr/net/specs.py) names the same two; adam is its
default, sgd the toy's.
"""

import numpy as np

OPTIMIZERS = ("sgd", "adam")
BETAS, EPS = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults, the network's


class Adam:
    """Adam's state for S seeds' logits [S, P, M], updated in place. `step(g, rows)` takes one
    update's gradient g [R, M] of the rows (seed_of [R], prompt_of [R]) of a batch (every other
    logit's gradient 0) and returns those rows' logits after it: [R, M]."""

    def __init__(self, logits, lr):
        self.logits, self.lr, self.t = logits, lr, 0
        self.m, self.v = np.zeros(logits.shape), np.zeros(logits.shape)  # [S, P, M] each

    def step(self, g, rows):
        seed_of, prompt_of = rows
        (b1, b2), self.t = BETAS, self.t + 1
        grad = np.zeros(self.logits.shape)  # [S, P, M]
        grad[seed_of, prompt_of] = g
        self.m *= b1
        self.m += (1 - b1) * grad
        self.v *= b2
        self.v += (1 - b2) * grad * grad
        # torch's order: lr/(1 − β1^t) · m / (√v/√(1 − β2^t) + eps)
        denominator = np.sqrt(self.v) / np.sqrt(1 - b2**self.t) + EPS
        self.logits += (self.lr / (1 - b1**self.t)) * self.m / denominator
        return self.logits[seed_of, prompt_of]
