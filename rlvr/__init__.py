"""rlvr: advantage estimation in RL with verifiable rewards, on a toy reasoning model.

The names the lecture script imports (it was written against `toy_rlvr`):
    from rlvr import LEVEL_NAMES, Policy, advantages, make_task, pad, pass_at_k, train
"""

from . import numerics

numerics.pin()  # before numpy and torch are imported: the same bits on every x86 CPU (rlvr/numerics.py)

# name -> the module that defines it, imported on first use: `import rlvr` imports nothing
# else (rlvr/numerics.py imports no library), so a pipeline job loads (and its cache entry
# depends on) only the modules it uses
_HOME = {
    "ESTIMATORS": "estimators", "advantages": "estimators", "estimator": "estimators",
    "gradient_stats": "metrics", "pass_at_k": "metrics",
    "Policy": "policy", "policy_gradient": "policy",
    "LEVEL_KEYS": "task", "LEVEL_NAMES": "task", "make_task": "task",
    "pad": "text",
    "Record": "training", "train": "training",
    "load_policies": "compute", "load_rows": "compute", "read_results": "compute",
}
__all__ = sorted(_HOME)


def __getattr__(name):
    if name not in _HOME:
        raise AttributeError(f"module 'rlvr' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)


def __dir__():
    return sorted([*globals(), *_HOME])
