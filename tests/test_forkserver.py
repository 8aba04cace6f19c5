"""The fork server (rlvr/forkserver.py): a served job is the job its own process would be."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

import pyarrow.parquet as pq
import pytest
from conftest import PYTHON, REPO, run

from rlvr import forkserver

pytestmark = pytest.mark.skipif(not forkserver.sys.platform.startswith("linux"), reason="Linux only")

TASK = ["task", "--P", "12", "--M", "6", "--seed", "3", "--level-logodds", "-3", "-1", "0", "2",
        "--spread", "0.5"]


def train_argv(task, out, steps=30):
    return ["train", "--task", task, "--experiment", "t", "--method", "grpo", "--lr", "2",
            "--offset", "0", "--G", "4", "--prompts-per-step", "3", "--steps", str(steps), "--seed", "5",
            "--value-lr", "0.1", "--eval-every", "10", "--k", "1", "2", "--out-run", f"{out}/run.parquet",
            "--out-curve", f"{out}/curve.parquet", "--out-passk", f"{out}/passk.parquet"]


def gradstats_argv(task, out):
    return ["gradstats", "--task", task, "--offset", "0", "--method", "rloo", "--level", "medium",
            "--G", "4", "--reps", "500", "--seed", "2", "--out", f"{out}/g.parquet"]


def connectable(name):
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        try:
            s.connect("\0" + name)
            return True
        except OSError:
            return False


@pytest.fixture(scope="module")
def server():
    """A server of our own: PYTHONRLVRTESTID (a PYTHON* variable) is part of its name, so
    that it is neither a server some earlier run left nor one the pipeline tests start."""
    saved = dict(os.environ)
    # PYTHONPATH is part of the name too: set it before taking the name, for the job processes
    os.environ.update(RLVR_FORKSERVER="1", PYTHONRLVRTESTID=uuid.uuid4().hex, PYTHONPATH=str(REPO))
    os.environ.pop("SLURM_JOB_ID", None)
    name = forkserver.server_name()
    proc = subprocess.Popen([PYTHON, "-P", "-m", "rlvr.forkserver", name], cwd="/",
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not connectable(name):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the server did not come up in 30 s"
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()
    os.environ.clear()
    os.environ.update(saved)


def own_process(argv, cwd):
    """`python -m rlvr argv` with the fork server off: the reference."""
    env = {**os.environ, "RLVR_FORKSERVER": "0"}
    return subprocess.run([PYTHON, "-m", "rlvr", *argv], cwd=cwd, env=env, capture_output=True, text=True)


def test_served_jobs_write_the_same_files_as_their_own_process(server, tmp_path, monkeypatch):
    for d in ("served", "own"):
        (tmp_path / d).mkdir()
    monkeypatch.chdir(tmp_path / "served")  # relative paths are the job's own
    assert forkserver.run_in_forkserver([*TASK, "--out", "task.parquet"]) == 0
    assert forkserver.run_in_forkserver(train_argv("task.parquet", ".")) == 0
    assert forkserver.run_in_forkserver(gradstats_argv("task.parquet", ".")) == 0
    assert forkserver.run_in_forkserver(["aggregate", "--out", "agg.parquet", "run.parquet", "run.parquet"]) == 0
    own = tmp_path / "own"
    for argv in ([*TASK, "--out", "task.parquet"], train_argv("task.parquet", "."),
                 gradstats_argv("task.parquet", "."),
                 ["aggregate", "--out", "agg.parquet", "run.parquet", "run.parquet"]):
        proc = own_process(argv, own)
        assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in own.iterdir())
    assert names == sorted(p.name for p in (tmp_path / "served").iterdir())
    assert len(names) == 6
    for name in names:  # byte for byte
        assert (tmp_path / "served" / name).read_bytes() == (own / name).read_bytes(), name
    assert pq.read_table(own / "agg.parquet").num_rows == 2


def test_served_job_reports_bad_input_like_its_own_process(server, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    missing = train_argv("no-such-task.parquet", ".")
    assert forkserver.run_in_forkserver(missing) == 2  # rlvr's InputError: exit code 2
    served_err = capfd.readouterr().err
    own = own_process(missing, tmp_path)
    assert own.returncode == 2
    assert "no-such-task.parquet" in served_err
    assert served_err.splitlines()[-1].split("] ", 1)[-1] == own.stderr.splitlines()[-1].split("] ", 1)[-1]
    assert forkserver.run_in_forkserver(["train", "--task", "x"]) == 2  # argparse: missing arguments
    assert "required" in capfd.readouterr().err
    assert not any(tmp_path.iterdir()), "a failed job wrote something"


def test_jobs_run_in_their_own_process_when_not_served(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = ["--out", "task.parquet"]
    assert forkserver.run_in_forkserver(["tables", "--help"]) is None  # renderers: pandas, matplotlib
    assert forkserver.run_in_forkserver([]) is None
    monkeypatch.setenv("RLVR_FORKSERVER", "0")
    assert forkserver.run_in_forkserver([*TASK, *out]) is None
    monkeypatch.setenv("RLVR_FORKSERVER", "1")
    monkeypatch.setenv("SLURM_JOB_ID", "1")  # each job may be on another node
    assert forkserver.run_in_forkserver([*TASK, *out]) is None
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.setenv("PYTHONRLVRTESTID", uuid.uuid4().hex)  # another name: no server there
    monkeypatch.setattr(forkserver, "start_server", lambda name: None)
    assert forkserver.run_in_forkserver([*TASK, *out]) is None
    assert not any(tmp_path.iterdir())


def test_a_served_job_process_imports_only_what_is_built_in(server, tmp_path):
    """The job's own process only passes the job on: no numpy, and none of the modules that
    made that hand-over cost ~35 ms (json, hashlib, importlib.util, socket.py)."""
    code = ("import sys; from rlvr.forkserver import run_in_forkserver; "
            f"code = run_in_forkserver({[*TASK, '--out', 'task.parquet']!r}); "
            "print(code, *sorted(sys.modules))")
    out = run([PYTHON, "-c", code], cwd=tmp_path).stdout.split()
    assert out[0] == "0" and (tmp_path / "task.parquet").exists()
    assert not {"numpy", "pyarrow", "json", "hashlib", "importlib.util", "socket"} & set(out[1:])


def children(pid):
    path = f"/proc/{pid}/task/{pid}/children"
    with open(path) as f:
        return [int(c) for c in f.read().split()]


def test_killing_the_job_process_kills_its_forked_child(server, tmp_path):
    subprocess.run([PYTHON, "-m", "rlvr", *TASK, "--out", str(tmp_path / "task.parquet")], check=True,
                   env={**os.environ, "RLVR_FORKSERVER": "0"}, capture_output=True)
    deadline = time.monotonic() + 10
    while children(server.pid):  # earlier tests' children, on their way out
        assert time.monotonic() < deadline, "children of earlier jobs are still running"
        time.sleep(0.05)
    job = subprocess.Popen([PYTHON, "-m", "rlvr", *train_argv(str(tmp_path / "task.parquet"), tmp_path,
                                                               steps=10**7)],
                           stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not children(server.pid):
        assert job.poll() is None, "the job ended: it should have run for minutes"
        assert time.monotonic() < deadline, "the server forked no child for the job"
        time.sleep(0.05)
    [child] = children(server.pid)
    job.send_signal(signal.SIGKILL)
    job.wait()
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{child}"):
        assert time.monotonic() < deadline, "the child outlived its job by 30 s"
        time.sleep(0.05)
    assert not list(tmp_path.glob("run.parquet*")), "the killed job left a file"


def test_editing_rlvr_gives_another_server(tmp_path):
    copy = tmp_path / "rlvr"
    shutil.copytree(REPO / "rlvr", copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = forkserver.server_name(str(copy))
    assert forkserver.server_name(str(copy)) == before
    with open(copy / "estimators.py", "a") as f:
        f.write("\n# a user's new estimator\n")
    edited = forkserver.server_name(str(copy))
    assert edited != before
    (copy / "my_estimator.py").write_text("")
    assert forkserver.server_name(str(copy)) not in (before, edited)


def test_the_server_loads_no_pandas_matplotlib_or_snakemake():
    code = ("import json, sys; from rlvr.forkserver import preload; preload(); "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = set(json.loads(run([PYTHON, "-c", code], cwd=REPO).stdout))
    assert {"numpy", "pyarrow"} <= loaded
    assert not loaded & {"pandas", "matplotlib", "snakemake"}


def test_served_commands_are_the_compute_subcommands():
    from rlvr.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    compute = {name for name, p in sub.choices.items() if p.get_default("compute")}
    assert set(forkserver.SERVED_COMMANDS) == compute
