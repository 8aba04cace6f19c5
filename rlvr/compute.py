"""The whole pipeline in one process (`python -m rlvr all`): the same jobs, in the same order,
through the same functions, as the Snakemake rules run them one by one."""

from pathlib import Path

from . import config as C
from . import io

RESULT_FILES = io.RESULT_FILES  # the Parquet file each result goes to


def compute_all(cfg, log=lambda msg: None):
    """Every stage of a validated config: {name: pyarrow Table}, keys as RESULT_FILES."""
    import pyarrow as pa

    from .gradstats import exact_curve_columns, gradstat_job_columns
    from .metrics import reference_columns
    from .task import task_columns, task_from_columns
    from .training import row_columns

    task_cols = task_columns(cfg["task"])
    task = task_from_columns(task_cols)
    ref, gs = cfg["reference"], cfg["gradient_stats"]
    tables = {"task": pa.table(task_cols),
              "reference": pa.table(reference_columns(task, ref["k"], ref["n_samples"], ref["seed"])),
              "exact": pa.table(exact_curve_columns(gs["exact_curve"]["methods"], gs["G"], task["M"],
                                                    gs["exact_curve"]["n_points"]))}
    jobs = C.gradstat_jobs(cfg)
    parts = []
    for i, job in enumerate(jobs):
        parts.append(pa.table(gradstat_job_columns(task, job)))
        log(f"gradient stats {i + 1}/{len(jobs)}: {job.method}")
    tables["gradstats"] = io.concat_tables(parts, [job.path for job in jobs], C.gradstat_cases(cfg))
    rows = C.train_rows(cfg)
    outs = {"runs": [], "curves": [], "passk": [], "klgrad": []}
    for i, row in enumerate(rows):
        for name, cols in zip(outs, row_columns(task, row)[:4]):  # the logits: a job's file only
            outs[name].append(pa.table(cols))
        log(f"training {i + 1}/{len(rows)}: {row.path}, {len(row.seeds)} seeds")
    tables.update({name: io.concat_tables(parts, [row.path for row in rows]) for name, parts in outs.items()})
    tables["passk"] = io.with_reference_rows(tables["passk"], tables["reference"])
    return tables


def write_results(tables, directory, cfg):
    """Write compute_all's tables of cfg to their Parquet files under directory, each bound to
    the identity the pipeline plans for it (rlvr/binding.py): one job a training row."""
    from .binding import NAMES, identities, plan
    from .codeversion import code_version

    steps = plan(cfg, C.train_jobs(C.train_rows(cfg)), C.gradstat_jobs(cfg), C.gradstat_cases(cfg),
                 lambda stage, methods=(): code_version(stage, tuple(methods)))
    ids = identities(steps)
    for key, name in RESULT_FILES.items():
        table = tables[key].replace_schema_metadata(io.bound(NAMES[key], ids[NAMES[key]]))
        io.write_arrow(Path(directory) / name, table)


def read_results(directory):
    """The Parquet results under directory as pandas DataFrames, keys as RESULT_FILES (those
    present)."""
    directory = Path(directory)
    return {key: io.read_pandas(directory / name) for key, name in RESULT_FILES.items()
            if (directory / name).is_file()}
