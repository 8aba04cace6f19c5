"""Concatenate per-job Parquet files."""

import json
import sys

from .. import binding, io, runlock
from . import log, name


def run(a):
    if a.inputs == [["-"]]:  # the lists on stdin, one path a line, a blank line between lists
        a.inputs = [block.split("\n") for block in sys.stdin.read().strip("\n").split("\n\n")]
    if len(a.inputs) != len(a.out):
        raise ValueError(f"{len(a.out)} --out but {len(a.inputs)} --in lists")
    if a.reference and len(a.out) != 1:
        raise ValueError("--reference adds rows to one --out (the trained policies' pass@k), "
                         f"not {len(a.out)}")
    order = [tuple(key) for key in json.loads(a.order)] if a.order else None
    planned = runlock.planned_jobs()  # what the run that started this job planned, if any
    for out, inputs in zip(a.out, a.inputs):
        def bind(ids, out=out):
            return io.bound(name(out), binding.identity(a.command, a.order or "", a.code, ids))

        io.concat_files(inputs, out, order, a.reference, planned, bind)
        log(f"aggregated {len(inputs)} files -> {out}")
