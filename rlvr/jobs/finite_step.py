"""What one finite step or batch does, from the reference (demos 13 and 16): rlvr/finite_step.py."""

import json

from .. import io
from ..finite_step import finite_step_columns
from ..task import read_task
from . import bound, log, name


def run(a):
    spec = json.loads(a.spec)
    binding = bound(a, name(a.out), [a.task])
    io.write_table(a.out, finite_step_columns(read_task(a.task), spec), binding)
    log(f"one finite step: {', '.join(spec)} -> {a.out}")
