# Helpers shared by the rules: config validation, the jobs it asks for, paths, the rlvr command.
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

BASE = Path(workflow.basedir)
sys.path.insert(0, str(BASE))  # the rlvr next to this Snakefile, even if not installed

from rlvr import config as C
from rlvr import specs
from rlvr.codeversion import code_version, display_version
from rlvr.demos import DEMOS

try:
    _validated = C.validate_config(config)
except C.ConfigError as err:
    sys.exit(str(err))  # the message alone: it names each key set wrong
config.clear()
config.update(_validated)

RESULTS = "results"
LOGS = "logs"
ENV = "../envs/rlvr.yaml"  # each rule's conda environment, used with --sdm conda
TASK = f"{RESULTS}/{C.TASK_FILE}"

# every training job (one per row, all its seeds) and gradient-statistics job (one per method),
# by the path that names it; a rule passes the job its spec as JSON and Snakemake records it
TRAIN_ROWS = {row.path: row for row in C.train_rows(config)}
GRADSTAT_JOBS = {job.method: job for job in C.gradstat_jobs(config)}


# a job whose command died of a signal says which (exit status 128 + N), e.g. SIGKILL from the
# kernel's out-of-memory killer or a scheduler's time limit
SAY_SIGNAL = (
    "rc=$?; if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then "
    'echo "rlvr: the job\'s command was killed by signal SIG$(kill -l $rc) (exit status $rc)" >&2; fi'
)


def job_environment():
    """Shell prefix of every job: `python -m rlvr` runs the rlvr beside this Snakefile, with the
    Python that runs Snakemake, or the job's own conda environment's Python under --sdm conda.
    Kept out of the rules' params, so that where the project lives and how Snakemake was
    started do not count as a change of the results. One BLAS thread: rlvr's maths does not
    use BLAS, and a job should not start threads it does not use.
    """
    from snakemake.settings.types import DeploymentMethod

    prefix = (
        f"set -euo pipefail; export PYTHONPATH={shlex.quote(str(BASE))}; "
        "export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1; "
        f"trap {shlex.quote(SAY_SIGNAL)} ERR; "
    )
    if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
        prefix += (
            f'export PATH={shlex.quote(os.path.dirname(sys.executable))}:"$PATH"; '
        )
    return prefix


shell.prefix(job_environment())


def code(stage, methods=()):
    """The hash of the rlvr code a stage runs with these estimators (rlvr/codeversion.py): a
    param, so that a change of that code, and only that, reruns the job."""
    return code_version(stage, tuple(methods))


# every estimator the tables and figures may show, and how they show it (labels, colours): a
# param of the rules that draw them, so that a relabel redraws them and retrains nothing
SHOWN_METHODS = tuple(
    sorted(
        {row.method for row in TRAIN_ROWS.values()}
        | set(GRADSTAT_JOBS)
        | set(config["gradient_stats"]["exact_curve"]["methods"])
    )
)
LOOK = display_version(SHOWN_METHODS)


def as_json(mapping):
    """A config section as a job's spec: one line of JSON, keys sorted, so that only a change
    of a value (not of the order in which a config file lists keys) reruns the job."""
    return json.dumps(mapping, sort_keys=True, separators=(",", ":"))


def row_spec(wildcards):
    return specs.to_json(TRAIN_ROWS[wildcards.row])


def row_memory(wildcards):
    """MiB a training job needs, estimated as the config check does (rlvr/config.py)."""
    task, seeds = config["task"], len(TRAIN_ROWS[wildcards.row].seeds)
    return max(500, round(C.memory_mb(task["P"], task["M"], seeds)))


def row_code(wildcards):
    return code("train", TRAIN_ROWS[wildcards.row].methods)


def run_files(suffix):
    return [f"{RESULTS}/{path}{suffix}" for path in TRAIN_ROWS]


def gradstat_files():
    return [f"{RESULTS}/{job.path}" for job in GRADSTAT_JOBS.values()]


def gradstat_order():
    """The rows of gradient_stats.parquet in the config's order of cases, whatever the jobs."""
    return json.dumps([list(case) for case in C.gradstat_cases(config)])


# the demos' tables and the report figures this config asks for (a disabled demo has none)
TABLES = [f"{RESULTS}/tables/all.txt"] + [
    f"{RESULTS}/tables/{name}{suffix}"
    for name in C.demos(config)
    for suffix in (".txt", ".md")
]
FIGURES = [
    (name, category, f"{RESULTS}/figures/{name}.png")
    for name, category in C.figures(config)
]  # each also as {name}.pdf, for papers


def figure_outputs(names):
    """A figures job's outputs: each PNG in the report (with its caption), and its PDF."""
    outputs = []
    for name, category, png in FIGURES:
        if name in names:
            caption = f"../report/{name}.rst"
            pdf = png.removesuffix(".png") + ".pdf"
            outputs += [report(png, caption=caption, category=category), pdf]
    return outputs


# the figures that need no training (the frames they read are all inputs of the early figures
# job): drawn in a job of their own, while training runs; the others after training
EARLY_INPUTS = ("reference", "gradstats", "exact")
NEEDS = {name: needs for demo in DEMOS for name, (_, needs) in demo.figures.items()}
EARLY_FIGURES = [
    name for name, _, _ in FIGURES if set(NEEDS[name]) <= set(EARLY_INPUTS)
]
TRAINING_FIGURES = [name for name, _, _ in FIGURES if name not in EARLY_FIGURES]
# figures of demos this config does not ask for: the figures job deletes any left from before
DROPPED_FIGURES = [
    name for name, _ in C.figures() if name not in {n for n, _, _ in FIGURES}
]


def checksums(job):
    """Where a rendering job lists the files it wrote and their hashes (rlvr/io.py)."""
    return f"{RESULTS}/checksums/{job}.sha256"


# the rendering jobs this config runs (a job with nothing to draw does not run)
RENDERED = [
    job
    for job, files in (
        ("tables", TABLES),
        ("figures_reference_gradients", EARLY_FIGURES),
        ("figures_training", TRAINING_FIGURES),
    )
    if files
]


def report_edited():
    """At parse time (a dry run too): name every table or figure that no longer holds what
    rlvr wrote, e.g. edited by hand; Snakemake would not notice, as nothing it reads changed.
    Reported rather than rewritten: the edit may be wanted, and the command says how to undo it.
    """
    from rlvr.io import edited_files

    if not workflow.is_main_process:
        return
    for job in RENDERED:
        if os.path.exists(checksums(job)):
            edited = edited_files(checksums(job))
            if edited:
                print(
                    f"rlvr: {', '.join(edited)}: not what rlvr wrote (edited by hand?); "
                    f"run snakemake with `--forcerun {job}` to write it again",
                    file=sys.stderr,
                )


def final_outputs():
    return [
        f"{RESULTS}/reference_passk.parquet",
        f"{RESULTS}/gradient_stats.parquet",
        f"{RESULTS}/runs.parquet",
        f"{RESULTS}/curves.parquet",
        f"{RESULTS}/passk_trained.parquet",
        f"{RESULTS}/kl_gradients.parquet",
        f"{RESULTS}/{C.EXACT_FILE}",
        *TABLES,
        f"{RESULTS}/claims.md",
        *(checksums(job) for job in RENDERED),
        *(
            path
            for _, _, png in FIGURES
            for path in (png, png.removesuffix(".png") + ".pdf")
        ),
    ]


# Snakemake's own state directory: rlvr's run lock lives there too
STATE = Path(".snakemake")


def guard_the_directory():
    """At parse time, in the process that executes jobs: clear Snakemake's locks left by a
    killed run (rlvr/runlock.py knows them for stale: no run holds the OS lock)."""
    from rlvr import runlock

    if not workflow.is_main_process:
        return
    try:
        runlock.clear_stale_locks(STATE)
    except runlock.LockError as err:
        sys.exit(f"rlvr: {err}")


guard_the_directory()
report_edited()


def take_run_lock():
    """At the start of execution (onstart; not in a dry run): hold the run lock for the rest of
    this process and give the jobs this run's token (rlvr/runlock.py), or refuse to run if
    another run holds it, naming it, whatever `snakemake --unlock` did."""
    from rlvr import runlock

    global _held
    try:
        # open for as long as this process lives
        _held = runlock.take(STATE, planned_jobs())
    except runlock.LockError as err:
        raise WorkflowError(str(err)) from None


def planned_jobs():
    """{file name under results/: job id} of every per-job file this run plans: its aggregate
    jobs refuse a file that another job wrote (an earlier run's, or one copied in)."""
    from rlvr.io import job_id

    jobs = {}
    for row in TRAIN_ROWS.values():
        job = job_id("train", specs.to_json(row), code("train", row.methods))
        for kind in ("run", "curve", "passk", "klgrad"):
            jobs[f"{row.path}.{kind}"] = job
    for method, stats in GRADSTAT_JOBS.items():
        job = job_id("gradstats", specs.to_json(stats), code("gradstats", [method]))
        jobs[stats.path.removesuffix(".parquet")] = job
    return jobs


def say_what_runs():
    """At the start of execution: what the config asks for and how much of it runs now (a row
    that a --configfile dropped shows here, before anything runs)."""
    from snakemake.logging import logger

    to_run, total = {}, 0
    for job in workflow.dag.needrun_jobs():
        total += 1
        if job.rule.name == "train":
            name = TRAIN_ROWS[job.wildcards.row].experiment
        elif job.rule.name == "gradient_stats":
            name = "gradient_stats"
        else:
            continue
        to_run[name] = to_run.get(name, 0) + 1
    lines = C.summary(config, to_run)
    logger.info(
        "\n".join(["rlvr: this config asks for", *(f"  {x}" for x in lines)])
        + f"\n  {total} jobs to run in all"
    )
