import sys
from pathlib import Path

import pytest

import rlvr  # noqa: F401  before numpy and torch: the pinned numeric platform (rlvr/numerics.py)

REPO = Path(__file__).resolve().parents[1]


# The files that take longest, first, in this order: pytest-xdist (--dist loadfile, no reorder)
# hands each worker the next file when it is free, so these start at once instead of last. The
# default config's results (test_observations) need nothing else; test_pipeline builds the tiny
# run the next two read. A scheduling hint only: a file missing here runs after them.
LONGEST_FIRST = ("test_observations.py", "test_pipeline.py", "test_reliability.py", "test_runlock.py",
                 "test_any_config.py", "test_binding.py", "test_network.py", "test_numerics.py",
                 "test_net_objective.py",
                 "test_clean.py", "test_api.py")


# the session fixtures that run a pipeline or the default config: a test using one is slow
# (`python -m pytest -m "not slow"`, the inner loop, leaves it out; so does a test marked slow)
SLOW_FIXTURES = {"default_results", "tiny_run", "tiny_in_process"}


def pytest_collection_modifyitems(items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's order is kept


@pytest.fixture(scope="session")
def default_results():
    """Every stage of the default config but the network and the finite-step job, computed
    in-process once: {name: pandas DataFrame}. The network's base alone is minutes of CPU, and so
    is the finite-step job's enumeration (tests/test_finite_step.py checks its maths); their
    claims are checked against a pipeline run's results (`python -m rlvr claims --doc
    FINDINGS.md --check`, BENCHMARKS.md)."""
    from rlvr import binding
    from rlvr.compute import compute_all
    from rlvr.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml")
    cfg["network"]["enabled"] = False
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(binding, "finite_step_spec", lambda train_jobs, M: "")  # not planned
        tables = compute_all(cfg)
    return {k: v.to_pandas() for k, v in tables.items()}


def run(cmd, cwd=None, check=True, timeout=300):
    """Run a command; return CompletedProcess with text output."""
    import subprocess

    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


PYTHON = sys.executable
_SERVER = []  # this process's tests/snakemake_server.py, started at the first run_snakemake


def run_snakemake(*args, check=True, timeout=300):
    """`python -m snakemake *args` run to its end in this directory, as run() gives it, but forked
    from a process that has Snakemake imported (tests/snakemake_server.py: ~0.75 s less a run)."""
    import json
    import os
    import subprocess
    import tempfile

    if not _SERVER or _SERVER[0].poll() is not None:
        _SERVER[:] = [subprocess.Popen([PYTHON, str(REPO / "tests" / "snakemake_server.py")], cwd=REPO,
                                       text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)]
    server = _SERVER[0]
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        out.touch(), err.touch()  # a run killed before it opened them said nothing
        request = {"args": [str(a) for a in args], "cwd": os.getcwd(), "env": dict(os.environ),
                   "out": str(out), "err": str(err), "timeout": timeout}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        if not line:  # its traceback is on this process's stderr
            raise AssertionError(f"tests/snakemake_server.py ended ({server.wait()}) before answering {args}")
        answer = json.loads(line)
        proc = subprocess.CompletedProcess(["snakemake", *args], answer["rc"], out.read_text(),
                                           err.read_text())
    if answer["timed_out"]:
        raise subprocess.TimeoutExpired(proc.args, timeout, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"{proc.args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def built_once(tmp_path_factory, worker_id, name, build):
    """A directory that build(directory) fills once per test session, shared by the pytest-xdist
    workers (the first to ask builds it under a lock, the others wait and reuse it)."""
    import fcntl

    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker_id != "master" else root  # the session's directory, shared
    directory = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / ".built").exists():
            directory.mkdir(exist_ok=True)
            build(directory)
            (directory / ".built").touch()
    return directory


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, worker_id):
    """A completed pipeline run of config/test.yaml; tests may read it and dry-run it, not change it."""
    from test_pipeline import snakemake

    def build(workdir):
        out = snakemake(workdir, "-c2")
        (workdir / "logs" / "terminal.txt").write_text(out.stderr)  # what the user saw

    return built_once(tmp_path_factory, worker_id, "pipeline", build)


@pytest.fixture(scope="session")
def tiny_in_process(tmp_path_factory, worker_id):
    """config/test.yaml computed by `python -m rlvr all`, its Parquet files and figures (read only)."""
    def build(out):
        run([PYTHON, "-m", "rlvr", "all", "--config", str(REPO / "config" / "test.yaml"),
             "--results", str(out), "--figures", str(out / "figures")])

    return built_once(tmp_path_factory, worker_id, "in_process", build)


def same_table(a, b):
    """Two pyarrow tables with the same schema and the same bits in every column (NaN where the
    other has NaN: pyarrow's own equals calls NaN unequal to itself)."""
    import numpy as np

    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    import pyarrow as pa

    for x, y in zip(a.columns, b.columns):
        if pa.types.is_list(x.type):  # a tensor a row (the network's base): lengths, then values
            x, y = x.combine_chunks(), y.combine_chunks()
            if not np.array_equal(np.diff(x.offsets.to_numpy()), np.diff(y.offsets.to_numpy())):
                return False
            x, y = x.flatten(), y.flatten()
        x, y = x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False)
        if x.dtype.kind == "f":
            x, y = x.view(np.uint8), y.view(np.uint8)  # bit for bit
        if not np.array_equal(x, y):
            return False
    return True
