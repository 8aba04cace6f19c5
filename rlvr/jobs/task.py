"""Generate the task."""

import json

from .. import io
from ..task import task_columns
from . import bound, log, name


def run(a):
    spec = json.loads(a.spec)
    io.write_table(a.out, task_columns(spec), bound(a, name(a.out)))
    log(f"task: {spec['P']} prompts x {spec['M']} answers -> {a.out}")
