"""The pipeline's jobs, one module a stage: `python -m rlvr <stage>` runs rlvr/jobs/<stage>.py's
`run(a)` with the arguments rlvr/cli.py parsed. A job's code is its module's import closure
(rlvr/codeversion.py): import at the top what the stage computes with. What every job shares:
the identity of what it writes (rlvr/binding.py), its log line, the results' names. rlvr/cli.py
takes its own log line and those names from here too: this module runs in every job anyway.
"""

import os
import sys
import time

from .. import binding, io, runlock

FRAMES = tuple(io.RESULT_FILES)  # the results a rendering job may read, each an argument
JOB_FRAMES = tuple(io.JOB_PARTS)  # the results a training job writes a part of


def log(msg):
    print(f"[rlvr {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def identity(a, inputs=(), spec=None, code=None):
    """The identity of what this job writes: its stage, spec and code (a.spec and a.code unless
    given: a training job's pack has one of each a job), and the identities its input files
    carry, each checked against what the run planned (a foreign input is refused here, by name,
    before any work)."""
    spec = getattr(a, "spec", None) if spec is None else spec
    code = a.code if code is None else code
    planned = runlock.planned_jobs()
    ids = [io.input_identity(path, planned) for path in inputs]
    return binding.identity(a.command, spec or "", code, ids)


def bound(a, name, inputs=()):
    """The metadata binding a file this job writes, called name, to its identity."""
    return io.bound(name, identity(a, inputs))


def name(path):
    """A result's name: its file name without .parquet (binding.NAMES in the pipeline)."""
    return os.path.basename(path).removesuffix(".parquet")
