"""Train every seed of one training row."""

import time

from .. import io
from ..specs import JOB_FILES, TrainRow, from_json
from ..task import read_task
from ..training import row_columns
from . import identity, log


def run(a):
    row = from_json(TrainRow, a.spec)
    job = identity(a, [a.task])
    task = read_task(a.task)
    t0 = time.perf_counter()
    summary, curve, passk, klgrad, logits = row_columns(task, row)
    tables = {"run": summary, "curve": curve, "passk": passk, "klgrad": klgrad, "logits": logits}
    for kind in JOB_FILES:  # the run's rows last: the mark of a finished job (config.train_jobs)
        io.write_table(getattr(a, kind), tables[kind], io.bound(f"{row.path}.{kind}", job))
    mean = sum(summary["final_pass1"]) / len(row.seeds)
    log(f"trained {row.path}, {len(row.seeds)} seeds in {time.perf_counter() - t0:.2f} s: "
        f"mean final pass@1 {mean:.3f} -> {a.run}")
