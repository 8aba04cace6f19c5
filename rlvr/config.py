"""Load and validate the pipeline config; expand it into the jobs it asks for.

The JSON schema (workflow/schemas/config.schema.yaml) gives every default and the
allowed values; `validate_config` fills the defaults, then checks what a schema cannot
(registered methods, group sizes that fit, duplicates, finite numbers). Both the
Snakefile and the in-process runner (`python -m rlvr all`) go through it, and both
enumerate jobs with the functions below, so they always agree on what to compute.
"""

import copy
import dataclasses
import difflib
import functools
import hashlib
import json
import math
import os
from pathlib import Path
from typing import NamedTuple

from . import io, specs
from .budget import memory_mb, sampler_copies
from .demos import DEMOS
from .knobs import BOUND_SIGNS, KNOBS, OBJECTIVE, OPTIONAL, ROW_FIELDS, expand_rows, row_schema
from .net.specs import JOB_FIELDS, NET_FIELDS, NET_FILES, NET_KNOBS, NOT_READ, NetBase, NetRow, net_budget
from .objective import Objective, minibatches_problem
from .specs import GradStatJob, TrainRow
from .task import LEVEL_KEYS

LEVELS = LEVEL_KEYS  # level ids as config values and file names use them
REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "workflow" / "schemas" / "config.schema.yaml"
# the Snakefile's `configfile:`; a user's file is merged over it, as `snakemake --configfile` does
DEFAULT_CONFIG = REPO / "config" / "config.yaml"

# where the single-file jobs write, relative to the results directory
TASK_FILE = io.RESULT_FILES["task"]
EXACT_FILE = io.RESULT_FILES["exact"]
# the training experiments whose rows come from a `rows:` list (grids allowed), in the demos' order
ROW_EXPERIMENTS = tuple(demo.name for demo in DEMOS if demo.module.ROWS)
# each experiment's config section, the name a summary shows (dynamic sampling's rows are "dynamic")
SECTION_OF = {getattr(demo.module, "EXPERIMENT", demo.name): demo.name for demo in DEMOS}
# the keys of a row, in the order a grid expands them (rlvr/knobs.py)


class ConfigError(ValueError):
    """A config value that is not allowed; the message names the key."""


class GradStatCase(NamedTuple):
    reward_offset: float
    method: str
    level: str


# what every section with a `rows:` list has besides its rows, and the defaults of those keys (a
# demo's seeds default to its module's)
NUMBER = {"type": "integer", "minimum": 1}
RUN_KEYS = {"steps": {**NUMBER, "default": 300}, "prompts_per_step": {**NUMBER, "default": 16},
            "G": {**NUMBER, "default": 8}, "seeds": {"$ref": "#/$defs/seeds"}}
# a config key that gives RUN_KEYS to every section with a `rows:` list that does not set them
# itself: config/test.yaml makes every demo small with it, one it does not name too
DEMO_DEFAULTS = "demo_defaults"


def experiment_schema(demo):
    """The config section of a demo whose rows come from a `rows:` list (demo.module.CONFIG)."""
    properties = {
        **RUN_KEYS, "seeds": {**RUN_KEYS["seeds"], "default": demo.module.CONFIG["seeds"]},
        "rows": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/row"},
                 "default": demo.module.CONFIG["rows"]},
        # a --configfile that edits the default rows instead of copying them (edit_rows)
        "add": {"description": "rows appended to `rows`", "type": "array", "minItems": 1,
                "items": {"$ref": "#/$defs/row"}},
        "change": {"description": "edits of single rows of `rows`: each {where: {knob: value, ...}, set: "
                             "{knob: value, ...}}, where `where` picks exactly one row",
                   "type": "array", "minItems": 1,
                   "items": {"type": "object", "additionalProperties": False, "required": ["where", "set"],
                             "properties": {"where": {"type": "object", "minProperties": 1},
                                            "set": {"type": "object", "minProperties": 1}}}}}
    return {"description": f"demo {demo.number}, {demo.module.CONFIG['help']}", "type": "object",
            "additionalProperties": False, "default": {}, "properties": properties}


def schema():
    """The config's JSON schema: workflow/schemas/config.schema.yaml, with the row (its knobs:
    rlvr/knobs.py) and the sections of the demos that train rows (rlvr/demos/), or that the file
    lacks, added after `trainer` in the demos' order; `enabled` in each section of a demo that can
    be turned off."""
    import yaml

    # libyaml's loader where PyYAML has it: the same values, a tenth of the time (40 ms a parse)
    out = yaml.load(SCHEMA_PATH.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out["$defs"]["row"] = row_schema()
    # a toy knob the network's trainer does not read: refused by name, as any unknown key, with why
    out["$defs"]["net_row"] = row_schema(NET_KNOBS) | {"x-not-read": list(NOT_READ)}
    sections, properties = {DEMO_DEFAULTS: demo_defaults_schema()}, {}
    for demo in DEMOS:
        if demo.module.ROWS:
            sections[demo.name] = experiment_schema(demo)
        elif demo.section and demo.section not in out["properties"]:  # a switch and nothing else
            sections[demo.section] = {"description": f"demo {demo.number}, {demo.module.TITLE}",
                                      "type": "object", "additionalProperties": False, "default": {},
                                      "properties": {}}
    for key, value in out["properties"].items():
        properties[key] = value
        if key == "trainer":
            properties.update(sections)
    for demo in DEMOS:
        if demo.section:
            section = properties[demo.section]
            section["properties"] = {"enabled": {"type": "boolean", "default": True}, **section["properties"]}
    out["properties"] = properties
    return out


def demo_defaults_schema():
    return {"description": "steps, prompts_per_step, G and seeds for every demo section with a `rows:` "
                           "list that does not set them itself (its rows are its module's, or its own)",
            "type": "object", "additionalProperties": False,
            "properties": {key: {k: v for k, v in value.items() if k != "default"}
                           for key, value in RUN_KEYS.items()}}


def apply_demo_defaults(cfg, validator):
    """Move the keys of cfg's `demo_defaults` into every section with a `rows:` list that does not
    set them, in place (before the schema fills its own defaults), and drop it: the validated
    config is the same as if each section had said so. Returns the schema's errors in it, which
    are named as its own keys (not as those of every section it would reach)."""
    given = cfg.pop(DEMO_DEFAULTS, None)
    if given is None:
        return []
    sub = validator.evolve(schema={"$defs": validator.schema["$defs"], **demo_defaults_schema()})
    errors = list(sub.iter_errors(given))
    for error in errors:
        error.path.extendleft([DEMO_DEFAULTS])  # absolute_path reads it: "demo_defaults.G"
    if errors:
        return errors
    for name in ROW_EXPERIMENTS:
        section = cfg.get(name, {})
        if isinstance(section, dict):  # (the schema names a section that is not a mapping)
            cfg[name] = {**copy.deepcopy(given), **section}
    return []


def _schema_validator():
    import jsonschema

    full = schema()
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
    return cls(full)


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
    for word in ("type", "enum", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minItems"):
        if word in schema:
            bits.append(f"{word} {schema[word]}")
    if "description" in schema:
        bits.append(schema["description"].strip())
    return f" (allowed: {'; '.join(bits)})" if bits else ""


MAX_VALUES = 1_000_000  # values in a config, YAML aliases (*name) expanded: refuses an alias bomb
MAX_ROWS = 10_000  # training rows (five files each, planned at every parse) a config may ask for
INT_LIMIT = 2**63  # the results store integers as int64


def values_problems(config):
    """What no schema states, for every value of the config: a number that is not finite (.nan,
    .inf) or an integer beyond int64; and a config too large once its YAML aliases are expanded
    (counting stops at MAX_VALUES, so even an alias bomb costs little here)."""
    problems, count, todo = [], 0, [((), config)]
    while todo:
        path, x = todo.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigError(f"invalid config: more than {MAX_VALUES:,} values once its YAML aliases "
                              "(*name) are expanded; write the values out or use fewer")
        if isinstance(x, dict):
            todo.extend(((*path, k), v) for k, v in reversed(x.items()))
        elif isinstance(x, list):
            todo.extend(((*path, i), v) for i, v in reversed(list(enumerate(x))))
        elif isinstance(x, float) and not math.isfinite(x):
            problems.append(f"config key {_key(path)}: {x} is not a finite number")
        elif isinstance(x, int) and not isinstance(x, bool) and abs(x) >= INT_LIMIT:
            problems.append(f"config key {_key(path)}: {x} is beyond the 64-bit integers the results "
                            "are stored in (|x| < 2^63)")
    return problems


def _largest(section, knob):
    """The largest value a section's rows give a knob (a list counts by its largest), 0 if none
    (a section without `rows:` sets no row knob)."""
    rows = section.get("rows", [])
    return max([0] + [max(v) if isinstance(v, list) else v for row in rows if (v := row.get(knob))])


TYPES = {"number": "a number", "integer": "an integer", "string": "a string", "array": "a list",
         "object": "a mapping of keys", "boolean": "true or false", "null": "null"}


def did_you_mean(word, choices):
    """' (did you mean 'x'?)' for the closest of choices to a mistyped word, '' if none is close."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _plain(error):
    """A schema error in plain words: the value, what is wrong with it and what is allowed."""
    how, value = error.validator, error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if how in BOUND_SIGNS:
        return f"{value!r} is not allowed: it must be {BOUND_SIGNS[how]} {error.validator_value}"
    if how == "type":
        want = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"{_short(repr(value), 80)} is not {' or '.join(TYPES.get(w, w) for w in want)}"
    if how == "enum":
        return (f"{value!r} is not one of {', '.join(map(repr, error.validator_value))}"
                + did_you_mean(value, error.validator_value))
    if how == "additionalProperties" and isinstance(value, dict):
        known = list(schema.get("properties", {}))
        not_read, gone = schema.get("x-not-read", ()), schema.get("x-gone", {})
        unknown = [f"{k!r} is a knob of the toy's rows that the network's trainer does not read "
                   f"(rlvr/net/specs.py NET_KNOBS)" if k in not_read else f"{k!r} {gone[k]}" if k in gone
                   else f"unknown key {k!r}{did_you_mean(k, known)}" for k in value if k not in known]
        return f"{'; '.join(unknown)}; the keys here are: {', '.join(known)}"
    if how == "minItems" and error.validator_value == 1:
        return "is empty; give at least one value"
    return _short(error.message) + _allowed(error)


def _short(message, limit=300):
    """A schema message cut to a readable length (it quotes the offending value whole)."""
    return message if len(message) <= limit else message[:limit] + " ..."


class Checks(NamedTuple):
    """The checks validate_config hands a demo's check_section: need(ok, key, message) records a
    problem; method(key, m) that m is a registered estimator; G(key, G, methods) that G suits them."""

    need: object
    method: object
    G: object


def validate_config(config, edits=None):
    """Return a validated copy of config with defaults filled; raise ConfigError if bad. edits: a
    list to which a line per row that a `change` or `add` made is appended (edit_rows)."""
    from .estimators import ESTIMATORS

    problems = values_problems(config or {})  # before anything copies or prints a value
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    cfg = copy.deepcopy(dict(config or {}))
    validator = _schema_validator()
    errors = apply_demo_defaults(cfg, validator) or sorted(validator.iter_errors(cfg),
                                                           key=lambda e: list(map(str, e.absolute_path)))
    made = [] if errors else edit_rows(cfg)
    if made:  # the edited rows are checked like any others
        errors = sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path)))
    if edits is not None:
        edits.extend(made)
    if errors:
        lines = [f"config key {_key(e.absolute_path)}: {_plain(e)}" for e in errors]
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))

    problems = []

    def need(ok, key, message):
        if not ok:
            problems.append(f"config key {key}: {message}")

    def check_method(key, method):
        if method not in ESTIMATORS:  # the message's closest match costs ~0.1 ms: only when wrong
            need(False, key, f"unknown method {method!r}{did_you_mean(method, ESTIMATORS)}; "
                 f"allowed: {', '.join(ESTIMATORS)}")

    def check_exact(key, method):  # demo 2 sets each estimator's Monte Carlo beside its exact moments
        need(method not in ESTIMATORS or "logp" not in ESTIMATORS[method].needs, key,
             f"{method!r} ranks a group's answers by π_old(y), which the exact moments (rlvr/exact.py) "
             "do not cover; use it in training rows")

    def check_G(key, G, methods):
        """One error for a group size too small for the methods that use it, blaming the G."""
        small = {}  # least G -> the methods that need it
        for m in dict.fromkeys(methods):
            if m in ESTIMATORS and G < ESTIMATORS[m].min_G:
                small.setdefault(ESTIMATORS[m].min_G, []).append(m)
        need(not small, key, f"G = {G} is too small: " + "; ".join(
            f"{', '.join(ms)} need{'s' if len(ms) == 1 else ''} G >= {g}" for g, ms in small.items()))

    task = cfg["task"]
    need(task["P"] % len(task["level_logodds"]) == 0, "task.P",
         f"{task['P']} must be a multiple of the number of levels ({len(task['level_logodds'])})")
    lo, hi = task["answer_length"]
    need(lo <= hi, "task.answer_length", f"[{lo}, {hi}] must be [min, max] with min <= max")

    gs = cfg["gradient_stats"]
    for i, case in enumerate(gs["cases"]):
        for j, m in enumerate(case["methods"]):
            check_method(f"gradient_stats.cases[{i}].methods[{j}]", m)
            check_exact(f"gradient_stats.cases[{i}].methods[{j}]", m)

    # size before anything is expanded or allocated: the rows a grid stands for, each job's memory
    sections = [demo.name for demo in asked(cfg)
                if demo.module.ROWS or hasattr(demo.module, "train_rows")]  # every section that trains
    n_rows = {name: sum(math.prod(len(v) if isinstance(v, list) else 1 for v in row.values())
                        for row in cfg[name]["rows"]) for name in sections if name in ROW_EXPERIMENTS}
    if sum(n_rows.values()) > MAX_ROWS:
        raise ConfigError(f"invalid config: {sum(n_rows.values()):,} training rows, five files each ("
                          + ", ".join(f"{name} {n:,}" for name, n in n_rows.items() if n)
                          + f"); at most {MAX_ROWS:,}: sweep in several configs")
    available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    P, M = task["P"], task["M"]
    jobs = [("task.P, task.M", 0, 0)] + [
        (f"{name}.seeds", len(cfg[name]["seeds"]),
         sampler_copies(_largest(cfg[name], "sampler_lag"), _largest(cfg[name], "sampler_noise"),
                        cfg[name]["steps"]))
        for name in sections]
    for key, seeds, copies in jobs[:1] if memory_mb(P, M) > available else jobs[1:]:
        mb = memory_mb(P, M, seeds, copies)
        lag = " (with an off-policy sampler's copies of the policy)" if copies else ""
        need(mb <= available, key, f"a job would need about {mb / 1024:,.1f} GiB ({P:,} prompts x {M:,} "
             f"answers{f' x {seeds:,} seeds' if seeds else ''}{lag}), more than this machine's "
             f"{available / 1024:,.1f} GiB; use {'fewer seeds per row, ' if seeds else ''}"
             f"{'a smaller sampler_lag, ' if copies else ''}or a smaller task")

    for name in ROW_EXPERIMENTS:
        ex = cfg[name]
        if name != "training" and not ex["enabled"]:
            continue
        need(ex["prompts_per_step"] <= task["P"], f"{name}.prompts_per_step",
             f"{ex['prompts_per_step']} exceeds the number of prompts task.P = {task['P']}")
        seen = {}
        rows = list(expand_rows(ex["rows"], name))
        check_G(f"{name}.G", ex["G"], [row["method"] for row, _ in rows])
        for row, keys in rows:
            check_method(keys["method"], row["method"])
            objective = Objective(**{k: KNOBS[k].cast(row[k]) for k in OBJECTIVE})
            for field, why in objective.conflicts():
                need(False, keys[field], why)
            problem = minibatches_problem(row["minibatches"], ex["G"])
            need(problem is None, keys["minibatches"], problem)
            if "correctness" in getattr(ESTIMATORS.get(row["method"]), "needs", ()):
                need(not objective.kl_in_reward, keys["row"],
                     f"{row['method']!r} reads each answer's correctness off its reward, which a KL "
                     "penalty in the reward would blur; put the KL in the loss")
            need(row["correct_answers"] < task["M"], keys["correct_answers"],
                 f"{row['correct_answers']} leaves no wrong answer among task.M = {task['M']}")
            ident = tuple(row[field] for field in ROW_FIELDS)
            need(ident not in seen, keys["row"], f"duplicates {seen.get(ident)} {row}")
            seen.setdefault(ident, keys["row"])

    checks = Checks(need, check_method, check_G)
    for demo in DEMOS:  # a demo that makes its own rows checks its own section (enabled or not)
        if hasattr(demo.module, "check_section"):
            demo.module.check_section(cfg[demo.name], task, checks)
    for i, m in enumerate(gs["exact_curve"]["methods"]):
        check_method(f"gradient_stats.exact_curve.methods[{i}]", m)
        check_exact(f"gradient_stats.exact_curve.methods[{i}]", m)
    check_G("gradient_stats.G", gs["G"], [*gs["exact_curve"]["methods"],
                                          *(m for case in gs["cases"] for m in case["methods"])])
    if not problems:  # what every stage would cost, from the rows the checks above let through
        problems += cost_problems(cfg, available)
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    return cfg


@functools.cache
def _defaults():
    """The schema's default of every section's keys: {section: {key: default}} (a demo's seeds: its
    CONFIG's), what the cost check measures how far a value grew from."""
    def default(node):
        if "properties" in node:
            return {k: default(v) for k, v in node["properties"].items()}
        return node.get("default")

    return default(schema())


def _training_keys(cfg, name, rows):
    """The keys that size a training section's cost: ((key, value, default), ...), the row knob
    epochs by the key of its largest value."""
    section, default = cfg[name], _defaults()[name]
    keys = [(f"{name}.steps", section["steps"], default["steps"]),
            (f"{name}.seeds", len(section["seeds"]), len(default["seeds"]))]
    for key in ("prompts_per_step", "answers_per_step", "max_rounds"):
        if key in section:
            keys.append((f"{name}.{key}", section[key], default[key]))
    G = section["G"]  # demo 4's is a list of group sizes
    largest = max if isinstance(G, list) else (lambda x: x)
    keys.append((f"{name}.G", largest(G), largest(default["G"])))
    if name in ROW_EXPERIMENTS:
        keys.append((f"{name}.rows", len(rows), 1))
        epochs = max(((row["epochs"], where["epochs"]) for row, where in expand_rows(section["rows"], name)),
                     key=lambda x: x[0])
        keys.append((epochs[1], epochs[0], 1))
    return keys


def _network_memory(cfg, available):
    """The network's jobs against the machine's memory (rlvr/budget.py network_mb): its base job
    and its largest training job, each too large as (key, value, MiB, what, remedy), the key the
    knob that grew its estimate most."""
    from . import budget as B

    net, defaults = cfg["network"], _defaults()["network"]
    if not net["enabled"]:
        return []
    answers = cfg["task"]["P"] * cfg["task"]["M"]
    model, d_model = net["model"], defaults["model"]
    sizes = [(f"network.model.{k}", model[k], d_model[k]) for k in ("n_layer", "d_model")]
    out = []
    mb = B.network_mb(model, net["base"]["batch"], 1, answers, base=True)
    if mb > available:
        (key, value), *_ = B.grown([("network.base.batch", net["base"]["batch"], defaults["base"]["batch"]),
                                    *sizes])
        out.append((key, value, mb, f"a network base job ({net['base']['batch']:,} answers a step, "
                    f"{B.net_params(model['n_layer'], model['d_model']):,} parameters)",
                    "use a smaller network.base.batch or model"))
    jobs = network_jobs(cfg)[1]
    if jobs:
        need = [(B.network_mb(model, j.prompts_per_step * j.G, len(j.seeds), answers, j.sampler_lag), j)
                for j in jobs]
        mb, job = max(need, key=lambda pair: pair[0])
        if mb > available:
            (key, value), *_ = B.grown([
                ("network.seeds", len(job.seeds), len(defaults["seeds"])),
                ("network.G", job.G, defaults["G"]),
                ("network.prompts_per_step", job.prompts_per_step, defaults["prompts_per_step"]), *sizes])
            n = len(job.seeds)
            out.append((key, value, mb, f"a network training job ({n} seed{'s' * (n != 1)} packed x "
                        f"{job.prompts_per_step:,} prompts x G = {job.G:,} answers a step, "
                        f"{B.net_params(model['n_layer'], model['d_model']):,} parameters a model)",
                        "use fewer answers a step, fewer seeds or a smaller model"))
    return out


def cost_problems(cfg, available):
    """What no job of this config may need: more memory than the machine has in any stage
    (rlvr/budget.py estimates each job's peak from the config's sizes), or more time than max_hours
    on this machine's cores (the whole config's CPU time). Messages name the key that makes it large."""
    from . import budget as B

    P, M = cfg["task"]["P"], cfg["task"]["M"]
    ref, gs = cfg["reference"], cfg["gradient_stats"]
    by_demo = rows_by_demo(cfg)
    rows = [row for demo_rows in by_demo.values() for row in demo_rows]
    out = []

    def refuse(key, value, mb, what, remedy):
        out.append(f"config key {key}: {B.number(value)} would make {what} need about {mb / 1024:,.1f} GiB, "
                   f"more than this machine's {available / 1024:,.1f} GiB; {remedy}")


    mb = B.gradstats_mb(P, M, gs["G"], gs["n_reps"]) if gradstat_cases(cfg) else 0
    if mb > available:
        refuse("gradient_stats.G", gs["G"], mb, f"a gradient-statistics job ({min(B.CHUNK, gs['n_reps']):,} "
               f"repetitions at a time x G = {gs['G']:,} answers, task.M = {M:,})",
               "use a smaller G (or task.M)")
    points = gs["exact_curve"]["n_points"]
    mb = B.exact_mb(gs["G"], M, points) if gs["enabled"] else 0
    if mb > available and B.exact_mb(0, 0, points) > available / 2:  # its rows, not its moments
        refuse("gradient_stats.exact_curve.n_points", points, mb, f"the exact curve job ({points:,} points "
               f"x {len(gs['exact_curve']['methods'])} methods)", "use fewer points")
    elif mb > available:
        refuse("gradient_stats.G", gs["G"], mb, "the exact curve job (the exact moments of G answers: G² "
               "values)", "use a smaller G")
    mb = B.reference_mb(P, M, ref["n_samples"], ref["k"])
    if mb > available:
        refuse("reference.n_samples", ref["n_samples"], mb, "the reference job (the unbiased pass@k of Chen "
               "et al. multiplies over up to n_samples terms per prompt)", "use a smaller n_samples")
    for name, demo_rows in by_demo.items():  # a training job's batch and records (its policy: above)
        if not demo_rows:
            continue
        row = max(demo_rows, key=lambda r: B.train_extra_mb(r, P))
        copies = sampler_copies(row.sampler_lag, row.sampler_noise, row.steps)
        mb = memory_mb(P, M, len(row.seeds), copies) + B.train_extra_mb(row, P)
        if mb > available:
            batch = B.BATCH_PER_ANSWER * B.batch_answers(row, P) >= B.RECORD_PER_SEED * len(row.seeds) * \
                B.records(row)
            section = cfg[name]
            key, value = (f"{name}.G", row.G) if batch else (f"{name}.steps", section["steps"])
            if not batch and row.steps != section["steps"]:  # dynamic sampling's plain run: x max_rounds
                key, value = f"{name}.max_rounds", section["max_rounds"]
            rounds = B.rounds(row, P)
            what = (f"a training job's batch ({len(row.seeds):,} seeds x {row.prompts_per_step:,} prompts"
                    f" x G = {row.G:,} answers{f' x {rounds} rounds' if rounds > 1 else ''})" if batch else
                    f"a training job's curves ({len(row.seeds):,} seeds x {B.records(row):,} recorded steps: "
                    f"{row.steps:,} steps / trainer.eval_every {row.eval_every:,})")
            refuse(key, value, mb, what, "use fewer answers a step or seeds per row" if batch else
                   "use fewer steps, a larger trainer.eval_every or fewer seeds")
    for stage, mb in (("the aggregate job of the curves", B.aggregate_mb(rows)),
                      ("the rendering job (every demo's tables and figures)", B.render_mb(rows))):
        if mb > available:  # named by the row with the most curve rows
            name, row = max(((name, r) for name, rs in by_demo.items() for r in rs),
                            key=lambda x: B.records(x[1]))
            key, value = f"{name}.steps", cfg[name]["steps"]
            if row.steps != value:  # dynamic sampling's plain run: steps x max_rounds
                key, value = f"{name}.max_rounds", cfg[name]["max_rounds"]
            n_rows = sum(map(B.row_table_rows, rows))
            refuse(key, value, mb, f"{stage}, which holds {n_rows:,} rows of curves "
                   "and pass@k (every row's seeds x steps / trainer.eval_every),",
                   "use fewer steps or seeds, or a larger trainer.eval_every")
    for too_large in _network_memory(cfg, available):
        refuse(*too_large)
    if out:
        return out
    training = [(name, rs, _training_keys(cfg, name, rs)) for name, rs in by_demo.items()]
    slow = B.check_time(cfg, B.parts(cfg, _defaults(), training))
    return [slow] if slow else []


def merge(base, over):
    """base with over merged into it, as Snakemake merges --configfile over `configfile:`:
    mappings merge key by key, anything else (lists included) is replaced."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_yaml(path):
    """A YAML mapping from a file; ConfigError naming the file (and line) if it is not one."""
    import yaml

    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory, not a YAML file")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        with open(path, encoding="utf-8") as stream:  # a YAML error then names the file, not a string
            raw = yaml.safe_load(stream)
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"config file {path} cannot be read: {err}") from None
    if raw is None:  # Snakemake refuses an empty --configfile too
        raise ConfigError(f"config file {path} is empty; write {{}} in it to change nothing")
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of keys, got {type(raw).__name__}")
    return raw


def load_config(path=None, base=DEFAULT_CONFIG, edits=None):
    """The validated config of `snakemake --configfile path`: path merged over base (the
    Snakefile's config/config.yaml, where it exists), defaults from the schema. edits: as
    validate_config's."""
    cfg = read_yaml(base) if base and Path(base).is_file() else {}
    if path is not None and Path(path).resolve() != Path(base).resolve():
        cfg = merge(cfg, read_yaml(path))
    return validate_config(cfg, edits)


# where each run records the config it ran (record_config), under the results directory: clean
# keeps every file a recorded config names
CONFIGS_DIR = "configs"
LATEST = "latest"  # in CONFIGS_DIR: the name of the last run's config file


def record_config(cfg, results):
    """Record a validated config as the one a run on results/ used: results/configs/<12 hex
    digits of its hash>.yaml (one file per distinct config, written atomically) and
    results/configs/latest naming it. Returns the config file's path."""
    import yaml

    text = yaml.safe_dump(cfg, sort_keys=True, allow_unicode=True)  # key order: no change of config
    body = ("# the effective config of a run on this results directory (defaults filled; rlvr/config.py\n"
            f"# record_config): `python -m rlvr clean` keeps every file it names\n{text}")
    folder = Path(results, CONFIGS_DIR)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"
    if not (path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == body):
        io.write_bytes(path, body.encode())
    io.write_bytes(folder / LATEST, f"{path.name}\n".encode())
    return path


def recorded_configs(results):
    """[(path, validated config)] of every config recorded under results/, the latest run's first;
    ConfigError naming a recorded file that this rlvr no longer accepts."""
    folder = Path(results, CONFIGS_DIR)
    latest = latest_config(results)
    paths = sorted(folder.glob("*.yaml"), key=lambda path: (path.name != latest, path.name))
    configs = []
    for path in paths:
        try:
            configs.append((path, validate_config(read_yaml(path))))
        except ConfigError as err:
            raise ConfigError(f"{path}: a run's recorded config that this rlvr does not accept ({err}); "
                              "to keep its files, fix it; to let them go, delete it") from None
    return configs


def latest_config(results):
    """The file name of the last recorded run's config under results/configs/, or None."""
    try:
        return Path(results, CONFIGS_DIR, LATEST).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def edit_rows(cfg):
    """Apply every rows section's `add` (rows appended) and `change` (one row's knobs set, the row
    picked by `where`) to its `rows`, in place, and drop those keys; so that a --configfile, which
    Snakemake merges key by key but whose lists replace the default's whole, can change one row
    without copying the others. Returns a line per row edited, saying which and how
    ("training.rows[8] {method: none, lr: 8.0}: changed lr 8.0 -> 16.0", "training.rows[16]
    added: {method: rloo, lr: 4.0}"), none if nothing was; ConfigError naming the `where` that
    picks no row or several, or a knob that does not exist."""
    edited, problems = [], []
    for name in ROW_EXPERIMENTS:
        section = cfg.get(name, {})
        rows = section.get("rows", [])
        for i, edit in enumerate(section.pop("change", [])):
            key = f"{name}.change[{i}]"
            unknown = [k for k in [*edit["where"], *edit["set"]] if k not in ROW_FIELDS]
            if unknown:
                problems += [f"config key {key}: unknown knob {k!r}{did_you_mean(k, ROW_FIELDS)}; the knobs "
                             f"are: {', '.join(ROW_FIELDS)}" for k in unknown]
                continue
            where = edit["where"]
            picked = [j for j, row in enumerate(rows) if all(row.get(k) == v for k, v in where.items())]
            if len(picked) != 1:
                which = ", ".join(f"{name}.rows[{j}]" for j in picked) or "none"
                problems.append(f"config key {key}.where: {where} picks {len(picked)} rows ({which}), not "
                                "one; give more of the row's knobs")
                continue
            row = rows[picked[0]]
            how = ", ".join(f"{k} {_flow(row[k]) if k in row else '(its default)'} -> {_flow(v)}"
                            for k, v in edit["set"].items())
            edited.append(f"{name}.rows[{picked[0]}] {_flow(_set_knobs(row))}: changed {how}")
            rows[picked[0]] = {**row, **edit["set"]}
        for row in section.pop("add", []):
            rows.append(row)
            grid = math.prod(len(v) for v in row.values() if isinstance(v, list))
            edited.append(f"{name}.rows[{len(rows) - 1}] added: {_flow(_set_knobs(row))}"
                          + (f" (a grid of {grid} rows)" if grid > 1 else ""))
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    return edited


def _set_knobs(row):
    """A row's knobs that are not at their defaults (the schema fills in the others)."""
    return {k: v for k, v in row.items() if k not in KNOBS or v != KNOBS[k].default}


def _flow(value):
    """A config value as YAML's flow style writes it: {method: none, lr: 8.0}, [1, 2], null."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_flow, value)) + "]"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(value)


def gradstat_cases(cfg):
    """Every (reward offset, method, level) the config asks for, each once, in order (none where
    demo 2 is off: gradient_stats.enabled)."""
    if not cfg["gradient_stats"]["enabled"]:
        return []
    cases = {}
    for case in cfg["gradient_stats"]["cases"]:
        for off in case["reward_offsets"]:
            for m in case["methods"]:
                for lv in case["levels"]:
                    cases.setdefault(GradStatCase(float(off), m, lv), None)
    return list(cases)


def gradstat_jobs(cfg):
    """One job per method, with its (offset, level) cases in the config's order."""
    gs = cfg["gradient_stats"]
    by_method = {}
    for case in gradstat_cases(cfg):
        by_method.setdefault(case.method, []).append((case.reward_offset, case.level))
    return [GradStatJob(m, tuple(cases), gs["G"], gs["n_reps"], gs["seed"]) for m, cases in by_method.items()]


def rows_by_demo(cfg):
    """Every training row, by the demo that asks for it: the rows of each demo with a `rows:`
    list (demo 3's, the lr sweep, ...), then those of each demo that makes its own from its
    section (its module's train_rows: demo 4's group sizes, dynamic sampling); a row holds
    all of its seeds. This order is the order of the aggregated files' rows."""
    trainer, k = cfg["trainer"], tuple(cfg["reference"]["k"])
    settings_id = _settings_id(trainer["value_lr"], trainer["eval_every"], k)

    def row(experiment, method, lr, offset, G, pps, steps, seeds, max_rounds=0, **knobs):
        return TrainRow(experiment, method, float(lr), float(offset), G, pps, steps, max_rounds,
                        tuple(sorted(seeds)), trainer["value_lr"], trainer["eval_every"], k, settings_id,
                        **knobs)

    def knobs_of(r):
        """A row's knobs beyond the estimator and its step, as TrainRow takes them (Knob.cast)."""
        return {knob.name: knob.cast(r[knob.name]) for knob in OPTIONAL}

    rows = {}
    for name in ROW_EXPERIMENTS:
        ex = cfg[name]
        if name == "training" or ex["enabled"]:
            rows[name] = [row(name, r["method"], r["lr"], r["reward_offset"], ex["G"], ex["prompts_per_step"],
                              ex["steps"], ex["seeds"], **knobs_of(r))
                          for r, _ in expand_rows(ex["rows"], name)]
    for demo in asked(cfg):
        if hasattr(demo.module, "train_rows"):
            rows[demo.name] = demo.module.train_rows(cfg[demo.name], row)
    return rows


def _settings_id(value_lr, eval_every, k):
    """"" for the schema's default value_lr, eval_every and reference k; else 8 hex digits of a
    hash of them (in a training job's path: rlvr/specs.py)."""
    settings = json.dumps([float(value_lr), int(eval_every), [int(x) for x in k]])
    default = _default_settings()
    return "" if settings == default else hashlib.sha256(settings.encode()).hexdigest()[:8]


@functools.cache
def _default_settings():
    """The schema's defaults of value_lr, eval_every and reference k, as _settings_id writes them
    (read off the schema: validating a whole empty config cost a tenth of a second per parse)."""
    properties = schema()["properties"]
    trainer, reference = (properties[name]["properties"] for name in ("trainer", "reference"))
    return json.dumps([float(trainer["value_lr"]["default"]), int(trainer["eval_every"]["default"]),
                       [int(x) for x in reference["k"]["default"]]])


def train_rows(cfg):
    """Every training row, all of its seeds in one (rows_by_demo's, in order)."""
    return [row for rows in rows_by_demo(cfg).values() for row in rows]


def train_jobs(rows, results=None, last=".run.parquet"):
    """The training jobs of these rows: each row's seeds split (rlvr/specs.py's seed_blocks) into
    the blocks whose files are already under the results directory, and one block of the rest;
    without a results directory, one job a row. last: the file a finished job writes last (a
    network row's: ".prompts.parquet")."""
    listed = {}  # directory -> its file names, listed once

    def computed(row):
        """The seed blocks of this row whose job finished (its last file exists)."""
        folder, name = Path(results, row.row_path).parent, Path(row.row_path).name
        if folder not in listed:
            names = os.listdir(folder) if folder.is_dir() else []
            listed[folder] = [specs.BLOCK_FILE.match(f) for f in names]
        return [specs.label_seeds(m["seeds"]) for m in listed[folder]
                if m and m["row"] == name and m["suffix"] == last]

    return [dataclasses.replace(row, seeds=block) for row in rows
            for block in specs.seed_blocks(row.seeds, computed(row) if results else ())]


NET_LAST = f".{NET_FILES[-1]}.parquet"  # the file a network training job writes last


def network_jobs(cfg, results=None):
    """The network's bases and its training jobs: ([NetBase], [NetRow]), ([], []) when the
    network is off. Seed s starts from the base of seed s: one base a seed. A job trains a row's
    seeds packed along the model's ensemble dimension: all of them, or with a results directory,
    as toy rows do (train_jobs), each block of them whose files are there and one block of the
    rest, so that an added seed trains alone (a seed's numbers do not depend on what it is packed
    with)."""
    net = cfg["network"]
    if not net["enabled"]:
        return [], []
    model, base = net["model"], net["base"]
    sizes = tuple(model[key] for key in ("n_layer", "d_model", "n_head"))
    task_seed = cfg["task"]["seed"]
    bases = [NetBase(*sizes, base["steps"], base["batch"], float(base["lr"]), seed, task_seed)
             for seed in sorted(net["seeds"])]
    rows = [NetRow(method=r["method"], lr=float(r["lr"]), **net_budget(net, r),
                   steps=net["steps"], max_len=net["max_len"], eval_every=net["eval_every"],
                   seeds=tuple(sorted(net["seeds"])), k=tuple(cfg["reference"]["k"]), model=sizes,
                   task_seed=task_seed,
                   **{k.name: k.cast(r[k.name]) for k in NET_KNOBS if k.name not in JOB_FIELDS})
            for r, _ in expand_rows(net["rows"], "network", NET_FIELDS)]
    return bases, train_jobs(rows, results, NET_LAST)


def asked(cfg):
    """The demos a config asks for, in order (a disabled demo: none of its tables or figures)."""
    return [demo for demo in DEMOS if demo.section is None or cfg[demo.section]["enabled"]]


def _base_line(to_run, n):
    """What the summary says of the network's n bases (one a seed, each made once for every row)."""
    if to_run is None:
        return f"and its {n} bases (one a seed)"
    made = to_run.get("network_base", 0)
    return f"{made} of its {n} bases to make" if made else f"its {n} bases kept"


def summary(cfg, to_run=None, default=DEFAULT_CONFIG, n_jobs=None):
    """Lines saying what a config asks for: per experiment, rows x seeds and jobs, so that a row
    a --configfile dropped is visible before anything runs. to_run: {experiment or
    "gradient_stats": the jobs that will run now} (None: not known); n_jobs: {experiment: its
    training jobs, each a pack of rows trained one after another: rlvr/packs.py} (None: not
    planned, not said). A row list shorter than the default config's is pointed out: a --configfile list
    replaces the default's, never extends it."""
    base = {}
    if default and Path(default).is_file():
        for r in train_rows(validate_config(read_yaml(default))):
            base[r.experiment] = base.get(r.experiment, 0) + 1
    by_experiment = {}
    for r in train_rows(cfg):
        by_experiment.setdefault(r.experiment, []).append(r)

    def jobs(name, total):
        if to_run is None:
            return f"{total} jobs"
        return f"{to_run.get(name, 0)} of {total} jobs to run"

    n_methods = len(gradstat_jobs(cfg))
    w = max(len(demo.name) for demo in DEMOS)  # the names in one column, the longest's too
    lines = [f"{'gradient_stats':<{w}} {len(gradstat_cases(cfg)):3d} cases of {n_methods:2d} methods"
             f"{'':11}{jobs('gradient_stats', n_methods)}" if cfg["gradient_stats"]["enabled"]
             else f"{'gradient_stats':<{w}} off"]
    for name, rows in by_experiment.items():
        runs = sum(len(r.seeds) for r in rows)
        seeds = {len(r.seeds) for r in rows}
        seeds = f"{seeds.pop():2d} seeds" if len(seeds) == 1 else "   seeds"
        # its training jobs, packs of rows, are planned with the files present (rlvr/packs.py)
        packs = f"  {jobs(name, n_jobs[name])}" if n_jobs and name in n_jobs else ""
        lines.append(f"{SECTION_OF.get(name, name):<{w}} {len(rows):3d} rows x {seeds} = {runs:4d} runs"
                     + packs)
        if len(rows) < base.get(name, 0):
            lines.append(f"{'':{w + 1}}note: {Path(default).name} has {base[name]} rows here: a list in "
                         "--configfile replaces the default list, it does not extend it")
    for name in base.keys() - by_experiment.keys():
        lines.append(f"{SECTION_OF.get(name, name):<{w}} off")
    bases, net_rows = network_jobs(cfg)
    if net_rows:  # a job a row's block of seeds (n_jobs["network"], as planned with the files
        # present; a row a job before that); and a base a seed, a job each
        runs = sum(len(r.seeds) for r in net_rows)
        lines.append(f"{'network':<{w}} {len(net_rows):3d} rows x {len(net_rows[0].seeds):2d} seeds = "
                     f"{runs:4d} runs  "
                     f"{jobs('network', (n_jobs or {}).get('network', len(net_rows)))}, "
                     f"{_base_line(to_run, len(bases))}")
    return lines
