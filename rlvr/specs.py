"""What one pipeline job computes, spelled once: its fields are the job's arguments (as JSON),
its path under results/, and the identifying columns of its Parquet rows.

The config layer (rlvr/config.py) expands the validated config into these; the Snakefile hands
each job its spec as JSON; the job rebuilds it with `from_json` and computes from it alone.
"""

import json
from dataclasses import asdict, dataclass, field, fields, make_dataclass

from .knobs import OBJECTIVE, OPTIONAL, path_tokens


@dataclass(frozen=True)
class _Job:
    """What every training job has, whatever its knobs (TrainRow adds those)."""

    experiment: str  # a demo whose section has `rows:`, or as a demo's train_rows names it
    method: str
    lr: float
    reward_offset: float
    G: int
    prompts_per_step: int
    steps: int
    max_rounds: int  # > 0: dynamic sampling with at most this many rounds a step
    seeds: tuple  # trained together, each with its own generator
    value_lr: float  # the learned baseline's step (read only by `learned`)
    eval_every: int  # pass@1 recorded every this many steps
    k: tuple  # exact pass@k of the trained policies for these k

    # the columns that identify the row in each of its Parquet tables (runs, curves, passk_trained);
    # with steps they also name its files: seeds and the shared settings do not, so adding a seed
    # reruns this row's job under the same path
    COLUMNS = ("experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "max_rounds",
               *(knob.name for knob in OPTIONAL))
    OBJECTIVE = OBJECTIVE

    @property
    def objective(self):
        from .objective import Objective

        return Objective(**{name: getattr(self, name) for name in self.OBJECTIVE})

    @property
    def path(self):
        """Path of the row's files under results/, without the suffix; a knob away from its default
        adds its token and value (rlvr/knobs.py), so the lecture's rows keep their paths."""
        return (f"runs/{self.experiment}/{self.method}/lr{self.lr!r}_off{self.reward_offset!r}"
                f"_G{self.G}_n{self.prompts_per_step}_s{self.steps}_dyn{self.max_rounds}"
                f"{path_tokens({k.name: getattr(self, k.name) for k in OPTIONAL})}")

    @property
    def methods(self):
        return (self.method,)


# every seed of one training configuration (one pipeline job): _Job's fields, then a field per
# knob of rlvr/knobs.py that a row may leave at its default (the objective, shared_lr,
# correct_answers), with that default
TrainRow = make_dataclass("TrainRow", [(k.name, type(k.spec_default), field(default=k.spec_default))
                                       for k in OPTIONAL], bases=(_Job,), frozen=True)
TrainRow.__module__ = __name__


@dataclass(frozen=True)
class GradStatJob:
    """Monte Carlo and exact gradient moments of one method on (reward offset, probe level) cases."""

    method: str
    cases: tuple  # ((reward_offset, level), ...)
    G: int
    n_reps: int
    seed: int

    @property
    def path(self):
        return f"gradient_stats/{self.method}.parquet"

    @property
    def methods(self):
        return (self.method,)


def to_json(spec):
    """The spec as one line of JSON (what a rule passes and Snakemake records)."""
    return json.dumps(asdict(spec), separators=(",", ":"))


def from_json(cls, text):
    """The spec of type cls from to_json's output; lists become tuples as the fields expect."""
    values = json.loads(text)
    unknown = set(values) - {f.name for f in fields(cls)}
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}")

    def tuples(x):
        return tuple(tuples(v) for v in x) if isinstance(x, list) else x

    return cls(**{name: tuples(v) for name, v in values.items()})
