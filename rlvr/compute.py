"""The whole pipeline in one process (`python -m rlvr all`): the plan's steps (rlvr/binding.py,
the very steps, specs and inputs the Snakemake rules take), in order, through the functions the
pipeline's jobs call, each from the tables of its inputs in memory instead of their files."""

import json
from pathlib import Path

from . import binding, io
from . import config as C

RESULT_FILES = io.RESULT_FILES  # the Parquet file each result goes to
# a training job's tables, in the order rlvr.training.row_columns returns them (its policies'
# logits, the fifth, are a job's file only: never aggregated, not kept here)
TRAINED = ("run", "curve", "passk", "klgrad")


def compute_all(cfg, log=lambda msg: None):
    """Every result of a validated config: {name: pyarrow Table}, keys as RESULT_FILES."""
    import pyarrow as pa

    from .task import task_columns, task_from_columns

    # code versions name what made a file: only the identities write_results binds need them
    steps = _plan(cfg, code=lambda stage, methods=(): "")
    total = {stage: len({s.spec for s in steps.values() if s.stage == stage})  # jobs, not files
             for stage in ("gradstats", "train", "net_train")}
    made, done, task, ran = {}, dict.fromkeys(total, 0), None, set()
    for name, step in steps.items():
        if step in ran:  # a training job's other files, made with its first
            continue
        ran.add(step)
        if step.stage == "task":  # first: every other step but the exact curve reads it
            columns = task_columns(json.loads(step.spec))
            made[name], task = pa.table(columns), task_from_columns(columns)
            continue
        made.update(_make(name, step, made, task))
        if step.stage in done:
            done[step.stage] += 1
            what = {"gradstats": "gradient stats", "train": "training", "net_train": "network"}[step.stage]
            log(f"{what} {done[step.stage]}/{total[step.stage]}: {name.rpartition('.')[0] or name}")
    # the network's results only where the config asks for the network
    return {key: made[binding.NAMES[key]] for key in RESULT_FILES if binding.NAMES[key] in made}


def _make(name, step, made, task):
    """{name: table} of what one step makes from the tables made before it and the task (a
    training step: each of its job's files)."""
    import pyarrow as pa

    from .gradstats import exact_curve_columns, gradstat_job_columns
    from .metrics import reference_columns
    from .specs import GradStatJob, TrainRow, from_json
    from .training import row_columns

    spec = json.loads(step.spec) if step.spec else None
    if step.stage == "exact":
        return {name: pa.table(exact_curve_columns(spec["methods"], spec["G"], spec["M"], spec["n_points"]))}
    if step.stage == "finite_step":
        from .finite_step import finite_step_columns

        return {name: pa.table(finite_step_columns(task, spec))}
    if step.stage == "reference":
        return {name: pa.table(reference_columns(task, spec["k"], spec["n_samples"], spec["seed"]))}
    if step.stage == "gradstats":
        return {name: pa.table(gradstat_job_columns(task, from_json(GradStatJob, step.spec)))}
    if step.stage == "train":
        row = from_json(TrainRow, step.spec)
        return {f"{row.path}.{kind}": pa.table(cols) for kind, cols in zip(TRAINED, row_columns(task, row))}
    if step.stage in ("net_base", "net_train"):  # torch: loaded only for a config with the network
        from .net import base as net_base
        from .net.results import row_columns as net_row_columns
        from .net.specs import NetBase, NetRow, base_files

        if step.stage == "net_base":
            spec = from_json(NetBase, step.spec)
            params, prompts = net_base.base_columns(task, spec)
            return dict(zip(base_files(spec.seed), (pa.table(params), pa.table(prompts))))
        row = from_json(NetRow, step.spec)
        names = [base_files(seed)[0] for seed in row.seeds]
        start = net_base.stack_bases([made[name] for name in names], net_base.model_of(row), names)
        tables, _ = net_row_columns(task, row, start)
        return {f"{row.path}.{kind}": pa.table(cols) for kind, cols in tables.items()}
    tables = [made[i] for i in step.inputs]  # an aggregate
    if name == binding.NAMES["passk"]:  # the trained policies' pass@k, then the reference's rows
        return {name: io.with_reference_rows(io.concat_tables(tables[:-1], step.inputs[:-1]), tables[-1])}
    return {name: io.concat_tables(tables, step.inputs, spec)}


def _plan(cfg, code, results=None):
    """binding.plan of cfg as one process computes it: one job a training row; with a results
    directory, the blocks of seeds the pipeline plans there (rlvr/config.py train_jobs)."""
    from .net.specs import plan_steps

    return binding.plan(cfg, C.train_jobs(C.train_rows(cfg), results), C.gradstat_jobs(cfg),
                        C.gradstat_cases(cfg), code, plan_steps(*C.network_jobs(cfg, results), code).items())


def planned_identities(cfg, results=None):
    """{name: identity} of every file a run of the validated cfg writes under results/, with
    this code (rlvr/binding.py): what a file of that name must carry to be this config's."""
    from .codeversion import code_version

    code = lambda stage, methods=(): code_version(stage, tuple(methods))  # noqa: E731
    return binding.identities(_plan(cfg, code, results))


def write_results(tables, directory, cfg):
    """Write compute_all's tables of cfg to their Parquet files under directory, each bound to
    the identity the pipeline plans for it (rlvr/binding.py): one job a training row."""
    from .codeversion import code_version

    ids = binding.identities(_plan(cfg, lambda stage, methods=(): code_version(stage, tuple(methods))))
    for key, name in RESULT_FILES.items():
        if key not in tables:  # the network's, where the config does not ask for it
            continue
        ident = ids[binding.NAMES[key]]
        table = tables[key].replace_schema_metadata(io.bound(binding.NAMES[key], ident))
        io.write_arrow(Path(directory) / name, table)


def read_results(directory):
    """The Parquet results under directory as pandas DataFrames, keys as RESULT_FILES (those
    present)."""
    directory = Path(directory)
    return {key: io.read_pandas(directory / name) for key, name in RESULT_FILES.items()
            if (directory / name).is_file()}


def load_policies(results="results", config=None, experiment=None):
    """The final logits of every policy a config trained, as one DataFrame: a row per (training
    row, seed, prompt) with the row's identifying columns, `seed`, `prompt` and logit_0 ..
    logit_{M-1} (load_rows' "logits")."""
    return load_rows(results, config, experiment, "logits")


def load_rows(results="results", config=None, experiment=None, kind="run"):
    """What the training jobs of a config wrote, as one DataFrame: kind "run" (a row per seed: its
    final pass@1 per level, zero-signal share, ...), "curve", "passk", "klgrad" or "logits" (the
    final policies); for experiment "network" (demo 17), "batch", "curve", "passk" or "prompts"
    (rlvr/net/specs.py NET_FILES). Only the files of the rows and seeds that config names, not
    every file under results/ (which may hold other configs' rows). config: a YAML file merged
    over config/config.yaml, or a validated config; default: the config of the last run on
    results/ (results/configs/latest), else the default config. experiment: that demo's rows only
    (the toy's rows of every demo by default). FileNotFoundError naming the files not trained yet."""
    from .net.specs import EXPERIMENT as NETWORK
    from .net.specs import NET_FILES
    from .specs import JOB_FILES

    network = experiment == NETWORK
    kinds = NET_FILES if network else JOB_FILES
    if kind not in kinds:
        raise ValueError(f"kind {kind!r}; the kinds a{' network' if network else ''} training job writes: "
                         f"{', '.join(kinds)}")
    if config is None:
        latest = C.latest_config(results)
        config = Path(results, C.CONFIGS_DIR, latest) if latest else None
    cfg = config if isinstance(config, dict) else C.load_config(config)
    if network:
        jobs = C.network_jobs(cfg, results)[1]
        if not jobs:
            raise ValueError("the config's network is off (network.enabled: false): no network rows")
    else:
        rows = [row for row in C.train_rows(cfg) if experiment in (None, row.experiment)]
        if not rows:
            known = {row.experiment for row in C.train_rows(cfg)} | ({NETWORK} if cfg["network"]["enabled"]
                                                                    else set())
            raise ValueError(f"the config trains no rows of experiment {experiment!r}; its experiments: "
                             f"{', '.join(sorted(known))}")
        jobs = C.train_jobs(rows, results)
    return io.read_concat(job_files(results, jobs, kind, planned_identities(cfg, results))).to_pandas()


def job_files(results, jobs, kind, identities):
    """The `kind` files of these training jobs under results/ (rlvr/specs.py JOB_FILES, or the
    network's NET_FILES), each checked to carry the identity its config plans for it
    (identities: planned_identities); FileNotFoundError naming one not trained yet, io.InputError
    naming one that another config (another task, base, spec) or other code made: a path does not
    hold everything a file's numbers depend on, its identity does."""
    paths = [Path(results, f"{job.path}.{kind}.parquet") for job in jobs]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} of {len(paths)} training jobs' files are not under "
                                f"{results}/, e.g. {missing[0]}: run snakemake with that config first")
    foreign = [str(p) for job, p in zip(jobs, paths)
               if binding.carried(p) != identities[f"{job.path}.{kind}"]]
    if foreign:
        raise io.InputError(f"{len(foreign)} of {len(paths)} files under {results}/ are not this config's, "
                            f"e.g. {foreign[0]}: made from another task, base or spec (another config's file "
                            "at the same path) or by other code; run snakemake with this config, which "
                            "remakes them")
    return paths
