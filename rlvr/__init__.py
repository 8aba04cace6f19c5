"""rlvr: advantage estimation in RL with verifiable rewards, on a toy reasoning model.

The names the lecture script imports (it was written against `toy_rlvr`):
    from rlvr import LEVEL_NAMES, Policy, advantages, make_task, pad, pass_at_k, train
"""

from .estimators import ESTIMATORS, advantages, estimator
from .metrics import gradient_stats, pass_at_k
from .policy import Policy, policy_gradient
from .task import LEVEL_KEYS, LEVEL_NAMES, make_task
from .text import pad
from .training import Record, train

__all__ = [
    "ESTIMATORS", "LEVEL_KEYS", "LEVEL_NAMES", "Policy", "Record", "advantages", "estimator",
    "gradient_stats", "make_task", "pad", "pass_at_k", "policy_gradient", "train",
]
