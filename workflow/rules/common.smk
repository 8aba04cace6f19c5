# Helpers shared by the rules: config validation, job lists, paths, the rlvr command.
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

BASE = Path(workflow.basedir)
sys.path.insert(0, str(BASE))  # the rlvr next to this Snakefile, even if not installed

from rlvr import config as C

try:
    _validated = C.validate_config(config)
except C.ConfigError as err:
    raise WorkflowError(str(err)) from None
config.clear()
config.update(_validated)

RESULTS = "results"
LOGS = "logs"
ENV = "../envs/rlvr.yaml"  # each rule's conda environment, used with --sdm conda


def job_environment():
    """Shell prefix of every job: `python -m rlvr` runs the rlvr beside this Snakefile, with the
    Python that runs Snakemake (its directory first on PATH: no shell shims on the way, they
    cost 0.1 s a job), or the job's own conda environment's Python under --sdm conda.
    Jobs hand their work to a fork server that has numpy and pyarrow imported already
    (rlvr/forkserver.py), unless RLVR_FORKSERVER=0 is set. Both are
    kept out of the rules' params, so that how Snakemake was started (`snakemake` or
    `python -m snakemake`, this venv or that) does not count as a change of the results.
    """
    from snakemake.settings.types import DeploymentMethod

    prefix = (
        f"set -euo pipefail; export PYTHONPATH={shlex.quote(str(BASE))}; "
        # jobs fork from a warm interpreter (rlvr/forkserver.py); RLVR_FORKSERVER=0: they don't
        "export RLVR_FORKSERVER=${{RLVR_FORKSERVER:-1}}; "
    )
    if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
        prefix += (
            f'export PATH={shlex.quote(os.path.dirname(sys.executable))}:"$PATH"; '
        )
    return prefix


shell.prefix(job_environment())
TASK = f"{RESULTS}/{C.TASK_FILE}"


def code(*modules):
    """The rlvr modules a stage computes with: editing one reruns that stage and what follows."""
    return [str(BASE / "rlvr" / m) for m in ("config.py", "stages.py", *modules)]


def gradstat_files():
    return [f"{RESULTS}/{C.gradstat_path(c)}" for c in C.gradstat_cases(config)]


def run_files(suffix):
    return [f"{RESULTS}/{C.run_path(r)}{suffix}" for r in C.training_runs(config)]


def final_outputs():
    return [
        f"{RESULTS}/reference_passk.parquet",
        f"{RESULTS}/gradient_stats.parquet",
        f"{RESULTS}/runs.parquet",
        f"{RESULTS}/curves.parquet",
        f"{RESULTS}/passk_trained.parquet",
        f"{RESULTS}/{C.EXACT_FILE}",
        *TABLES,
        *(path for _, _, path in FIGURES),
    ]


TABLES = [f"{RESULTS}/tables/all.txt"] + [
    f"{RESULTS}/tables/{name}{suffix}"
    for name in (
        "demo1_reference",
        "demo2_gradients",
        "demo3_training",
        "demo4_group_size",
    )
    for suffix in (".txt", ".md")
]
# (name, report category, path) of each figure; its caption is workflow/report/<name>.rst
FIGURES = [
    (name, category, f"{RESULTS}/figures/{name}.png")
    for name, category in (
        ("passk_by_level", "1 reference model"),
        ("gradient_estimators", "2 gradient estimators"),
        ("bias_vs_p", "2 gradient estimators"),
        ("learning_curves", "3 training"),
        ("group_size", "4 group size"),
        ("dynamic_sampling", "5 dynamic sampling"),
        ("passk_trained", "6 pass@k after training"),
    )
]
# demos 1-2 need no training: their figures are drawn in a job of their own, while training runs
EARLY_FIGURES = ["passk_by_level", "gradient_estimators", "bias_vs_p"]
TRAINING_FIGURES = [name for name, _, _ in FIGURES if name not in EARLY_FIGURES]


def clear_stale_locks():
    """Remove Snakemake's directory locks if they outlived the run that took them.

    A run killed with SIGKILL leaves .snakemake/locks behind and every later run would refuse
    to start. Each main Snakemake process here holds an OS lock (flock) on .snakemake/rlvr.flock
    for as long as it lives; the kernel drops it when the process dies, however it dies. Whoever
    can take it knows no other run is alive in this directory, so leftover locks are stale.
    Returns the open lock file (keep it referenced), or None if another run holds it.
    """
    import fcntl

    if not workflow.is_main_process:
        return None
    state = Path(".snakemake")
    state.mkdir(exist_ok=True)
    handle = open(state / "rlvr.flock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None  # another run is alive here: Snakemake's own lock refuses this one
    for stale in (state / "locks").glob("*.lock"):
        stale.unlink()
    return handle


RUN_LOCK = clear_stale_locks()
