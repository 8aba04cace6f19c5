# Helpers shared by the rules: config validation, the jobs it asks for, paths, the rlvr command.
import hashlib
import json
import math
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

BASE = Path(workflow.basedir)
sys.path.insert(0, str(BASE))  # the rlvr next to this Snakefile, even if not installed

from rlvr import binding, budget, cli, io, packs, runlock, specs
from rlvr.net import specs as netspecs
from rlvr import config as C
from rlvr import codeversion
from rlvr.demos import DEMOS
from rlvr.render import TABLE_FORMATS
from rlvr.report import CLAIMS  # a demo's section of claims.md, beside its tables
from rlvr.jobs.render import drawn_demos


def compare_params_without_pandas():
    """Snakemake compares each job's params with its last run's through a serializer that
    imports pandas whenever it is installed (0.3 s, a fifth of a no-op rerun), for params that
    are DataFrames. A plain Python value (every param here) goes to its plain serializer, which
    its pandas one calls for such a value anyway; anything else still goes to the pandas one, so
    no rerun decision can change, a future DataFrame param's included. Left alone if
    Snakemake's internals change."""
    import snakemake.persistence

    P = getattr(snakemake.persistence, "PersistenceBase", None)
    plain = getattr(P, "_serialize_param_builtin", None)
    with_pandas = getattr(P, "_serialize_param_pandas", None)
    if not (
        callable(plain)
        and callable(with_pandas)
        and isinstance(P.__dict__.get("_serialize_param"), property)
    ):
        return
    PLAIN = (type(None), bool, int, float, str, list, tuple, dict)

    def serialize(self, value):
        return (plain if isinstance(value, PLAIN) else with_pandas)(self, value)

    P._serialize_param = property(lambda self: lambda value: serialize(self, value))


compare_params_without_pandas()

try:
    _validated = C.validate_config(config)
except C.ConfigError as err:
    sys.exit(str(err))  # the message alone: it names each key set wrong
config.clear()
config.update(_validated)

RESULTS = config["results"]  # "results" unless the config names a directory of its own
LOGS = "logs" if RESULTS == "results" else f"logs/{RESULTS}"
ENV = "../envs/rlvr.yaml"  # each rule's conda environment, used with --sdm conda
TASK = f"{RESULTS}/{C.TASK_FILE}"

# every training job and gradient-statistics job (one per method), by the path that names it; a
# rule passes the job its spec as JSON and Snakemake records it. A training job trains a block
# of a row's seeds: the blocks already under results/ are kept, the rest is one new job
# (rlvr/config.py's train_jobs), so an added seed trains alone and a config asked for again
# finds its files
ROWS_BY_DEMO = C.rows_by_demo(config)
_ROWS = [row for rows in ROWS_BY_DEMO.values() for row in rows]
TRAIN_ROWS = {job.path: job for job in C.train_jobs(_ROWS, RESULTS)}
ROW_OF_JOB = {path: job.row_path for path, job in TRAIN_ROWS.items()}
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

# the results directory's run state (rlvr/runlock.py): its run lock, token and planned identities
RUN_STATE = runlock.state_of(RESULTS)
# Snakemake's own state directory: its locks, and what rlvr/codeversion.py read off each rlvr
# module's source (saved by a run's start: reading every module costs a parse ~0.15 s)
SNAKEMAKE_STATE = Path(".snakemake")
codeversion.use_saved()


def code(stage, methods=()):
    """The hash of the rlvr code a stage runs with these estimators (rlvr/codeversion.py): a
    param, so that a change of that code, and only that, reruns the job."""
    return codeversion.code_version(stage, tuple(methods))


# the network's bases and training jobs ([], [] when the network is off): a rule a base (one a
# seed) and a rule a job (a row's block of seeds, as for toy rows), named by a hash of its path
_NET_BASES, _NET_TRAIN_JOBS = C.network_jobs(config, RESULTS)
NET_BASES = {f"network_base_seed{base.seed}": base for base in _NET_BASES}
NET_JOBS = {
    f"network_{hashlib.sha256(job.path.encode()).hexdigest()[:10]}": job
    for job in _NET_TRAIN_JOBS
}


def results_of_network_job(wildcards, output):
    """A network training job's --results: its outputs' results/ (network/<method>/<file> in it)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(output[0])))


# every Parquet file this run writes: how it is made (stage, spec, code, inputs), which the rules
# take their specs and input lists from, and the identity that binds it (rlvr/binding.py)
PLAN = binding.plan(
    config,
    TRAIN_ROWS.values(),
    GRADSTAT_JOBS.values(),
    C.gradstat_cases(config),
    code,
    netspecs.plan_steps(_NET_BASES, _NET_TRAIN_JOBS, code).items(),
)
IDENTITIES = binding.identities(PLAN)


def inputs_of(name):
    """The files under results/ that the plan makes `name` from."""
    return [f"{RESULTS}/{i}.parquet" for i in PLAN[name].inputs]


# the training jobs in packs, each trained by one process, one job after another: the packs a
# finished run left (their manifests under results/packs/) as they were, the new jobs by
# experiment and stretch of the config's rows (rlvr/packs.py); a rule each, train_<name>
TRAIN_PACKS = {
    f"train_{pack.name}": pack
    for pack in packs.plan_packs(
        _ROWS,
        TRAIN_ROWS.values(),
        lambda job: code("train", job.methods),
        config["task"]["P"],
        config["task"]["M"],
        RESULTS,
    )
}


def pack_outputs(pack):
    """A pack's outputs: every file of each of its jobs, and its manifest, written last."""
    return {
        "files": [
            f"{RESULTS}/{job.path}.{kind}.parquet"
            for job in pack.jobs
            for kind in specs.JOB_FILES
        ],
        "manifest": pack.manifest(RESULTS),
    }


def pack_memory(pack):
    """MiB a pack's job needs: its largest job's, as the config check estimates it (rlvr/budget.py)."""
    task = config["task"]
    return max(
        500,
        *(
            round(
                budget.memory_mb(
                    task["P"],
                    task["M"],
                    len(job.seeds),
                    budget.sampler_copies(
                        job.sampler_lag, job.sampler_noise, job.steps
                    ),
                )
            )
            for job in pack.jobs
        ),
    )


def results_of_pack(wildcards, output):
    """A pack job's --results: the directory its manifest's packs/ sits in (read off its outputs)."""
    return os.path.dirname(os.path.dirname(output.manifest))


# one rendering job draws every demo the config asks for (a disabled demo has none): their
# tables, claims and figures (rlvr/report.py's write_demo), and joins the demos' text tables
# into tables/all.txt and their claims into claims.md; it draws again only the demos whose rows,
# look or code changed (rlvr/jobs/render.py)
ASKED = C.asked(config)


def table_path(demo, suffix):
    return f"{RESULTS}/tables/{demo.table_name}{suffix}"


def figure_path(name, fmt):
    return f"{RESULTS}/figures/{name}.{fmt}"


def render_outputs(demo):
    """A demo's files, each with its report caption (None: not in the report): its tables (the
    HTML one in the report, under the demo's heading beside its figures), its claims, and each
    figure as PNG (in the report, with its caption) and PDF, for papers. The rule wraps them in
    report(), whose caption paths are read relative to the rule's file.
    """
    outputs = []
    for suffix in [*TABLE_FORMATS, CLAIMS]:
        caption = "../report/table.rst" if suffix == ".html" else None
        outputs.append((table_path(demo, suffix), caption))
    for name in demo.figures:
        outputs += [
            (figure_path(name, "png"), f"../report/{name}.rst"),
            (figure_path(name, "pdf"), None),
        ]
    return outputs


def render_inputs():
    """{frame: aggregated file} of the results the asked demos read (their modules' FRAMES, pass@k
    with the reference's): each demo takes its own rows of them (rlvr/demos/ Demo.frames).
    """
    needs = {frame for demo in ASKED for frame in demo.module.FRAMES}
    needs |= {"reference"} if "passk" in needs else set()
    return {
        frame: f"{RESULTS}/{name}"
        for frame, name in io.RESULT_FILES.items()
        if frame in needs
        and binding.NAMES[frame] in PLAN  # not all planned: demo 13's exact step
    }


def render_look():
    """How the tables and figures show the estimators (rlvr/codeversion.py's display version):
    those of every row and of the gradient statistics; the job draws again only the demos whose
    own estimators' look changed."""
    methods = {row.method for row in _ROWS} | set(GRADSTAT_JOBS)
    methods |= set(config["gradient_stats"]["exact_curve"]["methods"])
    return codeversion.display_version(tuple(sorted(methods)))


RENDER_THREADS = max(
    1, min(8, len(ASKED))
)  # demos drawn at once (Snakemake caps it at --cores)


def render_memory():
    """The rendering job's mem_mb (a cluster's limit): every trained frame as pandas and one
    demo's rows of them in its process (rlvr/budget.py render_mb), and a drawing process's own
    beside it for each thread."""
    return math.ceil(budget.render_mb(_ROWS) + budget.RENDER_BASE_MB * RENDER_THREADS)


def checksums(job):
    """Where a job that writes tables or figures lists the files it wrote and their hashes (rlvr/io.py)."""
    return f"{RESULTS}/checksums/{job}.sha256"


# the tables, figures and checksum files of the demos this config does not ask for: the
# rendering job deletes any left from before
DROPPED = [
    path
    for demo in DEMOS
    if demo not in ASKED
    for path in [table_path(demo, suffix) for suffix in [*TABLE_FORMATS, CLAIMS]]
    + [figure_path(name, fmt) for name in demo.figures for fmt in ("png", "pdf")]
] + [  # the checksum files of a project rendered a job per demo
    checksums(job) for job in [f"render_{demo.name}" for demo in DEMOS] + ["assemble"]
]
MANIFESTS = [checksums("render")]


def report_edited():
    """At parse time (a dry run too): name every table or figure that no longer holds what
    rlvr wrote, e.g. edited by hand; Snakemake would not notice, as nothing it reads changed.
    Reported rather than rewritten: the edit may be wanted, and the command says how to undo it.
    """
    from rlvr.io import edited_files

    if not workflow.is_main_process:
        return
    for manifest in MANIFESTS:
        edited = edited_files(manifest) if os.path.exists(manifest) else []
        if edited:
            print(
                f"rlvr: {', '.join(edited)}: not what rlvr wrote (edited by hand?); "
                f"run snakemake with `--forcerun render` to write it again",
                file=sys.stderr,
            )


def final_outputs():
    return [
        # every Parquet file of the plan, each job's own too: Snakemake checks an intermediate
        # file only when a job downstream of it runs, so a per-job file deleted (by `rlvr
        # clean`, by hand) under an aggregate that still stands would otherwise be neither made
        # again nor missed
        *(f"{RESULTS}/{name}.parquet" for name in PLAN),
        # every training pack's manifest, written last: a pack formed anew (a member's spec or
        # code changed) has none, and Snakemake runs a job for a missing output only where
        # something asks for it, so its members' files, left by an older pack with older code,
        # would stand (their metadata names another job's params, which Snakemake cannot judge)
        *(pack.manifest(RESULTS) for pack in TRAIN_PACKS.values()),
        *(path for demo in ASKED for path, _ in render_outputs(demo)),
        f"{RESULTS}/tables/all.txt",
        f"{RESULTS}/claims.md",
        *MANIFESTS,
    ]


def dry_run():
    """Whether this is a dry run (known at parse time from Snakemake's output settings)."""
    return bool(getattr(workflow.output_settings, "dryrun", False))


def guard_the_directory():
    """At parse time, in the process that executes jobs: refuse to run beside a live run of the
    same results directory, whatever the flags (with --nolock or --no-hooks neither Snakemake's
    lock nor the onstart hook would stop it, and Snakemake deletes a job's outputs before the
    job starts); a dry run may look. Clear Snakemake's locks left by a killed run
    (rlvr/runlock.py knows them for stale: no run holds the OS lock)."""
    # a dry run writes nothing, and may look beside a live run
    if not workflow.is_main_process or dry_run():
        return
    try:
        if runlock.held(RUN_STATE):
            sys.exit(
                f"rlvr: a run holds {RESULTS}/ ({runlock.holder(RUN_STATE)}); wait for it to "
                "end: one run per results directory (--nolock, --no-hooks and --unlock do not "
                "change that; a dry run, -n, may look)"
            )
        runlock.clear_stale_locks(SNAKEMAKE_STATE, RUN_STATE)
    except runlock.LockError as err:
        sys.exit(f"rlvr: {err}")


def set_foreign_files_aside():
    """At parse time, in the main process: every result replaced behind Snakemake's back since
    the last run (copied in from another project, written by another command) that does not
    carry the identity this run plans for it, and the checksum file of every table or figure
    rendered from such a file (rlvr/binding.py), is moved to results/.rlvr/foreign/ (kept, never
    read), so that this run makes it again and no wrong number reaches a table. A dry run only
    says so."""
    if not workflow.is_main_process:
        return
    found = binding.foreign(RESULTS, IDENTITIES, MANIFESTS)
    if not found:
        return
    aside = RUN_STATE / "foreign" / time.strftime("%Y%m%d-%H%M%S")
    if not dry_run():
        for place in (
            RUN_STATE,
            RUN_STATE / "foreign",
        ):  # never through a link out of the project
            if place.is_symlink():
                sys.exit(
                    f"rlvr: {place} is a symlink (to {os.path.realpath(place)}); rlvr sets files "
                    "aside only inside the project: make it a directory"
                )
        for path in found:
            (aside / path).parent.mkdir(parents=True, exist_ok=True)
            # a rename, or a copy then a delete where results/ spans file systems (a symlinked
            # results/runs on another disk)
            shutil.move(path, aside / path)
    count = f"{len(found)} file{'s' * (len(found) > 1)}"
    print(
        f"rlvr: {count} under {RESULTS}/ not made from this config's inputs, spec and code "
        f"(copied in from another project, written by another command, or replaced while the "
        f"last run ran?), e.g. {found[0]}: "
        + (
            "a run would set them aside and make them again"
            if dry_run()
            else f"set aside in {aside}/ (kept, not read) and made again"
        ),
        file=sys.stderr,
    )


def note_what_was_written(failed=False):
    """At the end of a run (onsuccess, onerror): note each result this run wrote that carries
    the identity planned for it (rlvr/binding.py note), so the next parse reads only the files
    changed since, and say what it wrote (what_was_written) and which changed files it does not
    vouch for. Not by a run refused at its start: it holds no lock, and another run owns the
    results."""
    from snakemake.logging import logger

    if "_held" in globals():
        vouched, unvouched = binding.note(RESULTS, IDENTITIES, MANIFESTS)
        logger.info(what_was_written(vouched, failed))
        if unvouched:
            logger.warning(
                f"rlvr: {len(unvouched)} file{'s' * (len(unvouched) > 1)} under {RESULTS}/ "
                f"changed during this run but not what it planned (replaced while it ran?), "
                f"e.g. {unvouched[0]}: the next run sets them aside and makes them again"
            )
        cost = what_the_jobs_cost(PARSED_AT)
        if cost:
            logger.info(cost)


PARSED_AT = time.time()  # a job log written since is this run's (what_the_jobs_cost)


def what_the_jobs_cost(since):
    """ "rlvr: its jobs took N s of CPU: training A s (k jobs), ...", the kinds most costly first,
    from the line each job's log ends with (rlvr/cli.py's job_cost), of the logs written since
    `since` (a time.time()); None if no job said what it cost."""
    costs = cli.jobs_cost(LOGS, since)
    if not costs:
        return None
    total = sum(cpu for _, cpu in costs.values())
    return f"rlvr: its jobs took {total:.1f} s of CPU: {cli.by_kind(costs)}"


def what_was_written(paths, failed=False):
    """The end of a run's summary: of the files it wrote (paths under results/), the rows trained
    by config section (a row counted once, whether all its seeds or some trained), the methods of
    gradient_stats, the files directly under results/ (the task, the reference, the aggregates),
    and the demos whose tables and figures it rendered."""
    jobs, top, demos, base = {}, [], [], False
    for path in paths:
        parts = Path(path).relative_to(RESULTS).parts
        stem = Path(path).name.split(".")[0]
        if parts[0] == "checksums":
            demos += drawn_demos(path)
        elif parts[0] == "network" and stem.startswith("base"):
            base = True
        # a job's file, <job>.<kind>.parquet: runs/<experiment>/..., network/..., gradient_stats/...
        elif len(parts) > 1:
            kind = parts[1] if parts[0] == "runs" else parts[0]
            jobs.setdefault(kind, set()).add(specs.row_of(str(path).rsplit(".", 2)[0]))
        else:
            top.append(stem)
    head = (
        "rlvr: before it failed, this run wrote" if failed else "rlvr: this run wrote"
    )
    if not (jobs or top or demos or base):
        return f"{head} nothing: every result was as the last run left it"
    lines = [
        f"{C.SECTION_OF.get(kind, kind)}: {len(names)} "
        + (("method" if kind == "gradient_stats" else "row") + "s" * (len(names) != 1))
        for kind, names in jobs.items()
    ]
    lines += ["the network's base"] if base else []
    if top:
        lines.append(f"{', '.join(top)} ({RESULTS}/*.parquet)")
    if demos:
        numbers = sorted(demo.number for demo in DEMOS if demo.name in demos)
        lines.append(
            f"the tables and figures of demo{'s' * (len(numbers) != 1)} "
            f"{', '.join(map(str, numbers))}"
        )
    return "\n".join([head, *(f"  {line}" for line in lines)])


guard_the_directory()
set_foreign_files_aside()
report_edited()


def take_run_lock():
    """At the start of execution (onstart; not in a dry run): hold the run lock of the results
    directory for the rest of this process and give the jobs this run's token and planned
    identities (rlvr/runlock.py), or refuse to run if another run holds it (a snakemake of
    another directory, `python -m rlvr all --results`), naming it, whatever `--unlock` did.
    """
    global _held
    try:
        # open for as long as this process lives
        _held = runlock.take(RUN_STATE, IDENTITIES)
    except runlock.LockError as err:
        raise WorkflowError(str(err)) from None
    # a killed run's temporaries, of whichever files this run writes
    io.remove_stale_temporaries(RESULTS)
    codeversion.save()  # for the jobs' check and the next parse


def record_the_config():
    """At the start of execution (onstart, once the run lock is held; never in a dry run):
    record the config this run's jobs see under results/configs/ (rlvr/config.py), so that a
    user sees which config made results/ and `python -m rlvr clean` keeps its files. Returns
    the recorded file's path."""
    try:
        path = C.record_config(config, RESULTS)
    except OSError as err:  # named by rlvr.io.write_bytes: the file it could not write
        raise WorkflowError(
            f"rlvr: {err.filename}: {err.strerror}; the run's config could not be recorded, "
            "so nothing ran; free space or fix the permissions and run again"
        ) from None
    return path


# a summary names each training job that runs when there are at most this many (an edited row)
NAMED_TRAIN_JOBS = 4


def what_runs(jobs, recorded=None):
    """What the config asks for and how much of it runs now (a row that a --configfile dropped
    shows here, before anything runs): per experiment, rows x seeds and the jobs that run, of
    jobs, the (rule, wildcards) of each job that runs (None: not known); each training job that
    runs if they are few. recorded: where record_config put the config (None: a dry run).
    """
    to_run, trained, total = {}, [], 0
    for rule_name, wildcards in jobs or ():
        total += 1
        if rule_name in TRAIN_PACKS:
            pack = TRAIN_PACKS[rule_name]
            name = pack.jobs[0].experiment
            trained += [job.path for job in pack.jobs]
        elif rule_name == "gradient_stats":
            name = "gradient_stats"
        elif rule_name in NET_JOBS:
            name = "network"
        elif rule_name in NET_BASES:
            name = "network_base"
        else:
            continue
        to_run[name] = to_run.get(name, 0) + 1
    n_jobs = {"network": len(NET_JOBS)} if NET_JOBS else {}
    for pack in TRAIN_PACKS.values():
        experiment = pack.jobs[0].experiment
        n_jobs[experiment] = n_jobs.get(experiment, 0) + 1
    lines = C.summary(config, None if jobs is None else to_run, n_jobs=n_jobs)
    if 0 < len(trained) <= NAMED_TRAIN_JOBS:
        lines += [f"trains {RESULTS}/{row}" for row in sorted(trained)]
    if jobs is not None:
        lines.append(
            f"{total} jobs to run in all (a training job: a pack of rows, one after another)"
        )
    where = (
        f"recorded in {recorded}"
        if recorded
        else "a dry run: nothing runs, nothing is recorded"
    )
    return "\n".join(
        [f"rlvr: this config asks for ({where})", *(f"  {x}" for x in lines)]
    )


def say_what_runs(recorded):
    """At the start of execution: what_runs of the jobs Snakemake is about to run (recorded:
    where record_config put the config)."""
    from snakemake.logging import logger

    jobs = [(job.rule.name, job.wildcards_dict) for job in workflow.dag.needrun_jobs()]
    logger.info(what_runs(jobs, recorded))


def offer_what_runs_to_the_terminal():
    """At parse time, in a dry run, which runs no `onstart`: give what_runs to the logger plugin
    that prints it (snakemake_logger_plugin_rlvr, selected by profiles/default), which calls it
    with the jobs the dry run lists in place of printing each job's block. Snakemake's own
    output (`--workflow-profile none`, another logger) is left as it is."""
    if not (dry_run() and workflow.is_main_process):
        return
    manager = workflow.logger_manager
    handlers = getattr(manager, "get_log_handlers", lambda: manager.plugin_handlers)()
    for handler in handlers:
        if hasattr(handler, "summarise"):
            handler.summarise = what_runs


offer_what_runs_to_the_terminal()
