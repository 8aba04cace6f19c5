"""Train training jobs one after another, each a row's block of seeds: a pack (rlvr/packs.py)."""

import time

from .. import io
from ..specs import JOB_FILES, Pack, TrainRow, from_json, pack_name
from ..task import read_task
from ..training import row_columns
from . import identity, log


def run(a):
    specs = a.spec.splitlines()  # one job's spec a line
    codes = a.code or [None] * len(specs)
    if len(codes) != len(specs):
        raise ValueError(f"{len(specs)} specs and {len(codes)} --code values: give one code a spec")
    if a.manifest and not a.code:
        raise ValueError("--manifest records each job's code: give --code")
    jobs = [from_json(TrainRow, spec) for spec in specs]
    # each job's identity, first: a foreign task is refused before any work
    ids = [identity(a, [a.task], spec, code) for spec, code in zip(specs, codes)]
    task = read_task(a.task)
    for job, job_id in zip(jobs, ids):
        t0 = time.perf_counter()
        summary, curve, passk, klgrad, logits = row_columns(task, job)
        tables = {"run": summary, "curve": curve, "passk": passk, "klgrad": klgrad, "logits": logits}
        for kind in JOB_FILES:  # the run's rows last: the mark of a finished job (config.train_jobs)
            io.write_table(f"{a.results}/{job.path}.{kind}.parquet", tables[kind],
                           io.bound(f"{job.path}.{kind}", job_id))
        mean = sum(summary["final_pass1"]) / len(job.seeds)
        log(f"trained {job.path}, {len(job.seeds)} seeds in {time.perf_counter() - t0:.2f} s: "
            f"mean final pass@1 {mean:.3f}")
    if a.manifest:  # last: the mark of a finished pack, which a later run keeps (rlvr/packs.py)
        pack = Pack(pack_name(jobs[0].experiment, [job.path for job in jobs]), tuple(jobs), tuple(specs),
                    tuple(codes))
        io.write_bytes(a.manifest, pack.manifest_text().encode())
