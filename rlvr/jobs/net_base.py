"""Make one of the network's bases, a seed's (rlvr/net/base.py): its parameters, and its exact
P(correct) and mass on the candidates per prompt beside the toy reference's (base_columns)."""

from .. import io
from ..net.base import base_columns
from ..net.specs import NetBase, base_files
from ..specs import from_json
from ..task import read_task
from . import identity, log


def run(a):
    spec = from_json(NetBase, a.spec)
    job_id = identity(a, [a.task])  # a foreign task is refused before any work
    log(f"base of seed {spec.seed}: {spec.steps} steps of {spec.batch} answers drawn from the toy's "
        "reference")
    params, prompts = base_columns(read_task(a.task), spec, log)
    names = base_files(spec.seed)
    io.write_table(a.out, params, io.bound(names[0], job_id))
    io.write_table(a.prompts, prompts, io.bound(names[1], job_id))
