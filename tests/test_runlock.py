"""One run per results directory and the file binding (rlvr/runlock.py, rlvr/io.py; issues 5, 23
and 33): a second run is refused by name, whatever its flags and wherever it was started from, a
job whose run has ended writes nothing, the lock files cannot be planted or held by someone else,
and a file that is not the one its path names, or not the one the run planned, is refused by
name."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from conftest import PYTHON, REPO
from test_pipeline import small_config, snakemake
from test_reliability import descendants, wait_for

from rlvr import io, runlock
from rlvr.config import load_config, train_rows


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
    state, out = runlock.state_of(tmp_path / "results"), tmp_path / "results" / "x.txt"
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
    assert "pid " in (state / runlock.RUN_LOCK).read_text()  # for a message naming it
    assert len((state / runlock.REFUSED_LOG).read_text().splitlines()) == 2
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_second_run_is_refused_naming_the_first(tmp_path):
    state = runlock.state_of(tmp_path / "results")
    first = hold_in_child(state)
    try:
        with pytest.raises(runlock.LockError, match=f"pid {first.pid}, started"):
            runlock.take(state)
        assert runlock.held(state)
    finally:
        first.kill()
        first.wait()
    assert not runlock.held(state)  # the kernel drops the lock of a dead process


def test_a_command_no_run_started_writes_only_while_no_run_holds_those_results(tmp_path, monkeypatch):
    """The lock is the results directory's: a command by hand (or a `--no-hooks` run's job)
    started from any other directory is refused while a run holds the results it would write."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "project" / "results" / "tables" / "out.txt"
    io.write_bytes(out, b"by hand, no run there")
    live = hold_in_child(runlock.state_of(tmp_path / "project" / "results"))
    try:
        with pytest.raises(runlock.LockError, match=f"a run holds {out.parents[1]} .*pid {live.pid}"):
            io.write_bytes(out, b"beside a live run")
        io.write_bytes("mine.txt", b"not under those results")  # elsewhere: not that run's
    finally:
        live.kill()
        live.wait()
    assert out.read_bytes() == b"by hand, no run there"


def test_lock_files_are_private_and_never_followed(tmp_path):
    state = runlock.state_of(tmp_path / "results")
    state.mkdir(parents=True)
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
    state = runlock.state_of(tmp_path / "results")
    state.mkdir(parents=True)
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
    with pytest.raises(io.InputError, match=f"{good}: made from other inputs, spec or code than this run"):
        io.read_arrow(good, planned={name: "job-b"})
    out = tmp_path / "results/runs.parquet"
    with pytest.raises(io.InputError, match="not the file this path names"):
        io.concat_files([good, moved], out)
    assert not out.exists()


def listening_sockets(session):
    """Sockets in the listening state held by any process of this session (Linux /proc)."""
    inodes = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[3]) != session:  # field 6: session id
                continue
            for fd in (stat.parent / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except (OSError, IndexError, ValueError):
            continue  # a process that ended meanwhile
    listening = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[3], 16) & 0x10000 and fields[6] in inodes:  # __SO_ACCEPTCON: listening
            listening.append(line)
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # TCP_LISTEN
                listening.append(line)
    return listening


@pytest.mark.slow
def test_second_run_is_refused_and_nothing_is_written_outside_results(tmp_path):
    before = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    config = small_config(tmp_path / "small.yaml")
    work = tmp_path / "work"
    first = subprocess.Popen([PYTHON, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                              "--configfile", str(config), "-c2", "--directory", str(work)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        # executing: its onstart ran
        assert wait_for(lambda: runlock.held(runlock.state_of(work / "results")), first)
        # paused (our own child), it holds its locks while more runs start, however fast this
        # machine; its jobs go on and it collects them when continued
        os.kill(first.pid, signal.SIGSTOP)
        assert listening_sockets(first.pid) == []  # nothing of the run (Snakemake, jobs) listens
        refusal = f"rlvr: a run holds results/ (snakemake, pid {first.pid}"
        # refused at parse, before Snakemake could delete anything, whatever the flags
        for flags in ((), ("--unlock",), ("--nolock", "--no-hooks", "--forceall"), ("--no-hooks",)):
            other = snakemake(work, "-c1", *flags, config=config, check=False)
            assert other.returncode != 0 and refusal in other.stderr, (flags, other.stdout + other.stderr)
        assert snakemake(work, "-n", config=config).returncode == 0  # a dry run may look
        assert listening_sockets(first.pid) == []
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, out
    for path in (work / "results").glob("*.parquet"):  # whole, and their checksums right
        io.read_arrow(path)
    assert {"task.parquet", "runs.parquet"} <= {p.name for p in (work / "results").glob("*.parquet")}
    # only results/, logs/ and Snakemake's state in the work directory; the checkout untouched
    assert {p.name for p in work.iterdir()} == {"results", "logs", ".snakemake"}
    after = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    assert after == before  # bytecode caches are ignored by git


@pytest.mark.slow
def test_a_job_orphaned_by_a_killed_snakemake_cannot_overwrite_a_later_run(tmp_path):
    """Issue 23: `kill -9` of snakemake alone leaves its jobs running; the next run starts at once.
    The orphan (config A: 64 seeds) must write nothing once run B (seed 0) has started."""
    cfg = yaml.safe_load(small_config(tmp_path / "small.yaml").read_text())
    cfg["training"]["steps"] = 300
    configs = {}
    for name, seeds in (("a", list(range(64))), ("b", [0])):
        cfg["training"]["seeds"] = seeds
        configs[name] = tmp_path / f"{name}.yaml"
        configs[name].write_text(yaml.safe_dump(cfg))
    work = tmp_path / "work"
    first = subprocess.Popen([PYTHON, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--configfile",
                              str(configs["a"]), "-c2", "--directory", str(work)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    orphans = []

    def training_started():  # run A's training job (its Python), a descendant of this test's child
        orphans[:] = [
            pid for pid, argv in descendants(first.pid) if argv[:4] == ["python", "-m", "rlvr", "train"]
        ]
        return bool(orphans)

    (row,) = [f"results/{r.row_path}" for r in train_rows(load_config(configs["b"]))
              if r.experiment == "training"]
    try:
        assert wait_for(training_started, first, timeout=120)
        for pid in orphans:  # paused (our own child's child) until run B has ended, however fast this machine
            os.kill(pid, signal.SIGSTOP)
        assert not list(work.glob(f"{row}_seeds0-63.*")), "run A's job ended before it could be paused"
        os.kill(first.pid, signal.SIGKILL)  # snakemake alone: its job lives on, an orphan
        first.wait()
        snakemake(work, "-c2", config=configs["b"])  # starts at once, beside the orphan
        for pid in orphans:
            os.kill(pid, signal.SIGCONT)
        while any(Path(f"/proc/{pid}").exists() for pid in orphans):  # the orphan ends (our own child's)
            time.sleep(0.1)
    finally:
        if any(Path(f"/proc/{pid}").exists() for pid in orphans):  # only if the test failed midway
            os.killpg(first.pid, signal.SIGKILL)
    assert io.read_table(work / f"{row}_seeds0.run.parquet")["seed"].tolist() == [0]
    assert not list(work.glob(f"{row}_seeds0-63.*"))  # the orphan's own files: never written
    assert sorted(set(io.read_table(work / "results/runs.parquet")["seed"].tolist())) == [0]
    refused = (runlock.state_of(work / "results") / runlock.REFUSED_LOG).read_text()
    assert "this job writes nothing" in refused and "rlvr train" in refused
    dry = snakemake(work, "-n", config=configs["b"])
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_listening_sockets_sees_a_listener():
    """The check above can fail: a process that listens on a unix and a TCP socket is seen."""
    code = ("import socket, sys, time\n"
            "u = socket.socket(socket.AF_UNIX); u.bind('\\0rlvr-test-listener'); u.listen()\n"
            "t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen()\n"
            "print('ready', flush=True); time.sleep(30)\n")
    proc = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert len(listening_sockets(proc.pid)) == 2
    finally:
        proc.kill()
        proc.wait()


def test_a_rendering_job_refuses_an_input_replaced_during_its_run(tmp_path):
    """In a run, a demo's rendering job reads each file only if it carries the identity the run
    planned for it: one copied in after the run planned (another project's base, here) is
    refused by name, never drawn; outside a run (python -m rlvr render by hand) it is read."""
    from rlvr.jobs.render import read_frames

    name = "network/base_prompts"
    path = tmp_path / "results" / f"{name}.parquet"
    io.write_table(path, {"seed": [0], "p_correct": [0.5]}, io.bound(name, "another-project"))
    a = {"net_base": str(path)}
    assert list(read_frames(a)["net_base"]["p_correct"]) == [0.5]  # no run: nothing planned
    runlock.take(runlock.state_of(tmp_path / "results"), {name: "this-run"})
    with pytest.raises(io.InputError, match=f"{path}: made from other inputs, spec or code than this run"):
        read_frames(a)
