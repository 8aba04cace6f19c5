"""What a network job computes (issue 35), spelled once and without torch: the config layer and
the Snakefile read these; the jobs (rlvr/jobs/net_base.py, net_train.py) rebuild them from JSON.

A network row is a toy row's estimator, lr, reward, reward offset and objective knobs (rlvr/knobs.py:
the same names, defaults, checks and path tokens) plus the network's own knobs (NET_ONLY); all
of a row's seeds train in one job, packed along the model's ensemble dimension, and a seed's
numbers are the same bits alone or packed (tests/test_net_model.py).
"""

from dataclasses import dataclass, field, fields, make_dataclass

from .. import io
from ..binding import NAMES, Step
from ..knobs import KNOBS, OPTIONAL, ROW_KNOBS, Knob, path_tokens
from ..specs import seeds_label, to_json

# what the network gives an estimator beyond the rewards (rlvr/estimators.py's `needs`): an
# estimator that needs more (a learned V, the policy over all answers) cannot train it
READ = ("logp", "correctness", "weights", "offset")
OPTIMIZERS = ("adam", "sgd")  # rlvr/net/train.py maps each to its torch optimizer
IS_LEVELS = ("sequence", "token")  # where an off-policy correction weighs (rlvr/net/train.py)

# the network's own knobs, declared as the toy's are; G and prompts_per_step are in every path
NET_ONLY = (
    Knob("optimizer", "adam", "the network's optimizer: adam (what the field runs; it rescales each "
         "estimator's update) or sgd (the toy's: the update is the estimator's, times lr)",
         {"type": "string", "registry": "net.specs.OPTIMIZERS"}, token="opt"),
    Knob("G", None, "answers to each prompt; null: network.G (with prompts_per_step, a fixed number of "
         "answers a step split into other groups, as demo 4)", {"type": ["integer", "null"], "minimum": 1},
         none=(0, "null: network.G")),
    Knob("prompts_per_step", None, "prompts a step; null: network.prompts_per_step",
         {"type": ["integer", "null"], "minimum": 1}, none=(0, "null: network.prompts_per_step")),
    Knob("is_level", "sequence", "where is_correction weighs an answer sampled by a stale policy: sequence "
         "(ρ = Π_t ρ_t, one weight an answer: unbiased) or token (each token's own ρ_t: verl b178a3c "
         "rollout_is, biased, less variance)", {"type": "string", "registry": "net.specs.IS_LEVELS"},
         token="is_level"),
)
# the objective knobs (rlvr/knobs.py) the network's trainer reads (rlvr/net/objective.py token_loss,
# rlvr/net/train.py): a knob added to the toy's objective is not a network row's until the trainer
# reads it and it is named here, and a network row that sets it is refused by name, never trained
# without it under a name that says it was used (tests/test_network.py checks each one is read)
NET_OBJECTIVE = ("epochs", "clip_low", "clip_high", "clip_c", "kl_beta", "kl_estimator", "kl_placement",
                 "loss_agg", "policy_loss", "minibatches")
# a network row's knobs: the toy's that mean the same on a network, then the network's own
NET_KNOBS = (*(KNOBS[name] for name in ("method", "lr", "reward_offset", "reward", *NET_OBJECTIVE,
                                         "sampler_lag", "is_correction", "is_cap")), *NET_ONLY)
# the toy's row knobs a network row does not take: named in the error that refuses one
NOT_READ = tuple(k.name for k in ROW_KNOBS if k.name not in {k.name for k in NET_KNOBS})
NET_FIELDS = tuple(knob.name for knob in NET_KNOBS)
MODEL_KEYS = ("n_layer", "d_model", "n_head")  # rlvr.net.model.Config's sizes a config sets

# the files a network training job writes, <row path>_seeds<seeds>.<kind>.parquet, in the order
# it writes them: per step the batch's statistics; per record the exact curves, the exact pass@k,
# and each prompt's exact P(correct) (written last: a finished job's mark)
NET_FILES = ("batch", "curve", "passk", "prompts")


def base_files(seed):
    """The files of the base a network seed starts from: (its parameters, its exact P(correct)
    per prompt beside the toy's), names under results/ without .parquet."""
    return f"network/base/seed{seed}", f"network/base/seed{seed}_prompts"


@dataclass(frozen=True)
class NetBase:
    """A base: the model's sizes and its supervised learning on the toy's reference policy
    (rlvr.net.base.train_base), from the model's init drawn with key (seed,). Network seed s
    starts from the base of seed s: a verdict's seeds are draws of the base and of the RL run
    together, so its spread includes the base's."""

    n_layer: int
    d_model: int
    n_head: int
    steps: int
    batch: int
    lr: float
    seed: int
    task_seed: int  # the config's task.seed: the prompts' numbers (rlvr.net.tokens.make_token_task)


@dataclass(frozen=True)
class _NetJob:
    """What every network training job has, whatever its knobs (NetRow adds those)."""

    method: str
    lr: float
    G: int
    prompts_per_step: int
    steps: int
    max_len: int  # answer tokens the sampler draws at most, EOS included
    eval_every: int  # every prompt's exact P(correct) recorded every this many steps
    seeds: tuple  # trained together, packed, each from its own base (base_files); ascending
    k: tuple  # exact pass@k recorded for these k
    model: tuple  # (n_layer, d_model, n_head): the base's
    task_seed: int  # the config's task.seed: the prompts' numbers (rlvr.net.tokens.make_token_task)

    @property
    def row_path(self):
        """What names the row under results/, whatever its seeds: a knob away from its default
        adds its token and value (rlvr/knobs.py), as in a toy row's path."""
        # the toy's knobs at their defaults where the network has none of that name, or its own
        # (optimizer: the network's default is adam, the toy's sgd)
        values = {k.name: getattr(self, k.name) if k in NET_KNOBS else k.spec_default for k in OPTIONAL}
        own = "".join(f"_{k.token}{getattr(self, k.name)}" for k in NET_ONLY
                      if k.token and getattr(self, k.name) != k.spec_default)
        return (f"network/{self.method}/lr{self.lr!r}_off{self.reward_offset!r}_G{self.G}"
                f"_n{self.prompts_per_step}_s{self.steps}_len{self.max_len}{path_tokens(values)}{own}")

    @property
    def path(self):
        return f"{self.row_path}_seeds{seeds_label(self.seeds)}"

    @property
    def methods(self):
        return (self.method,)


# a row's knobs beyond _NetJob's fields (method, lr, G, ...), with their defaults (a spec leaves
# those out: to_json)
JOB_FIELDS = tuple(f.name for f in fields(_NetJob))
NetRow = make_dataclass("NetRow", [(k.name, type(k.spec_default), field(default=k.spec_default))
                                   for k in NET_KNOBS if k.name not in JOB_FIELDS],
                        bases=(_NetJob,), frozen=True)
NetRow.__module__ = __name__
EXPERIMENT = "network"  # every network file's `experiment` column, as the toy's rows name their demo
# the columns that name a network row in each of its files (after `experiment`)
ROW_COLUMNS = ("method", "lr", "optimizer", "reward", "reward_offset", "G", "prompts_per_step", "steps",
               "max_len", *NET_OBJECTIVE, "sampler_lag", "is_correction", "is_cap", "is_level")


def net_budget(section, row):
    """A network row's G and prompts_per_step: its own, or the section's where it leaves them null."""
    return {key: section[key] if row[key] is None else row[key] for key in ("G", "prompts_per_step")}


def objective_of(row):
    """The row's rlvr.objective.Objective fields {name: value} (those it leaves out, at their defaults)."""
    return {name: getattr(row, name) for name in NET_OBJECTIVE}


def plan_steps(bases, jobs, code):
    """The network's files as rlvr/binding.py plans every file ({name: Step}): each base's two,
    made from the task; each row's, from the task and its seeds' bases; their aggregates.
    bases, jobs: rlvr/config.py network_jobs ([], []: none)."""
    if not bases:
        return {}
    task = NAMES["task"]
    steps = {}
    for base in bases:
        step = Step("net_base", to_json(base), code("net_base"), (task,))
        steps.update(dict.fromkeys(base_files(base.seed), step))
    for job in jobs:
        step = Step("net_train", to_json(job), code("net_train", job.methods),
                    (task, *(base_files(seed)[0] for seed in job.seeds)))
        steps.update({f"{job.path}.{kind}": step for kind in NET_FILES})
    steps[NAMES["net_base"]] = Step("aggregate", "", code("aggregate"),
                                    tuple(base_files(base.seed)[1] for base in bases))
    for result, kind in io.NET_PARTS.items():
        steps[NAMES[result]] = Step("aggregate", "", code("aggregate"),
                                    tuple(f"{job.path}.{kind}" for job in jobs))
    return steps
