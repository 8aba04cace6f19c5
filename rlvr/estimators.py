"""Advantage estimators: r: [n, G] rewards of G answers to each of n prompts -> A: [n, G].

Every estimator is one function in ESTIMATORS. To add one, write

    @estimator("my_method")
    def my_method(r, ctx):
        return ...  # [n, G]

`ctx` carries what some estimators need beyond the rewards (all arrays over the n rows):
`baseline` (the learned per-prompt value V), `p` (the true probability of the correct
answer) and `offset` (the constant reward offset, so that r = correct + offset).
"""

from typing import NamedTuple

import numpy as np

# GRPO divides by std + EPS; all-equal groups have r - mean = 0 exactly, so EPS only
# keeps the division finite. TRL uses 1e-4; we use a smaller value so that GRPO's
# scaling is visible even when std is small (p near 0 or 1).
EPS = 1e-6


class Context(NamedTuple):
    baseline: np.ndarray | None = None  # [n] learned value V per prompt
    p: np.ndarray | None = None  # [n] true π(correct) per prompt
    offset: float = 0.0  # reward offset: r = 1{correct} + offset


class Spec(NamedTuple):
    fn: object
    min_G: int  # smallest group size the estimator is defined for
    needs: tuple  # Context fields it reads


ESTIMATORS: dict[str, Spec] = {}


def estimator(name, min_G=1, needs=()):
    def register(fn):
        ESTIMATORS[name] = Spec(fn, min_G, needs)
        return fn

    return register


def _group_mean(r):
    return r.mean(axis=1, keepdims=True)  # [n, 1]


@estimator("none")
def reinforce(r, ctx):
    """REINFORCE, no baseline: A = r."""
    return r.copy()


@estimator("learned", needs=("baseline",))
def learned_baseline(r, ctx):
    """A = r - V(prompt), with V learned across steps by the caller."""
    return r - ctx.baseline[:, None]


@estimator("rloo", min_G=2)
def rloo(r, ctx):
    """Leave-one-out: A_i = r_i - mean of the other G-1 rewards (unbiased)."""
    G = r.shape[1]
    return r - (r.sum(axis=1, keepdims=True) - r) / (G - 1)


@estimator("group", min_G=2)
def group_mean(r, ctx):
    """A_i = r_i - mean(r): includes r_i in its own baseline, so E[A] shrinks by (G-1)/G."""
    return r - _group_mean(r)


@estimator("grpo", min_G=2)
def grpo(r, ctx):
    """GRPO: (r_i - mean(r)) / (std(r) + EPS), population std (ddof=0) as the lecture."""
    return (r - _group_mean(r)) / (r.std(axis=1, keepdims=True) + EPS)


def advantages(r, method, baseline=None, p=None, offset=0.0):
    """A: [n, G] for rewards r: [n, G] under the named estimator.

    baseline: [n] learned values (only `learned` reads it; zeros if not given).
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
    return spec.fn(r, Context(baseline=baseline, p=p, offset=offset))
