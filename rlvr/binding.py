"""What binds a result file to everything that made it: its identity.

A file's identity is a hash of the stage that wrote it, its spec (the JSON the job was given),
the version of the rlvr code it ran (rlvr/codeversion.py) and the identities of the files it
read, in order: a chain, as Bazel's action keys and Nix's derivations are. rlvr is deterministic,
so one identity means one content: files with the same identity hold the same numbers whichever
machine, directory or run made them (one config's results merged from two machines are
accepted), and a file made from another task, config, code or input carries another identity.

- Every Parquet file rlvr writes carries its identity and its own name (schema metadata
  `rlvr_job`, `rlvr_file`: io.bound). A job computes its identity from its spec, its code and
  what its inputs carry, so a job run by hand writes what the pipeline would.
- A run plans every file's identity from the config before any job starts (`plan`,
  `identities`); a job refuses an input that carries another identity than planned, naming it
  (io.read_arrow's `planned`).
- A rendering job (tables, figures) lists the files it read with their identities in its
  checksum file (`# from NAME IDENTITY` lines, which `sha256sum -c` skips).
- Snakemake reruns a job whose spec, code or inputs changed, by its own records; what those
  records cannot see is a file replaced behind its back (copied in from another project, or
  written by another command). So each run notes what its files are when it ends (`note`: size
  and time, which a copy that keeps times keeps; only a file whose identity it read and found
  planned), and the next parse reads the identity of every file that is no longer as noted
  (`foreign`): one that carries another identity than planned,
  or a checksum file listing a source of another identity, is set aside and made again (the
  Snakefile).
"""

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from math import comb
from pathlib import Path

from . import io
from .runlock import STATE_DIR
from .specs import JOB_FILES, to_json

NAMES = {key: file.removesuffix(".parquet") for key, file in io.RESULT_FILES.items()}
AGGREGATES = {"runs": "run", "curves": "curve", "klgrad": "klgrad"}  # aggregate_training's: {result: kind}


def identity(stage, spec, code, inputs=()):
    """The identity of a file written by `python -m rlvr <stage>` from spec (JSON, as passed),
    code (its version) and inputs (the identities its input files carry, in the order read)."""
    text = "\0".join([stage, spec.strip(), code or "", *inputs])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Step:
    """How one file is made: the stage, its spec, its code version, the names of its inputs."""

    stage: str
    spec: str
    code: str
    inputs: tuple = ()


def as_json(mapping):
    """A config section as a job's spec: one line of JSON, keys sorted, so that only a change of
    a value (not of the order in which a config file lists keys) changes it."""
    return json.dumps(mapping, sort_keys=True, separators=(",", ":"))


def exact_spec(cfg):
    gs = cfg["gradient_stats"]
    return as_json({"methods": gs["exact_curve"]["methods"], "G": gs["G"], "M": cfg["task"]["M"],
                    "n_points": gs["exact_curve"]["n_points"]})


# the most cells (multisets of G answers x M answers) the exact one-step job enumerates at once
# (rlvr/finite_step.py: 490,314 x 16 at the default G = 8 and M = 16, ~0.5 GB at the limit)
FINITE_STEP_CELLS = 16_000_000
# demo 16's batches from the reference: groups a prompt (its Monte Carlo), and the generator's seed
BATCH_GROUPS, BATCH_SEED = 1000, 0


def finite_step_spec(train_jobs, M):
    """What the finite-step job computes (rlvr/finite_step.py), "" if nothing: demo 13's exact
    one-step outcomes for the estimators of its rows at their lrs and G (none if every multiset
    of G answers out of M is more than FINITE_STEP_CELLS to enumerate: the demo then says so),
    and one batch of each of demo 16's rows from the reference, by Monte Carlo."""
    signs = [job for job in train_jobs if job.experiment == "negative_samples"]
    G = max((r.G for r in signs), default=0)
    spec = {}
    if signs and comb(M + G - 1, G) * M <= FINITE_STEP_CELLS:
        spec["sample_sign"] = {"methods": sorted({r.method for r in signs}),
                               "lrs": sorted({r.lr for r in signs}), "G": G}
    batches = {job.row_path: replace(job, seeds=()) for job in train_jobs
               if job.experiment == "spurious_rewards"}
    if batches:
        spec["batches"] = {"rows": [json.loads(to_json(row)) for _, row in sorted(batches.items())],
                           "G": max(row.G for row in batches.values()), "n_groups": BATCH_GROUPS,
                           "seed": BATCH_SEED}
    if not spec:
        return ""
    # every estimator it runs, for its code version (rlvr/codeversion.py, rlvr/cli.py check_code)
    spec["methods"] = sorted(set(spec.get("sample_sign", {}).get("methods", []))
                             | {row["method"] for row in spec.get("batches", {}).get("rows", [])})
    return as_json(spec)


def gradstat_order(cases):
    """The rows of gradient_stats.parquet in the config's order of cases, whatever the jobs."""
    return json.dumps([list(case) for case in cases])


def plan(cfg, train_jobs, gradstat_jobs, gradstat_cases, code, more=()):
    """{name: Step} of every Parquet file a run of cfg writes, names as paths under results/
    without `.parquet`; the rules take their specs and input lists from it (workflow/rules/).
    code(stage, methods): the code version of a stage with those estimators; more: the network's
    (name, Step) pairs (rlvr/net/specs.py plan_steps), planned there so that no toy job's code
    holds the network's."""
    task, reference = NAMES["task"], NAMES["reference"]
    # demo 1 off (reference.enabled): its table, not the reference's pass@k other demos read
    ref = {key: value for key, value in cfg["reference"].items() if key != "enabled"}
    steps = {task: Step("task", as_json(cfg["task"]), code("task")),
             reference: Step("reference", as_json(ref), code("reference"), (task,))}
    if cfg["gradient_stats"]["enabled"]:  # demo 2's: the exact curve and the Monte Carlo statistics
        steps[NAMES["exact"]] = Step("exact", exact_spec(cfg),
                                     code("exact", cfg["gradient_stats"]["exact_curve"]["methods"]))
        for job in gradstat_jobs:
            steps[job.path.removesuffix(".parquet")] = Step("gradstats", to_json(job),
                                                            code("gradstats", job.methods), (task,))
        steps[NAMES["gradstats"]] = Step("aggregate", gradstat_order(gradstat_cases), code("aggregate"),
                                         tuple(job.path.removesuffix(".parquet") for job in gradstat_jobs))
    spec = finite_step_spec(train_jobs, cfg["task"]["M"])
    if spec:  # what one step or batch does (demos 13 and 16), from the task
        methods = json.loads(spec)["methods"]
        steps[NAMES["finite_step"]] = Step("finite_step", spec, code("finite_step", methods), (task,))
    paths = [job.path for job in train_jobs]
    for job, path in zip(train_jobs, paths):
        step = Step("train", to_json(job), code("train", job.methods), (task,))
        steps.update({f"{path}.{kind}": step for kind in JOB_FILES})
    for result, kind in AGGREGATES.items():
        steps[NAMES[result]] = Step("aggregate", "", code("aggregate"),
                                    tuple(f"{path}.{kind}" for path in paths))
    steps[NAMES["passk"]] = Step("aggregate", "", code("aggregate"),
                                 (*(f"{path}.passk" for path in paths), reference))
    return steps | dict(more)


def identities(steps):
    """{name: identity} of every file of a plan, each from its inputs' (a chain)."""
    ids = {}

    def of(name):
        if name not in ids:
            step = steps[name]
            ids[name] = identity(step.stage, step.spec, step.code, [of(i) for i in step.inputs])
        return ids[name]

    for name in steps:
        of(name)
    return ids


_CARRIED = re.compile(rb"rlvr_job..([0-9a-f]{32})", re.S)  # in a footer's key-value metadata


def carried(path):
    """The identity the Parquet file at path carries ("" if none, or not Parquet), read off its
    footer raw (where the schema metadata lives: the key, a field header and a length byte,
    then the 32 hex digits): 0.04 ms a file against pyarrow's 0.4 ms."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size < 12:
                return ""
            f.seek(size - 8)
            tail = f.read(8)
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] != b"PAR1" or length > size - 12:
                return ""
            f.seek(size - 8 - length)
            match = _CARRIED.search(f.read(length))
    except OSError:
        return ""
    return match[1].decode() if match else ""


SOURCE = "# from "  # a checksum file's line naming a file its job read, and its identity


def sources(paths):
    """The checksum file's lines for the Parquet files a rendering job read: `# from NAME ID`."""
    lines = []
    for path in paths:
        name, ident = io.read_binding(path)
        lines.append(f"{SOURCE}{name or Path(path).name} {ident or '-'}\n")
    return lines


def _listed_sources(manifest):
    """{name: identity} a checksum file lists as its job's sources."""
    listed = {}
    for line in Path(manifest).read_text().splitlines():
        if line.startswith(SOURCE):
            name, _, ident = line.removeprefix(SOURCE).rpartition(" ")
            listed[name] = ident
    return listed


NOTES = "written.json"  # in the run state directory: what each file was when the last run ended


def _stat(path):
    """What tells a file changed: its size and time, which a copy that keeps times (cp -a) keeps
    too, so a copied project's files are the ones its last run noted (an inode would not be)."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def note(results, ids, manifests):
    """At the end of a run: note the size and time of each planned file that carries its planned
    identity and each rendering checksum file whose sources do, so the next parse reads only
    what changed since. Only what changed since the last note is read (what this run wrote,
    or what was replaced during it): a file replaced after the last job that reads it checked it
    is left unnoted, so the next parse reads it and sets it aside (nothing is vouched for by its
    time alone). What earlier runs noted of other files (another config's rows) stays noted
    while unchanged. Returns (vouched, unvouched): the changed paths noted, and those not."""
    before = noted(results)
    notes = {p: stat for p, stat in before.items() if os.path.exists(p) and _stat(p) == stat}
    planned = {Path(results, f"{name}.parquet").as_posix(): ident for name, ident in ids.items()}
    vouched, unvouched = [], []
    for path in changed(planned, before) + changed(manifests, before):
        ok = carried(path) == planned[path] if path in planned else _sources_match(path, ids)
        (vouched if ok else unvouched).append(path)
    notes.update({path: _stat(path) for path in vouched})
    io.write_bytes(Path(results, STATE_DIR, NOTES), json.dumps(notes).encode())
    return vouched, unvouched


def _sources_match(manifest, ids):
    return all(ids.get(name, ident) == ident for name, ident in _listed_sources(manifest).items())


def noted(results):
    """What the last run noted of its files ({path: stat}; {} where no run ended here)."""
    try:
        return json.loads(Path(results, STATE_DIR, NOTES).read_text())
    except (OSError, ValueError):
        return {}


def changed(paths, notes):
    """The paths that exist and are not as notes have them (written since, or never noted)."""
    paths = [Path(p).as_posix() for p in paths]
    return [p for p in paths if os.path.exists(p) and notes.get(p) != _stat(p)]


def foreign(results, ids, manifests, notes=None):
    """The planned files under results/ that changed since the last run noted them (notes:
    noted(results) by default) and carry another identity than planned, and the rendering
    checksum files that changed since and list a source of another identity: replaced behind
    Snakemake's back, which its own records cannot see. A file as the last run left it is
    Snakemake's to judge (it reruns a job whose spec, code or inputs changed); one no run
    noted is read."""
    notes = noted(results) if notes is None else notes
    paths = {Path(results, f"{name}.parquet").as_posix(): ident for name, ident in ids.items()}
    found = [path for path in changed(paths, notes) if carried(path) != paths[path]]
    return found + [manifest for manifest in changed(manifests, notes) if not _sources_match(manifest, ids)]
