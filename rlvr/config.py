"""Load and validate the pipeline config; enumerate the jobs it asks for.

The JSON schema (workflow/schemas/config.schema.yaml) gives every default and the
allowed values; `validate_config` fills the defaults, then checks what a schema cannot
(registered methods, group sizes that fit, duplicates, finite numbers). Both the
Snakefile and the in-process runner (`python -m rlvr all`) go through it, and both
enumerate jobs with the functions below, so they always agree on what to compute.
"""

import copy
import math
from pathlib import Path
from typing import NamedTuple

from .task import LEVEL_KEYS

LEVELS = LEVEL_KEYS  # level ids as config values and file names use them
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"

# where each job writes, relative to the results directory
TASK_FILE = "task.parquet"
GRADSTAT_PATTERN = "gradient_stats/off{offset}/{method}/{level}.parquet"
RUN_PATTERN = "runs/{experiment}/{method}/lr{lr}_off{offset}_G{G}_n{pps}_s{steps}_dyn{rounds}/seed{seed}"
EXACT_FILE = "exact_bias.parquet"


class ConfigError(ValueError):
    """A config value that is not allowed; the message names the key."""


class GradStatCase(NamedTuple):
    reward_offset: float
    method: str
    level: str


class RunSpec(NamedTuple):
    experiment: str  # "training", "group_size" or "dynamic"
    method: str
    lr: float
    reward_offset: float
    G: int
    prompts_per_step: int
    steps: int
    seed: int
    max_rounds: int = 0  # > 0: dynamic sampling with at most this many rounds a step


def number_id(x):
    """A file-name-safe id for a number that round-trips exactly: 2.0 -> '2.0'."""
    return repr(float(x))


def _schema_validator():
    import jsonschema
    import yaml

    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    base = jsonschema.Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def fill_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    # 1.0 is not an integer here: a seed or a G must be written as a whole number
    types = base.TYPE_CHECKER.redefine(
        "integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool)
    )
    cls = jsonschema.validators.extend(base, {"properties": fill_defaults}, type_checker=types)
    return cls(schema)


def _key(path):
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _allowed(error):
    """What the schema allows where a validation error happened, in words."""
    schema = error.schema
    if not isinstance(schema, dict):
        return ""
    if error.validator in ("additionalProperties", "required"):
        return f" (known keys: {', '.join(schema.get('properties', {}))})"
    bits = []
    for word in ("type", "enum", "minimum", "exclusiveMinimum", "maximum", "minItems"):
        if word in schema:
            bits.append(f"{word} {schema[word]}")
    if "description" in schema:
        bits.append(schema["description"].strip())
    return f" (allowed: {'; '.join(bits)})" if bits else ""


def validate_config(config):
    """Return a validated copy of config with defaults filled; raise ConfigError if bad."""
    from .estimators import ESTIMATORS

    cfg = copy.deepcopy(dict(config or {}))
    validator = _schema_validator()
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"config key {_key(e.absolute_path)}: {e.message}{_allowed(e)}" for e in errors]
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))

    problems = []

    def need(ok, key, message):
        if not ok:
            problems.append(f"config key {key}: {message}")

    def check_method(key, method, Gs):
        if method not in ESTIMATORS:
            need(False, key, f"unknown method {method!r}; allowed: {', '.join(ESTIMATORS)}")
            return
        for G in Gs:
            need(G >= ESTIMATORS[method].min_G, key,
                 f"method {method!r} needs G >= {ESTIMATORS[method].min_G}, got G = {G}")

    def check_finite(key, x):
        need(math.isfinite(x), key, f"{x} is not a finite number")

    task = cfg["task"]
    need(task["P"] % len(task["level_logodds"]) == 0, "task.P",
         f"{task['P']} must be a multiple of the number of levels ({len(task['level_logodds'])})")
    for i, x in enumerate(task["level_logodds"]):
        check_finite(f"task.level_logodds[{i}]", x)

    gs = cfg["gradient_stats"]
    for i, case in enumerate(gs["cases"]):
        for j, m in enumerate(case["methods"]):
            check_method(f"gradient_stats.cases[{i}].methods[{j}]", m, [gs["G"]])
        for j, x in enumerate(case["reward_offsets"]):
            check_finite(f"gradient_stats.cases[{i}].reward_offsets[{j}]", x)

    tr = cfg["training"]
    need(tr["prompts_per_step"] <= task["P"], "training.prompts_per_step",
         f"{tr['prompts_per_step']} exceeds the number of prompts task.P = {task['P']}")
    seen = {}
    for i, row in enumerate(tr["rows"]):
        key = f"training.rows[{i}]"
        check_method(f"{key}.method", row["method"], [tr["G"]])
        check_finite(f"{key}.lr", row["lr"])
        check_finite(f"{key}.reward_offset", row["reward_offset"])
        ident = (row["method"], float(row["lr"]), float(row["reward_offset"]))
        need(ident not in seen, key, f"duplicates training.rows[{seen.get(ident)}] {row}")
        seen.setdefault(ident, i)

    gz = cfg["group_size"]
    check_method("group_size.method", gz["method"], gz["G"])
    check_finite("group_size.lr", gz["lr"])
    check_finite("group_size.reward_offset", gz["reward_offset"])
    for i, G in enumerate(gz["G"]):
        key = f"group_size.G[{i}]"
        if G > gz["answers_per_step"] or gz["answers_per_step"] % G:
            need(False, key, f"G = {G} must divide group_size.answers_per_step = {gz['answers_per_step']}")
        elif gz["answers_per_step"] // G > task["P"]:
            need(False, key, f"G = {G} gives {gz['answers_per_step'] // G} prompts per step, "
                 f"more than task.P = {task['P']}")
    ds = cfg["dynamic_sampling"]
    check_method("dynamic_sampling.method", ds["method"], [ds["G"]])
    check_finite("dynamic_sampling.lr", ds["lr"])
    check_finite("dynamic_sampling.reward_offset", ds["reward_offset"])
    need(ds["prompts_per_step"] <= task["P"], "dynamic_sampling.prompts_per_step",
         f"{ds['prompts_per_step']} exceeds the number of prompts task.P = {task['P']}")
    for i, m in enumerate(gs["exact_curve"]["methods"]):
        check_method(f"gradient_stats.exact_curve.methods[{i}]", m, [gs["G"]])
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    return cfg


def load_config(path):
    """Read a YAML config file and validate it."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {err}") from None
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of keys, got {type(raw).__name__}")
    return validate_config(raw or {})


def gradstat_cases(cfg):
    """Every (reward offset, method, level) the config asks for, each once, in order."""
    cases = {}
    for case in cfg["gradient_stats"]["cases"]:
        for off in case["reward_offsets"]:
            for m in case["methods"]:
                for lv in case["levels"]:
                    cases.setdefault(GradStatCase(float(off), m, lv), None)
    return list(cases)


def training_runs(cfg):
    """Every training run x seed: demo 3 rows, demo 4 group sizes, then dynamic sampling
    (each seed once with filtering, once plain for max_rounds x the steps, so that the plain
    run can be read at an equal number of steps and at an equal budget of answers)."""
    tr, gz, ds = cfg["training"], cfg["group_size"], cfg["dynamic_sampling"]
    runs = [
        RunSpec("training", row["method"], float(row["lr"]), float(row["reward_offset"]),
                tr["G"], tr["prompts_per_step"], tr["steps"], seed)
        for row in tr["rows"] for seed in tr["seeds"]
    ]
    runs += [
        RunSpec("group_size", gz["method"], float(gz["lr"]), float(gz["reward_offset"]),
                G, gz["answers_per_step"] // G, gz["steps"], seed)
        for G in gz["G"] for seed in gz["seeds"]
    ]
    if ds["enabled"]:
        for rounds, steps in ((ds["max_rounds"], ds["steps"]), (0, ds["steps"] * ds["max_rounds"])):
            runs += [
                RunSpec("dynamic", ds["method"], float(ds["lr"]), float(ds["reward_offset"]), ds["G"],
                        ds["prompts_per_step"], steps, seed, rounds)
                for seed in ds["seeds"]
            ]
    return runs


def gradstat_path(case):
    return GRADSTAT_PATTERN.format(offset=number_id(case.reward_offset), method=case.method,
                                   level=case.level)


def run_path(run):
    """Path prefix of a run's files (add '.run.parquet' or '.curve.parquet')."""
    return RUN_PATTERN.format(experiment=run.experiment, method=run.method, lr=number_id(run.lr),
                              offset=number_id(run.reward_offset), G=run.G,
                              pps=run.prompts_per_step, steps=run.steps, rounds=run.max_rounds,
                              seed=run.seed)
