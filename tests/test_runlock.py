"""rlvr/runlock.py and the file binding of rlvr/io.py (issue 23): a job whose run has ended
writes nothing, the lock files cannot be planted or held by someone else, and a file that is
not the one its path names, or not the one the run planned, is refused by name."""

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from rlvr import io, runlock


@pytest.fixture(autouse=True)
def no_run_env():
    """The test process is no run's job; take() puts a token in os.environ, removed afterwards."""
    saved = {k: os.environ.pop(k) for k in (runlock.TOKEN_ENV, runlock.STATE_ENV) if k in os.environ}
    yield
    for k in (runlock.TOKEN_ENV, runlock.STATE_ENV):
        os.environ.pop(k, None)
    os.environ.update(saved)


def hold_in_child(state):
    """A child process that takes the run lock of state (a later run) and keeps it until killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from rlvr import runlock
        runlock.take({str(state)!r})
        print("held", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_job_of_an_ended_run_writes_nothing(tmp_path, monkeypatch):
    state, out = tmp_path / ".snakemake", tmp_path / "results" / "x.txt"
    fd = runlock.take(state)  # this process plays the run and its job (the token is inherited)
    io.write_bytes(out, b"the run's own")
    os.close(fd)  # the run's snakemake dies (kill -9): nobody holds the lock, its job lives on
    with pytest.raises(runlock.LockError, match="has ended"):
        io.write_bytes(out, b"an orphan's")
    later = hold_in_child(state)  # a later run starts and writes a new token
    try:
        with pytest.raises(runlock.LockError, match="a later run owns"):
            io.write_bytes(out, b"an orphan's")
    finally:
        later.kill()
        later.wait()
    assert out.read_bytes() == b"the run's own"
    assert (state / runlock.RUN_LOCK).read_text().startswith("pid ")  # for a message naming it
    assert len((state / runlock.REFUSED_LOG).read_text().splitlines()) == 2
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_second_run_is_refused_naming_the_first(tmp_path):
    state = tmp_path / ".snakemake"
    first = hold_in_child(state)
    try:
        with pytest.raises(runlock.LockError, match=f"pid {first.pid}, started"):
            runlock.take(state)
        assert runlock.held(state)
    finally:
        first.kill()
        first.wait()
    assert not runlock.held(state)  # the kernel drops the lock of a dead process


def test_a_job_no_run_started_writes_only_while_no_run_executes_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a `--no-hooks` run's job (or a hand-run command) works
    io.write_bytes("out.txt", b"by hand, no run here")
    live = hold_in_child(tmp_path / ".snakemake")
    try:
        with pytest.raises(runlock.LockError, match="did not start this job"):
            io.write_bytes("out.txt", b"beside a live run")
    finally:
        live.kill()
        live.wait()
    assert (tmp_path / "out.txt").read_bytes() == b"by hand, no run here"


def test_lock_files_are_private_and_never_followed(tmp_path):
    state = tmp_path / ".snakemake"
    state.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (state / runlock.RUN_LOCK).symlink_to(target)
    with pytest.raises(runlock.LockError, match="rlvr.flock: is a symbolic link"):
        runlock.take(state)
    assert target.read_text() == "keep me"
    (state / runlock.RUN_LOCK).unlink()
    (state / runlock.RUN_LOCK).touch(mode=0o666)
    os.chmod(state / runlock.RUN_LOCK, 0o666)  # readable by anyone: anyone could lock it
    os.close(runlock.take(state))
    for name in (runlock.RUN_LOCK, runlock.WRITE_LOCK, runlock.RUN_FILE):
        assert (state / name).stat().st_mode & 0o777 == 0o600, name


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a file to another user")
def test_a_lock_file_of_another_user_is_refused(tmp_path):
    state = tmp_path / ".snakemake"
    state.mkdir()
    (state / runlock.RUN_LOCK).touch()
    os.chown(state / runlock.RUN_LOCK, 65534, 65534)
    with pytest.raises(runlock.LockError, match="owned by user id 65534"):
        runlock.take(state)


def test_a_file_is_refused_at_another_path_or_from_another_job(tmp_path):
    name = "runs/training/grpo/lr2.0_off0.0_G4_n4_s20_dyn0.run"
    good = tmp_path / "results" / f"{name}.parquet"
    io.write_table(good, {"x": [1.0]}, io.bound(name, "job-a"))
    assert io.read_arrow(good, planned={name: "job-a"}).schema.metadata is None  # binding stripped
    moved = tmp_path / "results/runs/training/none/lr2.0_off0.0_G4_n4_s20_dyn0.run.parquet"
    moved.parent.mkdir(parents=True)
    moved.write_bytes(good.read_bytes())  # `cp` of grpo's file over none's
    with pytest.raises(io.InputError, match=f"{moved}: holds {name}.parquet, not the file this path names"):
        io.read_arrow(moved)
    with pytest.raises(io.InputError, match=f"{good}: written by another job than this run planned"):
        io.read_arrow(good, planned={name: "job-b"})
    out = tmp_path / "results/runs.parquet"
    with pytest.raises(io.InputError, match="not the file this path names"):
        io.concat_files([good, moved], out)
    assert not out.exists()
