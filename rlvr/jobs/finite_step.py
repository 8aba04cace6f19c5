"""What one finite step or batch does, from the reference (demos 13 and 16): rlvr/finite_step.py."""

import json

from .. import io
from ..finite_step import finite_step_columns
from ..specs import TrainRow, from_json
from ..task import read_task
from . import bound, log, name


def run(a):
    spec = json.loads(a.spec)
    binding = bound(a, name(a.out), [a.task])
    batches = spec.get("batches")
    if batches:
        batches = {**batches, "rows": [from_json(TrainRow, json.dumps(row)) for row in batches["rows"]]}
    columns = finite_step_columns(read_task(a.task), spec.get("sample_sign"), batches)
    io.write_table(a.out, columns, binding)
    log(f"one finite step: {', '.join(spec)} -> {a.out}")
