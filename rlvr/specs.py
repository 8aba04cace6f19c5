"""What one pipeline job computes, spelled once: its fields are the job's arguments (as JSON),
its path under results/, and the identifying columns of its Parquet rows.

The config layer (rlvr/config.py) expands the validated config into these; the Snakefile hands
each job its spec as JSON; the job rebuilds it with `from_json` and computes from it alone.
"""

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields, make_dataclass
from functools import cached_property

from .knobs import OPTIONAL, path_tokens


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
    seeds: tuple  # trained together in one job, each with its own generator; ascending
    value_lr: float  # the learned baseline's step (read only by `learned`)
    eval_every: int  # pass@1 recorded every this many steps
    k: tuple  # exact pass@k of the trained policies for these k
    # "" with the default config's value_lr, eval_every and k; else a hash of them (config.py),
    # so that the files of other shared settings sit beside the default's, not over them
    settings_id: str = ""

    # the columns that identify the row in each of its Parquet tables (runs, curves, passk_trained);
    # with steps, the shared settings' id and the seeds they also name its files
    COLUMNS = ("experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "max_rounds",
               *(knob.name for knob in OPTIONAL))

    @cached_property  # made from every knob: once a job (kept in the instance's __dict__)
    def row_path(self):
        """What names the row under results/, whatever its seeds; a knob away from its default
        adds its token and value (rlvr/knobs.py), so the lecture's rows keep their names."""
        return (f"runs/{self.experiment}/{self.method}/lr{self.lr!r}_off{self.reward_offset!r}"
                f"_G{self.G}_n{self.prompts_per_step}_s{self.steps}_dyn{self.max_rounds}"
                f"{path_tokens({k.name: getattr(self, k.name) for k in OPTIONAL})}"
                f"{f'_set{self.settings_id}' if self.settings_id else ''}")

    @cached_property
    def path(self):
        """Path of this job's files under results/, without the suffix: the row's, then its seeds."""
        return f"{self.row_path}{SEEDS}{seeds_label(self.seeds)}"

    @property
    def methods(self):
        return (self.method,)


# every seed of one training configuration (one pipeline job): _Job's fields, then a field per
# knob of rlvr/knobs.py that a row may leave at its default (the objective, shared_lr,
# correct_answers), with that default
TrainRow = make_dataclass("TrainRow", [(k.name, type(k.spec_default), field(default=k.spec_default))
                                       for k in OPTIONAL], bases=(_Job,), frozen=True)
TrainRow.__module__ = __name__


# the files a training job writes, {row path}_seeds{seeds}.{kind}.parquet, in the order it writes
# them: its rows of runs (written last: a finished job's mark), curves, passk_trained,
# kl_gradients, and the trained policies' final logits (kept per job, never aggregated)
JOB_FILES = ("curve", "passk", "klgrad", "logits", "run")

# A row's seeds may be trained in several jobs (blocks): a seed's numbers do not depend on the
# seeds trained beside it (rlvr/training.py), so adding a seed trains only that seed, and the
# files of every set of seeds a config asked for stay side by side, read again when asked again.
SEEDS = "_seeds"  # in a job's path: the row's path, SEEDS, then the seeds as seeds_label writes them


def seeds_label(seeds):
    """Ascending seeds as runs of consecutive ones: (0, 1, 2, 3, 4) -> "0-4", (0, 2, 3) -> "0_2-3"."""
    runs = []
    for seed in seeds:
        if runs and seed == runs[-1][1] + 1:
            runs[-1][1] = seed
        else:
            runs.append([seed, seed])
    return "_".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def label_seeds(label):
    """The seeds seeds_label wrote as label: "0_2-3" -> (0, 2, 3)."""
    seeds = []
    for part in label.split("_"):
        a, _, b = part.partition("-")
        seeds += range(int(a), int(b or a) + 1)
    return tuple(seeds)


BLOCK_FILE = re.compile(rf"^(?P<row>.*){SEEDS}(?P<seeds>\d+(?:-\d+)?(?:_\d+(?:-\d+)?)*)(?P<suffix>(\.\w+)*)$")


def row_of(name):
    """The row path of a training job's file name or path (anything else: name itself)."""
    match = BLOCK_FILE.match(name)
    return match["row"] if match else name


def seed_blocks(seeds, computed=()):
    """How a row's seeds split into jobs: each computed block (a tuple of seeds whose files
    exist) that lies wholly within seeds, largest first, none overlapping one taken before;
    then one block of the seeds none of them holds. Ordered by first seed."""
    wanted, taken, blocks = set(seeds), set(), []
    for block in sorted(set(computed), key=lambda b: (-len(b), b)):
        if wanted >= set(block) and not taken & set(block):
            blocks.append(block)
            taken |= set(block)
    rest = tuple(sorted(wanted - taken))
    return sorted(blocks + ([rest] if rest else []))


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
    """The spec as one line of JSON (what a rule passes and Snakemake records), without the knobs
    at their default (as the row's path): a knob appended at its default changes no spec, so
    reruns nothing; from_json fills them in."""
    values = {name: v for name, v in asdict(spec).items()
              if not (name in OPTIONAL_DEFAULTS and v == OPTIONAL_DEFAULTS[name])}
    return json.dumps(values, separators=(",", ":"))


OPTIONAL_DEFAULTS = {k.name: k.spec_default for k in OPTIONAL}


def from_json(cls, text):
    """The spec of type cls from to_json's output; lists become tuples as the fields expect. A
    knob to_json left out holds OPTIONAL_DEFAULTS' value, whatever cls's own default (a network
    row's optimizer: sgd, the toy's default, left out; adam, its own, written)."""
    values = json.loads(text)
    names = {f.name for f in fields(cls)}
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}")

    def tuples(x):
        return tuple(tuples(v) for v in x) if isinstance(x, list) else x

    left_out = {name: v for name, v in OPTIONAL_DEFAULTS.items() if name in names and name not in values}
    return cls(**left_out, **{name: tuples(v) for name, v in values.items()})


# a training pack (rlvr/packs.py plans them): what its job trains and the manifest it writes last
PACKS_DIR = "packs"  # under results/: a manifest per pack its job finished


@dataclass(frozen=True)
class Pack:
    """Training jobs trained by one process: name, the jobs (specs.TrainRow, each a row's block of
    seeds), and each one's spec (as to_json writes it) and code version (rlvr/codeversion.py)."""

    name: str
    jobs: tuple
    specs: tuple
    codes: tuple

    def manifest(self, results):
        return f"{results}/{PACKS_DIR}/{self.name}.json"

    def manifest_text(self):
        return json.dumps({"jobs": [[j.path, s, c] for j, s, c in zip(self.jobs, self.specs, self.codes)]},
                          indent=1) + "\n"


def pack_name(experiment, paths):
    """A pack's name: its experiment and a hash of its jobs' paths, so the same jobs are always
    the same pack (its rule's name, train_<name>)."""
    digest = hashlib.sha256("\n".join(sorted(paths)).encode()).hexdigest()[:10]
    return f"{experiment}_{digest}"
