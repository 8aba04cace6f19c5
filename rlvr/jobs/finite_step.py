"""Exact one-step outcomes of the sample-sign estimators (demo 13): rlvr/finite_step.py."""

import json

from .. import io
from ..finite_step import finite_step_columns
from ..task import read_task
from . import bound, log, name


def run(a):
    spec = json.loads(a.spec)
    binding = bound(a, name(a.out), [a.task])
    columns = finite_step_columns(read_task(a.task), spec["methods"], spec["lrs"], spec["G"])
    io.write_table(a.out, columns, binding)
    log(f"exact one-step outcomes for {spec['methods']} at lr {spec['lrs']}, G = {spec['G']} -> {a.out}")
