"""Monte Carlo and exact gradient moments of one estimator."""

from .. import io
from ..gradstats import gradstat_job_columns
from ..specs import GradStatJob, from_json
from ..task import read_task
from . import bound, log


def run(a):
    job = from_json(GradStatJob, a.spec)
    binding = bound(a, job.path.removesuffix(".parquet"), [a.task])
    task = read_task(a.task)
    io.write_table(a.out, gradstat_job_columns(task, job), binding)
    log(f"gradient stats of {job.method}: {len(job.cases)} cases x {job.n_reps} reps -> {a.out}")
