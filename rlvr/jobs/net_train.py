"""Train one network job (a row's block of seeds, packed, each from its own base), and write its files
(rlvr/net/results.py row_columns): per step the batch's statistics; per record the exact curves
by level, the exact pass@k and every prompt's exact P(correct)."""

import time

from .. import io
from ..net.base import model_of, stack_bases
from ..net.results import row_columns
from ..net.specs import NET_FILES, NetRow
from ..specs import from_json
from ..task import read_task
from . import identity, log


def run(a):
    row = from_json(NetRow, a.spec)
    if len(a.bases) != len(row.seeds):
        raise io.InputError(f"--bases: {len(a.bases)} files for the {len(row.seeds)} seeds "
                            f"{list(row.seeds)}; give each seed's base, in that order")
    job_id = identity(a, [a.task, *a.bases])  # a foreign task or base is refused before any work
    try:
        start = stack_bases([io.read_arrow(path, required=("name", "shape", "value")) for path in a.bases],
                            model_of(row), a.bases)
    except ValueError as err:
        raise io.InputError(str(err)) from None
    t0 = time.perf_counter()
    log(f"network {row.path}: {len(row.seeds)} seeds x {row.steps} steps of {row.prompts_per_step} prompts "
        f"x {row.G} answers")
    tables, out = row_columns(read_task(a.task), row, start)
    for kind in NET_FILES:  # the prompts last: the mark of a finished job
        io.write_table(f"{a.results}/{row.path}.{kind}.parquet", tables[kind],
                       io.bound(f"{row.path}.{kind}", job_id))
    log(f"network {row.path}: exact pass@1 {out['pass1'][0].mean():.3f} -> {out['pass1'][-1].mean():.3f} "
        f"(mean of {len(row.seeds)} seeds) in {time.perf_counter() - t0:.1f} s")
