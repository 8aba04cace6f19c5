"""Snakemake for the tests, each run a process forked from one that imported Snakemake once.

The suite runs Snakemake some fifty times to completion; a fresh `python -m snakemake` spends
~0.75 s of a ~1.1 s no-op importing it and its dependencies. This process imports them (never
rlvr: a run imports the rlvr beside its Snakefile, which a test may have edited) and then, per
request on stdin (a JSON line: args, cwd, env, out, err, timeout), forks a child that does what
`python -m snakemake *args` would in cwd: sys.path[0] is cwd, the environment is env, stdout and
stderr go to the files out and err, the child leads its own process group, which is killed after
timeout seconds. It answers with a JSON line {"rc", "timed_out"} at the child's end.
tests/conftest.py's run_snakemake is the client; the tests that signal Snakemake, time its
imports or start its console script still start it as a user does."""

import atexit
import json
import os
import signal
import sys
import time
from pathlib import Path

import jsonschema  # noqa: F401  (imported for the children: rlvr's config validation)
import platformdirs  # noqa: F401
import smart_open  # noqa: F401
import snakemake.api  # noqa: F401
import snakemake.cli
import snakemake.dag  # noqa: F401
import snakemake.report  # noqa: F401
import snakemake.workflow  # noqa: F401

MAIN = os.path.join(os.path.dirname(snakemake.cli.__file__), "__main__.py")  # what -m runs


def child(request):
    """Become `python -m snakemake *args` in cwd; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.chdir(request["cwd"])
        # the one thing Snakemake takes from the working directory at import (its run directory,
        # in logs and reports): taken again from the child's
        snakemake.workflow.Workflow._rundir = str(Path.cwd().absolute())
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = request["cwd"]
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["out"], os.O_WRONLY | os.O_CREAT),
                                (2, request["err"], os.O_WRONLY | os.O_CREAT)):
            opened = os.open(path, flags | (os.O_TRUNC if fd else 0), 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = [MAIN, *request["args"]]
        snakemake.cli.main()
        code = 0
    except SystemExit as done:  # as the interpreter's end: None is 0, a number the code, else printed, 1
        if done.code is None or isinstance(done.code, int):
            code = done.code or 0
        else:
            print(done.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()  # what a process's exit runs
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(request)
    try:  # as the child does: its group exists before either goes on
        os.setpgid(pid, pid)
    except OSError:  # the child has already set it, or already ended
        pass
    deadline = time.monotonic() + request["timeout"]
    while not (finished := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < deadline:
        time.sleep(0.005)
    timed_out = not finished[0]
    if timed_out:  # the run's process group, which it leads
        os.killpg(pid, signal.SIGKILL)
        finished = os.waitpid(pid, 0)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(finished[1]), "timed_out": timed_out}), flush=True)
