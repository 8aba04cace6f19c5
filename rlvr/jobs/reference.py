"""Exact pass@k of the reference policy."""

import json

from .. import io
from ..metrics import reference_columns
from ..task import read_task
from . import bound, log, name


def run(a):
    spec = json.loads(a.spec)
    binding = bound(a, name(a.out), [a.task])
    task = read_task(a.task)
    io.write_table(a.out, reference_columns(task, spec["k"], spec["n_samples"], spec["seed"]), binding)
    log(f"reference pass@k for k = {spec['k']} -> {a.out}")
